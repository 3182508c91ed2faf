"""Each long command reports its progress where its output is not a terminal (a log file): lines of
:func:`soft_envs.console.progress` on stderr, here at every update (the interval set to 0 s; the
interval itself: tests/test_console.py). Tiny sizes: the wiring, not the jobs."""

from __future__ import annotations

import re
import types

import pytest

from soft_envs import console
from soft_envs.cli import main

FIELDS = (r"(?: \(\d+ %\))?(?:, budget [\d:]+/[\d:]+(?: \(\d+ %\))?)?, [\d.,?]+ \w+/(?:s|min|h), "
          r"elapsed [\d:]+, ETA [\d:?]+")


@pytest.fixture
def every_update(monkeypatch):
    """A progress line at every update (instead of every 30 s)."""
    monkeypatch.setattr(console, "PROGRESS_INTERVAL", 0.0)


def _progress_lines(err: str, desc: str, unit: str) -> list[str]:
    pattern = re.compile(rf"^{re.escape(desc)}: [\d,]+(?:/[\d,]+)? {unit}{FIELDS}(?:; .*)?$")
    return [line for line in err.splitlines() if pattern.match(line)]


def test_evaluate_reports_its_episodes(every_update, capsys):
    assert main(["evaluate", "--tasks", "peter-2-kinematic", "--controllers", "trr", "--presets", "ideal",
                 "--episodes", "2", "--workers", "1"]) == 0
    lines = _progress_lines(capsys.readouterr().err, "evaluate", "episodes")
    assert lines and lines[-1].startswith("evaluate: 2/2 episodes (100 %)") and "success 2/2 so far" in lines[-1]


def test_bench_reports_the_benches_and_their_own_loops(every_update, capsys, monkeypatch):
    from soft_envs import bench

    def run(full: bool, seed: int, plot_dir: str | None) -> str:
        for _ in console.progress(range(3), desc="tiny cases"):  # a bench's own loop
            pass
        return "| a |\n|---|\n| 1 |"

    monkeypatch.setitem(bench.BENCHES, "tiny", "tiny")
    monkeypatch.setattr(bench, "load", lambda name: types.SimpleNamespace(TITLE="Tiny", run=run))
    assert main(["bench", "tiny", "--full"]) == 0
    err = capsys.readouterr().err
    assert _progress_lines(err, "tiny cases", "it")
    lines = _progress_lines(err, "bench", "benches")
    assert lines[-1].startswith("bench: 1/1 benches (100 %)") and lines[-1].endswith("done tiny; finished")


def test_train_ik_reports_its_epochs(every_update, capsys, tmp_path):
    pytest.importorskip("torch")
    assert main(["train-ik", "--modules", "2", "--samples", "200", "--epochs", "2", "--recipe", "paper",
                 "--output", str(tmp_path / "n.npz")]) == 0
    lines = _progress_lines(capsys.readouterr().err, "train-ik 2 modules", "epochs")
    assert lines[-1].startswith("train-ik 2 modules: 2/2 epochs (100 %)") and "val=" in lines[-1]


def test_train_rl_reports_steps_budget_and_the_last_evaluation(every_update, capsys, tmp_path):
    pytest.importorskip("stable_baselines3")
    assert main(["train-rl", "--minutes", "5", "--timesteps", "60", "--net", "16", "--batch-size", "16",
                 "--learning-starts", "50", "--eval-every", "30", "--eval-episodes", "1", "--buffer-size", "200",
                 "--no-standardize", "--output", str(tmp_path / "p.zip")]) == 0
    err = capsys.readouterr().err
    lines = _progress_lines(err, "train-rl", "steps")
    assert any(line.startswith("train-rl: 60/60 steps (100 %), budget ") for line in lines)
    assert "; last evaluation (60 steps): within 5 mm" in lines[-1]
    assert _progress_lines(err, "evaluation on PeterReach-v0", "episodes")  # the evaluations report too


def test_the_parallel_learner_reports_its_steps(every_update, capsys, tmp_path):
    pytest.importorskip("rsl_rl")
    assert main(["train-rl", "--recipe", "peter-soft-parallel", "--n-envs", "64", "--env-kwargs",
                 '{"kinematic": true}', "--minutes", "0", "--timesteps", "100", "--net", "8", "--batch-size", "400",
                 "--eval-episodes", "1", "--output", str(tmp_path / "p.npz")]) == 0
    lines = _progress_lines(capsys.readouterr().err, "train-rl (parallel)", "steps")
    assert lines and re.match(r"train-rl \(parallel\): [\d,]+/100 steps \(100 %\)", lines[-1])


def test_train_rl_seeds_report_the_runs(every_update, capsys, tmp_path, monkeypatch):
    pytest.importorskip("stable_baselines3")
    from soft_envs.learn import train as train_rl

    def one_run(item):  # the run itself is tests/learn/test_train_runs.py's
        seed, kwargs = item
        return {"seed": seed, "timesteps": 30, "median_m": 0.002}

    class Pool:  # in this process (the runs' own pool is tested with the runs)
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def imap(self, fn, items):
            return map(fn, items)

    monkeypatch.setattr(train_rl, "_train_one", one_run)
    monkeypatch.setattr("soft_envs.jobs.process_pool", lambda workers, address: Pool())
    rows = train_rl.train_seeds([0, 1], output=tmp_path / "p.zip", minutes=None, timesteps=30)
    assert [r["seed"] for r in rows] == [0, 1]
    lines = _progress_lines(capsys.readouterr().err, "train-rl seeds", "runs")
    assert lines[-1].startswith("train-rl seeds: 2/2 runs (100 %)")
    assert "last: seed 1, 30 steps, median final distance 0.002" in lines[-1]
