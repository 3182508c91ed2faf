"""``PeterReach-v0``'s configuration: its keywords in groups, validated in one place
(:class:`PeterReachConfig`, :mod:`soft_envs.envs.config`). What each keyword means is in
:class:`~soft_envs.envs.peter_reach.PeterReachEnv`'s docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from soft_envs.envs.base import MAX_SOLVER_ITERATIONS
from soft_envs.envs.config import EnvConfig
from soft_envs.envs.obstacle_course import MAX_OBSTACLES
from soft_envs.envs.peter_parts import (
    DISTANCE_WEIGHT,
    LEG_RADIUS,
    MODULE_GAP,
    SOFT_CONTROL_PERIOD,
    SOFT_TIME_STEP,
    SUCCESS_THRESHOLD,
    VENT_RATE,
)
from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative, check_positive
from soft_envs.robots.peter import DEFAULT_LEG_STIFFNESS
from soft_envs.sim.peter_soft import DEFAULT_RAYLEIGH_STIFFNESS
from soft_envs.sim.single_core import BACKENDS

PHYSICS = ("soft", "stiff")
ACTUATIONS = ("pneumatic", "instant")
MAX_COMMAND_DELAY = 5.0  # s: one episode of the soft env
RIGID_TIME_STEP = 1.0 / 240.0  # s, the stiff servo arm and the kinematic model (PyBullet's default)
RIGID_FRAME_SKIP = 12  # physics steps per env step of the stiff and the kinematic arm (20 Hz)


@dataclass
class PeterRobotGroup:
    """The robot: modules, links per module arc, the model's kinematics, geometry [m], leg stiffness [N/m]."""

    n_modules: int = 2
    links_per_module: int = 3
    kinematics: str = "pcc"
    radius: float = LEG_RADIUS
    gap: float = MODULE_GAP
    leg_stiffness: float = DEFAULT_LEG_STIFFNESS


@dataclass
class PeterPhysicsGroup:
    """The physics: the analytic model alone or a body, soft or stiff, gravity, payload [kg],
    damping ``β`` [s], the core, PyBullet's solver iterations, the steps [s]."""

    kinematic: bool = False
    physics: str = "soft"
    gravity: bool = True
    payload: float = 0.0
    rayleigh_stiffness: float = DEFAULT_RAYLEIGH_STIFFNESS
    backend: str = "batched"
    solver_iterations: int = 100
    time_step: float | None = None
    frame_skip: int | None = None


@dataclass
class PeterActuationGroup:
    """The legs: pneumatic or instant, the vent rate [m/s], the valves' delay [s]."""

    actuation: str = "pneumatic"
    vent_rate: float = VENT_RATE
    command_delay: float = 0.0


@dataclass
class PeterTaskGroup:
    """The task's observation form and its obstacles (spheres drawn near the path at every reset)."""

    goal_conditioned: bool = False
    obstacles: int = 0


@dataclass
class PeterRewardGroup:
    """The reward: the distance term's weight [1/m], the success distance [m], its bonus per step, the
    penalty per step that touches an obstacle."""

    distance_weight: float = DISTANCE_WEIGHT
    success_threshold: float = SUCCESS_THRESHOLD
    success_reward: float = 0.0
    collision_weight: float = 0.0


@dataclass
class PeterReachConfig(EnvConfig):
    """``PeterReach-v0``'s keywords in groups (:mod:`soft_envs.envs.config`)."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ("n_modules",)

    robot: PeterRobotGroup = field(default_factory=PeterRobotGroup)
    physics: PeterPhysicsGroup = field(default_factory=PeterPhysicsGroup)
    actuation: PeterActuationGroup = field(default_factory=PeterActuationGroup)
    task: PeterTaskGroup = field(default_factory=PeterTaskGroup)
    reward: PeterRewardGroup = field(default_factory=PeterRewardGroup)

    @property
    def soft_body(self) -> bool:
        """Whether the soft arm is simulated (soft physics, not the kinematic model)."""
        return self.physics.physics == "soft" and not self.physics.kinematic

    def validate(self) -> None:
        """Check the keywords; resolve ``time_step`` (1/120 s soft, 1/240 s stiff and kinematic)
        and ``frame_skip`` (0.1 s / ``time_step`` soft, 12 otherwise) where they are ``None``."""
        phys, act, reward = self.physics, self.actuation, self.reward
        if not phys.kinematic and self.robot.kinematics != "pcc":
            raise InvalidParameterError("the PyBullet body is the PCC arm: kinematics='tilted' needs kinematic=True")
        for name, value, allowed in (("physics", phys.physics, PHYSICS), ("actuation", act.actuation, ACTUATIONS),
                                     ("backend", phys.backend, BACKENDS)):
            if value not in allowed:
                raise InvalidParameterError(f"{name} must be one of {allowed}; got {value!r}")
        check_nonnegative(distance_weight=reward.distance_weight, success_reward=reward.success_reward,
                          collision_weight=reward.collision_weight, payload=phys.payload,
                          command_delay=act.command_delay,
                          rayleigh_stiffness=phys.rayleigh_stiffness)
        if act.command_delay > MAX_COMMAND_DELAY:
            raise InvalidParameterError(f"command_delay must be at most {MAX_COMMAND_DELAY:g} s; "
                                        f"got {act.command_delay!r}")
        reward.success_threshold = check_positive("success_threshold [m]", reward.success_threshold)
        reward.distance_weight, reward.success_reward = float(reward.distance_weight), float(reward.success_reward)
        reward.collision_weight = float(reward.collision_weight)
        phys.solver_iterations = check_integer("solver_iterations", phys.solver_iterations, minimum=1,
                                               maximum=MAX_SOLVER_ITERATIONS)
        phys.kinematic, phys.gravity = bool(phys.kinematic), bool(phys.gravity)
        phys.payload, phys.rayleigh_stiffness = float(phys.payload), float(phys.rayleigh_stiffness)
        act.command_delay = float(act.command_delay)
        self.task.goal_conditioned = bool(self.task.goal_conditioned)
        self.task.obstacles = check_integer("obstacles", self.task.obstacles, minimum=0, maximum=MAX_OBSTACLES)
        if self.task.obstacles and not (self.soft_body and phys.backend == "batched"):
            raise InvalidParameterError("obstacles need the soft arm on the batched core (physics='soft', "
                                        "kinematic=False, backend='batched'): it computes the contact")
        if reward.collision_weight and not self.task.obstacles:
            raise InvalidParameterError("collision_weight needs obstacles (the penalty is for touching them)")
        if phys.time_step is None:
            phys.time_step = SOFT_TIME_STEP if self.soft_body else RIGID_TIME_STEP
        if phys.frame_skip is None:  # soft: 10 Hz control whatever the physics step (a bad step: the base says why)
            step = phys.time_step
            valid = isinstance(step, (int, float)) and not isinstance(step, bool) and math.isfinite(step) \
                and step >= 1e-6
            phys.frame_skip = max(1, round(SOFT_CONTROL_PERIOD / step)) if self.soft_body and valid \
                else RIGID_FRAME_SKIP
