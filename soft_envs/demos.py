"""Demos behind ``soft-envs demo``: a controller acting in a registered environment.

Harness code on top of the layers (it uses the env registry and the agents). Each demo takes
``(render_mode, steps, seed)`` and returns the ``rgb_array`` frames (none in a GUI window).
"""

from __future__ import annotations

import time

import gymnasium as gym

import soft_envs  # noqa: F401  (registers the environments)


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


def peter(render_mode: str = "rgb_array", steps: int = 120, seed: int = 0, n_modules: int = 3) -> list:
    """TRR reaching a new random goal every 30 steps in ``PeterReach-v0``."""
    from soft_envs.agents.reach import TRRReachAgent

    env = gym.make("soft_envs/PeterReach-v0", n_modules=n_modules, render_mode=render_mode)
    return run_demo(env, TRRReachAgent(env), steps=steps, seed=seed, new_goal_every=30)


def pcc(render_mode: str = "rgb_array", steps: int = 200, seed: int = 0, n_segments: int = 2,
        trajectory: str = "spiral") -> list:
    """The IK + PD/feed-forward pipeline following a trajectory in ``PCCTrack-v0``."""
    from soft_envs.agents.pcc_control import PCCTrackingAgent

    env = gym.make("soft_envs/PCCTrack-v0", n_segments=n_segments, trajectory=trajectory, render_mode=render_mode)
    return run_demo(env, PCCTrackingAgent(env), steps=steps, seed=seed)


def quadruped(render_mode: str = "rgb_array", steps: int = 300, seed: int = 0) -> list:
    """The Bézier trot walking in ``QuadrupedWalk-v0``."""
    from soft_envs.agents.gait import TrotController

    env = gym.make("soft_envs/QuadrupedWalk-v0", render_mode=render_mode)
    return run_demo(env, TrotController(env), steps=steps, seed=seed)


def hexapod(render_mode: str = "rgb_array", steps: int = 120, seed: int = 0) -> list:
    """The Jacobian agent reaching a new random goal pose every 30 steps in ``HexapodPose-v0``."""
    from soft_envs.agents.hexapod_control import HexapodJacobianAgent

    env = gym.make("soft_envs/HexapodPose-v0", render_mode=render_mode, max_episode_steps=max(steps, 1))
    return run_demo(env, HexapodJacobianAgent(env), steps=steps, seed=seed, new_goal_every=30)


#: demo name -> function
DEMOS = {"peter": peter, "pcc": pcc, "quadruped": quadruped, "hexapod": hexapod}
