"""``PCCPush-v0``'s configuration: ``PCCTrack-v0``'s physics and actuation groups, a three-segment arm
hung above a table, the box and the push's goals (:class:`PCCPushTaskGroup`), a reward on the box's
distance to its goal. What each keyword means is in :class:`~soft_envs.envs.pcc_push.PCCPushEnv`."""

from __future__ import annotations

from dataclasses import dataclass, field

from soft_envs.envs.pcc_track_config import PCCActuationGroup, PCCArmGroup, PCCTrackConfig
from soft_envs.exceptions import InvalidParameterError, check_nonnegative, check_positive

MAX_BOX_MASS = 1.0  # kg: far beyond what the arm can push (the task's 30 g box needs ~0.1 N)
MAX_REACH_BEHIND = 0.1  # m: the shaping point within the arm's reach of the box
BOX_SIZE_RANGE = (0.01, 0.06)  # m, the cube's edge: a box the 8.8 mm-radius arm can push, under the arm


@dataclass
class PCCPushArmGroup(PCCArmGroup):
    """The arm: three segments (the hanging arm must reach down to the box's side)."""

    n_segments: int = 3


@dataclass
class PCCPushActuationGroup(PCCActuationGroup):
    """The actuation: ``PCCTrack-v0``'s, the law's gains scaled for the regulators' dead time where
    they may have one (the hanging arm's first bending mode, 15.7 rad/s, grows behind 0.05-0.15 s
    under the paper's gains)."""

    delay_robust_gains: bool = True


@dataclass
class PCCPushTaskGroup:
    """The task: the arm's mount height above the table [m], the box (mass [kg], edge [m], friction on
    the table), the push distances [m], the observation form."""

    mount_height: float = 0.21
    box_mass: float = 0.02
    box_size: float = 0.03
    box_friction: float = 0.4
    push_range: tuple[float, float] = (0.02, 0.04)
    goal_conditioned: bool = False


@dataclass
class PCCPushRewardGroup:
    """The reward: the box-to-goal term's weight, the tip-to-box shaping term's, the box distance
    counted as success [m] (1 cm), and how far behind the box's centre on its push line the shaping
    term's point lies [m] (0: the centre)."""

    object_weight: float = 10.0
    reach_weight: float = 1.0
    success_threshold: float = 0.01
    reach_behind: float = 0.0


@dataclass
class PCCPushConfig(PCCTrackConfig):
    """``PCCPush-v0``'s keywords in groups (:mod:`soft_envs.envs.config`)."""

    arm: PCCPushArmGroup = field(default_factory=PCCPushArmGroup)
    actuation: PCCPushActuationGroup = field(default_factory=PCCPushActuationGroup)
    task: PCCPushTaskGroup = field(default_factory=PCCPushTaskGroup)  # type: ignore[assignment]
    reward: PCCPushRewardGroup = field(default_factory=PCCPushRewardGroup)  # type: ignore[assignment]

    def _validate_task(self) -> None:
        task = self.task
        task.mount_height = check_positive("mount_height [m]", task.mount_height, 2.0)
        task.box_mass = check_positive("box_mass [kg]", task.box_mass, MAX_BOX_MASS)
        task.box_size = check_positive("box_size [m]", task.box_size, BOX_SIZE_RANGE[1])
        if task.box_size < BOX_SIZE_RANGE[0]:
            raise InvalidParameterError(f"box_size must be at least {BOX_SIZE_RANGE[0]} m; got {task.box_size!r}")
        check_nonnegative(box_friction=task.box_friction)
        task.box_friction = float(task.box_friction)
        low, high = (float(x) for x in task.push_range)
        if not 0.0 < low <= high <= 0.1:
            raise InvalidParameterError(f"push_range must be 0 < low <= high <= 0.1 m; got {task.push_range!r}")
        task.push_range = (low, high)
        task.goal_conditioned = bool(task.goal_conditioned)
        if self.actuation.action_type == "residual":
            raise InvalidParameterError("PCCPush-v0 has no trajectory for a residual action to correct: use "
                                        "action_type='configuration', 'smooth', 'torque' or 'pressure'")
        if not (self.soft and self.physics.backend == "batched"):
            raise InvalidParameterError("PCCPush-v0 needs the soft arm on the batched core (physics='soft', "
                                        "backend='batched'): it computes the contact")

    def _validate_reward(self) -> None:
        reward = self.reward
        check_nonnegative(object_weight=reward.object_weight, reach_weight=reward.reach_weight)
        reward.object_weight, reward.reach_weight = float(reward.object_weight), float(reward.reach_weight)
        reward.success_threshold = check_positive("success_threshold [m]", reward.success_threshold)
        check_nonnegative(reach_behind=reward.reach_behind)
        reward.reach_behind = float(reward.reach_behind)
        if reward.reach_behind > MAX_REACH_BEHIND:
            raise InvalidParameterError(f"reach_behind must be at most {MAX_REACH_BEHIND} m; "
                                        f"got {reward.reach_behind!r}")
