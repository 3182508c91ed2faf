"""``PCCTrack-v0``'s configuration: its keywords in groups, validated in one place
(:class:`PCCTrackConfig`, :mod:`soft_envs.envs.config`). What each keyword means is in
:class:`~soft_envs.envs.pcc_track.PCCTrackEnv`'s docstring."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from soft_envs.envs.base import check_time_step
from soft_envs.envs.config import EnvConfig
from soft_envs.envs.pcc_parts import MAX_DELAY
from soft_envs.envs.pcc_ramp import DEFAULT_COMMAND_RAMP_TIME
from soft_envs.exceptions import InvalidParameterError, check_nonnegative, check_positive
from soft_envs.robots.pcc_pressure import DEFAULT_MAX_PRESSURE
from soft_envs.sim.pcc_body import DEFAULT_RAYLEIGH_STIFFNESS
from soft_envs.sim.single_core import BACKENDS

ACTION_TYPES = ("configuration", "smooth", "torque", "pressure", "residual")
PHYSICS = ("soft", "stiff")
ACTUATIONS = ("pressure", "direct")
STIFF_RAYLEIGH_STIFFNESS = 8e-4  # s, the stiff arm's damping (ζ ≈ 0.2 on its first bending mode)
SOFT_TIME_STEP = 5e-3  # s, soft physics through the chambers (0.3 % of the path's span; bench convergence)
DIRECT_TIME_STEP = 2.5e-3  # s, soft physics with actuation="direct" (0.6 % at 2.5 ms, 11 % at 5 ms)
STIFF_TIME_STEP = 2e-3  # s, the stiff arm of earlier versions
SOFT_CONTROL_PERIOD = 0.05  # s, the env step of the soft arm (20 Hz control)
SOFT_LAW_PERIOD = 5e-3  # s, the PD + feed-forward law's period on the soft arm [seed 004: a 250 Hz loop]


@dataclass
class PCCArmGroup:
    """The arm: segments, their rigid links, the relaxed segment length [m]."""

    n_segments: int = 2
    links_per_segment: int = 6
    segment_length: float = 0.065


@dataclass
class PCCPhysicsGroup:
    """The physics: soft or stiff, gravity, payload [kg], damping ``β`` [s], the core, the steps [s]."""

    physics: str = "soft"
    gravity: bool = True
    payload: float = 0.0
    rayleigh_stiffness: float | None = None
    backend: str = "batched"
    time_step: float | None = None
    frame_skip: int | None = None


@dataclass
class PCCActuationGroup:
    """What an action is and how it reaches the arm: the action type, the chambers and their
    regulators [Pa, s], the PD + feed-forward law (period [s], gains, model error), the command ramp [s]."""

    action_type: str = "configuration"
    residual_limit: float = 0.02
    actuation: str | None = None
    max_pressure: float = DEFAULT_MAX_PRESSURE
    regulator_time_constant: float = 0.01
    regulator_delay: float = 0.0
    controller_period: float | None = None
    kp: float = 80.0
    kv: float = 3.0
    compensate_damping: bool = True
    delay_robust_gains: bool = False
    stiffness_error: float = 0.0
    command_ramp_time: float = DEFAULT_COMMAND_RAMP_TIME


@dataclass
class PCCTaskGroup:
    """The task: the trajectory (name, time scale, workspace scale), the start, the observation form."""

    trajectory: str = "spiral"
    time_scale: float = 1.0
    trajectory_scale: float | None = None
    random_start: bool = True
    start_straight: bool = False
    goal_conditioned: bool = False


@dataclass
class PCCRewardGroup:
    """The reward: the tracking term's weight, the error counted as success [m]."""

    tracking_weight: float = 1.0
    success_threshold: float = 3e-3


