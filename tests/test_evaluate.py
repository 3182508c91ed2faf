"""``soft-envs evaluate``: controllers run through ``env.step`` over seeded episodes, in worker processes."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

from soft_envs.cli import main
from soft_envs.controllers import build_controller
from soft_envs.evaluate import (
    LEARN_SAMPLES,
    TASKS,
    Evaluation,
    Job,
    evaluate,
    jobs_for,
    learning_controller,
    run_episode,
)
from soft_envs.exceptions import InvalidParameterError


def _small_jobs() -> list[Job]:
    return jobs_for(["peter-2"], ["trr", "trr-paper-model"], episodes=2, seed=5)


def test_episode_measures_what_the_env_reports():
    result = run_episode(Job(TASKS["peter-2"], "trr", "ideal", seed=3))
    assert result.success and result.metric < 1e-3 and result.time_to_goal > 0 and result.steps == 50
    closed = run_episode(Job(TASKS["peter-2"], "trr-feedback", "ideal", seed=3))
    assert closed.metric < 0.1 * result.metric  # tip feedback removes the sag of the soft arm
    paper = run_episode(Job(TASKS["peter-2"], "trr-paper-model", "ideal", seed=3))
    assert paper.metric > result.metric  # + the tilted-plane model gap, open loop


def test_processes_give_the_same_results_as_one_process_in_job_order():
    jobs = _small_jobs()
    serial = Evaluation([run_episode(job) for job in jobs])
    parallel = evaluate(jobs, workers=2, progress=False)
    for column in ("task", "controller", "seed", "success", "metric", "steps"):
        np.testing.assert_array_equal(serial.columns()[column], parallel.columns()[column])
    rows = {(r["controller"]): r for r in parallel.summary()}
    assert rows["trr"]["success_rate"] == 1.0
    assert rows["trr-paper-model"]["metric_mean"] > rows["trr"]["metric_mean"]  # the model gap
    assert "| peter-2 | trr | ideal | 2 | 100 % |" in parallel.table()


def test_bad_requests_raise_value_errors():
    with pytest.raises(InvalidParameterError, match="unknown task"):
        jobs_for(["nope"])
    with pytest.raises(InvalidParameterError, match="unknown preset"):
        jobs_for(["peter-2"], presets=["mars"])
    with pytest.raises(InvalidParameterError, match="episodes"):
        jobs_for(["peter-2"], episodes=0)
    with pytest.raises(InvalidParameterError, match="workers"):
        evaluate(_small_jobs(), workers=0)
    with pytest.raises(InvalidParameterError, match="sb3:ALGO:PATH"):
        run_episode(Job(TASKS["peter-2"], "sb3:SAC", "ideal", 0))


def test_cli_writes_the_table(tmp_path, capsys):
    out = tmp_path / "evaluation.md"
    assert main(["evaluate", "--tasks", "quadruped-pose", "--episodes", "1", "--workers", "1",
                 "--output", str(out)]) == 0
    assert "| quadruped-pose | body-pose | ideal | 1 |" in out.read_text()


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="the optional 'ray' extra is not installed")
def test_ray_runs_the_same_code_path_with_the_same_results_and_reruns_a_killed_worker(tmp_path):
    import ray

    marker_dir = str(tmp_path)

    def die_once(job: Job):  # a closure, so Ray pickles it by value; kills its worker at seed 6's first run
        import os
        import signal
        from pathlib import Path

        from soft_envs.evaluate import run_episode as run

        marker = Path(marker_dir) / "died"
        if job.seed == 6 and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return run(job)

    jobs = _small_jobs()
    local = evaluate(jobs, workers=2, progress=False)
    try:
        on_ray = evaluate(jobs, workers=2, ray_address="local", progress=False, run=die_once, max_retries=2)
    finally:
        ray.shutdown()
    assert (tmp_path / "died").exists()  # the worker did die, and Ray's task retry reran its episode
    for column in ("task", "controller", "seed", "success", "metric", "steps"):
        np.testing.assert_array_equal(local.columns()[column], on_ray.columns()[column])


def test_the_realistic_preset_opens_the_open_loop_gap_and_feedback_closes_it():
    jobs = jobs_for(["peter-2"], ["trr-paper-model", "trr-feedback"], presets=("ideal", "realistic"),
                    episodes=2, seed=0)
    rows = {(r["controller"], r["preset"]): r for r in Evaluation([run_episode(j) for j in jobs]).summary()}
    assert rows["trr-paper-model", "realistic"]["metric_mean"] > rows["trr-paper-model", "ideal"]["metric_mean"]
    assert rows["trr-feedback", "realistic"]["metric_mean"] < 1e-3
    assert rows["trr-feedback", "realistic"]["metric_mean"] > rows["trr-feedback", "ideal"]["metric_mean"]


def test_learning_controllers_are_named_with_their_budget():
    assert learning_controller("trr-calibrated") == ("trr-calibrated", LEARN_SAMPLES)
    assert learning_controller("nn-finetuned:1000") == ("nn-finetuned", 1000)
    assert learning_controller("trr") is None and learning_controller("sb3:SAC:x.zip") is None
    jobs = jobs_for(["peter-2"], ["trr-calibrated", "nn-finetuned:500", "trr"], episodes=1)
    assert [j.controller for j in jobs] == ["trr-calibrated", "nn-finetuned:500", "trr"]
    jobs = jobs_for(["peter-2"], ["trr-calibrated", "nn-finetuned:500", "trr"], episodes=1, learn_samples=40)
    assert [j.controller for j in jobs] == ["trr-calibrated:40", "nn-finetuned:40", "trr"]
    assert {"trr-calibrated", "nn-finetuned"} <= set(TASKS["peter-2"].controllers)
    for bad in ("trr-calibrated:5", "trr-calibrated:many"):
        with pytest.raises(InvalidParameterError, match="budget"):
            learning_controller(bad)
    with pytest.raises(InvalidParameterError, match="budget"):
        jobs_for(["peter-2"], episodes=1, learn_samples=3)


@pytest.mark.slow
def test_the_calibrated_controller_learns_on_the_episodes_robot_then_reaches_its_goal():
    jobs = jobs_for(["peter-2"], ["trr", "trr-calibrated"], presets=("realistic",), episodes=1, seed=1,
                    learn_samples=30)
    nominal, calibrated = (run_episode(job) for job in jobs)
    assert nominal.metric > 2e-3  # the nominal model misses this robot by millimetres …
    assert calibrated.metric < 0.3 * nominal.metric and calibrated.steps == 50  # … the calibrated one much less


def test_gait_figures_survive_a_results_file_and_make_a_gait_table():
    """The quadruped episodes keep their gait figures (info's ``gait_*``) through a results-file
    record (an undefined cost of transport, ``inf``, is stored as null and read back as NaN) and
    ``gait_table`` shows their medians; other tasks have none and no table."""
    import json
    import math

    from soft_envs import evaluate as ev
    from soft_envs.jobs import _json_value

    figures = {"gait_stance_slip_speed": 0.002, "gait_touchdowns_per_second": 2.5,
               "gait_command_reversals_per_second": 9.8, "gait_peak_joint_speed": 10.5,
               "gait_cost_of_transport": math.inf}
    walk = ev.EpisodeResult("quadruped-walk", "trot", "ideal", 0, True, 0.7, math.nan, 500, 1.0, figures=figures)
    back = ev.EpisodeResult.from_record(json.loads(json.dumps(_json_value(walk.record()))))
    assert back.figures["gait_peak_joint_speed"] == 10.5 and math.isnan(back.figures["gait_cost_of_transport"])
    table = ev.gait_table(ev.Evaluation([back, walk]))
    assert "| quadruped-walk | trot | ideal | 2 | 2 | 2.5 | 9.8 | 10.5 | — |" in table
    reach = ev.EpisodeResult("peter-2", "trr", "ideal", 0, True, 1e-4, 0.5, 10, 1.0)
    assert ev.gait_table(ev.Evaluation([reach])) == ""


def test_the_task_space_law_reaches_realistic_goals_in_the_task_action_it_asks_for():
    """``task-feedback`` needs ``action_mode="task"`` (its env keywords) and closes the loop on the
    measured tip of realistic arms without a model."""
    jobs = jobs_for(["peter-2"], ["task-feedback"], presets=("realistic",), episodes=2, seed=0)
    episodes = [run_episode(j) for j in jobs]
    assert all(e.env_kwargs["action_mode"] == "task" for e in episodes)
    assert all(e.metric < 1e-3 for e in episodes)
    with pytest.raises(InvalidParameterError, match="action_mode='task'"):
        build_controller("task-feedback", gym.make("soft_envs/PeterReach-v0", kinematic=True))
