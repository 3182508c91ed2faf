"""The robots layer's local IK (:mod:`soft_envs.robots.gauss_newton`) and the trajectory start
configurations built on it (:class:`soft_envs.trajectories.TrajectoryStarts`)."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.robots import PCCArm, Peter, PlanarPCCArm
from soft_envs.robots.gauss_newton import nearest_configuration
from soft_envs.trajectories import TrajectoryStarts, get_trajectory

ARM2 = PCCArm(2, 6)
PLANAR4 = PlanarPCCArm(4, 6)


def _within_bounds(model, q):
    return np.all(q >= model.lower) and np.all(q <= model.upper)


@pytest.mark.parametrize("model", [ARM2, PLANAR4, Peter(2), Peter(3, kinematics="pcc")], ids=repr)
def test_near_targets_are_reached_to_machine_precision(model):
    rng = np.random.default_rng(0)
    for q in model.sample(rng, 10):
        near = np.clip(q + 0.02 * (model.upper - model.lower) * rng.standard_normal(model.n_dof),
                       model.lower, model.upper)
        solution, error = nearest_configuration(model, model.forward(q), near)
        assert error < 1e-10 and _within_bounds(model, solution)
        assert error == pytest.approx(np.linalg.norm(model.forward(solution) - model.forward(q)), abs=1e-18)


def test_answer_keeps_the_representation_of_the_start():
    # (θ, φ) and (−θ, φ ± π) are the same shape: the one nearest q0 comes back.
    q0 = np.array([0.001, -0.5, 0.3, 0.002, 0.4, -2.0])
    target = ARM2.forward(q0 + np.array([0.0, -0.01, 0.01, 0.0, 0.01, 0.01]))
    solution, error = nearest_configuration(ARM2, target, q0)
    assert error < 1e-10
    assert np.all(np.sign(solution[1::3]) == np.sign(q0[1::3]))
    assert np.abs(solution - q0).max() < 0.1


def test_tip_angle_secondary_task():
    q = np.array([0.0, 0.3, 0.0, 0.2, 0.0, 0.1, 0.0, 0.1])  # tip angle 0.7 rad
    for q0 in (None, 0.8 * q):
        solution, error = nearest_configuration(PLANAR4, PLANAR4.forward(q), q0, tip_angle=0.9)
        assert error < 1e-10
        assert PLANAR4.tip_angle(solution) == pytest.approx(0.9, abs=1e-12)


@pytest.mark.parametrize("kwargs", [dict(target=[np.nan, 0.0, 0.1]), dict(target=[0.0, 0.1]),
                                    dict(target=[[0.0, 0.0, 0.1]] * 2), dict(q0=np.zeros(4)),
                                    dict(tip_angle=0.3), dict(precision=0.0), dict(max_steps=0)])
def test_bad_input_raises_value_error(kwargs):
    args = dict(target=[0.0, 0.0, 0.1]) | kwargs
    with pytest.raises(ValueError):
        nearest_configuration(ARM2, **args)  # a 3-D arm has no linear tip angle


# The arms and trajectories of PCCTrack-v0 (the paper's: circle on 1 segment, spiral and saddle on
# 2, the planar circle on 4 with its 30° tip angle), slowed down as in the benchmark.
ENV_CASES = [("spiral", 2, 1.0), ("spiral", 2, 4.0), ("saddle", 2, 1.0), ("circle", 1, 10.0),
             ("planar_circle", 4, 4.0)]


@pytest.mark.parametrize("name,n_segments,time_scale", ENV_CASES)
def test_trajectory_starts_are_on_the_trajectory(name, n_segments, time_scale):
    trajectory = get_trajectory(name, time_scale=time_scale)
    model = (PlanarPCCArm if trajectory.planar else PCCArm)(n_segments, 6)
    starts = TrajectoryStarts(model, trajectory)
    rng = np.random.default_rng(1)
    times = np.concatenate([[0.0], rng.uniform(0.0, trajectory.period, 40)])
    for t in times:
        q, error = starts.configuration(t)
        assert error < 1e-9 and _within_bounds(model, q)
        np.testing.assert_allclose(model.forward(q), trajectory.position(t), atol=1e-9)
        if trajectory.tip_angle is not None:
            assert model.tip_angle(q) == pytest.approx(trajectory.tip_angle, abs=1e-9)
    ring_times, ring = starts.ring_points()
    assert ring.shape == (16, model.n_dof)
    np.testing.assert_allclose(ring_times, np.linspace(0.0, trajectory.period, 16, endpoint=False))
    # deterministic: a fresh instance (another ring order of calls) gives the same configurations
    again = TrajectoryStarts(model, trajectory)
    for t in times[::-1][:5]:
        np.testing.assert_array_equal(again.configuration(t)[0], starts.configuration(t)[0])


def test_unreachable_trajectory_gives_the_best_effort():
    # The 1-segment circle is out of reach of a 2-segment arm (at least 0.117 m long).
    trajectory = get_trajectory("circle")
    starts = TrajectoryStarts(ARM2, trajectory, ring=2, restarts=2)
    q, error = starts.configuration(0.1)
    assert 1e-3 < error < 0.1 and _within_bounds(ARM2, q)


def test_trajectory_starts_reject_bad_input():
    trajectory = get_trajectory("spiral")
    for kwargs in (dict(ring=0), dict(restarts=-1), dict(tol=0.0), dict(ring=2.5)):
        with pytest.raises(ValueError):
            TrajectoryStarts(ARM2, trajectory, **kwargs)
    with pytest.raises(ValueError):
        TrajectoryStarts(ARM2, trajectory).configuration(np.nan)
    with pytest.raises(ValueError):  # a planar trajectory's tip angle needs a planar arm
        TrajectoryStarts(ARM2, get_trajectory("planar_circle")).configuration(0.0)
