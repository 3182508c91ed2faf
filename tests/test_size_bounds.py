"""Every size a user gives (library keywords and command-line options beside the envs' own,
tests/envs/test_fuzz.py) has a documented upper bound, refused with a clear error before any work
— a list of 10**9 seeds or jobs, a buffer of 10**12 transitions, 10**6 worker processes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.cli import main
from soft_envs.exceptions import InvalidParameterError


# ------------------------------------------------------------------------------ training (train-rl, train-ik)
def _recipe_fields() -> list[tuple[str, int]]:
    from soft_envs.learn.recipes import MAX_LEARNING_STARTS, SIZE_BOUNDS

    return list(SIZE_BOUNDS.items()) + [("learning_starts", MAX_LEARNING_STARTS)]


@given(case=st.sampled_from(_recipe_fields()), excess=st.integers(1, 10**15))
@settings(max_examples=40, derandomize=True, database=None, deadline=None)
def test_a_recipe_size_beyond_its_bound_is_refused(case, excess):
    from soft_envs.learn.recipes import Recipe

    name, bound = case
    with pytest.raises(InvalidParameterError, match=name):
        Recipe().replace(**{name: bound + excess}).validate()


def test_a_recipes_network_and_rollout_are_bounded():
    from soft_envs.learn.recipes import MAX_NET_LAYERS, MAX_NET_WIDTH, MAX_ROLLOUT, Recipe

    Recipe().replace(net_arch=(8,) * MAX_NET_LAYERS).validate()
    with pytest.raises(InvalidParameterError, match="hidden layers"):
        Recipe().replace(net_arch=(8,) * (MAX_NET_LAYERS + 1)).validate()
    with pytest.raises(InvalidParameterError, match="net_arch width"):
        Recipe().replace(net_arch=(MAX_NET_WIDTH + 1,)).validate()
    with pytest.raises(InvalidParameterError, match="rollout"):
        Recipe().replace(algo="PPO", her=False, n_envs=1 << 16, n_steps=MAX_ROLLOUT >> 15).validate()


def test_a_training_budget_and_its_seeds_are_bounded():
    from soft_envs.learn.train import MAX_EVAL_EPISODES, MAX_SEEDS, MAX_TIMESTEPS, check_budget, parse_seeds
    from soft_envs.sim.threads import MAX_THREADS

    good = dict(minutes=None, timesteps=10, eval_every=10, eval_episodes=1, threads=1, budget_clock="wall")
    check_budget(**good)
    for name, bound in (("timesteps", MAX_TIMESTEPS), ("eval_every", MAX_TIMESTEPS),
                        ("eval_episodes", MAX_EVAL_EPISODES), ("threads", MAX_THREADS)):
        with pytest.raises(InvalidParameterError, match=f"{name} must be an integer from 1 to {bound}"):
            check_budget(**good | {name: bound + 1})
    assert len(parse_seeds(f"0-{MAX_SEEDS - 1}")) == MAX_SEEDS
    for text in (f"0-{10**12}", f"0-{MAX_SEEDS - 1},{MAX_SEEDS}", ",".join(map(str, range(MAX_SEEDS + 1)))):
        with pytest.raises(InvalidParameterError, match=f"at most {MAX_SEEDS} seeds"):
            parse_seeds(text)  # (the first would be a list of 10**12 seeds)


@pytest.mark.parametrize("options", [["--net", ",".join(["16"] * 65)], ["--net", "16,x"], ["--buffer-size", "10" * 7],
                                     ["--seeds", f"0-{10**12}"], ["--seeds", "0-1", "--workers", str(10**6)],
                                     ["--eval-episodes", str(10**9)], ["--timesteps", str(10**15), "--minutes", "0"]])
def test_train_rl_refuses_an_absurd_size_before_training(options, capsys):
    assert main(["train-rl", *options]) == 2
    assert "train-rl: " in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [(["--samples", str(10**9)], "n_samples"),
                                              (["--epochs", str(10**9)], "max_epochs"),
                                              (["--patience", str(10**9)], "patience"),
                                              (["--threads", str(10**6)], "threads")])
def test_train_ik_refuses_an_absurd_size_before_training(options, message, capsys):
    assert main(["train-ik", *options]) == 2
    assert message in capsys.readouterr().err


def test_the_ik_networks_recipe_is_bounded():
    from soft_envs.agents.nn.train import MAX_LAYERS, MAX_WIDTH, Recipe

    with pytest.raises(InvalidParameterError, match="layers"):
        Recipe(hidden=(8,) * (MAX_LAYERS + 1))
    with pytest.raises(InvalidParameterError, match="hidden width"):
        Recipe(hidden=(MAX_WIDTH + 1,))


# ------------------------------------------------------------------------------ evaluate, jobs, demos
def test_an_evaluations_episodes_workers_and_learning_budget_are_bounded():
    from soft_envs.controllers import MAX_LEARN_SAMPLES
    from soft_envs.evaluate import MAX_EPISODES, evaluate, jobs_for
    from soft_envs.jobs import MAX_RETRIES, MAX_WORKERS, process_pool, run_jobs

    with pytest.raises(InvalidParameterError, match=f"episodes must be an integer from 1 to {MAX_EPISODES}"):
        jobs_for(["peter-2-kinematic"], ["trr"], episodes=10**9)  # (a list of 10**9 jobs)
    with pytest.raises(InvalidParameterError, match=f"from 10 to {MAX_LEARN_SAMPLES}"):
        jobs_for(["peter-2-kinematic"], episodes=1, learn_samples=MAX_LEARN_SAMPLES + 1)
    jobs = jobs_for(["peter-2-kinematic"], ["trr"], episodes=1)
    with pytest.raises(InvalidParameterError, match=f"workers must be an integer from 1 to {MAX_WORKERS}"):
        evaluate(jobs, workers=10**6, progress=False)
    with pytest.raises(InvalidParameterError, match=f"max_retries must be an integer from 0 to {MAX_RETRIES}"):
        evaluate(jobs, max_retries=10**6, progress=False)
    with pytest.raises(InvalidParameterError, match="workers"):
        run_jobs([1], abs, lambda i, v: None, workers=MAX_WORKERS + 1)
    with pytest.raises(InvalidParameterError, match="workers"):
        process_pool(10**6, None)  # (10**6 processes)


@pytest.mark.parametrize("options", [["--episodes", str(10**9)], ["--workers", str(10**6)],
                                     ["--learn-samples", str(10**9)], ["--max-retries", str(10**6)],
                                     ["--tasks", "nope"]])
def test_evaluate_refuses_an_absurd_size_with_a_message(options, capsys):
    assert main(["evaluate", "--tasks", "peter-2-kinematic", "--controllers", "trr", *options]) == 2
    assert "soft-envs evaluate: " in capsys.readouterr().err


@pytest.mark.parametrize("options", [["--steps", str(10**9)], ["--steps", "0"], ["--frame-time", "0"],
                                     ["--frame-time", "1e9"]])
def test_demo_refuses_an_absurd_length_before_any_env(options, capsys):
    assert main(["demo", "peter", *options]) == 2
    assert "soft-envs demo: " in capsys.readouterr().err


def test_a_demo_with_frames_longer_than_a_second_writes_its_video(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    out = tmp_path / "peter.mp4"  # int(round(1 / 2.0)) was an fps of 0
    assert main(["demo", "peter", "--steps", "2", "--frame-time", "2", "--output", str(out)]) == 0
    assert out.stat().st_size > 0


# ------------------------------------------------------------------------------ the cores
def test_the_batched_cores_sizes_are_bounded():
    from soft_envs.robots.pcc_arm import PCCArm
    from soft_envs.sim.batched_arm import MAX_ARMS, BatchedSoftArm
    from soft_envs.sim.integrator import MAX_CORRECTOR_PASSES
    from soft_envs.sim.rigid_object import MAX_BOXES, MAX_PASSES, BatchedBoxes
    from soft_envs.sim.sections import SectionMap
    from soft_envs.sim.threads import MAX_THREADS, check_threads

    arm = PCCArm(1, 2)
    chain, sections = arm.chain(), SectionMap(arm.links_per_segment, arm.segment_lengths)
    stiffness = np.ones(sections.n)
    assert BatchedSoftArm(chain, sections, stiffness, n_arms=np.int64(2)).n_arms == 2
    for kwargs, name in (({"n_arms": MAX_ARMS + 1}, "n_arms"), ({"n_arms": 2.5}, "n_arms"),
                         ({"corrector_passes": MAX_CORRECTOR_PASSES + 1}, "corrector_passes")):
        with pytest.raises(InvalidParameterError, match=name):
            BatchedSoftArm(chain, sections, stiffness, **({"n_arms": 1} | kwargs))
    with pytest.raises(InvalidParameterError, match=f"from 1 to {MAX_BOXES}"):
        BatchedBoxes(MAX_BOXES + 1)
    with pytest.raises(InvalidParameterError, match=f"from 1 to {MAX_PASSES}"):
        BatchedBoxes(1, passes=MAX_PASSES + 1)
    with pytest.raises(InvalidParameterError, match=f"from 1 to {MAX_THREADS}"):
        check_threads(MAX_THREADS + 1)
