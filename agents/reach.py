"""IK controllers acting in goal-reaching environments (``PeterReach-v0``) through ``step``: TRR, and
TRR or SQP around the env's obstacles (:class:`ObstacleReachAgent`, :class:`SQPObstacleReachAgent`)."""

from __future__ import annotations

import numpy as np

from soft_envs.agents.ik.obstacles import DEFAULT_CLEARANCE, check_clearance, obstacle_rows
from soft_envs.agents.ik.result import IKResult
from soft_envs.agents.ik.sqp import sqp
from soft_envs.agents.ik.trust_region import trr
from soft_envs.collision import SHAPE_WIDTH
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


class ObstacleReachAgent(TRRReachAgent):
    """:class:`TRRReachAgent` planning around the env's obstacles with the obstacle-aware TRR.

    At every :meth:`act` it reads the obstacles from ``env.unwrapped.obstacle_rows`` — packed shape
    rows ``(S, 16)`` (:mod:`soft_envs.collision`) in the arm's base frame, ``EMPTY`` rows no
    obstacle; an env without the attribute, or ``None``, has none — and plans with
    ``trr(..., obstacles=rows, clearance=clearance)``: when the goal moves, when the obstacles
    change (re-planning the same aim point), and on the measured tip with ``feedback=True``
    exactly as :class:`TRRReachAgent` does. :attr:`last_result` carries the plan's
    ``min_distance`` [m] and ``collision_free``. The plan is a configuration clear of the
    obstacles; the path the arm takes to it is the env's (the solver plans no motion).

    Args:
        env: a goal-reaching env (wrapped or not) whose unwrapped env may have ``obstacle_rows``.
        model: the model to plan on (default the env's own); it must have a body backbone.
        clearance: minimum distance [m] between the body's surface and every obstacle.
        **options: :class:`TRRReachAgent`'s keywords (``feedback``, …) and the solver's.
    """

    #: The obstacle-aware solver (``solve(model, target, q0, obstacles=, clearance=, **options)``).
    solver = staticmethod(trr)

    def __init__(self, env, model: KinematicModel | None = None, *, clearance: float = DEFAULT_CLEARANCE,
                 **options) -> None:
        super().__init__(env, model, **options)
        self.clearance = check_clearance(clearance)
        self._rows: np.ndarray | None = None  # the obstacles of the last plan

    def obstacles(self) -> np.ndarray:
        """The env's obstacle rows now ``(S, 16)`` (an empty array when it has none)."""
        rows = getattr(self.env, "obstacle_rows", None)
        return np.zeros((0, SHAPE_WIDTH)) if rows is None else np.array(rows, dtype=float).reshape(-1, SHAPE_WIDTH)

    def reset(self, obs=None, info=None) -> None:
        super().reset(obs, info)
        self._rows = None

    def _plan(self, aim: np.ndarray) -> None:
        rows = self.obstacles()
        result = self.solver(self.model, aim, self._solution, obstacles=obstacle_rows(rows), clearance=self.clearance,
                             **self.trr_options)
        self.last_result, self._aim, self._solution = result, aim, result.solution
        self._since_plan = 0.0
        self._rows = rows

    def act(self, obs) -> np.ndarray:
        """The normalised action that commands the obstacle-aware IK solution for the observed goal."""
        goal = self.goal_from_observation(obs)
        if self._goal is not None and self._aim is not None and self._rows is not None \
                and np.array_equal(goal, self._goal) and not np.array_equal(self.obstacles(), self._rows):
            self._plan(self._aim)  # the obstacles moved: the same aim, around them
        return super().act(obs)


class SQPObstacleReachAgent(ObstacleReachAgent):
    """:class:`ObstacleReachAgent` planning with the obstacle-aware SQP (:func:`~soft_envs.agents.ik.sqp`:
    the collision distances as SLSQP constraints) — the PCC arm's solver; ``**options`` go to ``sqp``."""

    solver = staticmethod(sqp)
