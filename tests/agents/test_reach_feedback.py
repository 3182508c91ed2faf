"""The reach agents' feedback on the measured tip (agents/reach.py): the settled miss, averaged over
``feedback_samples`` control periods, moves the aim; on a fake env (no simulator) whose flat
observation is PeterReach's layout ``[tip, goal, goal − tip, tip velocity]``."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.agents.ik.smooth_view import StrainView
from soft_envs.agents.pcc_reach import APPROACH_CLEARANCE, PCC_FEEDBACK, PCC_OBSTACLE_FEEDBACK, PCCObstacleReachAgent
from soft_envs.agents.reach import TRRReachAgent
from soft_envs.controllers import build_controller
from soft_envs.robots import PCCArm, Peter


class FakeEnv:
    """The parts of a goal-reaching env the agents read."""

    def __init__(self, model, dt: float = 0.05) -> None:
        self.model, self.dt, self.unwrapped = model, dt, self

    def model_to_action(self, q: np.ndarray) -> np.ndarray:
        return np.array(q, dtype=float)


def _observation(tip: np.ndarray, goal: np.ndarray, speed: float = 0.0) -> np.ndarray:
    return np.concatenate((tip, goal, goal - tip, [speed, 0.0, 0.0]))


@pytest.fixture
def peter_goal():
    arm = Peter(2)
    return arm, arm.forward(0.5 * (arm.lower + arm.upper) + 0.1 * (arm.upper - arm.lower))


def test_the_mean_of_the_settled_misses_moves_the_aim(peter_goal):
    arm, goal = peter_goal
    agent = TRRReachAgent(FakeEnv(arm), feedback=True, hold_time=0.1, feedback_samples=4, feedback_gain=0.5)
    agent.act(_observation(np.zeros(3), goal))  # the first plan
    rng = np.random.default_rng(0)
    sag = np.array([0.0, 0.0, -2e-3])
    tips = [goal + sag + rng.normal(0.0, 5e-4, 3) for _ in range(5)]  # a noisy camera
    agent.act(_observation(tips[0], goal))  # within hold_time: not a sample
    for tip in tips[1:4]:
        agent.act(_observation(tip, goal))
        np.testing.assert_array_equal(agent._aim, goal)  # gathering
    agent.act(_observation(tips[4], goal))
    mean_miss = np.mean([goal - tip for tip in tips[1:]], axis=0)
    np.testing.assert_allclose(agent._aim, goal + 0.5 * mean_miss, atol=1e-12)


def test_a_moving_tip_restarts_the_samples(peter_goal):
    arm, goal = peter_goal
    agent = TRRReachAgent(FakeEnv(arm), feedback=True, hold_time=0.0, feedback_samples=3, settle_speed=0.01)
    agent.act(_observation(np.zeros(3), goal))
    tip = goal + np.array([1e-3, 0.0, 0.0])
    for speed in (0.0, 0.0, 0.02, 0.0, 0.0):  # the third period moves: two more settled ones are not three
        agent.act(_observation(tip, goal, speed))
    np.testing.assert_array_equal(agent._aim, goal)
    agent.act(_observation(tip, goal))
    np.testing.assert_allclose(agent._aim, goal - np.array([1e-3, 0.0, 0.0]), atol=1e-12)


def test_a_new_plan_restarts_the_samples(peter_goal):
    arm, goal = peter_goal
    agent = TRRReachAgent(FakeEnv(arm), feedback=True, hold_time=0.0, feedback_samples=3)
    agent.act(_observation(np.zeros(3), goal))
    old = goal + np.array([5e-3, 0.0, 0.0])  # two samples of the first goal's miss
    for _ in range(2):
        agent.act(_observation(old, goal))
    other = goal + np.array([0.0, 0.0, 2e-3])  # a new goal: its plan starts the count again
    tip = other + np.array([0.0, 1e-3, 0.0])
    for _ in range(2):
        agent.act(_observation(tip, other))
    np.testing.assert_array_equal(agent._aim, other)  # the new goal's plan, then one sample of it
    for _ in range(2):
        agent.act(_observation(tip, other))
    np.testing.assert_allclose(agent._aim, other - np.array([0.0, 1e-3, 0.0]), atol=1e-12)


def test_one_sample_is_the_single_measurement_feedback(peter_goal):
    arm, goal = peter_goal
    agent = TRRReachAgent(FakeEnv(arm), feedback=True, hold_time=0.0)
    agent.act(_observation(np.zeros(3), goal))
    tip = goal + np.array([0.0, 2e-3, 0.0])
    agent.act(_observation(tip, goal, speed=0.01))  # faster than the default 2 mm/s: no correction
    np.testing.assert_array_equal(agent._aim, goal)
    agent.act(_observation(tip, goal))
    np.testing.assert_allclose(agent._aim, goal - np.array([0.0, 2e-3, 0.0]), atol=1e-12)


@pytest.mark.parametrize("samples", [0, -1, 1.5])
def test_bad_feedback_samples_raise_value_error(samples):
    with pytest.raises(ValueError):
        TRRReachAgent(FakeEnv(Peter(2)), feedback=True, feedback_samples=samples)


def test_the_pcc_arm_s_controllers_average_their_feedback():
    pcc, peter = FakeEnv(PCCArm(2, 6)), FakeEnv(Peter(2))
    for env, expected in ((pcc, PCC_FEEDBACK["feedback_samples"]), (peter, 1)):
        agent = build_controller("trr-feedback", env)
        assert agent.feedback_samples == expected
        assert isinstance(agent.ik_view, StrainView) == (env is pcc)  # the PCC arm's plans in strains
    assert all(getattr(agent, key) != value for key, value in PCC_FEEDBACK.items())  # PETER's own settings
    pcc.command_ramp_time = 0.0  # unpaced: the agent needs no ramp for its settings
    agent = PCCObstacleReachAgent(pcc, feedback=True)
    assert all(getattr(agent, key) == value for key, value in PCC_OBSTACLE_FEEDBACK.items())
    assert agent.approach_clearance == APPROACH_CLEARANCE > agent.clearance  # the first plan's, with feedback
    assert PCCObstacleReachAgent(pcc).approach_clearance == PCCObstacleReachAgent(pcc).clearance
    assert PCCObstacleReachAgent(pcc, feedback=True, feedback_samples=2).feedback_samples == 2
