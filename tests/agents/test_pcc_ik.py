"""SQP / TRR inverse kinematics on the PCC arm, the tip-angle secondary task, the paper's trajectories."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.agents.ik import sqp, sqp_trajectory, trr
from soft_envs.agents.ik.smooth_view import StrainView
from soft_envs.robots import PCCArm, PlanarPCCArm
from soft_envs.robots.gauss_newton import nearest_configuration
from soft_envs.trajectories import TRAJECTORIES, get_trajectory

ARM3 = PCCArm(3, 6)
PLANAR4 = PlanarPCCArm(4, 6)


def _within_bounds(model, q):
    return np.all(q >= model.lower - 1e-12) and np.all(q <= model.upper + 1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), planar=st.booleans(), method=st.sampled_from(["auto", "slsqp"]))
def test_reachable_targets_are_solved_within_bounds(seed, planar, method):
    model = PLANAR4 if planar else ARM3
    rng = np.random.default_rng(seed)
    target = model.forward(model.sample(rng))
    res = sqp(model, target, model.sample(rng), method=method, seed=seed)
    assert res.success and res.error < 1e-9
    assert _within_bounds(model, res.solution)
    np.testing.assert_allclose(model.forward(res.solution), target, atol=1e-9)


def test_cold_start_from_the_straight_arm_handles_the_theta_zero_singularity():
    # At θ = 0 the (θ, φ) parametrisation is singular; the solver works in (ΔL, θcosφ, θsinφ).
    target = np.array([0.0, 0.05, 0.17])  # needs bending towards +y
    res = sqp(ARM3, target, q0=np.zeros(9))
    assert res.success and res.error < 1e-10
    assert _within_bounds(ARM3, res.solution)


def test_sqp_fast_path_is_this_gauss_newton():
    rng = np.random.default_rng(4)
    for q in ARM3.sample(rng, 5):
        q0 = ARM3.sample(rng)
        solution, error = nearest_configuration(ARM3, ARM3.forward(q), q0)
        res = sqp(ARM3, ARM3.forward(q), q0, method="newton", restarts=0)
        np.testing.assert_array_equal(res.solution, solution)
        assert res.error == error


def test_unreachable_target_is_best_effort():
    res = sqp(ARM3, np.array([0.0, 0.0, 0.5]), restarts=1)
    assert not res.success
    assert abs(res.error - (0.5 - 0.195 * 1.1)) < 1e-6  # fully extended and straight is the closest
    assert _within_bounds(ARM3, res.solution)


@pytest.mark.parametrize("name,n_segments", [("circle", 1), ("spiral", 2), ("saddle", 2), ("spiral", 3),
                                             ("planar_circle", 4)])
def test_paper_trajectories_beat_the_papers_accuracy(name, n_segments):
    traj = get_trajectory(name)
    model = (PlanarPCCArm if traj.planar else PCCArm)(n_segments, 6)
    _, targets = traj.sample(120)
    res = sqp_trajectory(model, targets)
    assert res.errors.mean() <= 1.05e-8  # the paper: 1.05e-5 mm
    assert res.success.all()
    assert _within_bounds(model, res.solutions)
    # warm starts: a few kinematics evaluations per point (the fast path, no SLSQP)
    assert np.median(res.iterations[1:]) <= 4
    # smooth: no jumps between consecutive solutions in the smooth coordinates (ΔL, θcosφ, θsinφ)
    # (φ itself swings fast where a segment is nearly straight, as polar angles do)
    assert np.abs(np.diff(model.to_smooth(res.solutions), axis=0)).max() < 0.25


def test_tip_angle_secondary_task_keeps_position_accuracy():
    traj = get_trajectory("planar_circle")
    _, targets = traj.sample(100)
    plain = sqp_trajectory(PLANAR4, targets)
    with_angle = sqp_trajectory(PLANAR4, targets, tip_angle=traj.tip_angle)
    angle_error = np.abs(PLANAR4.tip_angle(with_angle.solutions) - traj.tip_angle)
    assert np.rad2deg(angle_error).max() < 0.1
    assert np.nanmax(with_angle.extra["tip_angle_errors"]) < np.deg2rad(0.1)
    assert with_angle.errors.max() < 1e-8 and with_angle.errors.mean() <= max(plain.errors.mean(), 1e-10) * 10
    # the position-only solutions do not keep the angle: the task does something
    assert np.abs(PLANAR4.tip_angle(plain.solutions) - traj.tip_angle).max() > np.deg2rad(1.0)


def test_infeasible_tip_angle_never_costs_position():
    target = PLANAR4.forward(np.array([0.0, 0.3, 0.0, 0.2, 0.0, 0.1, 0.0, 0.1]))
    res = sqp(PLANAR4, target, tip_angle=np.deg2rad(175.0) * 4)  # far beyond 4 × 140°
    assert res.success and res.error < 1e-9
    assert res.orientation_error > 0.1


def test_trr_works_on_the_same_model():
    rng = np.random.default_rng(3)
    c = ARM3.sample(rng)
    res = trr(ARM3, ARM3.forward(c), np.clip(c + 0.02, ARM3.lower, ARM3.upper), tol=1e-8, restarts=2)
    assert res.success and _within_bounds(ARM3, res.solution)


def test_invalid_inputs_raise_value_error():
    with pytest.raises(ValueError):
        sqp(ARM3, [np.nan, 0.0, 0.1])
    with pytest.raises(ValueError):
        sqp(ARM3, [0.0, 0.1])
    with pytest.raises(ValueError):
        sqp(ARM3, [0.0, 0.0, 0.1], q0=np.zeros(4))
    with pytest.raises(ValueError):
        sqp(ARM3, [0.0, 0.0, 0.1], tip_angle=0.3)  # 3-D arm: no linear tip angle
    with pytest.raises(ValueError):
        sqp(ARM3, [0.0, 0.0, 0.1], method="bfgs")
    with pytest.raises(ValueError):
        get_trajectory("figure_eight")
    with pytest.raises(ValueError):
        get_trajectory("spiral", time_scale=0.0)


def test_trajectories_are_si_and_fit_their_arms():
    np.testing.assert_allclose(get_trajectory("spiral").position(0.0), [0.05, 0.0, 0.11])
    np.testing.assert_allclose(get_trajectory("circle").position(0.0), [0.02, 0.0, 0.06])
    np.testing.assert_allclose(get_trajectory("planar_circle").position(0.0), [0.1, 0.0, 0.225])
    slow = get_trajectory("spiral", time_scale=4.0)
    np.testing.assert_allclose(slow.position(4.0), get_trajectory("spiral").position(1.0))
    assert slow.period == pytest.approx(4 * TRAJECTORIES["spiral"].period)
    # the unscaled saddle leaves the two-segment workspace (hence the documented 0.95 scale)
    raw = get_trajectory("saddle", scale=1.0)
    _, pts = raw.sample(200)
    assert np.linalg.norm(pts, axis=1).max() > 2 * 0.065 * 1.1


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_strain_view_is_the_model_and_its_jacobian_the_finite_differences(seed):
    view = StrainView(ARM3)
    rng = np.random.default_rng(seed)
    q = ARM3.sample(rng)
    x = view.to_view(q)
    assert np.all(x >= view.lower - 1e-12) and np.all(x <= view.upper + 1e-12)
    np.testing.assert_allclose(view.forward(x), ARM3.forward(q), atol=1e-12)
    np.testing.assert_allclose(ARM3.forward(view.from_view(x, reference=q)), ARM3.forward(q), atol=1e-12)
    eps = 1e-7
    fd = np.column_stack([(view.forward(x + eps * e) - view.forward(x - eps * e)) / (2 * eps)
                          for e in np.eye(x.size)])
    np.testing.assert_allclose(view.jacobian(x), fd, atol=1e-6)


def test_strain_view_steps_bend_the_arm_rather_than_trade_elongations():
    """The tip led sideways from the straight arm in ten warm-started 1.5 mm steps: in ``(ΔL, θ, φ)``
    the minimum-norm steps contract one segment and stretch another to their 6.5 mm bounds; in the
    strain view the elongations stay below half a millimetre (the same tips, within 10 µm)."""
    view = StrainView(ARM3)
    q = np.zeros(9)
    x = view.to_view(q)
    reference = q.copy()
    start = ARM3.forward(q)
    for k in range(1, 11):
        target = start + k * np.array([-0.6e-3, -1.4e-3, 0.0])
        q = trr(ARM3, target, q, restarts=0, tol=1e-5, max_iterations=60).solution
        x = trr(view, target, x, restarts=0, tol=1e-5, max_iterations=60).solution
        reference = view.from_view(x, reference=reference)
        np.testing.assert_allclose(ARM3.forward(reference), target, atol=1e-5)
    assert np.ptp(q[0::3]) > 0.01  # opposite elongations of more than 5 mm each
    assert np.abs(reference[0::3]).max() < 5e-4