@dataclass
class PCCTrackConfig(EnvConfig):
    """``PCCTrack-v0``'s keywords in groups (:mod:`soft_envs.envs.config`)."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ("n_segments",)

    arm: PCCArmGroup = field(default_factory=PCCArmGroup)
    physics: PCCPhysicsGroup = field(default_factory=PCCPhysicsGroup)
    actuation: PCCActuationGroup = field(default_factory=PCCActuationGroup)
    task: PCCTaskGroup = field(default_factory=PCCTaskGroup)
    reward: PCCRewardGroup = field(default_factory=PCCRewardGroup)

    @property
    def soft(self) -> bool:
        return self.physics.physics == "soft"

    def validate(self) -> None:
        """Check the keywords and resolve ``actuation``, ``rayleigh_stiffness``, ``time_step``,
        ``frame_skip`` and ``controller_period`` from the physics where they are ``None``."""
        phys, act = self.physics, self.actuation
        for name, value, allowed in (("action_type", act.action_type, ACTION_TYPES),
                                     ("physics", phys.physics, PHYSICS), ("backend", phys.backend, BACKENDS)):
            if value not in allowed:
                raise InvalidParameterError(f"{name} must be one of {allowed}; got {value!r}")
        soft = self.soft
        act.actuation = ("pressure" if soft else "direct") if act.actuation is None else act.actuation
        if act.actuation not in ACTUATIONS:
            raise InvalidParameterError(f"actuation must be one of {ACTUATIONS}; got {act.actuation!r}")
        if act.action_type == "pressure" and act.actuation != "pressure":
            raise InvalidParameterError("action_type='pressure' needs actuation='pressure' (the chambers)")
        if phys.rayleigh_stiffness is None:
            phys.rayleigh_stiffness = DEFAULT_RAYLEIGH_STIFFNESS if soft else STIFF_RAYLEIGH_STIFFNESS
        check_nonnegative(rayleigh_stiffness=phys.rayleigh_stiffness,
                          payload=phys.payload, regulator_time_constant=act.regulator_time_constant,
                          regulator_delay=act.regulator_delay, command_ramp_time=act.command_ramp_time)
        if act.command_ramp_time > MAX_DELAY:
            raise InvalidParameterError(f"command_ramp_time must be at most {MAX_DELAY:g} s")
        if act.regulator_delay > MAX_DELAY or act.regulator_time_constant > MAX_DELAY:
            raise InvalidParameterError(f"regulator times must be at most {MAX_DELAY:g} s")
        phys.gravity, phys.payload = bool(phys.gravity), float(phys.payload)
        phys.rayleigh_stiffness = float(phys.rayleigh_stiffness)
        act.regulator_time_constant = float(act.regulator_time_constant)
        act.regulator_delay = float(act.regulator_delay)
        act.command_ramp_time = float(act.command_ramp_time)
        act.compensate_damping, act.delay_robust_gains = bool(act.compensate_damping), bool(act.delay_robust_gains)
        self._validate_task()
        self._validate_reward()
        act.residual_limit = check_positive("residual_limit [m]", act.residual_limit, 1.0)
        self._resolve_steps()

    def _validate_reward(self) -> None:
        """Check the reward's keywords (hook)."""
        reward = self.reward
        check_nonnegative(tracking_weight=reward.tracking_weight)
        reward.tracking_weight = float(reward.tracking_weight)
        reward.success_threshold = check_positive("success_threshold [m]", reward.success_threshold)

    def _validate_task(self) -> None:
        """Check the task's keywords (hook)."""
        task = self.task
        task.random_start, task.start_straight = bool(task.random_start), bool(task.start_straight)
        task.goal_conditioned = bool(task.goal_conditioned)

    def _resolve_steps(self) -> None:
        """The physics step, the physics steps per env step and the law's period (class docstring)."""
        phys, act = self.physics, self.actuation
        soft, default_step = self.soft, phys.time_step is None
        if default_step:
            phys.time_step = (DIRECT_TIME_STEP if act.actuation == "direct" else SOFT_TIME_STEP) if soft \
                else STIFF_TIME_STEP
        time_step = check_time_step(phys.time_step)
        if phys.frame_skip is None:  # soft: a 50 ms env step at the default physics step
            phys.frame_skip = (round(SOFT_CONTROL_PERIOD / time_step) if default_step else 10) if soft else 25
        period = (SOFT_LAW_PERIOD if soft else time_step) if act.controller_period is None else act.controller_period
        act.controller_period = period = check_positive("controller_period [s]", period, 1.0)
        ratio = period / time_step
        if round(ratio) < 1 or abs(ratio - round(ratio)) > 1e-6 * ratio:
            raise InvalidParameterError(f"controller_period ({period!r} s) must be a whole number "
                                        f"of physics steps ({time_step!r} s)")

    @property
    def steps_per_control(self) -> int:
        """Physics steps per period of the PD + feed-forward law."""
        return int(round(self.actuation.controller_period / self.physics.time_step))  # type: ignore[operator]
