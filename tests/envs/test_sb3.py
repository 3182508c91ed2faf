"""Stable-Baselines3 in the ecosystem: its env checker on every registered env, and a PPO smoke run."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import soft_envs

pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")


def test_every_declared_env_is_checked():
    """Every env whose module exists is registered, hence covered by the check below."""
    from soft_envs.envs import ENVIRONMENTS, _module_exists

    declared = [env_id for env_id, (entry, _) in ENVIRONMENTS.items() if _module_exists(entry)]
    assert declared == soft_envs.ENV_IDS
    assert "soft_envs/PeterReach-v0" in soft_envs.ENV_IDS


def _sb3_check(env_id: str, **kwargs) -> None:
    from stable_baselines3.common.env_checker import check_env

    env = gym.make(env_id, **kwargs)
    try:
        # SB3 treats any env with `compute_reward` as goal-conditioned: only the dict form has it.
        assert hasattr(env.unwrapped, "compute_reward") == isinstance(env.observation_space, gym.spaces.Dict)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # recommendations (e.g. action scaling) are not failures
            check_env(env.unwrapped, warn=True)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", soft_envs.ENV_IDS)
def test_sb3_env_checker(env_id):
    _sb3_check(env_id)


@pytest.mark.parametrize("env_id", soft_envs.ENV_IDS)
def test_sb3_env_checker_goal_conditioned(env_id):
    """Envs that offer ``goal_conditioned=True`` pass SB3's GoalEnv checks in that form."""
    import inspect

    cls = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)
    if "goal_conditioned" not in inspect.signature(cls).parameters:
        pytest.skip(f"{env_id} has no goal-conditioned form")
    _sb3_check(env_id, goal_conditioned=True)


def test_ppo_learns_end_to_end_on_peter_reach(tmp_path):
    """PPO runs collection, updates and prediction on PeterReach-v0 (kinematic, fast)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    venv = make_vec_env("soft_envs/PeterReach-v0", n_envs=2, seed=0,
                        env_kwargs={"n_modules": 2, "kinematic": True})
    agent = PPO("MlpPolicy", venv, n_steps=256, batch_size=64, n_epochs=4, seed=0, device="cpu")
    before = [p.detach().clone() for p in agent.policy.parameters()]
    agent.learn(total_timesteps=2048)
    assert agent.num_timesteps >= 2048
    changed = [not torch.equal(a, b.detach()) for a, b in zip(before, agent.policy.parameters())]
    assert all(changed)  # every layer received gradient updates
    for key in ("train/loss", "train/value_loss", "train/approx_kl"):
        assert np.isfinite(agent.logger.name_to_value[key]), key

    path = tmp_path / "ppo_peter"
    agent.save(path)
    loaded = PPO.load(path, device="cpu")
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True)
    obs, _ = env.reset(seed=1)
    action, _ = loaded.predict(obs, deterministic=True)
    np.testing.assert_allclose(action, agent.predict(obs, deterministic=True)[0])
    assert env.action_space.contains(action.astype(np.float32))
    obs, reward, *_ = env.step(action)
    assert np.isfinite(reward)
    env.close()
    venv.close()
