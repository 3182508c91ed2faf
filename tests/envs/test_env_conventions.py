"""SPEC section 7 invariants, tested over every registered environment (dm_control style)."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import soft_envs

ENV_IDS = list(soft_envs.ENV_IDS)
N_STEPS = 5


def _rollout(env: gym.Env, seed: int, n_steps: int = N_STEPS):
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace = [gym.spaces.utils.flatten(env.observation_space, obs)]
    rewards = []
    for _ in range(n_steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        trace.append(gym.spaces.utils.flatten(env.observation_space, obs))
        rewards.append(reward)
        if terminated or truncated:
            break
    return np.array(trace), np.array(rewards)


def test_every_declared_env_is_registered():
    assert "soft_envs/PeterReach-v0" in ENV_IDS
    for env_id in ENV_IDS:
        assert gym.spec(env_id).max_episode_steps is not None


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_is_clean(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    messages = [str(w.message) for w in caught if "needs a display" not in str(w.message)]
    env.close()
    assert messages == []


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_rollout_and_instances_do_not_interfere(env_id):
    a, b = gym.make(env_id), gym.make(env_id)
    # Interleave two instances in one process: each has its own physics client.
    a.reset(seed=7)
    b.reset(seed=8)
    a.step(a.action_space.sample())
    obs_a, rew_a = _rollout(a, seed=3)
    obs_b, rew_b = _rollout(b, seed=3)
    a.close()
    b.close()
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(rew_a, rew_b)
    c = gym.make(env_id)
    obs_c, _ = _rollout(c, seed=4)
    c.close()
    assert not np.array_equal(obs_a[0], obs_c[0]), "different seeds should give different episodes"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_roundtrip(env_id):
    env = gym.make(env_id)
    clone = pickle.loads(pickle.dumps(env))
    obs_a, rew_a = _rollout(env, seed=11, n_steps=2)
    obs_b, rew_b = _rollout(clone, seed=11, n_steps=2)
    env.close()
    clone.close()
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(rew_a, rew_b)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reward_terms_sum_to_reward_and_bad_actions(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(env.action_space.sample())
    terms = [v for k, v in info.items() if k.startswith("reward_")]
    assert terms, "info must carry the reward terms"
    assert sum(terms) == reward
    assert info["action_clipped"] is False
    too_big = np.asarray(env.action_space.high, dtype=np.float64) * 3.0 + 1.0
    _, _, _, _, info = env.step(too_big.astype(env.action_space.dtype))
    assert info["action_clipped"] is True
    nan_action = np.full(env.action_space.shape, np.nan, dtype=np.float32)
    with pytest.raises(ValueError, match="NaN"):
        env.step(nan_action)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(env.action_space.shape[0] + 1, dtype=np.float32))
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rgb_array_renders_headless(env_id):
    env = gym.make(env_id, render_mode="rgb_array", width=96, height=72)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frame = env.render()
    env.close()
    assert frame.shape == (72, 96, 3) and frame.dtype == np.uint8
    assert frame.std() > 1.0, "the frame shows nothing"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_close_frees_the_physics_client(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    clients = [c for c in (getattr(env.unwrapped, "client", None),) if c is not None]
    env.close()
    env.close()  # idempotent
    for client in clients:
        assert not client.isConnected()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_envs(env_id, mode):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode)
    obs, _ = envs.reset(seed=[1, 2])
    envs.action_space.seed(0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    envs.close()
    assert reward.shape == (2,)
    assert np.all(np.isfinite(reward))
