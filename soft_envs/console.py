"""Console hygiene: PyBullet's C-level banners kept out of the user's output; progress of long jobs.

Progress (:func:`progress`, the one place the package makes a tqdm bar; every long job — ``soft-envs
train-rl``, ``train-ik``, ``evaluate``, ``bench``, ``demo --gallery`` — reports through it) goes to
``stderr``: a tqdm bar where that is a terminal; elsewhere (a log file, a pipe, a batch job) a line
at most every :data:`PROGRESS_INTERVAL` (30 s) of wall time, as rsl_rl's iteration log —

``train-rl: 12,000/50,000 steps (24 %), 410 steps/s, elapsed 0:00:29, ETA 0:01:33; last evaluation ...``

— done/total, rate, elapsed time, time left (from the rate, or from a time budget) and what the job
adds (a training run: its last evaluation). A job shorter than the interval writes nothing. A
background thread looks at the running jobs every :data:`HEARTBEAT` seconds, so a job stuck in one
long step (an evaluation, a slow episode) still gets its line on time.

PyBullet's C++ code prints with ``printf`` straight to file descriptor 1: its build banner on
import, ``argv[0]=`` on connect, ``PyBullet: Constraint Solver: MLCP + Dantzig`` and
``switched solver`` when the solver changes. Python's ``sys.stdout`` never sees these, so
``contextlib.redirect_stdout`` cannot catch them; :func:`quiet_native_output` redirects the
descriptors themselves around such a call, restores it afterwards and re-prints on ``stderr``
every captured line that is not one of the known banners — warnings and errors (``b3Warning``,
``URDF file ... not found``) stay visible.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def progress(iterable: Any = None, *, enabled: bool = True, **kwargs: Any) -> Progress:
    """A long job's progress over ``iterable`` (or a manual one with ``total=``) on ``stderr``
    (:class:`Progress`: a tqdm bar on a terminal, else a line every 30 s).

    ``enabled=False`` shows nothing. ``kwargs``: ``desc``, ``total``, ``unit``, ``initial``,
    ``file``, ``time_budget`` [s], ``used`` [s], ``interval`` [s], ``clock``, ``heartbeat``,
    ``terminal`` (:class:`Progress`); the rest (``leave``, ``dynamic_ncols``…) go to ``tqdm``.
    """
    return Progress(iterable, enabled=enabled, **kwargs)


#: Longest wall time [s] between two progress lines of a job whose output is not a terminal.
PROGRESS_INTERVAL = 30.0
#: How often [s] the background thread looks at the running jobs' progress (module docstring).
HEARTBEAT = 5.0


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def format_duration(seconds: float) -> str:
    """``seconds`` as ``h:mm:ss`` (``?`` if not finite)."""
    if not seconds == seconds or seconds in (float("inf"), float("-inf")):
        return "?"
    whole = max(0, int(round(seconds)))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def format_rate(per_second: float, unit: str) -> str:
    """A rate [``unit``/s] in the largest of per second, minute, hour that gives at least 1."""
    scale, per = next(((k, name) for k, name in ((1.0, "s"), (60.0, "min")) if per_second * k >= 1.0), (3600.0, "h"))
    value = per_second * scale
    return f"{value:,.0f} {unit}/{per}" if value >= 100 else f"{value:.3g} {unit}/{per}"


def _count(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


class Progress:
    """A long job's progress: a tqdm bar where ``file`` is a terminal, else a line at most every
    ``interval`` seconds (module docstring). Made by :func:`progress`; iterate it (as a tqdm bar)
    or call :meth:`update`.

    Args:
        iterable: what the job goes through (one :meth:`update` per item); ``None``: manual.
        total: the job's size in ``unit`` (default ``len(iterable)``; ``None``: unknown).
        desc: the job's name, the start of each line.
        unit: what is counted (``"steps"``, ``"episodes"``…).
        initial: the count already done (a resumed job); the rate counts what this run does.
        enabled: ``False`` shows nothing (:attr:`disable`).
        file: the stream (default ``sys.stderr``).
        time_budget: a wall-clock (or CPU-time) budget [s] that may end the job first: the
            fraction and the time left are the budget's, where it ends the job sooner.
        used: the budget already used [s] (a resumed job); :meth:`update` takes the current value.
        interval: the most time [s] between two lines (default :data:`PROGRESS_INTERVAL`).
        clock: the time source of the interval, the rate and the elapsed time [s] (default
            ``time.monotonic``: never the budgets' clock, :mod:`soft_envs.clock`, whose reads a test
            may count).
        heartbeat: whether the background thread may write the line between two updates.
        terminal: whether to show a bar on a terminal (``False``: only the lines elsewhere; a job
            whose steps print their own output or bars).
        **bar_kwargs: for ``tqdm`` on a terminal (``leave``, ``dynamic_ncols``…).
    """

    def __init__(self, iterable: Any = None, *, total: float | None = None, desc: str = "", unit: str = "it",
                 initial: float = 0, enabled: bool = True, file: Any = None, time_budget: float | None = None,
                 used: float = 0.0, interval: float | None = None, clock: Callable[[], float] | None = None,
                 heartbeat: bool = True, terminal: bool = True, **bar_kwargs: Any) -> None:
        if total is None and iterable is not None:
            try:
                total = len(iterable)
            except TypeError:
                total = None
        self.iterable = iterable
        self.total, self.desc, self.unit = total, str(desc), str(unit)
        self.n = self.initial = initial
        self.time_budget = None if time_budget is None else float(time_budget)
        self.used = float(used)
        self.postfix = ""
        self.file = sys.stderr if file is None else file
        self.interval = PROGRESS_INTERVAL if interval is None else float(interval)
        self._clock = clock if clock is not None else time.monotonic
        self.start = self._last = self._clock()
        #: Lines written so far (a job whose output is not a terminal).
        self.lines_written = 0
        self.closed = False
        self._lock = threading.Lock()
        on_terminal = _isatty(self.file)
        #: Whether nothing is shown (``enabled=False``, or a terminal with ``terminal=False``).
        self.disable = not enabled or (on_terminal and not terminal)
        #: Whether progress goes out as lines (enabled, and ``file`` is not a terminal).
        self.lines = enabled and not on_terminal
        self.bar: Any = None
        if not self.disable and not self.lines:
            from tqdm import tqdm

            if self.time_budget is None:
                self.bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, file=self.file, **bar_kwargs)
            else:  # the bar counts the budget's seconds; the count goes to the postfix
                budget = round(self.time_budget)
                self.bar = tqdm(total=budget, desc=desc, unit="s", initial=min(budget, round(self.used)),
                                file=self.file, **bar_kwargs)
        elif self.lines and heartbeat:
            _HEARTBEAT.add(self)

    # ------------------------------------------------------------------ tqdm's interface
    def __iter__(self) -> Iterator[Any]:
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def __len__(self) -> int:
        return int(self.total or 0)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: float = 1, *, used: float | None = None) -> None:
        """``n`` more done; ``used``: the time budget used so far [s] (``time_budget``)."""
        self.n += n
        if used is not None:
            self.used = float(used)
        if self.bar is not None:
            if self.time_budget is None:
                self.bar.update(n)
            else:
                self.bar.update(min(self.bar.total, round(self.used)) - self.bar.n)
                self._bar_postfix()
        elif self.lines:
            self.poll()

    def update_to(self, n: float, *, used: float | None = None) -> None:
        """Set the count done to ``n`` (and the budget used, see :meth:`update`)."""
        self.update(n - self.n, used=used)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        """What the job adds to its line (a training run: its last evaluation)."""
        self.postfix = str(text)
        if self.bar is not None:
            self._bar_postfix(refresh)

    def set_postfix(self, **values: Any) -> None:
        """:meth:`set_postfix_str` of ``name=value`` pairs."""
        self.set_postfix_str(", ".join(f"{k}={v}" for k, v in values.items()))

    def _bar_postfix(self, refresh: bool = True) -> None:
        text = self.postfix
        if self.time_budget is not None:
            text = f"{_count(self.n)} {self.unit}" + (f", {text}" if text else "")
        self.bar.set_postfix_str(text, refresh=refresh)

    def close(self) -> None:
        """End the bar; a job that wrote lines writes a last one (``finished`` or ``stopped``)."""
        if self.closed:
            return
        self.closed = True
        _HEARTBEAT.discard(self)
        if self.bar is not None:
            self.bar.close()
        elif self.lines and (self.lines_written or self._clock() - self.start >= self.interval):
            finished = (self.total is not None and self.n >= self.total) or \
                (self.time_budget is not None and self.used >= self.time_budget)
            self._write(self._clock(), "finished" if finished else "stopped")

    # ------------------------------------------------------------------ the lines
    def poll(self) -> None:
        """Write the line if ``interval`` has passed since the last one (or the start)."""
        if self.lines and not self.closed:
            now = self._clock()
            if now - self._last >= self.interval:
                self._write(now)

    def status(self, now: float | None = None) -> str:
        """The progress line (without its newline): done/total, share, rate, elapsed, time left."""
        now = self._clock() if now is None else now
        elapsed = now - self.start
        done = self.n - self.initial
        rate = done / elapsed if elapsed > 0 and done > 0 else None
        parts = [f"{_count(self.n)}/{_count(self.total)} {self.unit}" if self.total is not None
                 else f"{_count(self.n)} {self.unit}"]
        shares, left = [], []
        if self.total:
            shares.append(self.n / self.total)
            if rate is not None:
                left.append(max(0.0, self.total - self.n) / rate)
        if self.time_budget:
            parts.append(f"budget {format_duration(self.used)}/{format_duration(self.time_budget)}")
            shares.append(self.used / self.time_budget)
            left.append(max(0.0, self.time_budget - self.used))
        if shares:  # after the total, or the budget where the total is unknown
            parts[0 if self.total else 1] += f" ({100 * min(1.0, max(shares)):.0f} %)"
        parts.append(format_rate(rate, self.unit) if rate is not None else f"? {self.unit}/s")
        parts.append(f"elapsed {format_duration(elapsed)}")
        parts.append(f"ETA {format_duration(min(left)) if left else '?'}")
        line = f"{self.desc}: " + ", ".join(parts) if self.desc else ", ".join(parts)
        return line + (f"; {self.postfix}" if self.postfix else "")

    def _write(self, now: float, end: str = "") -> None:
        with self._lock:
            if end == "" and now - self._last < self.interval:  # the other thread was first
                return
            self._last = now
            self.lines_written += 1
            line = self.status(now) + (f"; {end}" if end else "")
            try:
                self.file.write(line + "\n")
                self.file.flush()
            except (ValueError, OSError):  # the stream is closed (a test's capture that ended)
                _HEARTBEAT.discard(self)


class _Heartbeat:
    """One daemon thread that polls every running :class:`Progress` that writes lines, every
    :data:`HEARTBEAT` seconds; it ends when none is left (a new one starts it again)."""

    def __init__(self) -> None:
        self.reports: weakref.WeakSet[Progress] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, report: Progress) -> None:
        with self.lock:
            self.reports.add(report)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="soft_envs progress", daemon=True)
                self.thread.start()
        self.wake.set()

    def discard(self, report: Progress) -> None:
        with self.lock:
            self.reports.discard(report)

    def _run(self) -> None:
        while True:
            self.wake.wait(HEARTBEAT)
            self.wake.clear()
            with self.lock:
                reports = list(self.reports)
                if not reports:
                    self.thread = None
                    return
            for report in reports:
                report.poll()
            del reports


_HEARTBEAT = _Heartbeat()


def _heartbeat_after_fork() -> None:
    """A forked child has no heartbeat thread (and its lock may have been held): a fresh one."""
    global _HEARTBEAT
    _HEARTBEAT = _Heartbeat()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_heartbeat_after_fork)


#: Lines PyBullet prints that carry no information for a user.
NOISE = re.compile(r"^(pybullet build time:.*|argv\[\d+\]=.*|PyBullet: Constraint Solver:.*|switched solver)\s*$")

_LIBC: ctypes.CDLL | None
_LOCK = threading.RLock()  # the descriptor is process-wide: one redirection at a time
try:
    _LIBC = ctypes.CDLL(None)
    _LIBC.fflush.argtypes = [ctypes.c_void_p]
except (OSError, AttributeError):  # pragma: no cover - platforms without a C library handle
    _LIBC = None


def _flush_c_stdio() -> None:
    if _LIBC is not None:
        _LIBC.fflush(None)


@contextmanager
def quiet_native_output() -> Iterator[None]:
    """Run the body with descriptors 1 and 2 captured; drop PyBullet's banners, re-emit the rest on stderr.

    (The build banner goes to stderr, the solver lines to stdout.) Thread-safe (a process-wide
    lock) and re-entrant; if the descriptors cannot be redirected (e.g. they are closed) the
    body runs unchanged.
    """
    with _LOCK:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            _flush_c_stdio()
            saved = (os.dup(1), os.dup(2))
        except (OSError, ValueError):
            yield
            return
        with tempfile.TemporaryFile() as capture:
            os.dup2(capture.fileno(), 1)
            os.dup2(capture.fileno(), 2)
            try:
                yield
            finally:
                _flush_c_stdio()
                for fd, copy in zip((1, 2), saved):
                    os.dup2(copy, fd)
                    os.close(copy)
                capture.seek(0)
                text = capture.read().decode(errors="replace")
                kept = [line for line in text.splitlines() if line.strip() and not NOISE.match(line)]
                if kept:
                    sys.stderr.write("\n".join(kept) + "\n")
                    sys.stderr.flush()
