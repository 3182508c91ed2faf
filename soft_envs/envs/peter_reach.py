"""``soft_envs/PeterReach-v0``: reach a target point with the PETER soft arm.

Action (``Box(-1, 1, (3N,))``): the inflation-time set-point of every leg, normalised,
``t = (a + 1) / 2 · t_max`` [s]. Out-of-box actions are clipped (``info["action_clipped"]``).

Observation (flat ``Box``, float32, all in the arm's base frame, SI units):

====================  ========================================================
slice                 content
====================  ========================================================
``[0:3]``             tip position [m]
``[3:6]``             goal position [m]
``[6:9]``             goal − tip [m]
``[9:12]``            tip linear velocity [m/s] (zero for ``kinematic=True``)
``[12:12+3N]``        current inflation-time set-points, normalised to [−1, 1]
====================  ========================================================

With ``goal_conditioned=True`` the observation is a ``Dict`` with ``observation`` (tip,
velocity, set-points), ``achieved_goal`` (tip) and ``desired_goal`` (goal), and
``compute_reward`` recomputes the reward for relabelled goals (the distance term from the
goals, the action-rate term from ``info``; see
:class:`~soft_envs.envs.base.GoalConditionedMixin`).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):
``distance = −distance_weight · ‖goal − tip‖`` with ‖goal − tip‖ in metres and
``action_rate = −action_rate_weight · ‖a − a_prev‖²``. ``info["is_success"]`` when the
distance is below ``success_threshold`` (1 mm); ``info["distance"]`` is the distance [m]. The
default ``distance_weight = 100`` /m measures the distance in centimetres, the workspace's own
scale (the goals' standard deviation is about 1 cm per horizontal axis, the mean distance at a
2-module reset 24 mm), so a step's reward is O(1) (about −2.4 at the start, −0.1 at success), the
scale Stable-Baselines3's default hyper-parameters expect; in metres (weight 1) a step's
reward is about −0.02, too little signal for SAC. Goals are the PCC tip of uniformly random
inflation times (always reachable), drawn from the env's seeded RNG.

Physics (``physics="soft"``, the default): the compliant arm on the elastic soft-arm core
(:class:`~soft_envs.sim.peter_soft.SoftPeterBody`: every leg a spring of ``leg_stiffness`` about
its rest length, gravity and a tip ``payload`` deflect the arm) driven by pneumatic legs
(:class:`~soft_envs.sim.actuators.PneumaticLegs`): an action commands inflation times, every
leg's rest length moves towards ``l(t)`` at the paper's 10 mm/s while filling and at
``vent_rate`` while venting, after ``command_delay``; ``actuation="instant"`` puts the rest
lengths on the command at once. ``time_step = 1/240`` s, ``frame_skip = 24``: 10 Hz control and
50 steps (5 s) per episode, so that a 0 → 2 s fill completes and settles. The *ideal* settings
(``gravity=False``, ``payload=0``, ``actuation="instant"``) reproduce the PCC model exactly once
the arm has settled. ``info`` carries ``leg_inflation``, the legs' current state as inflation
times [s].

``physics="stiff"``: the arm of earlier versions — PyBullet position servos that hold the
commanded shape (:class:`~soft_envs.sim.peter_body.PeterBody`), PyBullet's direct MLCP
(Dantzig) solver (:func:`~soft_envs.sim.peter_body.configure_physics`), ``frame_skip = 12``
(20 Hz, 2.5 s episodes). PyBullet's Dantzig solver keeps about 8 KB per client that stepped
(native memory, not freed at disconnect): thousands of make/step/close cycles of the stiff env
grow the process; the soft default never uses it.

``kinematic=True`` runs the same spaces on the analytic model (``kinematics="pcc"`` or
``"tilted"``) with no simulator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pybullet
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.base import MAX_SOLVER_ITERATIONS, GoalConditionedMixin, SoftEnv
from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative, check_positive
from soft_envs.robots.peter import DEFAULT_LEG_STIFFNESS, Peter
from soft_envs.sim.actuators import PneumaticLegs
from soft_envs.sim.bullet import STANDARD_GRAVITY, connect
from soft_envs.sim.peter_body import PeterBody
from soft_envs.sim.peter_soft import DEFAULT_RAYLEIGH_STIFFNESS, SoftPeterBody
from soft_envs.sim.urdf import check_joint_count

PHYSICS = ("soft", "stiff")
ACTUATIONS = ("pneumatic", "instant")
MAX_COMMAND_DELAY = 10.0  # s


class PeterReachEnv(GoalConditionedMixin, SoftEnv, EzPickle):
    """Reach a target with a PETER arm (see the module docstring for spaces, rewards and physics).

    Args:
        n_modules: 1 to 4 stacked modules.
        links_per_module: rigid links per module arc in the PyBullet body (at most 127 joints
            in all: 4 modules take at most 14).
        kinematic: run on the analytic model only (no PyBullet), for fast learning.
        kinematics: ``"pcc"`` (the body's kinematics) or ``"tilted"`` (the paper's model;
            only with ``kinematic=True``).
        goal_conditioned: ``Dict`` observation with ``achieved_goal``/``desired_goal``.
        distance_weight: weight of the distance term [1/m] (100: the distance in centimetres).
        success_threshold: success distance [m].
        payload: tip payload [kg] (physics only).
        gravity: standard gravity on (physics only).
        physics: ``"soft"`` (compliant legs, default) or ``"stiff"`` (position servos, the
            earlier behaviour).
        actuation: ``"pneumatic"`` (legs fill at 10 mm/s, default) or ``"instant"`` (soft physics).
        leg_stiffness: stiffness of one leg [N/m] (soft physics; :class:`Peter`).
        vent_rate: leg shortening rate while venting [m/s] (soft, pneumatic; an assumption,
            default 10 mm/s, at least 5 mm/s).
        command_delay: delay between an action and the valves acting on it [s] (soft physics).
        rayleigh_stiffness: ``β`` of the Rayleigh damping ``D = β K`` [s] (soft physics).
        solver_iterations: PyBullet constraint-solver iterations (stiff physics).
        radius, gap: module geometry [m], passed to :class:`Peter`.
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``time_step`` = 1/240 s,
            ``frame_skip`` = 24 soft / 12 stiff and kinematic, ``width``, ``height``,
            ``action_rate_weight`` = 0).
    """

    def __init__(
        self,
        n_modules: int = 2,
        *,
        links_per_module: int = 3,
        kinematic: bool = False,
        kinematics: str = "pcc",
        goal_conditioned: bool = False,
        distance_weight: float = 100.0,
        success_threshold: float = 1e-3,
        payload: float = 0.0,
        gravity: bool = True,
        physics: str = "soft",
        actuation: str = "pneumatic",
        leg_stiffness: float = DEFAULT_LEG_STIFFNESS,
        vent_rate: float = 0.010,
        command_delay: float = 0.0,
        rayleigh_stiffness: float = DEFAULT_RAYLEIGH_STIFFNESS,
        solver_iterations: int = 100,
        radius: float = 0.045,
        gap: float = 0.017,
        **kwargs: Any,
    ) -> None:
        EzPickle.__init__(
            self, n_modules, links_per_module=links_per_module, kinematic=kinematic, kinematics=kinematics,
            goal_conditioned=goal_conditioned, distance_weight=distance_weight,
            success_threshold=success_threshold, payload=payload, gravity=gravity, physics=physics,
            actuation=actuation, leg_stiffness=leg_stiffness, vent_rate=vent_rate, command_delay=command_delay,
            rayleigh_stiffness=rayleigh_stiffness, solver_iterations=solver_iterations, radius=radius, gap=gap,
            **kwargs)
        if not kinematic and kinematics != "pcc":
            raise InvalidParameterError("the PyBullet body is the PCC arm: kinematics='tilted' needs kinematic=True")
        if physics not in PHYSICS:
            raise InvalidParameterError(f"physics must be one of {PHYSICS}; got {physics!r}")
        if actuation not in ACTUATIONS:
            raise InvalidParameterError(f"actuation must be one of {ACTUATIONS}; got {actuation!r}")
        check_nonnegative(distance_weight=distance_weight, payload=payload, command_delay=command_delay,
                          rayleigh_stiffness=rayleigh_stiffness)
        if command_delay > MAX_COMMAND_DELAY:
            raise InvalidParameterError(f"command_delay must be at most {MAX_COMMAND_DELAY:g} s; got {command_delay!r}")
        self.distance_weight = float(distance_weight)
        self.success_threshold = check_positive("success_threshold [m]", success_threshold)
        self.solver_iterations = check_integer("solver_iterations", solver_iterations, minimum=1, maximum=MAX_SOLVER_ITERATIONS)
        self.model = Peter(n_modules, radius=radius, gap=gap, kinematics=kinematics,
                           links_per_module=links_per_module, leg_stiffness=leg_stiffness)
        self.kinematic = bool(kinematic)
        if not self.kinematic:
            check_joint_count(self.model.chain())  # before a PyBullet client exists
        self.goal_conditioned = bool(goal_conditioned)
        self.payload = float(payload)
        self.gravity = bool(gravity)
        self.physics = physics
        self.actuation = actuation
        self.rayleigh_stiffness = float(rayleigh_stiffness)
        self.legs = PneumaticLegs(3 * self.model.n_modules, rest_length=self.model.leg_length_at_rest,
                                  fill_rate=self.model.leg_rate, vent_rate=vent_rate, delay=command_delay,
                                  instant=actuation == "instant")
        kwargs.setdefault("frame_skip", 24 if physics == "soft" and not kinematic else 12)
        super().__init__(use_physics=not kinematic, **kwargs)
        n_act = self.model.n_dof
        self.action_space = spaces.Box(-1.0, 1.0, shape=(n_act,), dtype=np.float32)
        # Bounds: positions within the arm's reach, velocities within ±10 m/s, set-points ±1.
        reach = float(self.model.forward(np.full(n_act, self.model.max_inflation_time))[2]) + 0.05
        pos_b, vel_b, act_b = np.full(3, reach), np.full(3, 10.0), np.ones(n_act)
        flat_high = np.concatenate((pos_b, pos_b, 2 * pos_b, vel_b, act_b)).astype(np.float32)
        flat = spaces.Box(-flat_high, flat_high, dtype=np.float32)
        if self.goal_conditioned:
            point = spaces.Box(-pos_b.astype(np.float32), pos_b.astype(np.float32), dtype=np.float32)
            obs_high = np.concatenate((pos_b, vel_b, act_b)).astype(np.float32)
            self.observation_space = spaces.Dict({
                "observation": spaces.Box(-obs_high, obs_high, dtype=np.float32),
                "achieved_goal": point, "desired_goal": point})
        else:
            self.observation_space = flat
        self.body: PeterBody | SoftPeterBody | None = None
        if self.client is not None:
            self.body = self._build_scene(self.client)
        self.inflation_times = np.zeros(n_act)
        self.goal = self.model.forward(self.inflation_times)
        self.tip = self.goal.copy()
        self.tip_velocity = np.zeros(3)

    def _physics_parameters(self) -> dict[str, Any]:
        if self.physics == "soft":  # the core integrates the arm; the client's gravity enters its dynamics
            return {"gravity": STANDARD_GRAVITY if self.gravity else 0.0}
        # The direct (Dantzig) solver holds the chain of position motors stiff (see PeterBody).
        return {"gravity": STANDARD_GRAVITY if self.gravity else 0.0, "solver_iterations": self.solver_iterations,
                "direct_solver": True}

    def _build_scene(self, client) -> PeterBody | SoftPeterBody:
        if self.physics == "soft":
            body = SoftPeterBody(client, self.model, payload=self.payload, gravity=STANDARD_GRAVITY if self.gravity else 0.0,
                                 rayleigh_stiffness=self.rayleigh_stiffness)
        else:
            body = PeterBody(client, self.model, payload=self.payload)
        self._goal_marker = None
        if self.render_mode is not None:  # a red sphere at the goal, for pictures only
            # A sphere at the goal and a pin above it: the pin stays visible when the arm's
            # top plate (radius ~45 mm) covers the reached goal.
            red = [1.0, 0.1, 0.1, 1.0]
            marker = client.createVisualShapeArray(
                shapeTypes=[pybullet.GEOM_SPHERE, pybullet.GEOM_CYLINDER], radii=[0.006, 0.002],
                lengths=[0.0, 0.05], rgbaColors=[red, red], visualFramePositions=[[0, 0, 0], [0, 0, 0.025]])
            self._goal_marker = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=marker,
                                                       basePosition=[0.0, 0.0, -1.0])
        return body

    @property
    def time(self) -> float:
        """Simulated time since the reset [s] (soft physics; 0 otherwise)."""
        return self.body.time if isinstance(self.body, SoftPeterBody) else 0.0

    # ------------------------------------------------------------------ hooks
    def _reset_model(self, options: dict[str, Any]) -> None:
        self.inflation_times = np.zeros(self.model.n_dof)
        self.goal = self.model.forward(self.model.sample(self.np_random))
        self.legs.reset(self.inflation_times)
        if self.body is not None:
            self.body.reset(self.inflation_times)
            if self._goal_marker is not None:
                self.client.resetBasePositionAndOrientation(self._goal_marker, self.goal.tolist(), [0, 0, 0, 1])
            self.tip, self.tip_velocity = self.body.tip_state()
        else:
            self.tip, self.tip_velocity = self.model.forward(self.inflation_times), np.zeros(3)

    def _command(self) -> np.ndarray:
        return self.inflation_times

    def _apply_action(self, action: np.ndarray) -> None:
        self.inflation_times = self.action_to_model(action)
        if isinstance(self.body, SoftPeterBody):
            self.legs.command(self.inflation_times, self.body.time)
        elif self.body is not None:
            self.body.command(self.inflation_times)

    def simulate(self, n_steps: int | None = None) -> None:
        """Advance ``n_steps`` (default ``frame_skip``) physics steps: soft physics moves the legs'
        rest lengths and integrates the arm; stiff physics steps PyBullet."""
        if not isinstance(self.body, SoftPeterBody):
            super().simulate(n_steps)
            return
        body, legs, dt = self.body, self.legs, self.time_step
        zero = np.zeros(body.n_dof)
        for _ in range(self.frame_skip if n_steps is None else n_steps):
            rest_end = body.rest_of_legs(legs.advance(dt, body.time))
            body.step(dt, zero, rest_end=rest_end)

    def _observation(self):
        if self.body is not None:
            self.tip, self.tip_velocity = self.body.tip_state()
        else:
            self.tip, self.tip_velocity = self.model.forward(self.inflation_times), np.zeros(3)
        setpoints = self.model_to_action(self.inflation_times)
        if self.goal_conditioned:
            return {
                "observation": np.concatenate((self.tip, self.tip_velocity, setpoints)).astype(np.float32),
                "achieved_goal": self.tip.astype(np.float32),
                "desired_goal": self.goal.astype(np.float32),
            }
        return np.concatenate((self.tip, self.goal, self.goal - self.tip, self.tip_velocity,
                               setpoints)).astype(np.float32)

    def distance(self) -> float:
        """Current tip-to-goal distance [m], from the float32 positions the observation shows.

        (So that ``compute_reward`` on the observation gives exactly the step's distance term,
        as goal-relabelling learners require; the rounding is below 1e-7 m.)
        """
        return float(self._distances(*self._observed_goals()))

    @staticmethod
    def _distances(achieved_goal, desired_goal) -> np.ndarray:
        diff = np.asarray(desired_goal, dtype=np.float64) - np.asarray(achieved_goal, dtype=np.float64)
        return np.sqrt(np.sum(diff * diff, axis=-1))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tip.astype(np.float32), self.goal.astype(np.float32)

    def _goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        return {"distance": -self.distance_weight * self._distances(achieved_goal, desired_goal)}

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        return self._step_goal_terms()

    def _extra_info(self) -> dict[str, Any]:
        d = self.distance()
        info = {"distance": d, "is_success": bool(d < self.success_threshold),
                "inflation_times": self.inflation_times.copy()}
        if isinstance(self.body, SoftPeterBody):
            info["leg_inflation"] = self.legs.inflation
        return info

    # ------------------------------------------------------------------ rendering
    def _camera(self) -> dict[str, Any]:
        height = self.model.forward(np.zeros(self.model.n_dof))[2]
        return {"target": (0.0, 0.0, 0.5 * height), "distance": 2.2 * height + 0.1, "yaw": 40.0, "pitch": -20.0}

    def _render_scene(self):
        if isinstance(self.body, SoftPeterBody):
            self.body.sync_bullet()
        if self.client is not None:
            return self.client
        if self._render_client is None:  # kinematic env: pose a body just for pictures
            self._render_client = connect(gui=False)
            self._render_body = PeterBody(self._render_client, self.model)
        self._render_body.reset(self.inflation_times)
        return self._render_client
