"""The parallel learner (soft_envs.learn.parallel): rsl_rl's PPO on the native vector envs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.recipes import PARALLEL_MIN_ENVS, RECIPES, Recipe

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

from soft_envs.agents.learned import MLPPolicy  # noqa: E402
from soft_envs.learn.parallel import ParallelPPO, TorchVectorEnv, make_vector_env, train_parallel  # noqa: E402

SMALL = RECIPES["peter-soft-parallel"].replace(n_envs=8, n_steps=5, batch_size=20, net_arch=(16,),
                                               standardize_samples=16, env_kwargs={"kinematic": True})


def test_adapter_hands_standardised_batches_and_marks_time_outs():
    venv = make_vector_env(SMALL, SMALL.make_kwargs())
    env = TorchVectorEnv(venv, np.zeros(18), np.full(18, 2.0), seed=3, metric="distance")
    obs = env.get_observations()["policy"]
    first, _ = make_vector_env(SMALL, SMALL.make_kwargs()).reset(seed=3)
    np.testing.assert_allclose(obs.numpy(), first / 2.0, rtol=1e-6)  # same seeds: the same first goals
    ends = 0
    for _ in range(venv.spec.max_episode_steps):
        obs, reward, done, extras = env.step(torch.zeros(8, 6))
        assert obs["policy"].shape == (8, 18) and reward.dtype == torch.float32 and reward.shape == (8,)
        ends += int(done.sum())
        assert torch.equal(extras["time_outs"], done)  # PeterReach ends by its time limit only
    assert ends == 8
    episodes = env.take_episodes()
    assert episodes["episodes"] == 8 and 0.0 <= episodes["success"] <= 1.0 and episodes["distance"] > 0.0
    assert env.take_episodes() == {}
    env.close()


@pytest.mark.parametrize("activation", ["elu", "relu", "tanh"])
def test_the_numpy_policy_is_the_actors_deterministic_output(activation):
    recipe = SMALL.replace(activation=activation)
    learner = ParallelPPO(recipe, recipe.make_kwargs(), seed=0)
    row = learner.iterate()
    assert learner.timesteps == 40 and {"value", "surrogate", "learning_rate"} <= set(row)
    policy = learner.policy()
    assert policy.activation == activation
    obs = np.random.default_rng(0).normal(0.0, 0.01, (4, 18)) + learner.obs_mean
    standardised = torch.as_tensor((obs - learner.obs_mean) / learner.obs_std, dtype=torch.float32)
    from tensordict import TensorDict

    with torch.no_grad():
        mean = learner.alg.get_policy()(TensorDict({"policy": standardised}, batch_size=[4])).numpy()
    np.testing.assert_allclose(policy.act(obs), np.clip(mean, -1, 1), atol=1e-5)
    learner.close()


def test_a_zero_output_actor_starts_as_the_law_it_corrects():
    """``zero_output``: before any update the deterministic action is 0 for every observation — on a
    ``task_feedback`` env, the proportional law itself."""
    recipe = SMALL.replace(zero_output=True, env_kwargs={"kinematic": True, "action_mode": "task",
                                                        "task_feedback": 0.2})
    learner = ParallelPPO(recipe, recipe.make_kwargs(), seed=0)
    obs = np.random.default_rng(1).normal(0.0, 1.0, (5, learner.obs_mean.shape[0])) + learner.obs_mean
    np.testing.assert_array_equal(learner.policy().act(obs), np.zeros((5, 3)))
    learner.close()


def test_a_privileged_critic_reads_what_the_simulator_knows_and_the_actor_does_not():
    recipe = SMALL.replace(privileged_critic=True, env_kwargs={"kinematic": False, "realism": "realistic"})
    learner = ParallelPPO(recipe, recipe.make_kwargs(), seed=0)
    venv = learner.env.venv
    groups = learner.env.get_observations()
    privileged = venv.unwrapped.privileged_observation()
    assert privileged.shape == (8, 6 + 4 * 6 + 1) and groups["privileged"].shape == (8, privileged.shape[1])
    source, mean, inv_std = learner.env.privileged
    np.testing.assert_allclose(groups["privileged"].numpy(), (privileged - mean) * inv_std, rtol=1e-5, atol=1e-5)
    arms = venv.unwrapped.arms
    np.testing.assert_allclose(privileged[:, :3], arms.goal - arms.tip, atol=1e-7)  # the true error, no noise
    np.testing.assert_allclose(privileged[:, -1], arms.legs.delay, atol=1e-7)
    assert np.ptp(privileged[:, 12:18], axis=0).min() > 0  # a gain drawn per leg and arm
    assert learner.alg.critic.mlp[0].in_features == 18 + privileged.shape[1]
    assert learner.alg.get_policy().mlp[0].in_features == 18  # the actor: the observations alone
    row = learner.iterate()
    assert np.isfinite(row["value"])
    learner.close()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_a_gpu_torch_does_not_see_is_refused_before_an_env_is_built():
    for device in ("cuda", "cuda:1", "gpu", "cpu:0"):
        with pytest.raises(InvalidParameterError, match="device"):
            train_parallel(SMALL, minutes=None, timesteps=40, progress=False, log=lambda _: None, device=device)


def test_training_is_seeded_and_saves_a_policy_with_its_card(tmp_path):
    runs = [train_parallel(SMALL, minutes=None, timesteps=80, seed=1, eval_episodes=2, progress=False,
                           log=lambda _: None, output=tmp_path / f"run{k}.npz") for k in range(2)]
    assert runs[0].timesteps == 80 and len(runs[0].curve) == 2
    a, b = (MLPPolicy.load(r.path) for r in runs)
    for (Wa, _), (Wb, _) in zip(a.weights, b.weights, strict=True):
        np.testing.assert_array_equal(Wa, Wb)
    card = json.loads((tmp_path / "run0.json").read_text())
    assert card["env_id"] == "soft_envs/PeterReach-v0" and card["seed"] == 1 and card["timesteps"] == 80
    assert card["evaluation"]["episodes"] == 2 and card["learner"] == "rsl_rl PPO"
    assert json.loads((tmp_path / "run0.curve.json").read_text())[0]["timesteps"] == 40


@pytest.mark.parametrize("name", ["pcc-residual-parallel", "pcc-push-parallel"])
def test_the_pcc_recipes_learn_on_the_native_vector_envs_through_the_closed_loop_wrapper(name):
    """Residual actions in delta mode (the spiral) and the smooth set-point's task-space action (the hanging
    push arm): the closed-loop wrapper on the parallel learner; both act with three numbers (an aim's
    correction, a tip displacement)."""
    recipe = RECIPES[name].replace(n_envs=4, n_steps=3, batch_size=12, net_arch=(16,), standardize_samples=8)
    learner = ParallelPPO(recipe, recipe.make_kwargs(), seed=0)
    assert type(learner.env.venv).__name__ == "ClosedLoopVector"
    learner.iterate()
    assert learner.timesteps == 12
    policy = learner.policy()
    assert policy.act(np.tile(learner.obs_mean, (2, 1))).shape == (2, 3)
    learner.close()


def test_bad_recipes_and_budgets_are_refused():
    with pytest.raises(InvalidParameterError, match="activation"):
        SMALL.replace(activation="gelu").validate()
    with pytest.raises(InvalidParameterError, match="privileged_critic"):
        RECIPES["peter-soft-parallel-sac"].replace(privileged_critic=True).validate()
    with pytest.raises(InvalidParameterError, match="privileged observation"):
        ParallelPPO(RECIPES["pcc-residual-parallel"].replace(n_envs=2, n_steps=2, batch_size=4, standardize_samples=4,
                                                             privileged_critic=True), {}, seed=0)
    with pytest.raises(InvalidParameterError, match="rsl_rl"):
        Recipe(learner="rsl_rl").validate()  # SAC + HER
    with pytest.raises(InvalidParameterError, match="learner"):
        Recipe(learner="cleanrl").validate()
    with pytest.raises(InvalidParameterError, match="got learner .sb3."):
        train_parallel(RECIPES["peter-soft"], timesteps=10)
    with pytest.raises(InvalidParameterError, match="budget"):
        train_parallel(SMALL, minutes=None, timesteps=None)
    with pytest.raises(InvalidParameterError, match="native vector env"):
        make_vector_env(SMALL.replace(env_id="soft_envs/QuadrupedWalk-v0"), {})


def test_cli_picks_the_parallel_learner_for_thousands_of_envs(tmp_path, capsys):
    from soft_envs.cli import build_parser
    from soft_envs.learn.cli import recipe_from_args

    parser = build_parser()
    args = parser.parse_args(["train-rl", "--env-kwargs", '{"kinematic": false}', "--n-envs", "1024"])
    recipe = recipe_from_args(args)
    assert recipe.learner == "rsl_rl" and recipe.n_envs == 1024 and recipe.env_kwargs["kinematic"] is False
    few = recipe_from_args(parser.parse_args(["train-rl", "--n-envs", str(PARALLEL_MIN_ENVS - 1)]))
    assert few.learner == "sb3"
    from soft_envs.cli import main

    out = tmp_path / "p.npz"
    assert main(["train-rl", "--recipe", "peter-soft-parallel", "--n-envs", "64", "--env-kwargs",
                 '{"kinematic": true}', "--minutes", "0", "--timesteps", "100", "--net", "8", "--batch-size", "400",
                 "--eval-episodes", "2", "--output", str(out)]) == 0
    assert "rsl_rl PPO on soft_envs/PeterReach-v0" in capsys.readouterr().out and out.exists()
    assert main(["train-rl", "--recipe", "peter-soft-parallel", "--resume", "--output", str(out)]) == 2


def test_evaluate_runs_a_saved_numpy_policy_as_a_controller(tmp_path):
    from soft_envs.evaluate import TASKS, Job, NumpyPolicy, jobs_for, run_episode

    path = train_parallel(SMALL, minutes=None, timesteps=40, seed=0, eval_episodes=1, progress=False,
                          log=lambda _: None, output=tmp_path / "p.npz").path
    episode = run_episode(Job(TASKS["peter-2-kinematic"], f"policy:{path}", "ideal", 5))
    assert episode.controller == f"policy:{path}" and np.isfinite(episode.metric)
    jobs = jobs_for(["peter-2-kinematic"], ["trr", f"policy:{path}"], ["ideal"], episodes=2)
    assert sorted({job.controller for job in jobs}) == sorted(["trr", f"policy:{path}"])
    import gymnasium as gym

    with pytest.raises(InvalidParameterError, match="trained on"):
        NumpyPolicy.from_spec(f"policy:{path}", gym.make("soft_envs/PCCTrack-v0"))


def test_the_learned_bench_judges_a_residual_goal_against_its_law(tmp_path, monkeypatch):
    from soft_envs.bench import learned
    from soft_envs.learn.recipes import GOALS, recipe_for

    goal = next(g for g in GOALS if g.stem == "peter_residual")
    assert learned.LAW in goal.ik and recipe_for(goal.recipe).env_kwargs["task_feedback"] > 0
    recipe = recipe_for(goal.recipe).replace(n_envs=8, n_steps=5, batch_size=20, net_arch=(16,),
                                             standardize_samples=16)
    train_parallel(recipe, minutes=None, timesteps=40, seed=goal.seed, eval_episodes=1, progress=False,
                   log=lambda *_: None, output=tmp_path / f"{goal.stem}.npz")
    assert learned.goal_policy(tmp_path, goal.stem).suffix == ".npz"
    record = learned.goal_record(tmp_path / f"{goal.stem}.npz")
    assert record["seed"] == goal.seed and len(record["load_average"]) == 2  # the card holds the machine's load
    monkeypatch.setenv("SOFT_ENVS_POLICIES", str(tmp_path))
    monkeypatch.setattr(learned, "_shipped_table", lambda episodes: "")  # (the shipped policies: their own tests)
    text = learned.run(full=False, goals=[goal.stem])
    assert f"**{goal.stem}**" in text and "task-feedback" in text and "; the law " in text
    spec = "policy:x.npz"
    law = np.full(100, 0.4e-3)
    better = {(spec, "realistic"): np.full(100, 0.3e-3), (learned.LAW, "realistic"): law}
    assert learned._verdict(goal, better, spec)[1]
    worse = {(spec, "realistic"): np.full(100, 0.5e-3), (learned.LAW, "realistic"): law}
    assert not learned._verdict(goal, worse, spec)[1]
    missing = {(spec, "realistic"): np.r_[np.full(98, 0.1e-3), 2e-3, 2e-3], (learned.LAW, "realistic"): law}
    assert not learned._verdict(goal, missing, spec)[1]  # 98 % within 1 mm, however precise the rest


def test_the_learned_bench_judges_an_obstacle_goal_by_success_without_a_collision():
    from soft_envs.bench import learned
    from soft_envs.learn.recipes import GOALS, recipe_for

    goal = next(g for g in GOALS if g.stem == "peter_obstacles")
    kwargs = recipe_for(goal.recipe).env_kwargs
    assert kwargs["obstacles"] == 3 and kwargs["collision_weight"] > 0 and goal.task == "peter-2-obstacles"
    spec, preset = "policy:x.npz", goal.presets[0]

    def fails(successes: int) -> np.ndarray:  # ``fell`` is "not a success" (a miss or a collision)
        return np.arange(20) >= successes

    rivals = {(c, preset, "fell"): fails(18) for c in goal.ik}
    rivals[learned.LAW, preset, "fell"] = fails(12)  # the obstacle-blind law does not count
    text, met = learned._verdict(goal, rivals | {(spec, preset, "fell"): fails(18)}, spec)
    assert met and "90 %" in text and "task-feedback 60 %" in text
    assert not learned._verdict(goal, rivals | {(spec, preset, "fell"): fails(17)}, spec)[1]
