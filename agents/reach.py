"""Controllers acting in goal-reaching environments (``PeterReach-v0``) through ``step``: TRR, TRR or
SQP around the env's obstacles (:class:`ObstacleReachAgent`, :class:`SQPObstacleReachAgent`), and the
proportional law in task space (:class:`TaskFeedbackAgent`)."""

from __future__ import annotations

import inspect

import numpy as np
from numpy.typing import ArrayLike

from soft_envs import clock
from soft_envs.agents.ik.obstacles import DEFAULT_CLEARANCE, ObstacleTerms, check_clearance, obstacle_rows
from soft_envs.agents.ik.result import IKResult
from soft_envs.agents.ik.route import advance, arrival_pace, plan_route
from soft_envs.agents.ik.smooth_view import IKView
from soft_envs.agents.ik.sqp import sqp
from soft_envs.agents.ik.trust_region import trr
from soft_envs.collision import SHAPE_WIDTH
from soft_envs.exceptions import InvalidParameterError, check_integer, check_positive
from soft_envs.robots.base import KinematicModel

#: The default distance [m] a paced agent's route keeps beyond the plan's clearance (the legs' lag,
#: the soft body's motion and sag that the nominal model does not see).
DEFAULT_PATH_MARGIN = 1e-3
#: The control periods of motion over which a paced agent slows down as it arrives at a plan
#: (:func:`~soft_envs.agents.ik.route.arrival_pace`): a soft arm stopped from the route's full pace
#: swings past its plan by more than a few mm of clearance. Measured on realistic ``pcc-obstacles``
#: (seeds 0-79, SQP / TRR closed on the tip): 94 / 98 % at 0 (the full pace to the end), 94 / 99 % at 6,
#: 95 / 99 % at 10; held out (1000-1039 and 3000-3039): 96 / 95 %, 98 / 95-96 % (two runs), 98 / 96 %; realistic
#: ``peter-2-obstacles`` (1000-1039): 92 / 95 %, 98 / 95 %, 95 / 95 %.
ARRIVAL_PERIODS = 6


#: The task-space proportional law's default gain [per control period]: on realistic soft PETER
#: (valve delay, sensor latency) 0.2-0.25 puts the most goals within 1 mm; 0.4 rings (86 %).
TASK_FEEDBACK_GAIN = 0.2


