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
``action_rate = −action_rate_weight · ‖a − a_prev‖²``, and with ``success_reward > 0``
``success = success_reward · [‖goal − tip‖ < success_threshold]`` (a bonus on every step within the
threshold, of the measured tip: it sharpens the value near the goal, where the distance term's
slope is a tenth of a reward unit per millimetre). ``info["is_success"]`` when the
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
lengths on the command at once. ``time_step = 1/120`` s, ``frame_skip = 12``: 10 Hz control and
50 steps (5 s) per episode, so that a 0 → 2 s fill completes and settles. The *ideal* settings
(``gravity=False``, ``payload=0``, ``actuation="instant"``) reproduce the PCC model exactly once
the arm has settled. ``info`` carries ``leg_inflation``, the legs' current state as inflation
times [s].

Episode end: no early termination at the goal. With soft physics the episode terminates when the
arm leaves the PCC model (:meth:`PeterReachEnv.model_violation`: a load heavier than the legs
carry crushes a leg below half its length, a module bends past 180°, a non-finite state): the arm
is stopped at its last valid state and ``info["termination_reason"]`` says why.

``physics="stiff"``: the arm of earlier versions — PyBullet position servos that hold the
commanded shape (:class:`~soft_envs.sim.peter_body.PeterBody`), PyBullet's direct MLCP
(Dantzig) solver (:func:`~soft_envs.sim.peter_body.configure_physics`), ``frame_skip = 12``
(20 Hz, 2.5 s episodes). PyBullet's Dantzig solver keeps about 8 KB per client that stepped
(native memory, not freed at disconnect): thousands of make/step/close cycles of the stiff env
grow the process; the soft default never uses it.

``kinematic=True`` runs the same spaces on the analytic model (``kinematics="pcc"`` or
``"tilted"``) with no simulator.

Vector form: ``gym.make_vec("soft_envs/PeterReach-v0", num_envs=N, **kwargs)`` steps ``N`` arms
together (soft physics on the batched core, or kinematic), each sub-env this env's episode
(:mod:`soft_envs.envs.peter_reach_vector`); ``physics="stiff"`` gives a ``SyncVectorEnv``.

Realism (``realism=``, :mod:`soft_envs.sim.realism`; table :data:`PETER_REALISM`): the robot
the env simulates may differ from ``env.model``, the nominal model a controller plans with —
per-leg fill gains, length offsets and leaks (:meth:`PneumaticLegs.set_imperfections`), an
extra valve delay, noise and latency on the measured tip (the observation's tip, velocity and
goal − tip, and the reward; ``info["distance"]`` and ``is_success`` stay the true distance),
errors of the leg radius, and (soft physics) of the leg stiffness and module mass, and an
extra payload. ``info["realism"]`` of the reset holds the values drawn;
``reset(options={"keep_robot": True})`` keeps them (a new goal, the same robot: learn on it with
:func:`soft_envs.agents.nn.collect_samples`). On the kinematic variant the legs act at once
(after the delay, whole control periods) and the physics-only perturbations do not exist;
``physics="stiff"`` takes no realism.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.base import MAX_SOLVER_ITERATIONS, GoalConditionedMixin, SoftEnv
from soft_envs.envs.peter_parts import (
    DISTANCE_WEIGHT,
    LEG_RADIUS,
    MODULE_GAP,
    SOFT_CONTROL_PERIOD,
    SOFT_TIME_STEP,
    SUCCESS_THRESHOLD,
    VENT_RATE,
    reach_observation,
)
from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative, check_positive
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix
from soft_envs.robots.peter import DEFAULT_LEG_STIFFNESS, Peter
from soft_envs.sim.actuators import PneumaticLegs
from soft_envs.sim.bullet import STANDARD_GRAVITY, connect, pybullet
from soft_envs.sim.peter_body import PeterBody
from soft_envs.sim.peter_soft import DEFAULT_RAYLEIGH_STIFFNESS, SoftPeterBody
from soft_envs.sim.realism import DelayedSensor, Perturbation
from soft_envs.sim.single_core import BACKENDS
from soft_envs.sim.urdf import check_joint_count

PHYSICS = ("soft", "stiff")
ACTUATIONS = ("pneumatic", "instant")
MAX_COMMAND_DELAY = 5.0  # s: one episode of the soft env

