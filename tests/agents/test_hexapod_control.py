"""The damped-least-squares pose agent on ``HexapodPose-v0``."""

from __future__ import annotations

import gymnasium as gym
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.hexapod_control import HexapodJacobianAgent


def test_env_agent_reaches_goal_pose():
    env = gym.make("soft_envs/HexapodPose-v0")
    agent = HexapodJacobianAgent(env)
    successes = 0
    for seed in range(2):
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        start_error = info["position_error"]
        for _ in range(10):
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            assert info["solver_converged"]
            parts = [v for k, v in info.items() if k.startswith("reward_")]
            assert reward == pytest.approx(sum(parts), abs=1e-12)
        assert info["position_error"] < start_error
        successes += info["is_success"]
    assert successes == 2
    env.close()


def test_a_command_in_flight_is_not_corrected_twice():
    """With 3 periods of latency and command delay the agent integrates its own commands: a low
    gain converges where adding each step to the observed (late) inputs would wind up."""
    env = gym.make("soft_envs/HexapodPose-v0", realism={"command_delay": 0.1, "observation_latency": 0.05})
    agent = HexapodJacobianAgent(env, gain=0.3)
    obs, info = env.reset(seed=1)
    agent.reset(obs, info)
    start = info["position_error"]
    for _ in range(40):
        obs, _, _, _, info = env.step(agent.act(obs))
    assert info["is_success"] and info["position_error"] < 0.05 * start
    env.close()
