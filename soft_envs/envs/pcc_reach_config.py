"""``PCCReach-v0``'s configuration: ``PCCTrack-v0``'s arm, physics, actuation and reward groups with
a reaching task (:class:`PCCReachTaskGroup`) and a 1 mm success threshold. What each keyword means is
in :class:`~soft_envs.envs.pcc_reach.PCCReachEnv`'s docstring."""

from __future__ import annotations

from dataclasses import dataclass, field

from soft_envs.envs.obstacle_course import MAX_OBSTACLES
from soft_envs.envs.pcc_track_config import PCCRewardGroup, PCCTrackConfig
from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative, check_positive


@dataclass
class PCCReachTaskGroup:
    """The task: the goals' range (a fraction of the bending and elongation bounds), the obstacles
    drawn per reset, the observation form."""

    goal_range: float = 0.6
    obstacles: int = 0
    goal_conditioned: bool = False


@dataclass
class PCCReachRewardGroup(PCCRewardGroup):
    """The reward: the distance term's weight, the distance counted as success [m] (1 mm), the
    penalty per step that touches an obstacle."""

    success_threshold: float = 1e-3
    collision_weight: float = 0.0


@dataclass
class PCCReachConfig(PCCTrackConfig):
    """``PCCReach-v0``'s keywords in groups (:mod:`soft_envs.envs.config`)."""

    task: PCCReachTaskGroup = field(default_factory=PCCReachTaskGroup)  # type: ignore[assignment]
    reward: PCCReachRewardGroup = field(default_factory=PCCReachRewardGroup)

    def _validate_task(self) -> None:
        task = self.task
        task.goal_range = check_positive("goal_range", task.goal_range, 1.0)
        task.goal_conditioned = bool(task.goal_conditioned)
        task.obstacles = check_integer("obstacles", task.obstacles, minimum=0, maximum=MAX_OBSTACLES)
        if self.actuation.action_type == "residual":
            raise InvalidParameterError("PCCReach-v0 has no trajectory for a residual action to correct: use "
                                        "action_type='configuration', 'smooth', 'torque' or 'pressure'")
        if task.obstacles and not (self.soft and self.physics.backend == "batched"):
            raise InvalidParameterError("obstacles need the soft arm on the batched core (physics='soft', "
                                        "backend='batched'): it computes the contact")

    def _validate_reward(self) -> None:
        super()._validate_reward()
        reward = self.reward
        check_nonnegative(collision_weight=reward.collision_weight)
        reward.collision_weight = float(reward.collision_weight)
        if reward.collision_weight and not self.task.obstacles:
            raise InvalidParameterError("collision_weight needs obstacles (the penalty is for touching them)")
