"""Progress of long jobs: one helper, on stderr; a bar on a terminal, else a line every 30 s
(a fake clock drives the interval here; tests/test_progress_lines.py: each long command wires it)."""

from __future__ import annotations

import ast
import io
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from soft_envs import clock, console
from soft_envs.console import PROGRESS_INTERVAL, format_duration, progress

ROOT = Path(__file__).resolve().parents[1]
#: A progress line: ``desc: done/total unit (share), rate, elapsed h:mm:ss, ETA h:mm:ss[; what the job adds]``.
LINE = re.compile(r"^(?P<desc>[^:]+): (?P<done>[\d,]+)(/(?P<total>[\d,]+))? (?P<unit>\w+)(?: \((?P<share>\d+) %\))?"
                  r"(?:, budget (?P<used>[\d:]+)/(?P<budget>[\d:]+)(?: \((?P<budget_share>\d+) %\))?)?"
                  r", (?P<rate>[\d.,?]+) \w+/(?:s|min|h), elapsed (?P<elapsed>[\d:]+), ETA (?P<eta>[\d:?]+)"
                  r"(?:; (?P<rest>.*))?$")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _FakeClock:
    """A :data:`soft_envs.clock.Clock` that moves only when told (seconds)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _lines(stream: io.StringIO) -> list[re.Match]:
    text = stream.getvalue().splitlines()
    matches = [LINE.match(line) for line in text]
    assert all(matches), text
    return matches  # type: ignore[return-value]


def test_progress_writes_lines_off_a_terminal_and_a_bar_on_one():
    assert not sys.stderr.isatty()  # pytest captures stderr
    bar = progress(range(3), desc="x")
    assert not bar.disable and bar.lines and bar.bar is None and list(bar) == [0, 1, 2]
    terminal = _Terminal()
    shown = progress(range(3), desc="shown", file=terminal)
    assert not shown.disable and not shown.lines and list(shown) == [0, 1, 2]
    shown.close()
    assert "shown" in terminal.getvalue()
    quiet = io.StringIO()
    assert progress(range(3), enabled=False, file=_Terminal()).disable
    hidden = progress(range(3), enabled=False, file=quiet, interval=0.0)
    assert hidden.disable and list(hidden) == [0, 1, 2] and quiet.getvalue() == ""
    assert progress(range(3), file=_Terminal(), terminal=False).disable  # lines only: nothing on a terminal


def test_off_a_terminal_a_line_comes_every_interval_with_done_total_rate_eta_and_the_evaluation():
    fake, out = _FakeClock(), io.StringIO()
    bar = progress(total=100, desc="train-rl", unit="steps", file=out, clock=fake, heartbeat=False)
    assert bar.interval == PROGRESS_INTERVAL == 30.0
    written_at = []
    for step in range(1, 101):
        fake.t += 1.0  # one step a second
        before = out.getvalue().count("\n")
        bar.update()
        if step == 40:
            bar.set_postfix_str("last evaluation (40 steps): within 5 mm 80 %")
        if out.getvalue().count("\n") > before:
            written_at.append(step)
    assert written_at == [30, 60, 90]  # every 30 s, not before
    bar.close()
    lines = _lines(out)
    assert len(lines) == 4
    first, second = lines[0], lines[1]
    assert (first["desc"], first["done"], first["total"], first["unit"], first["share"]) == \
        ("train-rl", "30", "100", "steps", "30")
    assert first["rate"] == "1" and first["elapsed"] == "0:00:30" and first["eta"] == "0:01:10"
    assert first["rest"] is None and second["rest"] == "last evaluation (40 steps): within 5 mm 80 %"
    assert lines[-1]["done"] == "100" and lines[-1]["rest"].endswith("; finished")


def test_a_time_budget_gives_the_share_and_the_time_left_and_a_resumed_count_is_not_in_the_rate():
    fake, out = _FakeClock(), io.StringIO()
    bar = progress(desc="train-rl", unit="steps", initial=1000, time_budget=600.0, used=60.0, file=out,
                   clock=fake, heartbeat=False)
    for _ in range(12):
        fake.t += 5.0
        bar.update(50, used=bar.used + 5.0)
    line = _lines(out)[0]
    assert line["done"] == "1,300" and line["total"] is None and line["rate"] == "10"  # 300 steps in 30 s
    assert (line["used"], line["budget"], line["budget_share"]) == ("0:01:30", "0:10:00", "15")
    assert line["eta"] == "0:08:30"  # what the budget leaves
    bar.close()
    assert _lines(out)[-1]["rest"] == "stopped"  # closed before its budget or total


def test_a_job_shorter_than_the_interval_writes_nothing():
    fake, out = _FakeClock(), io.StringIO()
    for _ in progress(range(5), desc="short", file=out, clock=fake, heartbeat=False):
        fake.t += 5.0
    assert out.getvalue() == ""


def test_the_heartbeat_writes_the_line_while_one_step_runs_long(monkeypatch):
    monkeypatch.setattr(console, "HEARTBEAT", 0.01)  # [s] of real time between two looks
    fake, out = _FakeClock(), io.StringIO()
    bar = progress(total=3, desc="evaluate", unit="episodes", file=out, clock=fake)
    bar.update()
    fake.t += 31.0  # a long episode: no update for more than the interval
    start = time.monotonic()
    while "evaluate: 1/3 episodes" not in out.getvalue():
        assert time.monotonic() - start < 30.0, "no line from the heartbeat"  # a guard, not a timing assertion
        time.sleep(0.01)
    bar.close()
    assert bar not in console._HEARTBEAT.reports
    assert out.getvalue().count("\n") == 2  # the heartbeat's line and the last one


def test_the_reporter_reads_its_own_clock_never_the_budgets():
    reads = clock.ExpiringClock(10**6)
    with clock.use_clock(reads):
        bar = progress(range(100), desc="x", file=io.StringIO(), interval=0.0, heartbeat=False)
        assert len(list(bar)) == 100
    assert reads.count == 0  # a test counting the budgets' reads sees none of the reporter's


@pytest.mark.parametrize("seconds, text", [(0, "0:00:00"), (59.6, "0:01:00"), (3725, "1:02:05"),
                                           (float("nan"), "?"), (float("inf"), "?")])
def test_durations_read_as_hours_minutes_seconds(seconds, text):
    assert format_duration(seconds) == text


def test_lines_from_two_threads_are_whole():
    out = io.StringIO()
    bar = progress(total=2000, desc="x", unit="steps", file=out, interval=0.0, heartbeat=False)
    workers = [threading.Thread(target=lambda: [bar.update() for _ in range(1000)]) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    bar.close()
    assert all(LINE.match(line) for line in out.getvalue().splitlines())


def test_bars_go_through_console_progress():
    """No module makes a tqdm bar itself (a bar on stdout, or one shown in a pipe, is a bug)."""
    offenders = []
    for folder in ("soft_envs", "agents"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "console.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] == "tqdm"]
    assert not offenders, "use soft_envs.console.progress instead of tqdm in: " + ", ".join(offenders)
