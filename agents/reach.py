"""An IK controller acting in goal-reaching environments (``PeterReach-v0``) through ``step``."""

from __future__ import annotations

import numpy as np

from soft_envs.agents.ik.result import IKResult
from soft_envs.agents.ik.trust_region import trr
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.base import KinematicModel


class TRRReachAgent:
    """Plan with TRR on a kinematic model, then hold the solution as the action.

    The agent reads the goal from the observation (``obs[3:6]``, or ``desired_goal`` in the
    dict form) and the env's spaces and kinematic model (``env.unwrapped.model``) — nothing of
    the env's private state. It re-plans only when the goal moves, warm-started from its
    previous solution.

    With ``feedback=True`` it also closes the loop on the measured tip (flat observation
    only): once the arm has settled (at least ``hold_time`` [s] after the last plan — the
    legs may not have started to move yet — and the tip speed below ``settle_speed`` [m/s])
    and the tip misses the goal by more than ``feedback_tolerance`` [m], it shifts its aim
    point by ``feedback_gain`` times the miss and re-plans — compensating gravity sag, payload
    and model error, as a real controller would (a gain below 1 with a longer ``hold_time``
    keeps the loop calm under measurement noise, latency and valve delay).

    Args:
        env: a ``PeterReach-v0`` env (wrapped or not).
        model: the model to plan on; default the env's own (``env.unwrapped.model``). Planning
            on another model (e.g. the paper's tilted-plane one) measures the model gap.
        feedback: correct the aim point from the measured tip (open loop when False).
        feedback_tolerance: miss [m] below which the aim is kept.
        feedback_gain: fraction of the miss the aim moves by per correction, in ``(0, 1]``.
        settle_speed: tip speed [m/s] below which the arm counts as settled.
        hold_time: time [s] after a plan before the tip is judged (default 0.3 s: longer than
            the valves' delay the bench uses).
        **trr_options: passed to :func:`~soft_envs.agents.ik.trr`.
    """

    def __init__(self, env, model: KinematicModel | None = None, *, feedback: bool = False,
                 feedback_tolerance: float = 5e-5, feedback_gain: float = 1.0, settle_speed: float = 2e-3,
                 hold_time: float = 0.3, **trr_options) -> None:
        if not 0.0 < feedback_gain <= 1.0:
            raise InvalidParameterError(f"feedback_gain must be in (0, 1]; got {feedback_gain!r}")
        self.env = env.unwrapped
        self.model = model if model is not None else self.env.model
        self.feedback = feedback
        self.feedback_tolerance = feedback_tolerance
        self.feedback_gain = float(feedback_gain)
        self.settle_speed = settle_speed
        self.hold_time = hold_time
        self.trr_options = trr_options
        self.last_result: IKResult | None = None
        self._goal: np.ndarray | None = None
        self._aim: np.ndarray | None = None
        self._solution: np.ndarray | None = None
        self._since_plan = 0.0

    def reset(self, obs=None, info=None) -> None:
        """Forget the previous goal (the next ``act`` plans from scratch)."""
        self._goal, self._aim, self._solution, self.last_result = None, None, None, None
        self._since_plan = 0.0

    def _plan(self, aim: np.ndarray) -> None:
        result = trr(self.model, aim, self._solution, **self.trr_options)
        self.last_result, self._aim, self._solution = result, aim, result.solution
        self._since_plan = 0.0

    @staticmethod
    def goal_from_observation(obs) -> np.ndarray:
        """The goal [m] in the env's base frame, from either observation form."""
        if isinstance(obs, dict):
            return np.asarray(obs["desired_goal"], dtype=float)
        return np.asarray(obs, dtype=float)[3:6]

    def act(self, obs) -> np.ndarray:
        """The normalised action that commands the IK solution for the observed goal."""
        goal = self.goal_from_observation(obs)
        if self._goal is None or not np.array_equal(goal, self._goal):
            self._goal = goal
            self._plan(goal)
        elif self.feedback and not isinstance(obs, dict):
            self._since_plan += self.env.dt
            obs = np.asarray(obs, dtype=float)
            miss, speed = obs[6:9], np.linalg.norm(obs[9:12])
            if self._since_plan >= self.hold_time - 1e-9 and speed < self.settle_speed \
                    and np.linalg.norm(miss) > self.feedback_tolerance:
                self._plan(self._aim + self.feedback_gain * miss)
        return self.env.model_to_action(self._solution)
