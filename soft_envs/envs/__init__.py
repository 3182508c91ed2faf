"""Gymnasium environments and their registration (ids under the ``soft_envs/`` namespace)."""

from __future__ import annotations

import gymnasium as gym

# id -> (entry point, max_episode_steps). Entry points are strings so that importing
# soft_envs stays cheap and an env's module loads only when it is made.
ENVIRONMENTS: dict[str, tuple[str, int]] = {
    "soft_envs/PeterReach-v0": ("soft_envs.envs.peter_reach:PeterReachEnv", 50),
    "soft_envs/PCCTrack-v0": ("soft_envs.envs.pcc_track:PCCTrackEnv", 400),
    "soft_envs/PCCReach-v0": ("soft_envs.envs.pcc_reach:PCCReachEnv", 100),
    "soft_envs/PCCPush-v0": ("soft_envs.envs.pcc_push:PCCPushEnv", 200),
    "soft_envs/QuadrupedWalk-v0": ("soft_envs.envs.quadruped_walk:QuadrupedWalkEnv", 1000),
    "soft_envs/QuadrupedPose-v0": ("soft_envs.envs.quadruped_pose:QuadrupedPoseEnv", 200),
    "soft_envs/HexapodPose-v0": ("soft_envs.envs.hexapod_pose:HexapodPoseEnv", 50),
}

# id -> the vector entry point ``gym.make_vec(id, num_envs=N, **kwargs)`` calls (native vector envs;
# ``vectorization_mode="sync"``/``"async"`` still wrap single envs).
VECTOR_ENTRY_POINTS: dict[str, str] = {
    "soft_envs/PeterReach-v0": "soft_envs.envs.peter_reach_vector:make_peter_reach_vector",
    "soft_envs/PCCTrack-v0": "soft_envs.envs.pcc_track_vector:make_pcc_track_vector",
    "soft_envs/PCCReach-v0": "soft_envs.envs.pcc_reach_vector:make_pcc_reach_vector",
    "soft_envs/PCCPush-v0": "soft_envs.envs.pcc_push_vector:make_pcc_push_vector",
}


def _module_exists(entry_point: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(entry_point.split(":")[0]) is not None


def register_all() -> list[str]:
    """Register every environment whose module is installed; returns the registered ids."""
    registered = []
    for env_id, (entry_point, max_steps) in ENVIRONMENTS.items():
        if not _module_exists(entry_point):
            continue
        if env_id not in gym.registry:
            vector = VECTOR_ENTRY_POINTS.get(env_id)
            gym.register(id=env_id, entry_point=entry_point, max_episode_steps=max_steps,
                         vector_entry_point=vector if vector and _module_exists(vector) else None)
        registered.append(env_id)
    return registered
