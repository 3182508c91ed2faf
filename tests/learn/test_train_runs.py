"""``soft-envs train-rl`` on every env, PPO, checkpoints, SIGTERM/SIGKILL and --resume, --seeds."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

import soft_envs
from soft_envs.cli import main
from soft_envs.exceptions import InvalidParameterError

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from soft_envs.learn.train import (  # noqa: E402
    RECIPES,
    load_model,
    parse_seeds,
    policy_record,
    recipe_for,
    train,
    train_seeds,
)

SMALL = dict(net_arch=(16,), batch_size=16, learning_starts=60, standardize_samples=50, n_steps=32, n_envs=2)


def test_every_env_id_has_a_recipe():
    assert set(soft_envs.ENV_IDS) <= set(RECIPES)
    for name in RECIPES:
        recipe = recipe_for(name).validate()
        assert recipe.env_id in soft_envs.ENV_IDS


@pytest.mark.slow
@pytest.mark.parametrize("env_id", list(soft_envs.ENV_IDS))
def test_train_rl_runs_on_every_env_and_the_policy_acts_on_it(env_id, tmp_path):
    recipe = recipe_for(env_id).replace(**SMALL | {"learning_starts": 20}, env_kwargs={"max_episode_steps": 8})
    result = train(recipe, minutes=None, timesteps=40, eval_every=10**6, eval_episodes=1, output=tmp_path / "p",
                   progress=False, log=lambda *_: None)
    assert result.timesteps >= 40 and result.final.episodes == 1
    record = policy_record(result.path)
    assert record["env_id"] == env_id and record["recipe"]["algo"] == recipe.algo
    model = load_model(result.path)
    env = gym.make(env_id, **record["env_kwargs"])
    obs, _ = env.reset(seed=0)
    assert env.action_space.contains(model.predict(obs, deterministic=True)[0])
    env.close()


@pytest.mark.parametrize("algo", ["PPO", "RecurrentPPO"])
def test_ppo_trains_on_parallel_envs_and_recurrent_policies_evaluate(algo, tmp_path):
    pytest.importorskip("sb3_contrib")
    from soft_envs.evaluate import SB3Policy

    recipe = recipe_for("soft_envs/PeterReach-v0").replace(algo=algo, her=False, **SMALL)
    result = train(recipe, minutes=None, timesteps=64, eval_every=10**6, eval_episodes=2, output=tmp_path / "p",
                   progress=False, log=lambda *_: None)
    assert result.timesteps == 64 and np.all(np.isfinite(result.final.distances))
    from soft_envs.learn.sb3_vector import SB3VecEnv
    from soft_envs.learn.train import make_training_env

    venv = make_training_env(recipe, recipe.make_kwargs(), seed=0)  # kinematic PeterReach: its native vector env
    assert isinstance(venv, SB3VecEnv) and venv.num_envs == 2
    venv.close()
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True, goal_conditioned=False)
    agent = SB3Policy.from_spec(f"sb3:{algo}:{result.path}", env)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    actions = [agent.act(env.step(agent.act(obs))[0]) for _ in range(2)]
    assert all(env.action_space.contains(a) for a in actions)
    env.close()


def _cli(output, *extra):
    return [sys.executable, "-u", "-m", "soft_envs.cli", "train-rl", "--minutes", "0", "--timesteps", "400",
            "--net", "16", "--batch-size", "16", "--learning-starts", "50", "--eval-every", "100000",
            "--eval-episodes", "1", "--buffer-size", "2000", "--output", str(output), *extra]


def _wait_for(process, predicate, timeout=120.0):
    start = time.monotonic()
    while not predicate():
        assert process.poll() is None, process.stdout.read()
        assert time.monotonic() - start < timeout
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_killed_run_resumes_to_the_same_budget(kill, tmp_path):
    output = tmp_path / "policy.zip"
    ckpt = tmp_path / "policy.ckpt" / "state.json"
    env = dict(os.environ, PYTHONHASHSEED="0")
    process = subprocess.Popen(_cli(output, "--checkpoint-every", "0.002"), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    try:
        _wait_for(process, lambda: ckpt.exists() and json.loads(ckpt.read_text())["timesteps"] > 60)
        process.send_signal(kill)
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == (3 if kill == signal.SIGTERM else -signal.SIGKILL)
    assert not output.exists()
    done = json.loads(ckpt.read_text())["timesteps"]
    assert 60 < done < 400
    assert main(_cli(output, "--resume")[4:]) == 0
    record = policy_record(output)
    assert record["timesteps"] == 400  # the same total budget
    obs, _ = gym.make("soft_envs/PeterReach-v0", **record["env_kwargs"]).reset(seed=0)
    assert load_model(output).predict(obs, deterministic=True)[0].shape == (6,)  # the policy file loads


def test_resume_without_a_checkpoint_and_bad_options_are_clear(tmp_path):
    with pytest.raises(InvalidParameterError, match="nothing to resume"):
        train(minutes=None, timesteps=10, output=tmp_path / "p", resume=True)
    with pytest.raises(InvalidParameterError, match="output"):
        train(minutes=None, timesteps=10, checkpoint_every=1.0)
    assert main(["train-rl", "--env", "soft_envs/Nope-v0"]) == 2
    assert main(["train-rl", "--env-kwargs", "[1]"]) == 2
    assert main(["train-rl", "--algo", "PPO", "--her"]) == 2
    assert parse_seeds("0-3,7") == [0, 1, 2, 3, 7]
    for bad in ("", "a", "1,1"):
        with pytest.raises(InvalidParameterError):
            parse_seeds(bad)


def test_several_seeds_in_parallel_processes(tmp_path):
    recipe = recipe_for("soft_envs/PeterReach-v0").replace(**SMALL)
    rows = train_seeds([0, 1], output=tmp_path / "p.zip", workers=2, recipe=recipe, minutes=None, timesteps=30,
                       eval_every=10**6, eval_episodes=1)
    assert [r["seed"] for r in rows] == [0, 1] and all(r["timesteps"] == 30 for r in rows)
    assert (tmp_path / "p_seed0.zip").exists() and (tmp_path / "p_seed1.json").exists()


@pytest.mark.slow
def test_tensorboard_logs_are_written(tmp_path):
    pytest.importorskip("tensorboard")
    recipe = recipe_for("soft_envs/PeterReach-v0").replace(**SMALL)
    train(recipe, minutes=None, timesteps=80, eval_every=10**6, eval_episodes=1, tensorboard=str(tmp_path / "tb"),
          progress=False, log=lambda *_: None)
    assert any(name.startswith("events.") for _, _, files in os.walk(tmp_path / "tb") for name in files)


@pytest.mark.slow
def test_the_learned_baseline_example_runs(tmp_path, capsys):
    import runpy

    example = runpy.run_path(str(__import__("pathlib").Path(__file__).parents[2] / "examples" / "learned_baseline.py"))
    example["main"](["peter_soft", "--smoke", "--episodes", "1", "--output", str(tmp_path / "p.zip")])
    table = capsys.readouterr().out
    assert "trr-feedback" in table and "sb3:SAC:" in table


@pytest.mark.budget
def test_the_wall_clock_budget_reads_the_clock(expiring_clock, tmp_path):
    recipe = recipe_for("soft_envs/PeterReach-v0").replace(**SMALL)
    expiring_clock(40)  # after 40 reads every deadline has passed
    result = train(recipe, minutes=1.0, eval_every=10**6, eval_episodes=1, progress=False, log=lambda *_: None)
    assert 0 < result.timesteps < 60 and result.seconds >= 60.0


def test_the_learned_bench_evaluates_the_policies_it_finds_and_names_the_missing(tmp_path, monkeypatch):
    from soft_envs.bench import learned
    from soft_envs.learn.recipes import GOALS

    goal = next(g for g in GOALS if g.stem == "peter_soft")
    recipe = recipe_for(goal.recipe).replace(net_arch=(16,), batch_size=16, learning_starts=16,
                                             standardize_samples=32, env_kwargs={"max_episode_steps": 8})
    train(recipe, seed=goal.seed, minutes=None, timesteps=32, eval_every=10**9, eval_episodes=1,
          output=str(tmp_path / f"{goal.stem}.zip"), progress=False)
    monkeypatch.setenv("SOFT_ENVS_POLICIES", str(tmp_path))
    text = learned.run(full=False)
    assert f"**{goal.stem}**" in text and "trr-feedback" in text
    for other in GOALS:
        if other is not goal:  # every goal has its row; the ones without a policy say so
            assert f"| **{other.stem}** | {other.target} | {other.minutes:g} min | not trained" in text


def test_the_loop_options_ablation_trains_every_variant_on_the_same_goals():
    from soft_envs.bench import loop_options

    for label in loop_options.VARIANTS:
        recipe = loop_options.variant_recipe(label).validate()
        assert recipe.env_kwargs["realism"] == "realistic" and recipe.env_kwargs["kinematic"]
    assert loop_options.variant_recipe("delta + history 2").env_kwargs["history"] == 2
    rows = loop_options.ablation_rows(None, 0, timesteps=150, eval_episodes=2)
    assert [row[0] for row in rows] == list(loop_options.VARIANTS)
    for row in rows:
        assert row[1] >= 150 and row[2].endswith(" %") and float(row[4]) > 0.0


def test_a_policy_trained_as_its_goal_asks_is_kept_and_its_checkpoint_resumed(tmp_path):
    # The record and the checkpoint hold the recipe through JSON (tuples become lists): both must
    # still compare equal to today's recipe, or `bench learned --train` retrains from zero.
    from soft_envs.bench.learned import _as_recorded, _trained_as_asked
    from soft_envs.learn.checkpoint import Checkpoint
    from soft_envs.learn.recipes import GOALS

    goal = next(g for g in GOALS if g.stem == "peter_soft")
    path = tmp_path / f"{goal.stem}.zip"
    train(recipe_for(goal.recipe), minutes=goal.minutes, timesteps=1, seed=goal.seed, output=str(path),
          eval_every=10**9, eval_episodes=1, progress=False, log=lambda *_: None, budget_clock="cpu")
    assert _trained_as_asked(policy_record(path), goal, "cpu")
    assert not _trained_as_asked(policy_record(path), goal, "wall")
    checkpoint = Checkpoint(tmp_path / "written.ckpt")  # a checkpoint's state goes through JSON the same way
    checkpoint.save(load_model(path), {"recipe": dataclasses.asdict(recipe_for(goal.recipe))})
    assert checkpoint.state()["recipe"] == _as_recorded(recipe_for(goal.recipe))


def test_a_gait_modulating_policy_trains_evaluates_and_demos_through_its_gait(tmp_path):
    """The walk goal's recipe end to end: trained on the wrapped env, saved with its recipe, then
    run by `soft-envs evaluate` (SB3Policy) and `soft-envs demo --policy` through the trot."""
    from soft_envs.demos import learned
    from soft_envs.evaluate import TASKS, Job, run_episode

    recipe = recipe_for("quadruped-walk-gait").replace(**SMALL, env_kwargs={"max_episode_steps": 8})
    result = train(recipe, minutes=None, timesteps=64, eval_every=10**6, eval_episodes=1, output=tmp_path / "walk",
                   progress=False, log=lambda *_: None)
    assert policy_record(result.path)["recipe"]["base_gait"] == "trot"
    episode = run_episode(Job(dataclasses.replace(TASKS["quadruped-walk"], max_steps=10), f"sb3:PPO:{result.path}",
                              "ideal", 0))
    assert episode.steps == 10 and set(episode.figures) >= {"gait_command_reversals_per_second"}
    frames = learned(str(result.path), steps=3, width=32, height=24)
    assert len(frames) == 3 and frames[0].shape == (24, 32, 3)
