"""Jacobian IK (pinv / DLS / transpose) on URDF chains (the BulletChain model: tests/robots)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urdf_chains import CHAINS, load

from soft_envs.agents.ik import ik_step, jacobian_ik, jacobian_ik_batch, trr
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_error, quaternion_to_matrix
from soft_envs.robots import BulletChain, Peter, Quadruped


@pytest.mark.parametrize("name", list(CHAINS))
@pytest.mark.parametrize("method", ["dls", "pinv"])
def test_full_pose_ik_on_iiwa_and_panda(name, method):
    chain = load(name)
    q_true = chain.sample(np.random.default_rng(11), 12)
    positions, quats = chain.forward_pose(q_true)
    for p, quat in zip(positions, quats):
        res = jacobian_ik(chain, p, quat, method=method, timeout=math.inf)
        assert res.success, res.message
        assert res.error < 1e-6 and res.orientation_error < 1e-6
        assert np.all(res.solution >= chain.lower) and np.all(res.solution <= chain.upper)
        p_sol, q_sol = chain.forward_pose(res.solution)
        assert np.linalg.norm(p_sol - p) == pytest.approx(res.error, abs=1e-12)
        assert quaternion_error(quaternion_to_matrix(quat), quaternion_to_matrix(q_sol))[1] \
            == pytest.approx(res.orientation_error, abs=1e-9)


def test_transpose_converges_position_only():
    iiwa = load("iiwa")
    p = iiwa.forward(iiwa.sample(np.random.default_rng(4)))
    res = jacobian_ik(iiwa, p, method="transpose", tol=1e-5, timeout=math.inf)
    assert res.success and res.orientation_error is None
    # linear vs quadratic convergence
    assert res.iterations > jacobian_ik(iiwa, p, method="dls", tol=1e-5, timeout=math.inf).iterations


def test_orientation_as_rotation_matrix():
    iiwa = load("iiwa")
    T = iiwa.forward_matrix(iiwa.sample(np.random.default_rng(5)))
    res = jacobian_ik(iiwa, T[:3, 3], T[:3, :3], timeout=math.inf)
    assert res.success
    np.testing.assert_allclose(iiwa.forward_matrix(res.solution), T, atol=1e-5)


def test_fixed_damping_and_gains():
    panda = load("panda")
    p, quat = panda.forward_pose(panda.sample(np.random.default_rng(6)))
    res = jacobian_ik(panda, p, quat, damping=0.01, gain=(1, 1, 1, 2, 2, 2), timeout=math.inf)
    assert res.success
    slow = jacobian_ik(panda, p, quat, gain=0.3, restarts=0, q0=res.solution + 0.05, timeout=math.inf)
    fast = jacobian_ik(panda, p, quat, restarts=0, q0=res.solution + 0.05, timeout=math.inf)
    assert slow.success and fast.success and slow.iterations > fast.iterations


def test_restarts_rescue_stalled_starts():
    """Some targets stall from the middle of the limits; the seeded restarts solve them all."""
    panda = load("panda")
    positions, quats = panda.forward_pose(panda.sample(np.random.default_rng(0), 40))
    stalled = [i for i in range(40)
               if not jacobian_ik(panda, positions[i], quats[i], restarts=0, timeout=math.inf).success]
    assert stalled, "no stalled start among the targets: the test would prove nothing"
    for i in stalled[:3]:
        for seed in (0, 1):
            assert jacobian_ik(panda, positions[i], quats[i], seed=seed, timeout=math.inf).success


def test_unreachable_target_is_best_effort():
    iiwa = load("iiwa")
    target = np.array([2.0, 0.0, 0.5])  # beyond the 1.3 m arm
    res = jacobian_ik(iiwa, target, method="dls")
    assert not res.success and "not converged" in res.message
    assert np.all(res.solution >= iiwa.lower) and np.all(res.solution <= iiwa.upper)
    assert res.error == pytest.approx(np.linalg.norm(iiwa.forward(res.solution) - target))
    assert res.error < np.linalg.norm(iiwa.forward(np.zeros(7)) - target) - 0.5  # it stretched towards it


@settings(max_examples=25, deadline=None)
@given(target=st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.floats(-1.0, 2.5)),
       method=st.sampled_from(["dls", "pinv", "transpose"]), start=st.integers(0, 1000))
def test_solutions_always_within_limits(target, method, start):
    panda = load("panda")
    q0 = panda.sample(np.random.default_rng(start))
    res = jacobian_ik(panda, np.array(target), method=method, q0=q0, max_iterations=60, restarts=2)
    assert np.all(res.solution >= panda.lower) and np.all(res.solution <= panda.upper)
    assert np.isfinite(res.error)
    assert res.error == pytest.approx(np.linalg.norm(panda.forward(res.solution) - np.array(target)), abs=1e-12)


def test_singularity_dls_bounded_pinv_blows_up():
    """Stretched iiwa (joints 2 and 4 at δ), target 1 cm further along the arm: the pseudo-inverse
    step grows like 1/δ, the DLS step stays below ‖e‖ / 2λ."""
    iiwa = load("iiwa")
    lam = 0.05
    norms = {}
    for delta in (1e-2, 1e-4, 1e-6):
        q = np.zeros(7)
        q[1] = q[3] = delta
        target = iiwa.forward(q) + np.array([0.0, 0.0, 0.01])
        norms[delta] = [np.linalg.norm(ik_step(iiwa, q, target, method=m, damping=lam)) for m in ("pinv", "dls")]
        assert norms[delta][1] <= 0.01 / (2 * lam) + 1e-12
    assert norms[1e-6][0] > 1e4 and norms[1e-6][0] > 1e3 * norms[1e-2][0]
    assert norms[1e-6][1] < 1e-3
    # and the full DLS solve from the exactly stretched arm reaches a pose target
    p, quat = iiwa.forward_pose(iiwa.sample(np.random.default_rng(8)))
    assert jacobian_ik(iiwa, p, quat, q0=np.zeros(7), restarts=0, timeout=math.inf).success


def test_works_on_any_kinematic_model():
    """Position-only IK on a model that is not a BulletChain (PETER), and trr on a BulletChain."""
    iiwa = load("iiwa")
    arm = Peter(2)
    target = arm.forward(arm.sample(np.random.default_rng(9)))
    res = jacobian_ik(arm, target, method="dls", timeout=math.inf)
    assert res.success and np.all(res.solution >= arm.lower) and np.all(res.solution <= arm.upper)
    with pytest.raises(ValueError, match="position-only"):
        jacobian_ik(arm, target, np.array([0.0, 0.0, 0.0, 1.0]))
    p = iiwa.forward(iiwa.sample(np.random.default_rng(10)))
    assert trr(iiwa, p).success


def test_quadruped_leg_chain():
    model = Quadruped()
    with model.urdf_path() as path:
        leg = BulletChain(path, model.foot_link_name("front_left"))
    assert leg.n_dof == 3
    for q in leg.sample(np.random.default_rng(12), 5):
        res = jacobian_ik(leg, leg.forward(q), method="dls", timeout=math.inf)
        assert res.success and np.all(res.solution >= leg.lower) and np.all(res.solution <= leg.upper)


@pytest.mark.parametrize("kwargs", [
    dict(position=np.array([0.1, np.nan, 0.5])),
    dict(position=np.zeros(2)),
    dict(position=np.zeros((2, 3))),
    dict(position=np.array([500.0, 0.0, 0.0])),  # millimetres for metres
    dict(orientation=np.array([0.0, 0.0, 0.0, 2.0])),
    dict(orientation=np.zeros(3)),
    dict(orientation=np.eye(3) * 2),
    dict(method="newton"),
    dict(damping=-0.1),
    dict(damping="fixed"),
    dict(q0=np.zeros(6)),
    dict(q0=np.full(7, np.inf)),
    dict(gain=(1.0, 2.0)),
    dict(gain=-1.0),
    dict(tol=0.0),
    dict(max_step=np.nan),
    dict(max_iterations=0),
])
def test_invalid_input_raises_value_error(kwargs):
    iiwa = load("iiwa")
    args = dict(position=np.array([0.3, 0.2, 0.8]), orientation=None)
    args.update(kwargs)
    with pytest.raises(ValueError):
        jacobian_ik(iiwa, args.pop("position"), args.pop("orientation"), **args)


def test_quaternion_order_and_norm_are_checked_not_normalised():
    """A quaternion off unit norm by more than 1e-6 (a typo, or a wxyz quaternion scaled) raises a
    ValueError naming the order (x, y, z, w); it is never normalised into another pose."""
    iiwa = load("iiwa")
    p, quat = iiwa.forward_pose(iiwa.sample(np.random.default_rng(13)))
    for scale in (1.0 + 1e-5, 1.0 - 1e-5, 2.0):
        with pytest.raises(ValueError, match=r"\(x, y, z, w\)"):
            jacobian_ik(iiwa, p, quat * scale)
        with pytest.raises(ValueError, match=r"\(x, y, z, w\)"):
            jacobian_ik_batch(iiwa, p[None], quat[None] * scale)
    assert jacobian_ik(iiwa, p, quat * (1.0 + 1e-7), timeout=math.inf).success  # within 1e-6: accepted as it is


def test_batched_full_pose_ik_on_iiwa_and_panda():
    for name in CHAINS:
        chain = load(name)
        q_true = chain.sample(np.random.default_rng(14), 40)
        positions, quats = chain.forward_pose(q_true)
        res = jacobian_ik_batch(chain, positions, quats, timeout=math.inf)
        assert res.success.all() and res.errors.max() < 1e-6 and res.orientation_errors.max() < 1e-6
        assert np.all(res.solutions >= chain.lower) and np.all(res.solutions <= chain.upper)
        p_sol, q_sol = chain.forward_pose(res.solutions)
        np.testing.assert_allclose(np.linalg.norm(p_sol - positions, axis=1), res.errors, atol=1e-12)
        one = res.item(3)
        assert one.success and one.orientation_error == res.orientation_errors[3] and one.restarts == res.restarts[3]


def test_restarts_are_counted_in_the_result():
    panda = load("panda")
    positions, quats = panda.forward_pose(panda.sample(np.random.default_rng(0), 40))
    results = [jacobian_ik(panda, p, q, timeout=math.inf) for p, q in zip(positions, quats)]
    assert all(r.success for r in results)
    restarted = [r for r in results if r.restarts > 0]
    assert restarted and all(f"{r.restarts} restarts" in r.message for r in restarted)
    batch = jacobian_ik_batch(panda, positions, quats, timeout=math.inf)
    assert batch.success.all() and batch.restarts.sum() > 0


@pytest.mark.budget
def test_the_default_budget_ends_an_unreachable_solve(expiring_clock):
    """No timeout given: the 50 ms default is checked every iteration and ends an unreachable
    full-pose solve (a hundred restarts take ~1.5 s); the best effort comes back and the message
    says the budget was spent. The clock jumps past the budget after 200 reads at the latest, so
    this holds on any machine (100 restarts of 10+ iterations each could not fit)."""
    iiwa = load("iiwa")
    _, quat = iiwa.forward_pose(np.zeros(7))
    expiring_clock(200)
    res = jacobian_ik(iiwa, np.array([2.0, 0.0, 0.5]), quat)
    assert not res.success and res.restarts < 100 and res.iterations < 200
    assert "time budget of 0.05 s spent" in res.message
    assert np.all(res.solution >= iiwa.lower) and np.all(res.solution <= iiwa.upper)
    assert res.error == pytest.approx(np.linalg.norm(iiwa.forward(res.solution) - [2.0, 0.0, 0.5]))


def test_without_a_budget_every_restart_is_spent():
    """``timeout=math.inf``: no budget, so the unreachable solve makes every restart asked for."""
    iiwa = load("iiwa")
    _, quat = iiwa.forward_pose(np.zeros(7))
    res = jacobian_ik(iiwa, np.array([2.0, 0.0, 0.5]), quat, restarts=3, timeout=math.inf)
    assert not res.success and res.restarts == 3 and "time budget" not in res.message


def test_invalid_ik_step_raises():
    iiwa = load("iiwa")
    with pytest.raises(InvalidParameterError):
        ik_step(iiwa, np.zeros(7), np.array([0.3, 0.2, 0.8]), method="svd")
    with pytest.raises(ValueError):
        ik_step(iiwa, np.zeros(5), np.array([0.3, 0.2, 0.8]))