class TaskFeedbackAgent:
    """The proportional law on the measured tip in task space: ``a = clip(k (goal − tip) / task_step,
    −1, 1)`` for an env with ``action_mode="task"`` (the action moves the tip's set-point by
    ``task_step · a`` [m] in the base frame). It reads ``goal − tip`` from the observation
    (``obs[6:9]`` [m], measured) and ``task_step`` [m] from the env: no model, no plan — the classical
    rival of a policy in the same action space.

    Args:
        env: a reaching env made with ``action_mode="task"``.
        gain: ``k``, the fraction of the measured error the set-point moves a control period (0, 1].
    """

    def __init__(self, env, gain: float = TASK_FEEDBACK_GAIN) -> None:
        base = env.unwrapped
        if getattr(base, "action_mode", None) != "task":
            raise InvalidParameterError("TaskFeedbackAgent needs an env made with action_mode='task'")
        self.gain = check_positive("gain", gain, 1.0)
        self.task_step = float(base.task_step)

    def reset(self, obs=None, info=None) -> None:
        """(Nothing to forget: the law is memoryless.)"""

    def act(self, obs) -> np.ndarray:
        """The task action ``(3,)`` float32 of a flat observation."""
        error = np.asarray(obs, dtype=np.float64)[6:9]
        return np.clip(self.gain * error / self.task_step, -1.0, 1.0).astype(np.float32)


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
    keeps the loop calm under measurement noise, latency and valve delay). With
    ``feedback_samples`` above 1 the miss is the mean over that many settled control periods: a
    camera's noise (the PCC arm's realistic 0.1-0.5 mm per axis) averages out of the correction.

    Args:
        env: a ``PeterReach-v0`` env (wrapped or not).
        model: the model to plan on; default the env's own (``env.unwrapped.model``). Planning
            on another model (e.g. the paper's tilted-plane one) measures the model gap.
        feedback: correct the aim point from the measured tip (open loop when False).
        feedback_tolerance: miss [m] below which the aim is kept.
        feedback_gain: fraction of the miss the aim moves by per correction, in ``(0, 1]``.
        settle_speed: tip speed [m/s] below which the arm counts as settled.
        feedback_samples: settled control periods whose mean miss makes one correction.
        hold_time: time [s] after a plan before the tip is judged (default 0.3 s: longer than
            the valves' delay the bench uses).
        ik_view: the coordinates the plans are solved in (an :class:`IKView`, e.g. the PCC arm's
            :class:`~soft_envs.agents.ik.smooth_view.StrainView`); default the model's own.
        **trr_options: passed to :func:`~soft_envs.agents.ik.trr`.
    """

    last_result: IKResult | None
    _solution: np.ndarray | None

    #: The solver (``solve(model, target, q0, **options)``; the obstacle agents pass ``obstacles=``).
    solver = staticmethod(trr)

    def __init__(self, env, model: KinematicModel | None = None, *, feedback: bool = False,
                 feedback_tolerance: float = 5e-5, feedback_gain: float = 1.0, settle_speed: float = 2e-3,
                 hold_time: float = 0.3, feedback_samples: int = 1, ik_view: IKView | None = None,
                 **trr_options) -> None:
        if not 0.0 < feedback_gain <= 1.0:
            raise InvalidParameterError(f"feedback_gain must be in (0, 1]; got {feedback_gain!r}")
        self.feedback_samples = check_integer("feedback_samples", feedback_samples, minimum=1)
        self._misses: list[np.ndarray] = []  # the settled misses [m] since the last correction
        self.env = env.unwrapped
        self.model = model if model is not None else self.env.model
        self.feedback = feedback
        self.feedback_tolerance = feedback_tolerance
        self.feedback_gain = float(feedback_gain)
        self.settle_speed = settle_speed
        self.hold_time = hold_time
        self.trr_options = trr_options
        #: The coordinates the plans are solved in (``None``: the model's own).
        self.ik_view = ik_view
        self.last_result: IKResult | None = None
        self._goal: np.ndarray | None = None
        self._aim: np.ndarray | None = None
        self._solution: np.ndarray | None = None
        self._since_plan = 0.0

    def reset(self, obs=None, info=None) -> None:
        """Forget the previous goal (the next ``act`` plans from scratch)."""
        self._goal, self._aim, self._solution, self.last_result = None, None, None, None
        self._since_plan = 0.0
        self._misses = []

    def _plan(self, aim: np.ndarray) -> None:
        result = self._solve(aim, self._solution, **self.trr_options)
        self.last_result, self._aim, self._solution = result, aim, result.solution
        self._since_plan = 0.0
        self._misses.clear()  # (samples of the plan before are no measure of this one)

    def _solve(self, aim: np.ndarray, q0: np.ndarray | None, **options) -> IKResult:
        """:attr:`solver`'s plan for ``aim`` [m] from ``q0``, solved in :attr:`ik_view`'s coordinates where
        there is one; the result's ``solution`` in the model's."""
        if self.ik_view is None:
            return self.solver(self.model, aim, q0, **options)
        return self.ik_view.solve(self.solver, aim, q0, **options)

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
            miss = self._settled_miss(np.asarray(obs, dtype=float))
            if miss is not None and self._aim is not None:
                self._plan(self._aim + self.feedback_gain * miss)
        return self.env.model_to_action(self._solution)

    def _settled_miss(self, obs: np.ndarray) -> np.ndarray | None:
        """The miss [m] to correct now: the mean of the observed misses (``obs[6:9]``) over the last
        ``feedback_samples`` control periods in which the arm was settled (``hold_time`` after the last
        plan, the tip slower than ``settle_speed``), when it exceeds ``feedback_tolerance``; ``None``
        while they are being gathered (a measurement's noise averages out over them)."""
        if self._since_plan < self.hold_time - 1e-9 or np.linalg.norm(obs[9:12]) >= self.settle_speed:
            self._misses.clear()
            return None
        self._misses.append(obs[6:9])
        if len(self._misses) < self.feedback_samples:
            return None
        miss = np.mean(self._misses, axis=0)
        self._misses.clear()
        return miss if np.linalg.norm(miss) > self.feedback_tolerance else None


def displaced_obstacles(rows: np.ndarray, correction: np.ndarray, goal: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Obstacle rows ``(S, 16)`` moved into the frame of a corrected aim: a feedback plan aims the
    nominal model at ``goal + correction`` so that the real tip lands on ``goal``; the real body is then
    the nominal one displaced by a share of ``-correction`` that grows from 0 at ``base`` to all of it at
    the tip (a model error that accumulates along the arm), so each obstacle moves by that share of
    ``+correction`` at its place along ``base -> goal`` (clipped to [0, 1]). All in the arm's base frame [m]
    (the agents pass its origin as ``base``)."""
    axis = goal - base
    share = np.clip((rows[:, 1:4] - base) @ axis / max(float(axis @ axis), 1e-12), 0.0, 1.0)
    out = rows.copy()
    out[:, 1:4] += share[:, None] * correction
    return out


class ObstacleReachAgent(TRRReachAgent):
    """:class:`TRRReachAgent` planning around the env's obstacles with the obstacle-aware TRR, and
    moving there along a route that keeps the body clear.

    At every :meth:`act` it reads the obstacles from ``env.unwrapped.obstacle_rows`` — packed shape
    rows ``(S, 16)`` (:mod:`soft_envs.collision`) in the arm's base frame, ``EMPTY`` rows no
    obstacle; an env without the attribute, or ``None``, has none — and plans an END configuration
    with ``trr(..., obstacles=rows, clearance=clearance)``: when the goal moves, when the obstacles
    change (re-planning the same aim point), and on the measured tip with ``feedback=True`` exactly
    as :class:`TRRReachAgent` does (judged once the set-points have arrived at the plan).
    :attr:`last_result` carries the plan's ``min_distance`` [m] and ``collision_free``.

    **Paced** (the default where the env tells the actuators' rates: ``model.leg_rate``,
    ``env.vent_rate`` and the control period ``env.dt``, PETER's legs): the agent does not command
    the plan at once — its legs would sweep the body through the obstacles on the way — but plans a
    route of straight segments in configuration space from its current set-points (what it commanded;
    the reset's from the observation) to the plan, every configuration on it at least
    ``clearance + path_margin`` from the obstacles (:func:`~soft_envs.agents.ik.route.plan_route`: the
    straight segment, else one waypoint around the obstacle, else a tree search), and commands, each
    control period, the next set-points along it within one period's motion of the legs (``step``: filling
    ``leg_rate`` and venting ``vent_rate`` [m/s], as inflation times; :attr:`step_limits`), so the
    legs, which move at those rates, follow the checked route within a step; over the route's last
    ``arrival_periods`` periods the steps shrink with what is left (an arm stopped from full pace swings
    past its plan). A start already closer than
    ``clearance + path_margin`` lets the route come a path margin closer than the start (not below half the
    clearance), so that it can leave: a new goal's route leaves it first, straight out along the distance's
    gradient, and keeps ``clearance + path_margin`` from there (:func:`~soft_envs.agents.ik.route.leave_start`;
    the feedback's local routes, short, keep the lowered distance throughout). ``path_margin`` covers
    what the nominal model does not see: the legs lagging a step and the soft body's motion and sag.
    The route search has a budget of its own, the solver's ``timeout``; without a route clear by then it
    steps straight at the plan. With ``feedback=True``
    (and ``approach=True``, the default) the loop is also closed during the approach: each period the
    measured tip is compared with the nominal model at the set-points commanded ``approach_lag`` periods
    before (the legs follow the paced route within a period), and when that error differs from the
    correction in use by more than ``approach_tolerance`` the plan and route are made again for the goal
    less the error, the obstacles displaced by it (:func:`displaced_obstacles`) — the route then keeps its
    margin from where the real body is, not the nominal one (a realistic arm misses by up to ~20 mm open
    loop; the path margin is 1 mm). Without the rates
    (``step=None`` on an env that does not give them, or ``paced=False``) it commands the plan at
    once, the path being the env's.

    Args:
        env: a goal-reaching env (wrapped or not) whose unwrapped env may have ``obstacle_rows``.
        model: the model to plan on (default the env's own); it must have a body backbone.
        clearance: minimum distance [m] between the body's surface and every obstacle at the plan.
        path_margin: extra distance [m] the route keeps beyond ``clearance``.
        paced: move along a checked route at the actuators' rates (above); ``False``: command the plan.
        step: ``(up, down)``: the largest change of each configuration coordinate per control period
            while it grows and while it falls (numbers or ``(n_dof,)``, the model's units); default
            from the env's rates (above).
        spacing: the route's configurations are checked no more than this apart in every coordinate
            (default half the smaller step).
        approach: with ``feedback=True``, also close the loop during the approach (above).
        approach_lag: control periods between the set-points commanded and the tip they are judged by
            during the approach.
        approach_tolerance: change of the model error [m] that makes a new plan during the approach.
        approach_every: control periods at least between two such plans.
        arrival_periods: the route's last this many control periods of motion slow down
            (:func:`~soft_envs.agents.ik.route.arrival_pace`); 0: the whole route at the pace of ``step``.
        approach_clearance: the clearance [m] of a new goal's first plan (default ``clearance``): larger, the
            arm first comes to rest where its model's error cannot make it touch, and the feedback's local
            plans (``clearance``) take it the rest of the way from there. A first plan that this clearance
            holds off the goal by more than ``approach_clearance − clearance`` (a goal beside an obstacle)
            is made again at ``clearance``.
        **options: :class:`TRRReachAgent`'s keywords (``feedback``, …) and the solver's.
    """

    route_clear: bool
    _route: list[np.ndarray]

    def __init__(self, env, model: KinematicModel | None = None, *, clearance: float = DEFAULT_CLEARANCE,
                 path_margin: float = DEFAULT_PATH_MARGIN, paced: bool = True,
                 step: tuple[ArrayLike, ArrayLike] | None = None, spacing: float | None = None,
                 approach: bool = True, approach_lag: int = 1, approach_tolerance: float = 1.5e-3,
                 approach_every: int = 3, approach_clearance: float | None = None,
                 arrival_periods: int = ARRIVAL_PERIODS, **options) -> None:
        super().__init__(env, model, **options)
        self.approach = bool(approach)
        self.approach_lag = check_integer("approach_lag", approach_lag, minimum=0)
        self.approach_tolerance = check_positive("approach_tolerance", approach_tolerance)
        self.approach_every = check_integer("approach_every", approach_every, minimum=1)
        self._commanded: list[np.ndarray] = []  # the last approach_lag + 1 set-points commanded (route coordinates)
        self._since_correction = 0  # control periods since the last correction during the approach
        self.clearance = check_clearance(clearance)
        #: The clearance [m] of a new goal's first plan (the feedback's local plans keep :attr:`clearance`).
        self.approach_clearance = self.clearance if approach_clearance is None else check_clearance(approach_clearance)
        self.arrival_periods = check_integer("arrival_periods", arrival_periods, minimum=0)
        self.path_margin = check_clearance(path_margin)
        self._rows: np.ndarray | None = None  # the obstacles of the last plan
        #: ``(up, down)`` ``(n_dof,)`` per control period, or ``None``: the plan commanded at once.
        self.step_limits = self._step_limits(step) if paced else None
        if spacing is None and self.step_limits is not None:
            spacing = 0.5 * float(min(self.step_limits[0].min(), self.step_limits[1].min()))
        self.spacing = None if spacing is None else check_positive("spacing", spacing)
        self._setpoint: np.ndarray | None = None  # what the agent commanded last
        self._route: list[np.ndarray] = []  # the waypoints ahead, the plan last
        #: Whether the route to the last plan was checked clear (``False``: stepping straight at it).
        self.route_clear = True

    def _step_limits(self, step) -> tuple[np.ndarray, np.ndarray] | None:
        n = self.model.n_dof
        if step is None:
            leg_rate = getattr(self.model, "leg_rate", None)
            vent_rate = getattr(self.env, "vent_rate", None)
            dt = getattr(self.env, "dt", None)
            if leg_rate is None or vent_rate is None or dt is None:
                return None
            # Inflation times: filling moves one second of inflation per second, venting vent/fill of one.
            step = (float(dt), float(dt) * float(vent_rate) / float(leg_rate))
        up, down = (np.broadcast_to(np.asarray(s, dtype=float), (n,)).copy() for s in step)
        if not (np.all(np.isfinite(up)) and np.all(np.isfinite(down)) and np.all(up > 0) and np.all(down > 0)):
            raise InvalidParameterError(f"step must be positive finite (up, down) changes per period; got {step!r}")
        return up, down

    def obstacles(self) -> np.ndarray:
        """The env's obstacle rows now ``(S, 16)`` (an empty array when it has none)."""
        rows = getattr(self.env, "obstacle_rows", None)
        return np.zeros((0, SHAPE_WIDTH)) if rows is None else np.array(rows, dtype=float).reshape(-1, SHAPE_WIDTH)

    def reset(self, obs=None, info=None) -> None:
        super().reset(obs, info)
        self._rows, self._setpoint, self._route, self.route_clear = None, None, [], True
        self._commanded, self._since_correction = [], 0

    def _plan(self, aim: np.ndarray, *, local: bool = False) -> None:
        rows = self.obstacles()
        present = obstacle_rows(rows)
        if self._goal is not None and present.shape[0] and not np.array_equal(aim, self._goal):
            present = displaced_obstacles(present, aim - self._goal, self._goal, np.zeros(3))  # the base: the origin
        q0 = self._solution if self._solution is not None else \
            (None if self._setpoint is None else self.from_route(self._setpoint))
        options = self.trr_options | {"restarts": 0} if local else self.trr_options
        clearance = self.clearance if local else self.approach_clearance
        result = self._solve(aim, q0, obstacles=present, clearance=clearance, **options)
        if clearance > self.clearance and not result.success and result.error > clearance - self.clearance:
            # held off the goal by more than the clearances differ: the approach clearance, not the
            # model, keeps it away (a goal beside an obstacle); plan at the clearance instead
            result = self._solve(aim, q0, obstacles=present, clearance=self.clearance, **options)
        self.last_result, self._aim, self._solution = result, aim, result.solution
        self._since_plan = 0.0
        self._misses.clear()
        self._rows = rows
        if self.step_limits is None or self._setpoint is None:
            return
        self._route, self.route_clear = [self.to_route(result.solution)], True
        if not present.shape[0]:
            return
        up, down = self.step_limits
        assert self.spacing is not None
        space = self.route_model
        terms = ObstacleTerms(space, present)
        required = self.clearance + self.path_margin
        near = terms.min_distance(self._setpoint)
        leave = None
        if near < required:  # a start closer than asked: the route may come a path margin closer (not below
            lowered = max(near - self.path_margin, 0.5 * self.clearance)  # half the clearance) to leave it;
            required, leave = (lowered, None) if local else (required, lowered)  # a new goal's leaves it first
        route = plan_route(terms, self._setpoint, self.to_route(result.solution), up=up,
                           down=down, lower=space.lower, upper=space.upper, required=required, spacing=self.spacing,
                           deadline=clock.now() + self.plan_timeout, seed=int(self.trr_options.get("seed", 0)),
                           leave=leave)
        if route is not None:
            self._route = route
        else:
            self.route_clear = False

    @property
    def plan_timeout(self) -> float:
        """The wall-clock budget [s] of a plan's solve, and again of its route search (the solver's
        ``timeout`` option, else the solver's own default)."""
        if "timeout" in self.trr_options:
            return float(self.trr_options["timeout"])
        return float(inspect.signature(self.solver).parameters["timeout"].default)

    def _observed_setpoint(self, obs) -> np.ndarray:
        """The set-points the observation reports (PeterReach's flat ``[12:12+n]``, normalised), else
        the middle of the bounds."""
        n = self.model.n_dof
        if not isinstance(obs, dict) and hasattr(self.env, "action_to_model"):
            values = np.asarray(obs, dtype=float)
            if values.size >= 12 + n:
                return np.asarray(self.env.action_to_model(values[12:12 + n]), dtype=float)
        return 0.5 * (self.model.lower + self.model.upper)

    def act(self, obs) -> np.ndarray:
        """The normalised action: the next set-points along the route to the obstacle-aware plan for
        the observed goal (paced), or the plan itself."""
        goal = self.goal_from_observation(obs)
        if self.step_limits is None:
            if self._goal is not None and self._aim is not None and self._rows is not None \
                    and np.array_equal(goal, self._goal) and not np.array_equal(self.obstacles(), self._rows):
                self._plan(self._aim)  # the obstacles moved: the same aim, around them
            return super().act(obs)
        if self._setpoint is None:
            self._setpoint = self._observed_setpoint(obs)
        arrived = not self._route
        if self._goal is None or not np.array_equal(goal, self._goal):
            self._goal = goal
            self._plan(goal)
        elif self._aim is not None and self._rows is not None and not np.array_equal(self.obstacles(), self._rows):
            self._plan(self._aim)  # the obstacles moved: the same aim, around them, from here
        elif self.feedback and self.approach and not arrived and not isinstance(obs, dict) and self._goal is not None \
                and self._aim is not None and len(self._commanded) > self.approach_lag:
            self._correct_approach(np.asarray(obs, dtype=float)[0:3])
        elif self.feedback and arrived and not isinstance(obs, dict) and self._aim is not None:
            self._since_plan += self.env.dt
            miss = self._settled_miss(np.asarray(obs, dtype=float))
            if miss is not None and self._solution is not None:
                # From the plan's own tip, not the aim: a plan the obstacles keep off its aim does not
                # wind the aim up. A correction re-plans from the plan alone (no random restarts).
                self._plan(self.model.forward(self._solution) + self.feedback_gain * miss, local=True)
        up, down = self.step_limits
        pace = arrival_pace(self._setpoint, self._route, up, down, self.arrival_periods)
        self._setpoint = advance(self._setpoint, self._route, pace * up, pace * down)
        self._commanded.append(self._setpoint)
        if len(self._commanded) > self.approach_lag + 1:
            self._commanded.pop(0)
        return self.env.model_to_action(self.from_route(self._setpoint))

    def _correct_approach(self, tip: np.ndarray) -> None:
        """Feedback while the route is being followed: the model error seen now (the measured ``tip``
        [m] less the nominal tip of the set-points commanded :attr:`approach_lag` periods ago); when it
        differs from the correction in use by more than :attr:`approach_tolerance`, at most every
        :attr:`approach_every` periods, plan again for the goal less that error — the obstacles displaced
        by it, so the new route keeps its margin from where the real body is."""
        assert self._goal is not None and self._aim is not None
        self._since_correction += 1
        error = tip - self.model.forward(self.from_route(self._commanded[-1 - self.approach_lag]))
        if self._since_correction >= self.approach_every \
                and np.linalg.norm(error - (self._goal - self._aim)) > self.approach_tolerance:
            self._since_correction = 0
            self._plan(self._goal - error, local=True)

    # The coordinates the route is planned and paced in (hooks): the model's own here.
    @property
    def route_model(self) -> KinematicModel:
        """The model whose configurations the route's are (bounds, body backbone)."""
        return self.model

    def to_route(self, q: np.ndarray) -> np.ndarray:
        """A configuration of :attr:`model` in the route's coordinates."""
        return q

    def from_route(self, x: np.ndarray) -> np.ndarray:
        """A configuration of the route's coordinates in :attr:`model`'s."""
        return x


class SQPObstacleReachAgent(ObstacleReachAgent):
    """:class:`ObstacleReachAgent` planning with the obstacle-aware SQP (:func:`~soft_envs.agents.ik.sqp`:
    the collision distances as SLSQP constraints) — the PCC arm's solver; ``**options`` go to ``sqp``."""

    solver = staticmethod(sqp)
