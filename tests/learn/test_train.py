"""``soft-envs train-rl``: a tiny budget end to end, the saved policy in ``soft-envs evaluate``, HER on the Dict
form."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401  (registers the environments)
from soft_envs.cli import main
from soft_envs.evaluate import TASKS, Job, SB3Policy, evaluate, jobs_for, run_episode
from soft_envs.exceptions import InvalidParameterError

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from soft_envs.learn.train import EVAL_SEED, Recipe, load_model, policy_record, train  # noqa: E402

TINY = Recipe(net_arch=(32, 32), batch_size=32, learning_starts=100)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A HER-trained SAC policy on a tiny budget (it learns nothing useful: the test is the plumbing)."""
    path = tmp_path_factory.mktemp("rl") / "sac_tiny"
    result = train(TINY, minutes=None, timesteps=300, eval_every=150, eval_episodes=2, output=path,
                   progress=False, log=lambda line: None)
    return result


def test_training_runs_evaluates_and_saves_the_policy_with_its_env_keywords(trained):
    assert trained.timesteps == 300
    assert [steps for steps, _, _ in trained.history] == [150, 300]
    assert trained.final.episodes == 2 and np.all(trained.final.distances > 0)
    record = policy_record(trained.path)
    assert record["algo"] == "SAC" and record["env_id"] == "soft_envs/PeterReach-v0"
    assert record["env_kwargs"] == {"n_modules": 2, "kinematic": True, "goal_conditioned": True}
    assert record["evaluation"]["episodes"] == 2 and record["evaluation"]["first_seed"] == EVAL_SEED
    model = load_model(trained.path)  # no env needed, although it was trained with HER
    env = gym.make("soft_envs/PeterReach-v0", **record["env_kwargs"])
    obs, _ = env.reset(seed=EVAL_SEED)
    assert env.action_space.contains(model.predict(obs, deterministic=True)[0])
    env.close()


def test_evaluate_runs_the_saved_policy_next_to_the_ik_controllers(trained):
    spec = f"sb3:SAC:{trained.path}"
    assert SB3Policy.env_keywords(spec) == {"goal_conditioned": True}  # the Dict form it was trained on
    jobs = jobs_for(["peter-2-kinematic"], ["trr", spec], episodes=2, seed=EVAL_SEED)
    result = evaluate(jobs, workers=1, progress=False)
    rows = {r["controller"]: r for r in result.summary()}
    assert rows["trr"]["success_rate"] == 1.0  # open-loop TRR on its own model
    assert rows[spec]["episodes"] == 2 and np.isfinite(rows[spec]["metric_mean"])
    # The same episodes as the training's own final evaluation (same goals, same policy).
    np.testing.assert_allclose(result.columns()["metric"][2:], trained.final.distances, rtol=1e-6)
    assert "peter-2-kinematic" in result.table()


def test_a_policy_for_other_spaces_is_refused(trained):
    model = load_model(trained.path)
    env = gym.make("soft_envs/PeterReach-v0", n_modules=3, kinematic=True, goal_conditioned=True)
    with pytest.raises(InvalidParameterError, match="observation_space"):
        SB3Policy(model, env)
    env.close()
    with pytest.raises(InvalidParameterError, match="algorithm"):
        run_episode(Job(TASKS["peter-2-kinematic"], f"sb3:NOPE:{trained.path}", "ideal", 0))


def test_cli_trains_and_reports_the_final_figures(tmp_path, capsys):
    out = tmp_path / "policy.zip"
    assert main(["train-rl", "--minutes", "0", "--timesteps", "120", "--net", "16", "--batch-size", "16",
                 "--eval-every", "1000", "--eval-episodes", "2", "--no-her", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "within 5 mm" in text and "within 1 mm" in text and "median" in text
    assert out.exists() and json.loads(out.with_suffix(".json").read_text())["env_kwargs"]["goal_conditioned"] is False
    assert main(["train-rl", "--gamma", "1.5", "--output", str(out)]) == 2


@pytest.mark.parametrize("bad", [dict(algo="PPO"), dict(gamma=1.0), dict(net_arch=()), dict(batch_size=0),
                                 dict(goal_selection_strategy="past"), dict(learning_rate=-1.0)])
def test_bad_recipes_raise_value_errors(bad):
    with pytest.raises(ValueError):
        Recipe(**bad).validate()
    with pytest.raises(ValueError, match="budget"):
        train(TINY, minutes=None, timesteps=None)


def test_her_relabels_goals_with_the_envs_compute_reward():
    """SB3's HerReplayBuffer on the goal-conditioned form: its rewards are the env's for the
    relabelled goals, and the relabelled goals are tips the arm reached."""
    from stable_baselines3 import SAC, HerReplayBuffer

    torch.set_num_threads(1)
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True, goal_conditioned=True)
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, learning_starts=100, batch_size=32,
                replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
                policy_kwargs={"net_arch": [32, 32]}, seed=0, device="cpu")
    model.learn(total_timesteps=300)  # six episodes of 50 steps
    batch = model.replay_buffer.sample(2000)
    achieved = batch.next_observations["achieved_goal"].numpy()
    desired = batch.observations["desired_goal"].numpy()
    expected = env.unwrapped.compute_reward(achieved, desired, None)
    np.testing.assert_allclose(batch.rewards.numpy().ravel(), expected, rtol=1e-5, atol=1e-6)
    reached = model.replay_buffer.next_observations["achieved_goal"][:300, 0]  # every tip of the six episodes
    hindsight = np.mean([np.any(np.all(goal == reached, axis=1)) for goal in desired])
    assert 0.7 < hindsight < 0.9  # n_sampled_goal=4: 80 % of the samples carry a reached tip as goal
    assert np.mean(expected == 0.0) > 0.01  # "future" includes the step's own tip: reward 0 there
    env.close()


def test_every_learned_goal_names_a_recipe_a_task_and_controllers_that_exist():
    from soft_envs.learn.recipes import GOALS, RECIPES, recipe_for

    for goal in GOALS:
        recipe = recipe_for(goal.recipe)
        assert goal.recipe in RECIPES and goal.task in TASKS, goal
        assert recipe.env_id == TASKS[goal.task].env_id, goal
        env = gym.make(recipe.env_id, **recipe.make_kwargs())  # the recipe's keywords make its env
        env.close()
        assert 0 < goal.minutes <= 60, goal
