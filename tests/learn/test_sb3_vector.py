"""``soft_envs.learn.sb3_vector.SB3VecEnv``: Stable-Baselines3 on the Gymnasium vector envs.

The adapter over a native vector env (either autoreset mode) and over a ``SyncVectorEnv`` gives
what SB3's own ``DummyVecEnv`` of ``Monitor``-wrapped single envs gives (observations, rewards,
dones, ``terminal_observation``, ``TimeLimit.truncated``, ``episode``); PPO and SAC + HER train
through it for a few thousand steps.
"""

from __future__ import annotations

import numpy as np
import pytest

import soft_envs  # noqa: F401

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from soft_envs.learn.sb3_vector import info_rows, sb3_vec_env  # noqa: E402

PETER = "soft_envs/PeterReach-v0"
N_ENVS = 3
EPISODE = 5


def _dummy(seed: int, **kwargs):
    from stable_baselines3.common.env_util import make_vec_env

    return make_vec_env(PETER, n_envs=N_ENVS, seed=seed, env_kwargs=dict(max_episode_steps=EPISODE, **kwargs))


def _flat(obs) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.asarray(obs[k], dtype=float).reshape(len(obs[k]) if np.ndim(obs[k]) > 1 else 1, -1)
                               for k in sorted(obs)], axis=-1)
    return np.asarray(obs, dtype=float)


@pytest.mark.parametrize("how", ["native-next-step", "native-same-step", "sync"])
@pytest.mark.parametrize("goal_conditioned", [False, True])
def test_adapter_gives_what_dummy_vec_env_gives(how, goal_conditioned):
    kwargs = dict(kinematic=True, goal_conditioned=goal_conditioned, realism="realistic")
    mode = {"native-next-step": {}, "native-same-step": {"autoreset_mode": "SameStep"},
            "sync": {"vectorization_mode": "sync"}}[how]
    venv = sb3_vec_env(PETER, N_ENVS, seed=4, max_episode_steps=EPISODE, **mode, **kwargs)
    reference = _dummy(4, **kwargs)
    np.testing.assert_allclose(_flat(venv.reset()), _flat(reference.reset()), atol=1e-9)
    for i in range(N_ENVS):
        np.testing.assert_allclose(venv.reset_infos[i]["realism"]["leg_gain"],
                                   reference.reset_infos[i]["realism"]["leg_gain"], atol=1e-12)
    rng = np.random.default_rng(1)
    episodes = 0
    for _ in range(2 * EPISODE + 2):
        actions = rng.uniform(-1, 1, size=(N_ENVS, 6)).astype(np.float32)
        obs, rewards, dones, infos = venv.step(actions)
        ref_obs, ref_rewards, ref_dones, ref_infos = reference.step(actions)
        np.testing.assert_allclose(_flat(obs), _flat(ref_obs), atol=1e-9)
        np.testing.assert_allclose(rewards, ref_rewards, atol=1e-6)
        np.testing.assert_array_equal(dones, ref_dones)
        assert rewards.dtype == np.float32 and dones.dtype == np.bool_
        for info, ref in zip(infos, ref_infos, strict=True):
            assert info["TimeLimit.truncated"] == ref["TimeLimit.truncated"]
            assert info["distance"] == pytest.approx(ref["distance"], abs=1e-12)
            assert ("terminal_observation" in info) == ("terminal_observation" in ref)
            if "terminal_observation" in ref:
                episodes += 1
                np.testing.assert_allclose(_flat(info["terminal_observation"]), _flat(ref["terminal_observation"]),
                                           atol=1e-9)
                assert info["episode"]["l"] == ref["episode"]["l"] == EPISODE
                assert info["episode"]["r"] == pytest.approx(ref["episode"]["r"], abs=1e-5)
    assert episodes == 2 * N_ENVS
    venv.close()
    reference.close()


def test_attributes_methods_and_render():
    from stable_baselines3.common.monitor import Monitor

    venv = sb3_vec_env(PETER, 2, seed=0, kinematic=True, goal_conditioned=True, render_mode="rgb_array",
                       width=32, height=24)
    assert venv.render_mode == "rgb_array"
    obs = venv.reset()
    assert venv.get_attr("distance_weight") == [100.0, 100.0]
    rewards = venv.env_method("compute_reward", obs["achieved_goal"], obs["desired_goal"], None, indices=[0])
    assert len(rewards) == 1 and rewards[0].shape == (2,)
    assert venv.env_is_wrapped(Monitor) == [False, False]
    venv.set_attr("distance_weight", 1.0)
    assert venv.get_attr("distance_weight", indices=[1]) == [1.0]
    with pytest.raises(ValueError):
        venv.set_attr("distance_weight", 2.0, indices=[0])
    assert venv.render().shape == (24, 32, 3)
    venv.close()
    sync = sb3_vec_env(PETER, 2, kinematic=True, vectorization_mode="sync")
    sync.set_attr("success_threshold", 0.5, indices=[1])
    assert sync.get_attr("success_threshold") == [1e-3, 0.5]
    assert sync.env_method("draw_task", np.random.default_rng(0), indices=[1])[0].shape == (6,)
    sync.close()


def test_info_rows_follows_the_masks():
    info = {"a": np.array([1.0, 2.0]), "_a": np.array([True, False]),
            "nested": {"x": np.zeros((2, 3)), "_x": np.array([False, True])}, "_nested": np.array([False, True])}
    rows = info_rows(info, 2)
    assert rows[0] == {"a": 1.0}
    assert list(rows[1]) == ["nested"] and rows[1]["nested"]["x"].shape == (3,)


def test_ppo_trains_through_the_adapter():
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    venv = sb3_vec_env(PETER, 16, seed=0, kinematic=True)
    agent = PPO("MlpPolicy", venv, n_steps=64, batch_size=256, n_epochs=2, seed=0, device="cpu")
    agent.learn(total_timesteps=2048)
    assert agent.num_timesteps >= 2048
    assert len(agent.ep_info_buffer) >= 16  # the adapter's "episode" infos reached SB3
    assert all(ep["l"] == 50 for ep in agent.ep_info_buffer)
    assert np.isfinite(agent.logger.name_to_value["train/value_loss"])
    venv.close()


def test_sac_her_trains_on_the_goal_conditioned_form():
    """SAC + HerReplayBuffer on the goal-conditioned native vector env: relabelled rewards come from
    the vector env's compute_reward through env_method."""
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer

    torch.set_num_threads(1)
    venv = sb3_vec_env(PETER, 4, seed=0, kinematic=True, goal_conditioned=True, max_episode_steps=20)
    agent = SAC("MultiInputPolicy", venv, replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future"),
                learning_starts=200, batch_size=64, train_freq=4, gradient_steps=1,
                policy_kwargs=dict(net_arch=[32, 32]), seed=0, device="cpu")
    agent.learn(total_timesteps=1200)
    assert agent.num_timesteps >= 1200
    batch = agent.replay_buffer.sample(256, env=None)
    achieved = batch.next_observations["achieved_goal"].numpy()
    desired = batch.observations["desired_goal"].numpy()
    expected = -100.0 * np.linalg.norm(achieved.astype(float) - desired.astype(float), axis=-1)
    np.testing.assert_allclose(batch.rewards.numpy()[:, 0], expected, rtol=1e-5, atol=1e-5)
    venv.close()
