"""What acts in the world: IK solvers, controllers, the neural-network IK and the benchmarks.

Installed as ``soft_envs.agents``. A controller follows one protocol: ``Agent(env, ...)``
reads the env's spaces and kinematic model (``env.unwrapped.model``), ``agent.reset(obs,
info)`` starts an episode and ``agent.act(obs)`` returns the action; it acts only through
``env.step``.
"""

from __future__ import annotations

import time


def run_demo(env, agent, *, steps: int, seed: int, new_goal_every: int | None = None) -> list:
    """Run ``agent`` in ``env`` for ``steps`` steps and return the rgb frames (``rgb_array``).

    A new episode starts when one ends and, with ``new_goal_every``, every that many steps
    (seeded ``seed + k``). With ``render_mode="human"`` the loop runs at the env's control
    rate so the GUI shows real time. The env is closed at the end.
    """
    frames = []
    try:
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        for k in range(steps):
            if new_goal_every and k and k % new_goal_every == 0:
                obs, info = env.reset(seed=seed + k)
                agent.reset(obs, info)
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            if env.render_mode == "rgb_array":
                frames.append(env.render())
            elif env.render_mode == "human":
                time.sleep(env.unwrapped.dt)
            if terminated or truncated:
                obs, info = env.reset()
                agent.reset(obs, info)
    finally:
        env.close()
    return frames
