"""Long jobs lose nothing (docs/evaluation.md): results written as they go, resume, dead
workers rerun, SIGINT/SIGTERM stop cleanly (``soft_envs.jobs`` under ``soft-envs evaluate``)."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from soft_envs.cli import main
from soft_envs.evaluate import EpisodeResult, Job, evaluate, jobs_for, run_episode
from soft_envs.jobs import JobFailedError, ResultsFile, ResultsFileError

KEY = ("task", "controller", "preset", "seed")
COMPARED = ("final_error", "success", "steps", "time_to_goal", "env_kwargs", "env_id")


def _jobs(episodes: int = 4, task: str = "peter-2-kinematic", controller: str = "trr") -> list[Job]:
    return jobs_for([task], [controller], presets=("ideal",), episodes=episodes, seed=3)


def _by_key(records: list[dict]) -> dict[tuple, dict]:
    return {tuple(r[k] for k in KEY): {k: r[k] for k in COMPARED} for r in records}


def _reference(jobs: list[Job], folder: Path) -> dict[tuple, dict]:
    """The records of an uninterrupted run, computed in this process (through a results file)."""
    file = ResultsFile(folder / "reference.jsonl", KEY)
    file.open(resume=False)
    for job in jobs:
        file.append(run_episode(job).record())
    file.close()
    return _by_key(file.read())


# ------------------------------------------------------------------------------ the results file
def test_results_file_skips_a_truncated_last_line_and_refuses_a_corrupt_one(tmp_path):
    path = tmp_path / "results.jsonl"
    good = [{"task": "t", "controller": "c", "preset": "p", "seed": s, "final_error": 0.1 * s} for s in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in good) + '{"task": "t", "contr')
    file = ResultsFile(path, KEY)
    with pytest.warns(UserWarning, match="truncated"):
        assert file.read() == good
    with pytest.raises(ResultsFileError, match="--resume"), pytest.warns(UserWarning):  # records, no resume
        file.open(resume=False)
    with pytest.warns(UserWarning, match="truncated"):
        assert file.open(resume=True) == good
    file.append(dict(good[0], seed=7))
    file.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[-1])["seed"] == 7  # the partial line is gone
    path.write_text(json.dumps(good[0]) + "\nnot json\n" + json.dumps(good[1]) + "\n")
    with pytest.raises(ResultsFileError, match="line 2"):
        file.read()


def test_a_record_round_trips_with_the_issue_fields():
    result = run_episode(_jobs(1)[0])
    record = json.loads(json.dumps(result.record(), allow_nan=False, default=str))
    for name in ("task", "controller", "preset", "seed", "final_error", "success", "time_to_goal", "env_kwargs",
                 "version", "metric_name", "unit"):
        assert name in record
    assert record["env_kwargs"] == {"n_modules": 2, "kinematic": True} and record["unit"] == "m"
    back = EpisodeResult.from_record(record)
    assert back.metric == result.metric and back.seed == result.seed


# ------------------------------------------------------------------------------ dead workers
def _die_once(marker_dir: str, job: Job) -> EpisodeResult:
    """Kill this worker process the first time each even seed runs (a marker file remembers)."""
    marker = Path(marker_dir) / f"{job.seed}"
    if job.seed % 2 == 0 and not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return run_episode(job)


def _always_die(job: Job) -> EpisodeResult:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


@pytest.mark.slow
def test_an_episode_whose_worker_dies_is_rerun_and_ends_with_the_same_results(tmp_path):
    jobs = _jobs(4)
    out = tmp_path / "results.jsonl"
    evaluation = evaluate(jobs, workers=2, progress=False, results=str(out),
                          run=functools.partial(_die_once, str(tmp_path)))
    died = sorted(p.name for p in tmp_path.iterdir() if p.name not in (out.name, "ref"))
    assert died == ["4", "6"]  # two workers died
    assert _by_key(ResultsFile(out, KEY).read()) == _reference(jobs, tmp_path / "ref")
    assert [e.seed for e in evaluation.episodes] == [job.seed for job in jobs]


def test_a_worker_that_keeps_dying_ends_in_an_error_naming_the_episode():
    with pytest.raises(JobFailedError, match=r"seed=3\).*died 2 times.*max_retries=1"):
        evaluate(_jobs(1), workers=1, progress=False, run=_always_die, max_retries=1)


# ------------------------------------------------------------------------------ kill, resume, signals
def _start_cli(results: Path, episodes: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "soft_envs.cli", "evaluate", "--tasks", "peter-2", "--controllers", "trr",
               "--presets", "ideal", "--episodes", str(episodes), "--seed", "3", "--workers", "2",
               "--results", str(results)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))


def _wait_for_records(proc: subprocess.Popen, results: Path, count: int, timeout: float = 120.0) -> None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if results.exists() and results.read_text().count("\n") >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"no {count} records within {timeout} s")


@pytest.mark.slow
def test_killed_with_sigkill_and_resumed_the_file_holds_what_an_uninterrupted_run_writes(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    episodes = 24
    proc = _start_cli(results, episodes)
    _wait_for_records(proc, results, 3)
    os.killpg(proc.pid, signal.SIGKILL)  # the evaluation and its workers, at once
    proc.wait(30)
    killed = ResultsFile(results, KEY).read()
    assert 3 <= len(killed) < episodes
    with results.open("a") as fh:  # as if the kill had landed in the middle of a line
        fh.write('{"task": "peter-2", "controller": "trr", "pre')
    with pytest.warns(UserWarning, match="truncated"):
        assert main(["evaluate", "--tasks", "peter-2", "--controllers", "trr", "--presets", "ideal", "--episodes",
                     str(episodes), "--seed", "3", "--workers", "2", "--results", str(results), "--resume"]) == 0
    assert f"| peter-2 | trr | ideal | {episodes} |" in capsys.readouterr().out
    records = ResultsFile(results, KEY).read()
    assert len(records) == episodes == len(results.read_text().splitlines())  # no duplicate, no partial line
    jobs = jobs_for(["peter-2"], ["trr"], presets=("ideal",), episodes=episodes, seed=3)
    assert _by_key(records) == _reference(jobs, tmp_path / "ref")
    assert _by_key(killed).items() <= _by_key(records).items()  # the finished episodes were not rerun


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_stop_keep_the_records_print_the_partial_table_and_fail(tmp_path, signum):
    results = tmp_path / "results.jsonl"
    proc = _start_cli(results, 200)
    _wait_for_records(proc, results, 2)
    os.kill(proc.pid, signum)
    out, err = proc.communicate(timeout=30)  # a guard against a hang, not a timing assertion
    assert proc.returncode == 128 + signum, err
    records = ResultsFile(results, KEY).read()
    assert 2 <= len(records) < 200 and results.read_text().endswith("\n")
    assert f"| peter-2 | trr | ideal | {len(records)} |" in out  # the partial table: every kept record
    assert f"{len(records)} of 200 episodes finished" in err and "--resume" in err
    assert _group_ends(proc.pid, 30.0)  # no worker process outlives the evaluation


def _group_ends(pgid: int, timeout: float) -> bool:
    """Whether every process of the group ``pgid`` is gone within ``timeout`` [s] (multiprocessing's
    resource tracker leaves a moment after its parent)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_the_docs_snippet_runs_and_a_second_run_resumes_to_the_same_table(tmp_path, monkeypatch):
    text = (Path(__file__).resolve().parents[1] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = text.split("# Long evaluations", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    tables = []
    for _ in range(2):
        namespace: dict = {}
        exec(snippet, namespace)
        tables.append(namespace["evaluation"].table())
    assert tables[0] == tables[1] and "| peter-2-kinematic | trr | ideal | 3 |" in tables[0]
    assert len((tmp_path / "runs" / "peter.jsonl").read_text().splitlines()) == 3


def test_the_cli_refuses_to_append_to_a_results_file_without_resume(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"task": "peter-2-kinematic", "controller": "trr", "preset": "ideal", "seed": 3,
                                   "final_error": 0.0}) + "\n")
    assert main(["evaluate", "--tasks", "peter-2-kinematic", "--controllers", "trr", "--presets", "ideal",
                 "--episodes", "1", "--seed", "3", "--results", str(results)]) == 2
    assert "--resume" in capsys.readouterr().err
