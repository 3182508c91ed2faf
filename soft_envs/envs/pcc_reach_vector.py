"""The native vector form of ``soft_envs/PCCReach-v0``: ``N`` reaching PCC arms on the batched core.

``gym.make_vec("soft_envs/PCCReach-v0", num_envs=N, …)`` returns a :class:`PCCReachVectorEnv`: the
single env's spaces, rewards, ``info`` keys, realism and keywords (obstacles included), every sub-env
an episode of the single env, its rows :class:`~soft_envs.envs.pcc_reach_arms.PCCReachArms` (the
single env is one row of them); ``backend="pybullet"`` comes back as a ``SyncVectorEnv`` of single envs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.closed_loop import native_with_closed_loop
from soft_envs.envs.pcc_reach import PCCReachEnv
from soft_envs.envs.pcc_reach_config import PCCReachConfig
from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.pcc_track_vector import PCCTrackVectorEnv
from soft_envs.envs.vector_base import check_num_envs

ENV_ID = "soft_envs/PCCReach-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PCCReachVectorEnv(PCCTrackVectorEnv):
    """``num_envs`` PCCReach arms (module docstring; keywords as
    :class:`~soft_envs.envs.pcc_track_vector.PCCTrackVectorEnv`, episodes of 100 steps by default)."""

    env_class: type[PCCTrackEnv] = PCCReachEnv

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, num_threads: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode,
                         num_threads=num_threads, **kwargs)


def make_pcc_reach_vector(num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                          autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                          **kwargs: Any) -> gym.vector.VectorEnv:
    """The ``vector_entry_point`` of ``soft_envs/PCCReach-v0``: the native vector env, else
    (``backend="pybullet"``) a ``SyncVectorEnv`` of single envs."""
    if PCCReachConfig.of(kwargs).physics.backend != "batched":
        num_envs = check_num_envs(num_envs, pybullet=True)  # (before a PyBullet env is built)
        kwargs.pop("num_threads", None)
        make = [lambda: gym.make(ENV_ID, max_episode_steps=max_episode_steps, **kwargs)] * int(num_envs)
        return gym.vector.SyncVectorEnv(make, autoreset_mode=AutoresetMode(autoreset_mode))
    return native_with_closed_loop(lambda **rest: PCCReachVectorEnv(
        num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode, **rest), kwargs)
