"""The native vector form of ``soft_envs/PCCPush-v0``: ``N`` hanging PCC arms, each with its box, on the
batched core (:class:`~soft_envs.envs.pcc_push_arms.PCCPushArms`: the single env is one row of it)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.closed_loop import native_with_closed_loop
from soft_envs.envs.pcc_push import PCCPushEnv
from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.pcc_track_vector import PCCTrackVectorEnv

ENV_ID = "soft_envs/PCCPush-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PCCPushVectorEnv(PCCTrackVectorEnv):
    """``num_envs`` PCCPush arms and boxes (keywords as
    :class:`~soft_envs.envs.pcc_track_vector.PCCTrackVectorEnv`; episodes of 200 steps by default)."""

    env_class: type[PCCTrackEnv] = PCCPushEnv

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, num_threads: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode,
                         num_threads=num_threads, **kwargs)


def make_pcc_push_vector(num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                         autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                         **kwargs: Any) -> gym.vector.VectorEnv:
    """The ``vector_entry_point`` of ``soft_envs/PCCPush-v0`` (its physics is the batched core's only)."""
    return native_with_closed_loop(lambda **rest: PCCPushVectorEnv(
        num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode, **rest), kwargs)
