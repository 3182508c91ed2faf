"""The off-policy parallel learner (soft_envs.learn.offpolicy): skrl's SAC on the native vector envs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.recipes import RECIPES, Recipe

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

from soft_envs.agents.learned import MLPPolicy  # noqa: E402
from soft_envs.learn.offpolicy import ParallelSAC  # noqa: E402
from soft_envs.learn.parallel import learner_class, train_parallel  # noqa: E402

SMALL = RECIPES["peter-soft-parallel-sac"].replace(n_envs=8, batch_size=16, gradient_steps=1, learning_starts=16,
                                                   buffer_size=400, net_arch=(16,), standardize_samples=16,
                                                   env_kwargs={"kinematic": True})


def test_the_recipe_picks_skrl_sac_and_refuses_what_it_cannot_train():
    assert learner_class(SMALL) is ParallelSAC
    with pytest.raises(InvalidParameterError, match="skrl learner trains SAC"):
        Recipe(algo="PPO", learner="skrl", her=False).validate()
    with pytest.raises(InvalidParameterError, match="no HER"):
        Recipe(algo="SAC", learner="skrl", her=True).validate()


def test_a_step_of_every_env_fills_the_buffer_with_the_final_observation_of_ended_episodes():
    learner = ParallelSAC(SMALL.replace(buffer_size=8 * 200), SMALL.make_kwargs(), seed=0)  # no row overwritten
    length = learner.venv.spec.max_episode_steps
    for _ in range(length + 1):
        learner.iterate()
    assert learner.timesteps == 8 * (length + 1)
    memory = learner.agent.memory
    observations = memory.get_tensor_by_name("observations")
    following = memory.get_tensor_by_name("next_observations")[length - 1].numpy()  # the episodes' last step
    # the last transition of an episode ends at its final observation (the goal, entries 3:6, of its
    # episode), not at the first of the next episode (a new goal)
    np.testing.assert_allclose(following[:, 3:6], observations[0].numpy()[:, 3:6])
    assert not np.allclose(following[:, 3:6], observations[length].numpy()[:, 3:6])
    assert not memory.get_tensor_by_name("terminated").any()  # a time limit never stops the bootstrap
    learner.close()


def test_the_numpy_policy_is_the_actors_mean():
    learner = ParallelSAC(SMALL, SMALL.make_kwargs(), seed=0)
    for _ in range(4):
        learner.iterate()
    policy = learner.policy()
    obs = np.random.default_rng(0).normal(0.0, 0.01, (5, 18)) + learner.obs_mean
    standardised = torch.as_tensor((obs - learner.obs_mean) / learner.obs_std, dtype=torch.float32)
    with torch.no_grad():
        mean, _ = learner.agent.policy.compute({"observations": standardised})
    np.testing.assert_allclose(policy.act(obs), mean.numpy(), atol=1e-5)
    assert policy.output == "tanh"
    learner.close()


def test_training_saves_a_policy_with_its_card(tmp_path):
    result = train_parallel(SMALL, minutes=None, timesteps=160, seed=1, eval_episodes=2, progress=False,
                            log=lambda _: None, output=tmp_path / "sac.npz")
    assert result.timesteps == 160 and len(result.curve) == 20
    policy = MLPPolicy.load(tmp_path / "sac.npz")
    card = json.loads((tmp_path / "sac.json").read_text())
    assert card["learner"] == "skrl SAC" and card["timesteps"] == 160 and policy.output == "tanh"
    np.testing.assert_allclose(policy.act(np.zeros(18)), MLPPolicy.load(tmp_path / "sac.npz").act(np.zeros(18)))
