"""``soft_envs/PCCTrack-v0``: follow a tip trajectory with a multi-segment PCC soft arm in physics.

The arm (:class:`~soft_envs.robots.PCCArm`, or :class:`~soft_envs.robots.PlanarPCCArm` for a
planar trajectory) is simulated with elastic joints, Rayleigh damping and gravity on the
soft-arm core (the batched core with one arm, :class:`~soft_envs.sim.batched_bodies.BatchedPCCBody`;
``backend="pybullet"``: PyBullet's terms, :class:`~soft_envs.sim.pcc_body.PCCBody`, the reference);
the goal at every step is the point of a named trajectory (:mod:`soft_envs.trajectories`) at the
current time. What happens to the arm in an episode is :class:`~soft_envs.envs.pcc_arms.PCCArms`
with one row, the vector env's code.

Physics (``physics="soft"``, the default): the arm is driven by its chamber pressures, as the
paper's (seed 004 eq. 9, :mod:`~soft_envs.robots.pcc_pressure`): three chambers per segment
(two on a planar arm) with ``τ = H p``, gauge pressures bounded by ``±max_pressure`` (30 kPa),
each following its set-point through a first-order regulator
(:class:`~soft_envs.sim.actuators.BatchedPressureRegulator`, ``regulator_time_constant`` = 10 ms,
``regulator_delay`` = 0; the paper's regulators: 100–150 ms), and the elastic stiffness
calibrated on that bound. ``time_step = 5 ms``, ``frame_skip = 10`` (20 Hz control).
``actuation="direct"`` applies the generalised forces directly (no chambers, no bounds, no
regulator: the ideal actuator), with ``time_step = 2.5 ms``, ``frame_skip = 20``: the law's
torque, held over its 5 ms period with no regulator lag to smooth it, drives the arm's axial
modes, and a 5 ms step, which does not resolve them, moves the tip path by 11 % of its span,
2.5 ms by 0.6 % (``soft-envs bench convergence``). ``physics="stiff"``: the arm of earlier versions — stiffness
from E = 80 MPa (``stiffness_source="material"``), direct actuation, ``β = 8e-4 s``, 2 ms steps,
``frame_skip = 25``.

Action (``Box(-1, 1, (n,))``, ``n = 3N`` or ``2N`` planar):

* ``action_type="configuration"`` (default): the set-point ``c = (ΔL, θ, φ)`` per segment,
  normalised to the model's bounds (``c = low + (a + 1)/2 · (high − low)``). Within the
  control period the set-point moves linearly (in the smooth coordinates) from the previous
  one to the new one and the paper's PD + feed-forward law
  (:class:`~soft_envs.sim.pcc_body.PDFeedforward`, ``kp``, ``kv``) runs every
  ``controller_period`` (5 ms: the paper's real-time loop ran at 250 Hz; stiff physics: every
  physics step); its output goes to the chambers (``p = H⁻¹ τ``, bounded) or, with direct
  actuation, to the arm.
* ``action_type="smooth"`` (spatial arms): the same set-point in the smooth coordinates
  ``(ΔL, a, b) = (ΔL, θ cos φ, θ sin φ)`` per segment, ``a ·`` :attr:`~soft_envs.robots.pcc_arm.PCCArm.smooth_upper`
  (the bend vector scaled back into the disk ``|θ| ≤ max_bend`` where the action box's corner leaves it),
  then as ``"configuration"``. Its tip is smooth in the command, straight arm included, where
  ``(θ, φ)`` has no ``φ`` direction: what ``action_mode="task"`` needs (:meth:`PCCTrackEnv.command_jacobian`:
  the action a tip displacement ``task_step · a`` [m] in the env's frame, and ``task_feedback`` a
  residual on the proportional law towards the goal).
* ``action_type="torque"``: the generalised actuation on ``(ΔL, a, b)`` per segment (axial
  force [N], bending moments [N m]), normalised by :attr:`PCCTrackEnv.torque_limits` (the
  elastic force at the workspace bounds: ``k_ΔL · 0.1 L`` axial, ``k_θ · 140° / √2`` per bending
  axis, so that every corner of the action box holds the arm inside the box ``|θ| ≤ 140°``), held
  over the control period (through the chambers unless ``actuation="direct"``).
* ``action_type="pressure"`` (chamber actuation only): the chamber pressure set-points,
  ``p = a · pressure_action_limit`` [Pa], segment by segment, chamber ``j`` at
  ``γ_j = (j − 1) 2π/d``; :attr:`PCCTrackEnv.pressure_action_limit`:
  :func:`~soft_envs.robots.pcc_pressure.workspace_pressure_limit` (37.5 % of ``max_pressure``).
* ``action_type="residual"`` (``Box(-1, 1, (3,))``): a correction ``a · residual_limit`` [m] of
  the point the tip aims at; the set-point puts the tip at the goal of the step's end plus it
  (Gauss–Newton from the trajectory's own set-point, :class:`~soft_envs.envs.pcc_parts.ResidualAim`),
  then as ``"configuration"``. A zero action is the PD + feed-forward law on the trajectory's
  set-points (residual learning on the paper's controller).

Explorable by design: the command's bending part and the pressures move towards the action by
at most their range times ``dt / command_ramp_time`` per control period (default 0.5 s; the
derivation: :mod:`soft_envs.envs.pcc_ramp`); ``command_ramp_time=0``: no ramp.

Out-of-box actions are clipped (``info["action_clipped"]``). :meth:`~SoftEnv.action_to_model`
and :meth:`~SoftEnv.model_to_action` convert between the action and the set-point (``φ``
wrapped into its bounds), the generalised forces or the pressures [Pa], as ``action_type`` says.

Observation (flat ``Box``, float32, base frame, SI units; clipped into its bounds):

=====================  =========================================================
slice                  content
=====================  =========================================================
``[0:3]``              tip position [m]
``[3:6]``              goal: the trajectory point at the current time [m]
``[6:9]``              goal − tip [m]
``[9:12]``             tip linear velocity [m/s]
``[12:12+n]``          the paper's state ``(ε, κx, κy)`` per segment (planar ``(ε, κ)``) [1, 1/m]
``[12+n:12+2n]``       its rate [1/s, 1/(m s)]
``[12+2n:14+2n]``      trajectory phase ``(sin, cos)(2π t / period)``
=====================  =========================================================

With ``goal_conditioned=True`` the observation is a ``Dict``: ``observation`` (the flat one
from ``[9:]``), ``achieved_goal`` (tip) and ``desired_goal`` (goal), and
``env.compute_reward`` recomputes the reward for relabelled goals (the tracking term from the
goals, the action-rate term from ``info``; see :class:`~soft_envs.envs.env_goals.GoalConditionedMixin`).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):
``tracking = −tracking_weight · ‖goal − tip‖`` [m] and
``action_rate = −action_rate_weight · ‖a − a_prev‖²``. ``info`` also carries
``tracking_error`` [m], ``is_success`` (error below ``success_threshold``), ``time`` [s],
``setpoint`` (the configuration set-point) and, with chambers, ``pressures`` [Pa] and
``pressure_saturated`` (a set-point was clipped during the step).

Reset: the trajectory starts at a random phase (``random_start``, from the env's seeded RNG;
otherwise at ``t = 0``) with the arm at rest on that point (Gauss–Newton continuation along the
trajectory from the straight arm, :class:`~soft_envs.trajectories.TrajectoryStarts`; the
trajectory's tip angle held on a planar arm; the chambers at the pressures that hold it) — the
paper started from the straight arm; ``start_straight=True`` does that.

Vector form: ``gym.make_vec("soft_envs/PCCTrack-v0", num_envs=N, **kwargs)`` steps ``N`` arms on
the batched core, each sub-env this env's episode (:mod:`soft_envs.envs.pcc_track_vector`), every
``action_type`` included.

Realism (``realism=``, table :data:`PCC_REALISM`): ``info["realism"]`` of the reset holds the
values drawn; ``reset(options={"keep_robot": True})`` keeps them (a new start, the same robot).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.base import SoftEnv
from soft_envs.envs.config import configured
from soft_envs.envs.env_goals import FirstRow, GoalConditionedMixin
from soft_envs.envs.pcc_arms import PCCArms, soft_arms
from soft_envs.envs.pcc_parts import CHAMBER_REALISM, PCC_REALISM, ResidualAim
from soft_envs.envs.pcc_track_config import (  # noqa: F401 (the env's constants, here too)
    ACTION_TYPES,
    ACTUATIONS,
    DIRECT_TIME_STEP,
    PHYSICS,
    SOFT_CONTROL_PERIOD,
    SOFT_LAW_PERIOD,
    SOFT_TIME_STEP,
    STIFF_RAYLEIGH_STIFFNESS,
    PCCTrackConfig,
)
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.pcc_arm import PAPER_SEGMENT_MASS, PCCArm
from soft_envs.robots.pcc_pressure import workspace_pressure_limit
from soft_envs.robots.planar_pcc_arm import PlanarPCCArm
from soft_envs.sim.actuators import BatchedPressureRegulator, delay_robust_gains
from soft_envs.sim.arm_rows import PCCBodyRows
from soft_envs.sim.batched_bodies import BatchedPCCBody, pcc_violation_reason, pcc_violations
from soft_envs.sim.bullet import STANDARD_GRAVITY, pybullet
from soft_envs.sim.pcc_body import PCCBody, PDFeedforward
from soft_envs.sim.realism import Perturbation
from soft_envs.sim.urdf import check_joint_count
from soft_envs.trajectories import TrajectoryStarts, get_trajectory

_STARTS: dict[tuple, TrajectoryStarts] = {}  # start configurations per arm and trajectory, per process



class PCCTrackEnv(GoalConditionedMixin, SoftEnv, EzPickle):
    """Track a trajectory with a PCC arm (see the module docstring for spaces, rewards and physics).

    Args:
        n_segments: segments of the arm, 1 to :data:`~soft_envs.robots.pcc_arm.MAX_SEGMENTS` (and at most
            127 joints in all: ``(2m + 3) N``).
        links_per_segment: rigid links per segment, 1 to :data:`~soft_envs.robots.pcc_arm.MAX_LINKS_PER_SEGMENT`.
        segment_length: relaxed segment length [m].
        trajectory: a name of :data:`soft_envs.trajectories.TRAJECTORIES`.
        time_scale: slow the trajectory down by this factor.
        trajectory_scale: override the trajectory's workspace scale.
        action_type: ``"configuration"``, ``"smooth"``, ``"torque"``, ``"pressure"`` or ``"residual"``.
        residual_limit: tip-aim correction of a residual action of 1 [m] (``action_type="residual"``).
        physics: ``"soft"`` (pressure-calibrated stiffness, default) or ``"stiff"`` (E = 80 MPa,
            direct actuation, the earlier behaviour).
        actuation: ``"pressure"`` (chambers, soft default) or ``"direct"`` (generalised forces).
        max_pressure: chamber gauge-pressure bound [Pa] (the stiffness is calibrated on it).
        regulator_time_constant: first-order lag of the pressure regulators [s].
        regulator_delay: dead time of the pressure regulators [s] (the paper: 0.1–0.15).
        controller_period: period of the PD + feed-forward law [s], a multiple of ``time_step``
            (default 5 ms; stiff physics: every physics step).
        kp, kv: gains of the PD + feed-forward law [1/s², 1/s] (the paper: 80, 3).
        compensate_damping: the law's ``+D q̇`` term.
        delay_robust_gains: when the chambers' regulators may have a dead time (``regulator_delay`` or
            the realism's ``regulator_delay`` above 0) and a configuration set-point drives the law,
            run it without ``compensate_damping`` and with ``kp``, ``kv`` scaled for a dead time of any
            length (:func:`~soft_envs.sim.actuators.delay_robust_gains`: the paper's gains behind
            0.1-0.15 s make the hanging arm's first bending mode grow); :attr:`PCCTrackEnv.controller`
            is the law run. False (this env's default: its upright two-segment arm, first mode ~36
            rad/s, holds a set-point behind 0.125 s, decaying at −2.0/s): the given law.
            ``PCCPush-v0``'s hanging arm defaults to True.
        stiffness_error: relative error of the controller's stiffness model (feed-forward
            ``(1 + e) K``); 0 is the exact model.
        payload: tip payload [kg]; the controller's model does not include it.
        gravity: gravity on.
        rayleigh_stiffness: ``β`` of the Rayleigh damping ``D = β K`` [s] (default 5e-3 soft,
            8e-4 stiff).
        backend: the soft arm's terms and step: ``"batched"`` (the batched core with one arm,
            default) or ``"pybullet"`` (PyBullet's mass matrix and inverse dynamics: the reference).
        realism: ``"ideal"`` (default), ``"realistic"`` or a dict (:data:`PCC_REALISM`).
        random_start: random start phase on the trajectory.
        start_straight: start from the straight, relaxed arm instead of the IK start.
        tracking_weight: weight of the tracking term.
        success_threshold: tracking error counted as success [m].
        goal_conditioned: ``Dict`` observation with ``achieved_goal`` (tip) / ``desired_goal``.
        command_ramp_time: least time [s] the command takes to cross its whole range (0: no
            limit; see the module docstring).
        time_step: physics time step [s] (5 ms soft, 2.5 ms soft with ``actuation="direct"``,
            2 ms stiff); frame_skip: physics steps per ``env.step`` (10 soft, 20 soft direct, 25
            stiff; 10 soft whenever ``time_step`` is given).
        config: the keywords above as one validated object
            (:class:`~soft_envs.envs.pcc_track_config.PCCTrackConfig`);
            keywords given beside it override its values.
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``width``, ``height``,
            ``action_rate_weight`` = 0).
    """

    #: The configuration's class (the keywords' groups and their validation).
    config_class: type[PCCTrackConfig] = PCCTrackConfig
    #: The smooth set-point carries the task-space action (module docstring).
    TASK_ACTION_KEYWORDS: ClassVar[dict[str, Any]] = {"action_mode": "task", "action_type": "smooth"}
    __signature__ = PCCTrackConfig.signature(SoftEnv.__init__)  # the flat keywords, for inspect and IDEs
    # The keywords, read from the env's configuration (:attr:`config`, one source of truth).
    backend, physics, gravity, payload, rayleigh_stiffness = configured("physics", 5)
    action_type, residual_limit, actuation = configured("actuation", 3)
    regulator_time_constant, regulator_delay, controller_period, command_ramp_time = configured("actuation", 4)
    random_start, start_straight, goal_conditioned = configured("task", 3)
    tracking_weight, success_threshold = configured("reward", 2, settable=True)

    def __init__(self, *args: Any, config: PCCTrackConfig | None = None, **kwargs: Any) -> None:
        config, kwargs = self.config_class.split(kwargs, config, args)
        EzPickle.__init__(self, config=config, **kwargs)
        #: The env's keywords in groups, validated (:class:`~soft_envs.envs.pcc_track_config.PCCTrackConfig`).
        self.config = config
        arm, phys, act = config.arm, config.physics, config.actuation
        self._setup_task(config)
        self._arm_arguments = ((arm.n_segments, arm.links_per_segment, arm.segment_length),
                               {"max_pressure": act.max_pressure,
                                "stiffness_source": "pressure" if config.soft else "material"})
        self.model = self.arm_with_mass()
        if act.action_type == "smooth" and self.model.planar:
            raise InvalidParameterError("action_type='smooth' needs a spatial arm (a planar arm's (ΔL, θ) set-point "
                                        "is smooth already: use action_type='configuration')")
        check_joint_count(self.model.chain())  # before a PyBullet client exists
        self.controller = PDFeedforward(self.model, act.kp, act.kv, compensate_damping=act.compensate_damping,
                                        stiffness_error=act.stiffness_error)
        #: whether the PD + feed-forward law tracks a configuration set-point (configuration, smooth, residual)
        self.setpoint_driven = act.action_type in ("configuration", "smooth", "residual")
        # The batched core needs no client (a picture opens one); the PyBullet reference steps in one.
        super().__init__(time_step=phys.time_step, frame_skip=phys.frame_skip, use_physics=phys.backend == "pybullet",
                         **kwargs)
        self.steps_per_control = config.steps_per_control
        #: ``H_u`` (eq. 9 in the smooth coordinates) and its inverse (chamber actuation).
        self.pressure_map = self.model.pressure_map()
        self.pressure_inverse = np.linalg.inv(self.pressure_map)
        shape = (3 if act.action_type == "residual" else self.model.n_dof,)
        self.action_space = spaces.Box(-1.0, 1.0, shape=shape, dtype=np.float32)
        self._action_scales()
        self._observation_bounds()
        #: The simulated arm: the batched core with one arm (default) or PyBullet's (``backend="pybullet"``).
        self.body: BatchedPCCBody | PCCBody
        rows: BatchedPCCBody | PCCBodyRows
        if self.backend == "pybullet":
            self.body = PCCBody(self.client, self.model, gravity=STANDARD_GRAVITY if self.gravity else 0.0,
                                rayleigh_stiffness=self.rayleigh_stiffness, payload=self.payload, backend="pybullet")
            rows = PCCBodyRows(self.body)
        else:
            self.body = rows = soft_arms(self, 1, num_threads=1)
        self._delay_law(act)
        #: This env's arm: :class:`PCCArms` with one row (the vector env's logic, ``n = 1``).
        self.arms = self.make_arms(1, rows)
        self._shown: tuple[PCCArms, int] = (self.arms, 0)  # what a picture shows (:meth:`show`)
        self._picture: PCCBody | None = None
        self.goal_marker = None
        self.arms.goal[0] = self._initial_goal()
        self.arms.read_tips(slice(None))

    def _delay_law(self, act) -> None:
        """The law behind a dead time (``delay_robust_gains``, class docstring): no ``+D q̇`` term and
        gains scaled on the nominal arm's first mode, straight at rest (the env's batched body as built,
        before any realism, or one like it beside PyBullet's: its mass matrix and elastic stiffness ``K``),
        as a designer who knows the regulators' dead time but not its exact value would.

        Gravity's gradient is left out of the mode: it stiffens the hanging arm's bend by about a quarter
        (0.030 against K's 0.113 N m per unit of the first segment's bend, from central differences of
        ``G`` over 1 % of the range), its first mode 15.7 → 18.0 rad/s and the gains kp 6.1 → 8.8, kv
        0.23 → 0.33; measured with it, the held swing of ``tests/envs/test_pcc_push.py`` decayed from
        16.2 to 1.6 mm in 8 s (0.9 mm without) and the realistic scripted push missed 2 of 80 seeds (0-79;
        none without), so the law keeps the elastic mode, the slower one, as its design point."""
        dead = self.actuation == "pressure" and (act.regulator_delay > 0.0 or self.realism.ranges.get(
            "regulator_delay", (0.0, 0.0))[1] > 0.0)
        #: The law's gains were scaled for the regulators' dead time: ``(kp, kv, ω₁)``, else ``None``.
        self.delay_gains: tuple[float, float, float] | None = None
        if not (act.delay_robust_gains and dead and self.setpoint_driven):
            return
        arm = self.body if isinstance(self.body, BatchedPCCBody) else soft_arms(self, 1, num_threads=1)
        kp, kv, w1 = delay_robust_gains(arm.mass_matrix()[0], np.diag(self.nominal_stiffness),
                                        self.rayleigh_stiffness, act.kp, act.kv)
        self.delay_gains = (kp, kv, w1)
        self.controller = PDFeedforward(self.model, kp, kv, compensate_damping=False,
                                        stiffness_error=act.stiffness_error)

    def _setup_task(self, config: PCCTrackConfig) -> None:
        """The task's parts the arm and the spaces depend on (hook): the trajectory and whether the arm
        is planar (:attr:`planar_arm`)."""
        task = config.task
        self.trajectory = get_trajectory(task.trajectory, time_scale=task.time_scale, scale=task.trajectory_scale)
        #: Whether the arm is the planar one (a planar trajectory's).
        self.planar_arm = bool(self.trajectory.planar)

    def _initial_goal(self) -> np.ndarray:
        """The goal [m] shown before the first reset (hook)."""
        return np.asarray(self.trajectory.position(0.0), dtype=float)

    def make_arms(self, n_arms: int, body: Any) -> PCCArms:
        """``n_arms`` arms of this configuration on ``body`` (this env's row logic; hook)."""
        return PCCArms(self, n_arms, body)

    def _action_scales(self) -> None:
        """What an action of 1 means: the elastic force at the workspace bounds (torque actions) and
        the workspace's chamber pressure (pressure actions; module docstring)."""
        #: The simulated arm's elastic stiffness without realism (axial [N/m], bending [N m/rad]).
        self.nominal_stiffness = BatchedPCCBody.stiffness_of(self.model)
        per = self.model.per_segment
        bend_axis = self.model.max_bend / (np.sqrt(2.0) if per == 3 else 1.0)
        spans = np.stack([self.model.elongation * self.model.segment_lengths] +
                         [np.full(self.model.n_segments, bend_axis)] * (per - 1), axis=-1).ravel()
        #: Generalised-force scale of a torque action of 1 (axial [N], bending [N m]): the elastic
        #: force at the workspace bounds (every corner of the box holds the arm inside them).
        self.torque_limits = self.nominal_stiffness * spans
        #: Chamber pressure [Pa] of a pressure action of 1 (module docstring; chambers only).
        self.pressure_action_limit = workspace_pressure_limit(self.model, self.nominal_stiffness)

    def _observation_bounds(self) -> None:
        """The observation space (flat or goal-conditioned) and its bounds (:attr:`observation_high`)."""
        # Bounds (derivations): positions within 1.2 times the longest arm plus 5 cm; the paper's
        # state within 2 max_bend per shortest segment (κ) and a strain of 1; every rate within its
        # quantity's bound oscillating at the highest frequency the time step resolves (π / Δt),
        # an envelope random actions stay well inside (``soft-envs bench learnability``).
        per = self.model.per_segment
        reach = 1.2 * self.model.total_length * (1 + self.model.elongation) + 0.05
        kappa = 2 * self.model.max_bend / (self.model.segment_lengths.min() * (1 - self.model.elongation))
        state_high = np.tile([1.0] + [kappa] * (per - 1), self.model.n_segments)
        nyquist = np.pi / self.time_step  # rad/s
        high = np.concatenate((np.full(6, reach), np.full(3, 2 * reach), np.full(3, nyquist * reach), state_high,
                               nyquist * state_high, np.ones(2)))
        self._set_observation_high(high)

    def _set_observation_high(self, high: np.ndarray) -> None:
        """The observation space of the flat bounds ``high`` (the goal-conditioned form from them)."""
        high = high.astype(np.float32)
        self.observation_high = high.astype(np.float64)
        if self.goal_conditioned:
            point = spaces.Box(-high[:3], high[:3], dtype=np.float32)
            rest = high[9:]
            self.observation_space = spaces.Dict({"observation": spaces.Box(-rest, rest, dtype=np.float32),
                                                  "achieved_goal": point, "desired_goal": point})
        else:
            self.observation_space = spaces.Box(-high, high, dtype=np.float32)

    def arm_with_mass(self, segment_mass: float = PAPER_SEGMENT_MASS) -> PCCArm:
        """The arm of this env's geometry (planar for a planar trajectory) with ``segment_mass`` [kg]."""
        arm_class = PlanarPCCArm if self.planar_arm else PCCArm
        args, kwargs = self._arm_arguments
        return arm_class(*args, segment_mass=segment_mass, **kwargs)

    # ------------------------------------------------------------------ realism

    def _realism_table(self) -> tuple[Perturbation, ...]:
        if self.actuation == "pressure":
            return PCC_REALISM
        return tuple(p for p in PCC_REALISM if p.name not in CHAMBER_REALISM)

    def realism_sizes(self) -> dict[str, int]:
        return {"chamber_gain": self.model.n_dof, "pressure_droop": self.model.n_dof}

    def _physics_parameters(self) -> dict[str, Any]:
        # PCCBody integrates the arm itself; the client's gravity enters its inverse dynamics.
        return {"gravity": STANDARD_GRAVITY if self.gravity else 0.0}

    # ------------------------------------------------------------------ conversions

    def _action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        if self.action_type == "smooth":
            return self.model.smooth_lower, self.model.smooth_upper
        return super()._action_bounds()

    @property
    def command_jacobian(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """``∂ tip / ∂ c`` of the nominal model at normalised smooth commands ``c`` ``(B, 3N)``:
        ``(B, 3, 3N)`` [m per unit of the command], in the frame of the env's tip (the world's:
        turned by the base orientation where the arm has one; what ``action_mode="task"``
        inverts). ``None`` unless ``action_type="smooth"`` (the ``(θ, φ)`` set-point has no tip
        direction along ``φ`` at a straight segment)."""
        if self.action_type != "smooth":
            return None
        return self._smooth_command_jacobian

    def _smooth_command_jacobian(self, commands: np.ndarray) -> np.ndarray:
        commands = np.clip(np.atleast_2d(np.asarray(commands, dtype=np.float64)), -1.0, 1.0)
        upper = self.model.smooth_upper
        smooth = self.model.project_smooth(commands * upper)
        jacobian = self.model.smooth_jacobian(smooth) * upper
        turn = getattr(self, "base_orientation", (0.0, 0.0, 0.0, 1.0))  # (x, y, z, w)
        rotation = quaternion_to_matrix(np.asarray(turn, dtype=float))
        return np.einsum("ij,bjk->bik", rotation, jacobian)

    @property
    def task_error(self) -> Callable[[], np.ndarray] | None:
        """``() -> goal − measured tip`` ``(1, 3)`` [m] (the goal's frame): the error ``task_feedback``
        sees (``None`` for a task whose goal is not the tip's)."""
        return self._tip_error

    def _tip_error(self) -> np.ndarray:
        return self.arms.goal[:1] - self.arms.measured_tip[:1]

    def _action_to_model(self, action: np.ndarray) -> np.ndarray:
        if self.action_type == "torque":
            return action * self.torque_limits
        if self.action_type == "pressure":
            return action * self.pressure_action_limit
        if self.action_type == "residual":
            return action * self.residual_limit
        return super()._action_to_model(action)

    def _model_to_action(self, q: np.ndarray) -> np.ndarray:
        if self.action_type == "torque":
            return q / self.torque_limits
        if self.action_type == "pressure":
            return q / self.pressure_action_limit
        if self.action_type == "residual":
            return q / self.residual_limit
        if self.action_type == "smooth":
            return super()._model_to_action(q)
        c = np.array(q, dtype=float)
        if not self.model.planar:  # φ wrapped into its bounds
            c[..., 2::3] = np.angle(np.exp(1j * c[..., 2::3]))
        return super()._model_to_action(c)

    # ------------------------------------------------------------------ start configurations

    def start_configuration(self, t0: float) -> np.ndarray:
        """The arm at rest on the trajectory point at ``t0`` (Gauss–Newton continuation along the
        trajectory from the straight arm, :class:`~soft_envs.trajectories.TrajectoryStarts`; a
        planar trajectory's tip angle is held). Deterministic; shared by the instances of a process."""
        key = (repr(self.model), self.trajectory.name, self.trajectory.scale, self.trajectory.period)
        if key not in _STARTS:
            _STARTS[key] = TrajectoryStarts(self.model, self.trajectory)
        return _STARTS[key].configuration(t0)[0]

    # ------------------------------------------------------------------ the arm (row 0 of :attr:`arms`)
    setpoint = FirstRow("The configuration set-point ``(n,)`` (configuration and residual actions).")
    goal = FirstRow("The goal: the trajectory point at the current time [m].")
    tip = FirstRow("The true tip [m].")
    tip_velocity = FirstRow("The true tip's velocity [m/s].")
    measured_tip = FirstRow("The tip the sensor reports [m] (noise, latency under realism).")
    measured_velocity = FirstRow("The tip velocity the sensor reports [m/s].")
    stop_reason = FirstRow("Why the arm stopped (outside its model), until the reset; else ``None``.")

    @property
    def time(self) -> float:
        """Time on the trajectory [s]."""
        return float(self.arms.time[0])

    @property
    def regulator(self) -> BatchedPressureRegulator | None:
        """The chambers' pressure regulators (a batch of one arm), or ``None`` (direct actuation)."""
        return self.arms.regulator

    @property
    def plant_pressure_map(self) -> np.ndarray:
        """The chambers' true map (the nominal one scaled by the realism's gains and droops)."""
        maps = self.arms.plant_pressure_maps
        return self.pressure_map if maps is None else maps[0].copy()

    @property
    def plant(self) -> PCCArm:
        """The arm this episode simulates (its drawn segment mass)."""
        return self.arms.plant(0)

    @property
    def aim(self) -> ResidualAim:
        """The residual action's aim (``action_type="residual"``)."""
        return self.arms.aims[0]

    # ------------------------------------------------------------------ hooks (row 0 of the arms)
    def _reset_model(self, options: dict[str, Any]) -> None:
        drawn = {name: np.asarray(value, dtype=float)[None] for name, value in self.perturbations.items()}
        self.arms.reset(np.zeros(1, dtype=np.int64), [self.draw_task(self.np_random)], drawn, [self.realism_rng])

    def draw_task(self, rng: np.random.Generator) -> float | np.ndarray:
        """A reset's task draw from ``rng``: the trajectory time [s] the episode starts at (uniform
        over a period with ``random_start``, else 0 and nothing drawn)."""
        return float(rng.uniform(0.0, self.trajectory.period)) if self.random_start else 0.0

    def _command(self) -> np.ndarray:
        return self.arms.commands(0)

    def _apply_action(self, action: np.ndarray) -> None:
        self.arms.command(self.action_to_model(action)[None])

    def simulate(self, n_steps: int | None = None) -> None:
        """Advance ``n_steps`` (default ``frame_skip``) physics steps under the current action
        (:meth:`PCCArms.simulate`: an arm driven out of the PCC model's validity is stopped at its
        last valid state, at rest, and the episode terminates with the reason in ``info``)."""
        self.arms.simulate(self.frame_skip if n_steps is None else n_steps)

    def model_violation(self, u: np.ndarray, w: np.ndarray) -> str | None:
        """Why the smooth state ``(u, u̇)`` is outside the PCC model's validity, or ``None``
        (:func:`~soft_envs.sim.batched_bodies.pcc_violations`)."""
        code = int(pcc_violations(self.model, np.asarray(u, dtype=float)[None], np.asarray(w, dtype=float)[None])[0])
        return pcc_violation_reason(self.model, code, u)

    def _observation(self) -> np.ndarray:
        obs = self.arms.observation(slice(None), on_clip=self._count_clipped)
        return {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]

    def _count_clipped(self, count: int) -> None:
        self.observation_clipped = count

    def tracking_error(self) -> float:
        """Current true tip-to-goal distance [m] (goal-conditioned: from the goals rounded to float32
        as the observation shows them, so that without observation noise :meth:`compute_reward`
        reproduces the reward exactly)."""
        return float(self.arms.tracking_error(slice(None))[0])

    @staticmethod
    def distances(achieved_goal, desired_goal) -> np.ndarray:
        d = np.asarray(desired_goal, dtype=float) - np.asarray(achieved_goal, dtype=float)
        return np.sqrt(np.sum(d * d, axis=-1))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.arms.measured_tip[0].astype(np.float32), self.arms.goal[0].astype(np.float32)

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        return {"tracking": -self.tracking_weight * self.distances(achieved_goal, desired_goal)}

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        return {name: float(value[0]) for name, value in self.arms.reward_terms().items()}

    def _terminated(self) -> bool:
        return bool(self.arms.stop_code[0])

    def _extra_info(self) -> dict[str, Any]:
        rows = self.arms.info(slice(None))
        info = {"tracking_error": float(rows["tracking_error"][0]), "is_success": bool(rows["is_success"][0]),
                "time": float(rows["time"][0]), "setpoint": rows["setpoint"][0]}
        if "pressures" in rows:
            info["pressures"] = rows["pressures"][0]
            info["pressure_saturated"] = bool(rows["pressure_saturated"][0])
        if "termination_reason" in rows:
            info["termination_reason"] = rows["termination_reason"][0]
        return info

    @staticmethod
    def _first_row(rows: dict[str, Any]) -> dict[str, Any]:
        """``info`` of the arms' first row from their row-wise ``info`` (numbers as Python scalars; the
        vector env's ``_name`` masks left out)."""
        return {name: (value[0].item() if np.ndim(value[0]) == 0 and hasattr(value[0], "item") else value[0])
                for name, value in rows.items() if not name.startswith("_")}

    # ------------------------------------------------------------------ rendering
    def show(self, arms: PCCArms, row: int) -> None:
        """Make pictures show arm ``row`` of ``arms`` (a vector env's; default this env's own arm)."""
        self._shown = (arms, int(row))

    def _render_scene(self):
        """The shown arm: PyBullet's reference body in its client, else a drawing client (opened at the
        first picture) whose PyBullet arm is posed in the shown arm's shape."""
        arms, row = self._shown
        if self.client is not None:
            client = self.client
            self.body.sync_bullet()
        else:
            client = self._drawing_client()
            if self._picture is None:
                self._picture = PCCBody(client, self.model, gravity=0.0, **self._picture_mount())
            state = arms.body.state
            self._picture.set_state(state.u[row], reference=state.c[row])
            self._picture.sync_bullet()
        if self.goal_marker is None:
            marker = client.createVisualShape(pybullet.GEOM_SPHERE, radius=0.003, rgbaColor=[1.0, 0.1, 0.1, 0.9])
            self.goal_marker = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=marker,
                                                      basePosition=[0.0, 0.0, -1.0])
        client.resetBasePositionAndOrientation(self.goal_marker, arms.goal[row].tolist(), [0, 0, 0, 1])
        return client

    def _picture_mount(self) -> dict[str, Any]:
        """Where the pictures' arm stands: ``base_position`` [m], ``base_orientation`` ``(x, y, z, w)``
        (default upright at the origin; hook)."""
        return {}

    def _camera(self) -> dict[str, Any]:
        length = self.model.total_length
        return {"target": (0.0, 0.0, 0.5 * length), "distance": 1.6 * length + 0.05, "yaw": 40.0, "pitch": -20.0}

    def close(self) -> None:
        if self._picture is not None:
            self._picture.close()
        super().close()
