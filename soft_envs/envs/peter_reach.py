"""``soft_envs/PeterReach-v0``: reach a target point with the PETER soft arm.

Action (``Box(-1, 1, (3N,))``): the inflation-time set-point of every leg, normalised,
``t = (a + 1) / 2 · t_max`` [s]. Out-of-box actions are clipped (``info["action_clipped"]``).
With ``action_mode="task"`` the action is ``Box(-1, 1, (3,))``, a displacement of the tip's
set-point by up to ``task_step`` (2 mm) per axis and step in the base frame, turned into the legs'
set-points through the nominal model's damped least-squares Jacobian (:meth:`PeterReachEnv.command_jacobian`;
:mod:`soft_envs.envs.closed_loop`), the observation holding the set-points as in delta mode.

Observation (flat ``Box``, float32, all in the arm's base frame, SI units):

====================  ========================================================
slice                 content
====================  ========================================================
``[0:3]``             tip position [m]
``[3:6]``             goal position [m]
``[6:9]``             goal − tip [m]
``[9:12]``            tip linear velocity [m/s] (zero for ``kinematic=True``)
``[12:12+3N]``        current inflation-time set-points, normalised to [−1, 1]
``[12+3N:]``          with ``obstacles=M``: each obstacle's centre [m] and radius [m] (0: none)
====================  ========================================================

With ``obstacles=M`` (1 to 8) every reset draws ``M`` spheres near the straight path from the
start's tip to the goal, clear of the arm's body at the start and at the goal's configuration
(:mod:`soft_envs.envs.obstacle_course`); the arm's body (capsules on its backbone) touches them
through the soft-arm core's contact (:mod:`soft_envs.sim.contact`). ``info`` then has
``collisions`` (contacts with an obstacle so far this episode: each obstacle counts once per
touch), ``penetration`` [m] (the deepest in this step's physics steps) and ``contact_force`` [N]
(the total normal force on the arm at the step's end), and ``is_success`` needs the goal within
``success_threshold`` without a collision this episode.

With ``goal_conditioned=True`` the observation is a ``Dict`` with ``observation`` (tip,
velocity, set-points), ``achieved_goal`` (tip) and ``desired_goal`` (goal), and
``compute_reward`` recomputes the reward for relabelled goals (the distance term from the
goals, the action-rate term from ``info``; see
:class:`~soft_envs.envs.env_goals.GoalConditionedMixin`).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):
``distance = −distance_weight · ‖goal − tip‖`` with ‖goal − tip‖ in metres and
``action_rate = −action_rate_weight · ‖a − a_prev‖²``, and with ``success_reward > 0``
``success = success_reward · [‖goal − tip‖ < success_threshold]`` (a bonus on every step within the
threshold, of the measured tip: it sharpens the value near the goal, where the distance term's
slope is a tenth of a reward unit per millimetre), and with ``obstacles`` and ``collision_weight > 0``
``collision = −collision_weight · [an obstacle touched during the step]`` (the penalty a learner
needs to go around them). ``info["is_success"]`` when the
distance is below ``success_threshold`` (1 mm); ``info["distance"]`` is the distance [m]. The
default ``distance_weight = 100`` /m measures the distance in centimetres, the workspace's own
scale (the goals' standard deviation is about 1 cm per horizontal axis, the mean distance at a
2-module reset 24 mm), so a step's reward is O(1) (about −2.4 at the start, −0.1 at success), the
scale Stable-Baselines3's default hyper-parameters expect; in metres (weight 1) a step's
reward is about −0.02, too little signal for SAC. Goals are the PCC tip of uniformly random
inflation times (always reachable), drawn from the env's seeded RNG.

Physics (``physics="soft"``, the default): the compliant arm on the elastic soft-arm core
(every leg a spring of ``leg_stiffness`` about its rest length, gravity and a tip ``payload``
deflect the arm) driven by pneumatic legs: an action commands inflation times, every
leg's rest length moves towards ``l(t)`` at the paper's 10 mm/s while filling and at
``vent_rate`` while venting, after ``command_delay``; ``actuation="instant"`` puts the rest
lengths on the command at once. ``time_step = 1/120`` s, ``frame_skip = 12``: 10 Hz control and
50 steps (5 s) per episode, so that a 0 → 2 s fill completes and settles. The *ideal* settings
(``gravity=False``, ``payload=0``, ``actuation="instant"``) reproduce the PCC model exactly once
the arm has settled. ``info`` carries ``leg_inflation``, the legs' current state as inflation
times [s]. What happens to the arm (legs, realism, physics steps, validity, sensor, observation,
reward) is :class:`~soft_envs.envs.peter_arms.PeterArms` with one row, the vector env's code: the
arm steps on the batched soft-arm core (:class:`~soft_envs.sim.batched_bodies.BatchedSoftPeter`,
``backend="batched"``, no PyBullet client until a picture is asked for) or, with
``backend="pybullet"``, on PyBullet's mass matrix and inverse dynamics
(:class:`~soft_envs.sim.peter_soft.SoftPeterBody`, the reference the default equals on whole
episodes).

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
per-leg fill gains, length offsets and leaks
(:meth:`~soft_envs.sim.actuators.BatchedPneumaticLegs.set_imperfections`), an
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

from functools import cached_property
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.base import SoftEnv
from soft_envs.envs.config import configured
from soft_envs.envs.env_goals import FirstRow, GoalConditionedMixin
from soft_envs.envs.obstacle_course import ObstacleCourse, sphere_rows
from soft_envs.envs.obstacle_markers import ObstacleMarkers
from soft_envs.envs.peter_arms import PeterArms, soft_arms
from soft_envs.envs.peter_goal_reach import GOAL_REDRAWS, ReachCheck, reach_perturbed
from soft_envs.envs.peter_parts import (
    PHYSICS_ONLY_REALISM,
)
from soft_envs.envs.peter_reach_config import ACTUATIONS, MAX_COMMAND_DELAY, PHYSICS, PeterReachConfig  # noqa: F401
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.peter import Peter
from soft_envs.sim.actuators import BatchedPneumaticLegs
from soft_envs.sim.arm_rows import PeterBodyRows, ServoRows
from soft_envs.sim.batched_bodies import BatchedSoftPeter
from soft_envs.sim.bullet import STANDARD_GRAVITY, pybullet
from soft_envs.sim.peter_body import PeterBody
from soft_envs.sim.peter_soft import SoftPeterBody
from soft_envs.sim.realism import Perturbation
from soft_envs.sim.urdf import check_joint_count

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


class PeterReachEnv(GoalConditionedMixin, SoftEnv, EzPickle):
    """Reach a target with a PETER arm (see the module docstring for spaces, rewards and physics).

    Args:
        n_modules: 1 to :data:`~soft_envs.robots.peter.MAX_MODULES` (4) stacked modules.
        links_per_module: rigid links per module arc in the PyBullet body, 1 to
            :data:`~soft_envs.robots.peter.MAX_LINKS_PER_MODULE` (64), and at most 127 joints in
            all: 4 modules take at most 14.
        kinematic: run on the analytic model only (no PyBullet), for fast learning.
        kinematics: ``"pcc"`` (the body's kinematics) or ``"tilted"`` (the paper's model;
            only with ``kinematic=True``).
        goal_conditioned: ``Dict`` observation with ``achieved_goal``/``desired_goal``.
        obstacles: spheres drawn near the path at every reset (0 to
            :data:`~soft_envs.envs.obstacle_course.MAX_OBSTACLES` (8); soft physics on the batched core).
        distance_weight: weight of the distance term [1/m] (100: the distance in centimetres).
        success_threshold: success distance [m].
        success_reward: the ``success`` term's bonus per step within ``success_threshold``
            (default 0: no such term).
        collision_weight: the ``collision`` term's penalty per step in which the arm touched an
            obstacle (with ``obstacles``; default 0: no such term).
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
        solver_iterations: PyBullet constraint-solver iterations (stiff physics), 1 to
            :data:`~soft_envs.envs.base.MAX_SOLVER_ITERATIONS`.
        radius, gap: module geometry [m], passed to :class:`Peter`.
        config: the keywords above as one validated object
            (:class:`~soft_envs.envs.peter_reach_config.PeterReachConfig`);
            keywords given beside it override its values.
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``time_step`` = 1/120 s soft (the
            integrator is second order: 0.09 % of the path's span from a converged run with a
            0.5 kg payload, ``soft-envs bench convergence``) / 1/240 s stiff and kinematic,
            ``frame_skip`` = 0.1 s / ``time_step`` soft / 12 stiff and kinematic, ``width``, ``height``,
            ``action_rate_weight`` = 0).
    """

    __signature__ = PeterReachConfig.signature(SoftEnv.__init__)  # the flat keywords, for inspect and IDEs
    # The keywords, read from the env's configuration (:attr:`config`, one source of truth).
    kinematic, physics, gravity, payload, rayleigh_stiffness, backend, solver_iterations = configured("physics", 7)
    actuation, vent_rate, command_delay = configured("actuation", 3)
    goal_conditioned, obstacles = configured("task", 2)
    distance_weight, success_threshold, success_reward, collision_weight = configured("reward", 4, settable=True)

    def __init__(self, *args: Any, config: PeterReachConfig | None = None, **kwargs: Any) -> None:
        config, kwargs = PeterReachConfig.split(kwargs, config, args)
        EzPickle.__init__(self, config=config, **kwargs)
        #: The env's keywords in groups, validated (:class:`~soft_envs.envs.peter_reach_config.PeterReachConfig`).
        self.config = config
        robot, phys = config.robot, config.physics
        self.model = Peter(robot.n_modules, radius=robot.radius, gap=robot.gap, kinematics=robot.kinematics,
                           links_per_module=robot.links_per_module, leg_stiffness=robot.leg_stiffness)
        if not self.kinematic:
            check_joint_count(self.model.chain())  # before a PyBullet client exists
        #: The obstacles' draws (``None`` without ``obstacles``).
        self.course = ObstacleCourse(self.model, self.obstacles) if self.obstacles else None
        # PyBullet steps the stiff arm and gives the reference's terms; the batched core and the
        # kinematic model need no client (a picture opens one, :meth:`_render_scene`).
        super().__init__(time_step=cast(float, phys.time_step), frame_skip=cast(int, phys.frame_skip),
                         use_physics=not phys.kinematic and (phys.physics == "stiff" or phys.backend == "pybullet"),
                         **kwargs)
        if self.physics == "stiff" and not self.kinematic and not self.realism.is_ideal():
            raise InvalidParameterError("realism needs physics='soft' or kinematic=True (the stiff servo "
                                        "body has no legs to perturb)")
        self._check_plant_ranges()
        self._check_load()
        n_act = self.model.n_dof
        self.action_space = spaces.Box(-1.0, 1.0, shape=(n_act,), dtype=np.float32)
        self._observation_bounds()
        #: The simulated arm: the batched core (soft, default), PyBullet's soft arm
        #: (``backend="pybullet"``) or servo arm (stiff); ``None`` for ``kinematic=True``.
        self.body: BatchedSoftPeter | SoftPeterBody | PeterBody | None = None
        self.goal_marker = None
        rows: PeterBodyRows | ServoRows | BatchedSoftPeter | None = None
        if self.kinematic:
            pass
        elif self.physics == "stiff":
            self.body = PeterBody(self.client, self.model, payload=self.payload)
            rows = ServoRows(self.body, self.client)
        elif self.backend == "pybullet":
            self.body = SoftPeterBody(self.client, self.model, payload=self.payload,
                                      gravity=STANDARD_GRAVITY if self.gravity else 0.0,
                                      rayleigh_stiffness=self.rayleigh_stiffness, backend="pybullet")
            rows = PeterBodyRows(self.body)
        else:
            self.body = rows = soft_arms(self, 1, num_threads=1)
        #: This env's arm: :class:`PeterArms` with one row (the vector env's logic, ``n = 1``).
        self.arms = PeterArms(self, 1, rows)
        self._shown: tuple[PeterArms, int] = (self.arms, 0)  # what a picture shows (:meth:`show`)
        self._picture: SoftPeterBody | PeterBody | None = None
        #: The pictures' obstacle spheres (:class:`~soft_envs.envs.obstacle_markers.ObstacleMarkers`).
        self.obstacle_markers = ObstacleMarkers()
        self.arms.goal[0] = self.model.forward(np.zeros(n_act))

    def _observation_bounds(self) -> None:
        """The observation space (flat or goal-conditioned) and its bounds."""
        n_act = self.model.n_dof
        # Bounds: positions within the arm's reach, velocities within ±10 m/s, set-points ±1.
        reach = float(self.model.forward(np.full(n_act, self.model.max_inflation_time))[2]) + 0.05
        pos_b, vel_b, act_b = np.full(3, reach), np.full(3, 10.0), np.ones(n_act)
        obstacle_b = np.tile(np.append(pos_b, 0.2), self.obstacles)  # centres within reach, radii below 0.2 m
        flat_high = np.concatenate((pos_b, pos_b, 2 * pos_b, vel_b, act_b, obstacle_b)).astype(np.float32)
        flat = spaces.Box(-flat_high, flat_high, dtype=np.float32)
        if self.goal_conditioned:
            point = spaces.Box(-pos_b.astype(np.float32), pos_b.astype(np.float32), dtype=np.float32)
            obs_high = np.concatenate((pos_b, vel_b, act_b, obstacle_b)).astype(np.float32)
            self.observation_space = spaces.Dict({
                "observation": spaces.Box(-obs_high, obs_high, dtype=np.float32),
                "achieved_goal": point, "desired_goal": point})
        else:
            self.observation_space = flat

    def _physics_parameters(self) -> dict[str, Any]:
        if self.physics == "soft":  # the core integrates the arm; the client's gravity enters its dynamics
            return {"gravity": STANDARD_GRAVITY if self.gravity else 0.0}
        # The direct (Dantzig) solver holds the chain of position motors stiff (see PeterBody).
        return {"gravity": STANDARD_GRAVITY if self.gravity else 0.0, "solver_iterations": self.solver_iterations,
                "direct_solver": True}

    # ------------------------------------------------------------------ the arm (row 0 of :attr:`arms`)
    inflation_times = FirstRow("Commanded inflation-time set-points ``(3N,)`` [s].")
    goal = FirstRow("The goal [m] (the goals' frame).")
    tip = FirstRow("The true tip [m] (the goals' frame).")
    tip_velocity = FirstRow("The true tip's velocity [m/s].")
    measured_tip = FirstRow("The tip the sensor reports [m] (noise, latency under realism).")
    measured_velocity = FirstRow("The tip velocity the sensor reports [m/s].")
    base_rotation = FirstRow("The arm's base in the goals' frame ``(3, 3)`` (realism's tilt).")
    stop_reason = FirstRow("Why the soft arm stopped (outside its model), until the reset; else ``None``.")

    @property
    def obstacle_rows(self) -> np.ndarray:
        """This episode's obstacles as packed shape rows ``(M, 16)`` (:mod:`soft_envs.collision`) in the
        arm's base frame (empty without ``obstacles``): what an obstacle-aware controller plans around."""
        arms = self.arms
        return sphere_rows(arms.obstacles[:1], arms.base_rotation[:1])[0]

    @property
    def legs(self) -> BatchedPneumaticLegs:
        """The pneumatic legs (a batch of one arm: ``(1, 3N)`` arrays)."""
        return self.arms.legs

    @property
    def plant(self) -> Peter:
        """The arm this episode simulates (its drawn radius, mass, stiffness; :attr:`model` when ideal)."""
        return self.arms.plant(0)

    @property
    def time(self) -> float:
        """Time since the reset [s] (soft physics, or the kinematic variant under realism; else 0)."""
        return float(self.arms.time()[0])

    def _realism_table(self) -> tuple[Perturbation, ...]:
        if self.kinematic:
            return tuple(p for p in PETER_REALISM if p.name not in PHYSICS_ONLY_REALISM)
        return PETER_REALISM

    def realism_sizes(self) -> dict[str, int]:
        n_legs = 3 * self.model.n_modules
        return {"leg_gain": n_legs, "leg_offset": n_legs, "leak_rate": n_legs, "base_tilt": 2}

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
        would collapse at the first step; :meth:`PeterArms.violations`)."""
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

    # ------------------------------------------------------------------ hooks (row 0 of the arms)
    def _reset_model(self, options: dict[str, Any]) -> None:
        drawn = {name: np.asarray(value, dtype=float)[None] for name, value in self.perturbations.items()}
        task = self.draw_episode_task(self.np_random, self.perturbations)
        self.arms.reset(np.zeros(1, dtype=np.int64), [task], drawn, [self.realism_rng])

    def draw_task(self, rng: np.random.Generator) -> np.ndarray:
        """A reset's task draw from ``rng``: the inflation times [s] whose nominal PCC tip is the goal
        (uniform within the bounds; always reachable), then with ``obstacles`` each obstacle's centre
        and radius [m] (:func:`~soft_envs.envs.obstacle_course.split_task` parts them)."""
        t = self.model.sample(rng)
        return t if self.course is None else np.concatenate((t, self.course.draw(rng, t).ravel()))

    def draw_episode_task(self, rng: np.random.Generator, perturbations: dict[str, Any]) -> np.ndarray:
        """A reset's task (:meth:`draw_task`) whose goal the episode's arm (``perturbations``, its
        realism values) can reach: redrawn from ``rng``, at most :data:`GOAL_REDRAWS` times, while
        :meth:`~soft_envs.envs.peter_goal_reach.ReachCheck.reachable` says the arm's legs, at their drawn
        gains, offsets and leaks, cannot hold the goal by the end of the episode with
        :data:`~soft_envs.envs.peter_goal_reach.REACH_MARGIN` to spare (the last draw is kept if
        none passes). Under ``"ideal"`` (or a realism that leaves the legs' stroke and the arm's
        geometry ideal) it is :meth:`draw_task`: the same numbers, nothing more drawn."""
        task, check = self.draw_task(rng), self._reach_check
        if check is None:
            return task
        n = self.model.n_dof
        for _ in range(GOAL_REDRAWS):
            if check.reachable(task[:n], perturbations, None if self.course is None else task[n:]):
                break
            task = self.draw_task(rng)
        return task

    @cached_property
    def _reach_check(self) -> ReachCheck | None:
        """The goal draw's check of the drawn arm (``None`` where the realism leaves what it reaches
        ideal); built at the first reset, once ``gym.make`` has set the episode's length."""
        return ReachCheck(self) if reach_perturbed(self.realism) else None

    def _command(self) -> np.ndarray:
        return self.inflation_times

    def command_jacobian(self, commands: np.ndarray) -> np.ndarray:
        """``∂ tip / ∂ c`` of the nominal model (:attr:`model`) at normalised commands ``c``
        ``(B, 3N)``: ``(B, 3, 3N)`` [m per unit of the command], the base frame (what
        ``action_mode="task"`` inverts, :func:`~soft_envs.envs.closed_loop.task_command_change`)."""
        commands = np.clip(np.asarray(commands, dtype=np.float64), -1.0, 1.0)
        low, high = self._action_bounds()
        return self.model.jacobian(self._action_to_model(commands)) * (0.5 * (high - low))

    def task_error(self) -> np.ndarray:
        """``goal − measured tip`` ``(1, 3)`` [m], the base frame: the error a task-space feedback sees
        (``task_feedback``)."""
        return self.arms.goal[:1] - self.arms.measured_tip[:1]

    def _apply_action(self, action: np.ndarray) -> None:
        self.arms.command(self.action_to_model(action)[None])

    def simulate(self, n_steps: int | None = None) -> None:
        """Advance ``n_steps`` (default ``frame_skip``) physics steps (:meth:`PeterArms.simulate`)."""
        self.arms.simulate(self.frame_skip if n_steps is None else n_steps)

    def model_violation(self) -> str | None:
        """Why the soft arm's state is outside the PCC model's validity, or ``None``
        (:meth:`PeterArms.violations`; always valid without soft physics)."""
        return self.arms.violations(np.ones(1, dtype=bool)).get(0)

    def _observation(self):
        obs = self.arms.observation(slice(None))
        return {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]

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
        return self.arms.measured_tip[0].astype(np.float32), self.arms.goal[0].astype(np.float32)

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        distance = self.distances(achieved_goal, desired_goal)
        terms: dict[str, Any] = {"distance": -self.distance_weight * distance}
        if self.success_reward > 0.0:
            terms["success"] = self.success_reward * (distance < self.success_threshold)
        return terms

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        return {name: float(value[0]) for name, value in self.arms.reward_terms().items()}  # (a batch of one)

    def _terminated(self) -> bool:
        return bool(self.arms.stopped[0])

    def _extra_info(self) -> dict[str, Any]:
        rows = self.arms.info(slice(None))
        info = {"distance": float(rows["distance"][0]), "is_success": bool(rows["is_success"][0]),
                "inflation_times": rows["inflation_times"][0]}
        if "leg_inflation" in rows:
            info["leg_inflation"] = rows["leg_inflation"][0]
        if "termination_reason" in rows:
            info["termination_reason"] = rows["termination_reason"][0]
        if self.course is not None:
            info["collisions"] = int(rows["collisions"][0])
            info["penetration"] = float(rows["penetration"][0])
            info["contact_force"] = float(rows["contact_force"][0])
        return info

    # ------------------------------------------------------------------ rendering
    def show(self, arms: PeterArms, row: int) -> None:
        """Make pictures show arm ``row`` of ``arms`` (a vector env's; default this env's own arm)."""
        self._shown = (arms, int(row))

    def _camera(self) -> dict[str, Any]:
        height = self.model.forward(np.zeros(self.model.n_dof))[2]
        return {"target": (0.0, 0.0, 0.5 * height), "distance": 2.2 * height + 0.1, "yaw": 40.0, "pitch": -20.0}

    def _render_scene(self):
        """The scene of the shown arm: the stiff arm's own client, else a drawing client (opened at the
        first picture) whose PyBullet arm is posed in the shown arm's shape."""
        arms, row = self._shown
        if self.client is not None:  # the stiff servos, or the PyBullet reference: the simulated body
            client = self.client
            if isinstance(self.body, SoftPeterBody):
                self.body.sync_bullet()
        else:
            client = self._drawing_client()
            if self._picture is None:
                self._picture = PeterBody(client, self.model) if arms.body is None else \
                    SoftPeterBody(client, self.model, payload=self.payload)
            picture = self._picture
            if isinstance(picture, SoftPeterBody):
                state = arms.body.state
                picture.set_base_orientation(tuple(arms.body.base_orientation[row]))
                picture.set_state(state.u[row], reference=state.c[row])
                picture.sync_bullet()
            else:
                picture.reset(arms.inflation_times[row])
        if self.goal_marker is None:  # a red sphere at the goal and a pin above it (visible when the
            # arm's top plate, radius ~45 mm, covers the reached goal)
            red = [1.0, 0.1, 0.1, 1.0]
            marker = client.createVisualShapeArray(
                shapeTypes=[pybullet.GEOM_SPHERE, pybullet.GEOM_CYLINDER], radii=[0.006, 0.002],
                lengths=[0.0, 0.05], rgbaColors=[red, red], visualFramePositions=[[0, 0, 0], [0, 0, 0.025]])
            self.goal_marker = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=marker,
                                                      basePosition=[0.0, 0.0, -1.0])
        client.resetBasePositionAndOrientation(self.goal_marker, arms.goal[row].tolist(), [0, 0, 0, 1])
        self.obstacle_markers.draw(client, arms.obstacles[row], arms.touching[row])
        return client

    def close(self) -> None:
        if isinstance(self._picture, SoftPeterBody):
            self._picture.close()
        super().close()
