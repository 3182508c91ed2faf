"""Newton–Raphson IK with move splitting (seed 001) on the quadruped's legs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.agents.ik import newton_raphson, newton_raphson_batch, newton_raphson_legs
from soft_envs.agents.ik.newton import legs_solve
from soft_envs.robots import Quadruped
from soft_envs.robots.quadruped import LEG_NAMES

ROBOT = Quadruped()
LEG = ROBOT.leg("front_left")
leg_names = st.sampled_from(LEG_NAMES)


def reachable_target(leg, rng, start, distance):
    """A random target at ``distance`` from ``start`` whose closed-form solution is in the bounds."""
    while True:
        u = rng.normal(size=3)
        target = start + distance * u / np.linalg.norm(u)
        if leg.reachable(target, margin=0.05):
            return target


@settings(max_examples=30, deadline=None)
@given(name=leg_names, distance=st.floats(0.001, 0.05), seed=st.integers(0, 10_000))
def test_newton_raphson_with_splitting_reaches_reachable_targets(name, distance, seed):
    leg = ROBOT.leg(name)
    q0 = ROBOT.standing_configuration()[LEG_NAMES.index(name)]
    target = reachable_target(leg, np.random.default_rng(seed), leg.forward(q0), distance)
    res = newton_raphson(leg, target, q0)
    assert res.success and res.error < 1e-12
    assert res.iterations == 5 * math.ceil(distance / 0.006 - 1e-12)
    np.testing.assert_allclose(leg.forward(res.solution), target, atol=1e-12)
    assert np.all(res.solution >= leg.lower) and np.all(res.solution <= leg.upper)


def test_newton_raphson_defaults_match_the_seed_and_unsplit_far_moves_fail():
    rng = np.random.default_rng(0)
    q0 = ROBOT.standing_configuration()[0]
    start = LEG.forward(q0)
    near = reachable_target(LEG, rng, start, 0.005)
    res = newton_raphson(LEG, near, q0)
    assert res.iterations == 5 and res.error < 1e-15
    # 5 cm without splitting: 5 iterations do not converge on most targets (seed Table II).
    errors = [newton_raphson(LEG, reachable_target(LEG, rng, start, 0.05), q0, max_step=None,
                             respect_bounds=False).error for _ in range(20)]
    split = [newton_raphson(LEG, reachable_target(LEG, rng, start, 0.05), q0).error for _ in range(20)]
    assert np.median(errors) > 1e-12 and max(split) < 1e-14


def test_unreachable_and_singular_targets_give_finite_failures():
    q0 = ROBOT.standing_configuration()[0]
    far = newton_raphson(LEG, np.array([0.0, 0.0, -0.5]), q0)
    assert not far.success and np.all(np.isfinite(far.solution)) and np.isfinite(far.error)
    assert np.all(far.solution >= LEG.lower) and np.all(far.solution <= LEG.upper)
    # Straight knee (q2 = π) is singular; start there without bounds.
    straight = np.array([0.0, -1.0, np.pi])
    assert abs(LEG.jacobian_solve(straight, np.ones(3))[1]) < 1e-15
    res = newton_raphson(LEG, LEG.forward(straight) + [0.0, 0.0, 0.01], straight, respect_bounds=False)
    assert np.all(np.isfinite(res.solution)) and np.isfinite(res.error)
    # Target on the abduction axis (c = 0): no finite Newton step exists there either.
    on_axis = newton_raphson(LEG, np.array([0.0, 0.0, 0.0]), q0)
    assert not on_axis.success and np.all(np.isfinite(on_axis.solution))
    with pytest.raises(ValueError):
        newton_raphson(LEG, np.array([0.0, np.nan, 0.0]), q0)
    with pytest.raises(ValueError):
        newton_raphson(LEG, np.zeros(2), q0)
    with pytest.raises(ValueError):
        newton_raphson(LEG, np.zeros(3), q0, iterations=0)


def test_batch_and_all_legs_solves_equal_single_solves():
    rng = np.random.default_rng(5)
    q_stand = ROBOT.standing_configuration()
    targets = np.array([reachable_target(ROBOT.legs[n], rng, ROBOT.legs[n].forward(q_stand[i]), d)
                        for i, (n, d) in enumerate(zip(LEG_NAMES, (0.003, 0.005, 0.012, 0.02)))])
    legs = newton_raphson_legs(ROBOT, targets, q_stand)
    for i, name in enumerate(LEG_NAMES):
        single = newton_raphson(ROBOT.legs[name], targets[i], q_stand[i])
        np.testing.assert_allclose(legs.solutions[i], single.solution, atol=1e-12)
        assert legs.iterations[i] == single.iterations
    assert np.all(legs.success)
    batch = newton_raphson_batch(LEG, np.array([targets[0], targets[0] + 0.001]), q_stand[0])
    assert batch.success.all() and len(batch) == 2
    # The fused fast path (all moves within 0.6 cm) equals the general core.
    near = ROBOT.legs_forward(q_stand) + rng.uniform(-0.003, 0.003, (4, 3))
    fast, _ = legs_solve(ROBOT, q_stand, near)
    general = newton_raphson_legs(ROBOT, near, q_stand, max_step=None, stop_tol=1e-30)
    np.testing.assert_allclose(fast, general.solutions, atol=1e-12)
    np.testing.assert_allclose(ROBOT.legs_forward(fast), near, atol=1e-15)


def test_tol_is_the_success_threshold_and_stop_tol_the_stopping_rule():
    q0 = ROBOT.standing_configuration()[0]
    target = reachable_target(LEG, np.random.default_rng(2), LEG.forward(q0), 0.005)
    full = newton_raphson(LEG, target, q0)
    early = newton_raphson(LEG, target, q0, stop_tol=1e-5)
    assert full.iterations == 5 and early.iterations < full.iterations
    assert early.error <= 1e-5 < newton_raphson(LEG, target, q0, iterations=early.iterations - 1).error
    for tol in (early.error * 0.5, early.error * 2.0):
        assert newton_raphson(LEG, target, q0, stop_tol=1e-5, tol=tol).success == (early.error < tol)
    assert full.success and full.error < 1e-9  # the default tol [m]
    for bad in (dict(tol=0.0), dict(tol=-1e-9), dict(tol=np.nan), dict(stop_tol=-1.0)):
        with pytest.raises(ValueError):
            newton_raphson(LEG, target, q0, **bad)
        with pytest.raises(ValueError):
            newton_raphson_legs(ROBOT, ROBOT.neutral_feet(), **bad)