#: PETER's sim-to-real perturbations (``realism=``); the physics-only ones are the last three.
PETER_REALISM: tuple[Perturbation, ...] = (
    Perturbation("leg_gain", "1", "fill rate of each leg relative to eq. 1's 10 mm/s", (0.7, 1.3),
                 "assumption: eq. 1 is a line fitted to 968 samples of *one* actuator (seed 000, Fig. 2; no "
                 "residual given); the other legs share only its design (printed bellows) and are fed "
                 "through tubes of different lengths: ±30 % per leg", ideal=1.0, valid=(0.1, 10.0),
                 per_element=True),
    Perturbation("supply_gain", "1", "fill rate of every leg together (the supply pressure)", (0.9, 1.1),
                 "assumption: a compressor cycling between its cut-in and cut-out pressures moves the flow "
                 "of every (choked) valve together, about ±10 %", ideal=1.0, valid=(0.1, 10.0)),
    Perturbation("leg_offset", "m", "length of each leg at zero inflation minus eq. 1's 42.926 mm",
                 (0.0, 2.14e-3), "seed 000 §2.2.1: the measured leg is 44 mm, 1.07 mm longer than the fit's "
                 "42.926 mm; ±1.07 mm about that per leg", valid=(-0.01, 0.01), per_element=True),
    Perturbation("leak_rate", "m/s", "shortening rate of an inflated leg whose valve is closed", (0.0, 3e-4),
                 "assumption: seed 000 names punctures and leaks as a cause of its real-robot error; "
                 "a slow leak, up to 1.5 mm over a 5 s episode", valid=(0.0, 0.01), per_element=True),
    Perturbation("command_delay", "s", "valve delay added to the command_delay keyword", (0.0, 0.15),
                 "assumption: solenoid valves and a serial link; the pneumatic regulators of seed 004 "
                 "show 100–150 ms", valid=(0.0, MAX_COMMAND_DELAY)),
    Perturbation("observation_noise", "m", "standard deviation of the measured tip position, per axis",
                 (1e-4, 3e-4), "assumption: the paper's infrared motion-capture cameras (seed 000 §4.2), "
                 "sub-millimetre", valid=(0.0, 0.1)),
    Perturbation("observation_latency", "s", "age of the measured tip (whole control periods)", (0.0, 0.1),
                 "assumption: one or two camera frames and their processing", valid=(0.0, MAX_COMMAND_DELAY)),
    Perturbation("base_tilt", "rad", "rotation of the arm's base about the x and y axes of the frame the "
                 "goals and measurements are in", (-0.035, 0.035),
                 "assumption: the base plate's mounting and the registration of the cameras' frame, ±2°",
                 valid=(-0.2, 0.2), per_element=True),
    Perturbation("radius_error", "1", "relative error of the leg-circle radius (45 mm)", (-0.1, 0.1),
                 "assumption: the paper does not give the radius (SPEC section 2)", valid=(-0.5, 1.0)),
    Perturbation("leg_stiffness_error", "1", "relative error of the leg stiffness (1300 N/m)", (-0.3, 0.3),
                 "assumption: the stiffness is itself an assumption (Peter.leg_stiffness)", valid=(-0.9, 10.0)),
    Perturbation("mass_error", "1", "relative error of the module mass (0.12 kg)", (-0.2, 0.2),
                 "assumption: the module mass is an assumption of the model", valid=(-0.9, 10.0)),
    Perturbation("payload", "kg", "tip payload added to the payload keyword", (0.0, 0.5),
                 "assumption: up to the 0.5 kg the arm carries 'without changing its kinematic model' "
                 "(Peter.leg_stiffness)", valid=(0.0, 5.0)),
)
PHYSICS_ONLY_REALISM = ("leg_stiffness_error", "mass_error", "payload")
PLANT_REALISM = ("base_tilt", "radius_error") + PHYSICS_ONLY_REALISM  # change the simulated arm


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
        success_reward: the ``success`` term's bonus per step within ``success_threshold``
            (default 0: no such term).
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
        backend: soft physics' terms and step: ``"batched"`` (the batched core with one arm, default)
            or ``"pybullet"`` (PyBullet's mass matrix and inverse dynamics: the reference).
        realism: ``"ideal"`` (default), ``"realistic"`` or a dict (:data:`PETER_REALISM`).
        solver_iterations: PyBullet constraint-solver iterations (stiff physics).
        radius, gap: module geometry [m], passed to :class:`Peter`.
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``time_step`` = 1/120 s soft (the
            integrator is second order: 0.09 % of the path's span from a converged run with a
            0.5 kg payload, ``soft-envs bench convergence``) / 1/240 s stiff and kinematic,
            ``frame_skip`` = 0.1 s / ``time_step`` soft / 12 stiff and kinematic, ``width``, ``height``,
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
        distance_weight: float = DISTANCE_WEIGHT,
        success_threshold: float = SUCCESS_THRESHOLD,
        success_reward: float = 0.0,
        payload: float = 0.0,
        gravity: bool = True,
        physics: str = "soft",
        actuation: str = "pneumatic",
        leg_stiffness: float = DEFAULT_LEG_STIFFNESS,
        vent_rate: float = VENT_RATE,
        command_delay: float = 0.0,
        rayleigh_stiffness: float = DEFAULT_RAYLEIGH_STIFFNESS,
        backend: str = "batched",
        solver_iterations: int = 100,
        radius: float = LEG_RADIUS,
        gap: float = MODULE_GAP,
        realism: str | dict[str, Any] | None = "ideal",
        **kwargs: Any,
    ) -> None:
        EzPickle.__init__(
            self, n_modules, links_per_module=links_per_module, kinematic=kinematic, kinematics=kinematics,
            goal_conditioned=goal_conditioned, distance_weight=distance_weight,
            success_threshold=success_threshold, success_reward=success_reward, payload=payload, gravity=gravity,
            physics=physics,
            actuation=actuation, leg_stiffness=leg_stiffness, vent_rate=vent_rate, command_delay=command_delay,
            rayleigh_stiffness=rayleigh_stiffness, backend=backend, solver_iterations=solver_iterations,
            radius=radius, gap=gap,
            realism=realism, **kwargs)
        if not kinematic and kinematics != "pcc":
            raise InvalidParameterError("the PyBullet body is the PCC arm: kinematics='tilted' needs kinematic=True")
        if physics not in PHYSICS:
            raise InvalidParameterError(f"physics must be one of {PHYSICS}; got {physics!r}")
        if actuation not in ACTUATIONS:
            raise InvalidParameterError(f"actuation must be one of {ACTUATIONS}; got {actuation!r}")
        check_nonnegative(distance_weight=distance_weight, success_reward=success_reward, payload=payload,
                          command_delay=command_delay, rayleigh_stiffness=rayleigh_stiffness)
        if command_delay > MAX_COMMAND_DELAY:
            raise InvalidParameterError(f"command_delay must be at most {MAX_COMMAND_DELAY:g} s; got {command_delay!r}")
        self.distance_weight = float(distance_weight)
        self.success_threshold = check_positive("success_threshold [m]", success_threshold)
        self.success_reward = float(success_reward)
        self.solver_iterations = check_integer("solver_iterations", solver_iterations, minimum=1,
                                               maximum=MAX_SOLVER_ITERATIONS)
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
        if backend not in BACKENDS:
            raise InvalidParameterError(f"backend must be one of {BACKENDS}; got {backend!r}")
        self.backend = backend
        self.command_delay = float(command_delay)
        self.legs = PneumaticLegs(3 * self.model.n_modules, rest_length=self.model.leg_length_at_rest,
                                  fill_rate=self.model.leg_rate, vent_rate=vent_rate, delay=command_delay,
                                  instant=actuation == "instant" or self.kinematic)
        if physics == "soft" and not kinematic:  # 10 Hz control whatever the physics step
            kwargs.setdefault("time_step", SOFT_TIME_STEP)
            step = kwargs["time_step"]
            if isinstance(step, (int, float)) and math.isfinite(step) and step >= 1e-6:  # else SoftEnv says why
                kwargs.setdefault("frame_skip", max(1, round(SOFT_CONTROL_PERIOD / step)))
        kwargs.setdefault("frame_skip", 12)
        super().__init__(use_physics=not kinematic, realism=realism, **kwargs)
        if physics == "stiff" and not self.kinematic and not self.realism.is_ideal():
            raise InvalidParameterError("realism needs physics='soft' or kinematic=True (the stiff servo "
                                        "body has no legs to perturb)")
        self._check_plant_ranges()
        self._check_load()
        self.plant = self.model.with_kinematics("pcc" if not self.kinematic else kinematics)
        self.sensor = DelayedSensor()
        self.clock = 0.0  # s, the kinematic variant's time
        self.stop_reason: str | None = None  # why the soft arm stopped (outside its model), until the reset
        self.base_rotation = np.eye(3)  # the arm's base in the goals' frame (realism)
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
        body: PeterBody | SoftPeterBody
        if self.physics == "soft":
            body = SoftPeterBody(client, self.model, payload=self.payload,
                                 gravity=STANDARD_GRAVITY if self.gravity else 0.0,
                                 rayleigh_stiffness=self.rayleigh_stiffness, backend=self.backend)
        else:
            body = PeterBody(client, self.model, payload=self.payload)
        self.goal_marker = None
        if self.render_mode is not None:  # a red sphere at the goal, for pictures only
            # A sphere at the goal and a pin above it: the pin stays visible when the arm's
            # top plate (radius ~45 mm) covers the reached goal.
            red = [1.0, 0.1, 0.1, 1.0]
            marker = client.createVisualShapeArray(
                shapeTypes=[pybullet.GEOM_SPHERE, pybullet.GEOM_CYLINDER], radii=[0.006, 0.002],
                lengths=[0.0, 0.05], rgbaColors=[red, red], visualFramePositions=[[0, 0, 0], [0, 0, 0.025]])
            self.goal_marker = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=marker,
                                                       basePosition=[0.0, 0.0, -1.0])
        return body

    @property
    def time(self) -> float:
        """Time since the reset [s] (soft physics, or the kinematic variant under realism; else 0)."""
        return self.body.time if isinstance(self.body, SoftPeterBody) else self.clock

    def _realism_table(self) -> tuple[Perturbation, ...]:
        if self.kinematic:
            return tuple(p for p in PETER_REALISM if p.name not in PHYSICS_ONLY_REALISM)
        return PETER_REALISM

    def realism_sizes(self) -> dict[str, int]:
        n_legs = 3 * self.model.n_modules
        return {"leg_gain": n_legs, "leg_offset": n_legs, "leak_rate": n_legs, "base_tilt": 2}

    def _apply_realism(self) -> None:
        """Give the legs, the sensor and the simulated arm this episode's perturbations."""
        drawn = self.perturbations
        self.legs.set_imperfections(drawn["leg_gain"] * drawn["supply_gain"], drawn["leg_offset"],
                                    drawn["leak_rate"])
        self.legs.set_delay(self.command_delay + drawn["command_delay"])
        steps = int(round(drawn["observation_latency"] / self.dt))
        noise = np.r_[np.full(3, drawn["observation_noise"]), np.zeros(3)]  # tip [m]; velocity noise-free
        self.sensor = DelayedSensor(noise, steps, rng=self.realism_rng)
        tilt = np.r_[drawn["base_tilt"], 0.0]
        self.base_rotation = quaternion_to_matrix(quaternion_from_rotation_vector(tilt))
        if any(not self.realism.is_ideal(name) for name in PLANT_REALISM if name in drawn):
            m = self.model
            self.plant = m.with_parameters(
                radius=m.radius * (1.0 + drawn["radius_error"]), kinematics=self.plant.kinematics,
                module_mass=m.module_mass * (1.0 + drawn.get("mass_error", 0.0)),
                leg_stiffness=m.leg_stiffness * (1.0 + drawn.get("leg_stiffness_error", 0.0)))
            if isinstance(self.body, SoftPeterBody):  # the simulated arm becomes the plant
                self.body.set_model(self.plant, self.payload + drawn["payload"])
                self.body.set_base_orientation(tuple(quaternion_from_rotation_vector(tilt)))

    _PLANT_ERRORS = (("radius_error", "radius"), ("mass_error", "module_mass"),
                     ("leg_stiffness_error", "leg_stiffness"))

    def _check_plant_ranges(self) -> None:
        """Refuse, at construction, a realism range that would make the simulated arm invalid at a
        reset (e.g. ``radius=1.0`` with a ``radius_error`` up to +10 %: a radius above 1 m): the arm
        is built at both ends of each relative-error range."""
        for name, parameter in self._PLANT_ERRORS:
            if name not in self.realism.ranges or self.realism.is_ideal(name):
                continue
            for error in self.realism.ranges[name]:
                value = getattr(self.model, parameter) * (1.0 + error)
                try:
                    self.model.with_parameters(**{parameter: value})
                except InvalidParameterError as exc:
                    raise InvalidParameterError(
                        f"realism {name!r} {self.realism.ranges[name]} with {parameter}="
                        f"{getattr(self.model, parameter)!r} gives an invalid simulated arm: {exc}") from None

    def _check_load(self) -> None:
        """Refuse, at construction, a load the legs cannot carry even standing straight: the bottom
        module's three legs under the weight of the payload and the modules (at the heaviest and
        softest the realism ranges draw) would compress by more than half their length (the arm
        would collapse at the first step; :meth:`model_violation`)."""
        if self.kinematic or self.physics != "soft" or not self.gravity:
            return
        ranges = self.realism.ranges
        payload = self.payload + (ranges["payload"][1] if "payload" in ranges else 0.0)
        mass = self.model.module_mass * (1.0 + (ranges["mass_error"][1] if "mass_error" in ranges else 0.0))
        stiffness = self.model.leg_stiffness * (1.0 + (ranges["leg_stiffness_error"][0]
                                                       if "leg_stiffness_error" in ranges else 0.0))
        weight = STANDARD_GRAVITY * (payload + self.model.n_modules * mass)
        compression = weight / (3.0 * stiffness)
        if compression > 0.5 * self.model.leg_length_at_rest:
            raise InvalidParameterError(
                f"the legs ({stiffness:g} N/m each) cannot carry {payload:g} kg of payload on {self.model.n_modules} "
                f"modules: standing straight they would compress by {1e3 * compression:.0f} mm, more than half their "
                f"{1e3 * self.model.leg_length_at_rest:.1f} mm; use stiffer legs or a lighter payload")

    # ------------------------------------------------------------------ hooks
    def _reset_model(self, options: dict[str, Any]) -> None:
        self.inflation_times = np.zeros(self.model.n_dof)
        self.goal = self.model.forward(self.draw_task(self.np_random))
        if not self.realism.is_ideal():
            self._apply_realism()
        self.legs.reset(self.inflation_times)
        self.clock = 0.0
        self.stop_reason = None
        if self.body is not None:
            self.body.reset(self.inflation_times)
            if isinstance(self.body, SoftPeterBody) and self.legs.gain is not None:  # offsets at rest
                self.body.set_state(self.body.rest_of_legs(self.legs.actual_lengths),
                                    reference=np.zeros(self.model.n_dof))
                self.body.set_rest_legs(self.legs.actual_lengths)
            if self.goal_marker is not None:
                self.client.resetBasePositionAndOrientation(self.goal_marker, self.goal.tolist(), [0, 0, 0, 1])
        self._read_tip(reset=True)

    def draw_task(self, rng: np.random.Generator) -> np.ndarray:
        """A reset's task draw from ``rng``: the inflation times [s] whose nominal PCC tip is the goal
        (uniform within the bounds; always reachable)."""
        return self.model.sample(rng)

    def _command(self) -> np.ndarray:
        return self.inflation_times

    def _apply_action(self, action: np.ndarray) -> None:
        self.inflation_times = self.action_to_model(action)
        if isinstance(self.body, SoftPeterBody):
            self.legs.command(self.inflation_times, self.body.time)
        elif self.body is not None:
            self.body.command(self.inflation_times)
        elif not self.realism.is_ideal():
            self.legs.command(self.inflation_times, self.clock)

    def simulate(self, n_steps: int | None = None) -> None:
        """Advance ``n_steps`` (default ``frame_skip``) physics steps: soft physics moves the legs'
        rest lengths and integrates the arm; stiff physics steps PyBullet."""
        if self.body is None and not self.realism.is_ideal():  # kinematic: the legs over the period
            n = self.frame_skip if n_steps is None else n_steps
            self.legs.advance(n * self.time_step, self.clock)
            self.clock += n * self.time_step
            return
        if not isinstance(self.body, SoftPeterBody):
            super().simulate(n_steps)
            return
        body, legs, dt = self.body, self.legs, self.time_step
        zero = np.zeros(body.n_dof)
        for _ in range(self.frame_skip if n_steps is None else n_steps):
            if self.stop_reason is not None:  # the arm stays where it was stopped until the reset
                break
            last_valid = body.snapshot()
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    rest_end = body.rest_of_legs(legs.advance(dt, body.time))
                    body.step(dt, zero, rest_end=rest_end)
                self.stop_reason = self.model_violation()
            except np.linalg.LinAlgError:
                self.stop_reason = "the arm's mass matrix became singular: it collapsed beyond the PCC model"
            if self.stop_reason is not None:
                body.restore(last_valid, at_rest=True)

    def model_violation(self) -> str | None:
        """Why the soft arm's state is outside the PCC model's validity, or ``None``.

        Valid: finite; every leg longer than half its length at zero inflation (a heavier load
        than the legs can carry — a payload of kilograms on soft legs — crushes them through
        that; the model has no end stop); every module bent by at most π (beyond it the arc folds
        through itself); rates below 1e3 per second (m/s, rad/s). Always valid without soft physics."""
        body = self.body
        if not isinstance(body, SoftPeterBody):
            return None
        if not body.is_finite():
            return "the state is not finite"
        shortest = float(body.leg_lengths().min())
        if shortest < 0.5 * self.model.leg_length_at_rest:
            full = 1e3 * self.model.leg_length_at_rest
            return (f"a leg crushed to {1e3 * shortest:.1f} mm (< half its {full:.1f} mm): the load is more than "
                    "the legs carry, beyond the PCC model")
        bends = np.hypot(body.u[1::3], body.u[2::3])
        if bends.max() > np.pi:
            return f"a module bent by {np.degrees(bends.max()):.0f}° > 180°: beyond the PCC model"
        if np.abs(body.w).max() > 1e3:
            return "a rate above 1e3 /s: the arm is driven beyond its model"
        return None

    def _read_tip(self, reset: bool = False) -> None:
        """The true tip state (:attr:`tip`, :attr:`tip_velocity`) and its measurement
        (:attr:`measured_tip`, :attr:`measured_velocity`) through the sensor."""
        if self.body is not None:
            self.tip, self.tip_velocity = self.body.tip_state()
        elif self.realism.is_ideal():
            self.tip, self.tip_velocity = self.model.forward(self.inflation_times), np.zeros(3)
        else:
            self.tip, self.tip_velocity = self.plant.forward(self.legs.inflation), np.zeros(3)
        if not self.realism.is_ideal("base_tilt"):  # the base frame -> the goals' frame
            self.tip, self.tip_velocity = self.base_rotation @ self.tip, self.base_rotation @ self.tip_velocity
        state = np.concatenate((self.tip, self.tip_velocity))
        measured = self.sensor.reset(state) if reset else self.sensor.read(state)
        self.measured_tip, self.measured_velocity = measured[:3], measured[3:]

    def _observation(self):
        self._read_tip()
        return reach_observation(self.measured_tip, self.goal, self.measured_velocity,
                                 self.model_to_action(self.inflation_times), self.goal_conditioned)

    def distance(self) -> float:
        """Current true tip-to-goal distance [m], from the positions rounded to float32 as the
        observation shows them.

        (So that, without observation noise, ``compute_reward`` on the observation gives exactly
        the step's distance term, as goal-relabelling learners require; the rounding is below
        1e-7 m. The reward uses the measured tip.)
        """
        return float(self.distances(self.tip.astype(np.float32), self.goal.astype(np.float32)))

    @staticmethod
    def distances(achieved_goal, desired_goal) -> np.ndarray:
        diff = np.asarray(desired_goal, dtype=np.float64) - np.asarray(achieved_goal, dtype=np.float64)
        return np.sqrt(np.sum(diff * diff, axis=-1))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.measured_tip.astype(np.float32), self.goal.astype(np.float32)

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        distance = self.distances(achieved_goal, desired_goal)
        terms: dict[str, Any] = {"distance": -self.distance_weight * distance}
        if self.success_reward > 0.0:
            terms["success"] = self.success_reward * (distance < self.success_threshold)
        return terms

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        return self._step_goal_terms()

    def _terminated(self) -> bool:
        return self.stop_reason is not None

    def _extra_info(self) -> dict[str, Any]:
        d = self.distance()
        info = {"distance": d, "is_success": bool(d < self.success_threshold),
                "inflation_times": self.inflation_times.copy()}
        if isinstance(self.body, SoftPeterBody) or not self.realism.is_ideal():
            info["leg_inflation"] = self.legs.inflation
        if self.stop_reason is not None:
            info["termination_reason"] = self.stop_reason
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
