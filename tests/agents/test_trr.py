"""TRR inverse kinematics (single, warm-started, shape control, batched) on the PETER model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.agents.ik import IKResult, trr, trr_batch
from soft_envs.robots import Peter


@pytest.mark.parametrize("kinematics", ["tilted", "pcc"])
@pytest.mark.parametrize("n_modules", [2, 3, 4])
def test_trr_solves_reachable_targets_to_micrometres(kinematics, n_modules):
    arm = Peter(n_modules, kinematics=kinematics)
    t_true = arm.sample(np.random.default_rng(n_modules), 15)
    for target in arm.forward(t_true):
        res = trr(arm, target)
        assert isinstance(res, IKResult)
        assert res.success and res.error < 1e-6
        np.testing.assert_allclose(arm.forward(res.solution), target, atol=1e-6)
        assert np.all(res.solution >= 0.0) and np.all(res.solution <= 2.0)
        assert res.iterations >= 1 and res.seconds > 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 2.0), min_size=6, max_size=6))
def test_trr_property_reachable_targets_are_solved_within_bounds(times):
    arm = Peter(2)
    target = arm.forward(np.array(times))
    res = trr(arm, target)
    assert res.success, res
    assert np.all(res.solution >= arm.lower) and np.all(res.solution <= arm.upper)


def test_unreachable_target_is_a_best_effort_not_an_exception():
    arm = Peter(2)
    target = np.array([0.0, 0.0, 1.0])  # a metre up: far beyond reach
    res = trr(arm, target, restarts=2)
    assert not res.success
    assert np.all(np.isfinite(res.solution))
    np.testing.assert_allclose(res.solution, arm.upper, atol=1e-6)  # all legs fully extended
    assert res.error == pytest.approx(np.linalg.norm(arm.forward(res.solution) - target), rel=1e-9)


def test_warm_start_on_a_trajectory_is_cheaper_and_continuous():
    arm = Peter(3)
    s = np.linspace(0, 2 * np.pi, 60)
    centre = arm.forward(np.full(9, 1.0))
    path = centre + 0.01 * np.stack((np.cos(s), np.sin(s), 0.2 * np.sin(2 * s)), axis=1)
    cold = [trr(arm, x) for x in path]
    warm, previous = [], None
    for x in path:
        res = trr(arm, x, previous)
        warm.append(res)
        previous = res.solution
    assert all(r.success for r in warm) and all(r.success for r in cold)
    assert sum(r.iterations for r in warm) < sum(r.iterations for r in cold)
    jumps = np.abs(np.diff([r.solution for r in warm], axis=0)).max()
    assert jumps < 0.2  # seconds of inflation between neighbouring points: no branch switching


def test_shape_control_pulls_the_intermediate_module_without_losing_the_tip():
    arm = Peter(2)
    t_true = np.array([0.2, 1.5, 1.0, 1.8, 0.3, 0.9])
    points = arm.module_points(t_true)
    target, middle = points[-1], points[0]
    plain = trr(arm, target)
    shaped = trr(arm, target, intermediate_targets=middle[None], shape_weight=1.0)
    middle_plain = np.linalg.norm(arm.module_points(plain.solution)[0] - middle)
    middle_shaped = np.linalg.norm(arm.module_points(shaped.solution)[0] - middle)
    assert shaped.success and shaped.error < 1e-6
    assert middle_shaped < 1e-6 < middle_plain


@pytest.mark.parametrize("call", [
    lambda arm: trr(arm, np.array([0.0, 0.0])),
    lambda arm: trr(arm, np.array([0.0, np.nan, 0.1])),
    lambda arm: trr(arm, np.zeros((2, 3))),
    lambda arm: trr(arm, np.zeros(3), q0=np.zeros(4)),
    lambda arm: trr(arm, np.zeros(3), tol=0.0),
    lambda arm: trr(arm, np.zeros(3), intermediate_targets=np.zeros((2, 3)), shape_weight=1.0),
    lambda arm: trr_batch(arm, np.zeros(3)),
    lambda arm: trr(arm, np.array([10.0, 0.0, 110.0])),  # millimetres for metres
    lambda arm: trr_batch(arm, np.array([[0.0, 0.0, 0.1], [10.0, 0.0, 110.0]])),
])
def test_invalid_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call(Peter(2))


@pytest.mark.parametrize("kinematics", ["tilted", "pcc"])
def test_batched_solve_matches_single_accuracy(kinematics):
    arm = Peter(3, kinematics=kinematics)
    targets = arm.forward(arm.sample(np.random.default_rng(9), 300))
    res = trr_batch(arm, targets)
    assert len(res) == 300
    assert res.success.all() and res.errors.max() < 1e-6
    np.testing.assert_allclose(arm.forward(res.solutions), targets, atol=1e-6)
    assert np.all(res.solutions >= arm.lower) and np.all(res.solutions <= arm.upper)


def test_batched_solve_with_unreachable_targets_reports_them():
    arm = Peter(2)
    targets = arm.forward(arm.sample(np.random.default_rng(3), 20))
    targets[[4, 11]] = [0.3, 0.3, 0.3]
    res = trr_batch(arm, targets)
    assert list(np.flatnonzero(~res.success)) == [4, 11]
    assert np.all(np.isfinite(res.solutions))
