"""The one clock every time budget reads.

Every solver and job that takes a wall-clock budget (a ``timeout`` [s], ``max_seconds``, a
training budget in minutes) reads time through :func:`now` and keeps its budget as a
:class:`Deadline`, never through ``time.perf_counter`` directly. So a test can drive time:
:func:`use_clock` swaps the source for a clock the test controls —

* :class:`ExpiringClock`: real time until ``reads`` reads, then a jump far past any budget
  ("the budget ends the work after k checks", whatever the machine's speed);
* :class:`ScaledClock`: time running ``rate`` times as fast as real time (``rate = 20``: a
  machine twenty times slower, as far as any budget can tell; ``rate = 0.05``: twenty times
  faster).

The reported durations (``IKResult.seconds`` and the like) come from the same clock, so they
agree with the budget that ended the work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Clock = Callable[[], float]
"""A source of time, a call that returns seconds (monotonic, from any origin)."""

_source: Clock = time.perf_counter


def now() -> float:
    """The current time [s] of the clock in use (default ``time.perf_counter``)."""
    return _source()


def process_time() -> float:
    """CPU time [s] of this process, all its threads (:func:`time.process_time`): a clock for a
    budget that should count what the work got of a shared machine — a budget on it is the wall
    time the work would take alone on idle cores (``with use_clock(process_time):``)."""
    return time.process_time()


def set_clock(source: Clock | None) -> Clock:
    """Make ``source`` the clock every budget reads (``None``: the real clock); returns the previous one."""
    global _source
    previous = _source
    _source = time.perf_counter if source is None else source
    return previous


@contextmanager
def use_clock(source: Clock) -> Iterator[Clock]:
    """``with use_clock(ExpiringClock(3)):`` — ``source`` is the clock inside the block."""
    previous = set_clock(source)
    try:
        yield source
    finally:
        set_clock(previous)


class Deadline:
    """A wall-clock budget of ``timeout`` [s] from now (``math.inf``: none), on :func:`now`."""

    __slots__ = ("end", "start", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = float(timeout)
        self.start = now()
        self.end = self.start + self.timeout

    def expired(self) -> bool:
        """Whether the budget is spent."""
        return now() > self.end

    def remaining(self) -> float:
        """Seconds left (negative once spent)."""
        return self.end - now()

    def elapsed(self) -> float:
        """Seconds since the budget started."""
        return now() - self.start


class ScaledClock:
    """Real time running ``rate`` times as fast (``rate > 1``: the machine looks slower)."""

    def __init__(self, rate: float, source: Clock = time.perf_counter) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0; got {rate!r}")
        self.rate, self.source = float(rate), source
        self.origin = source()

    def __call__(self) -> float:
        return self.origin + self.rate * (self.source() - self.origin)


class ExpiringClock:
    """Real time for the first ``reads`` reads, then ``jump`` [s] later: every budget set before
    the jump (shorter than ``jump``) is spent from read ``reads + 1`` on. :attr:`count` is the
    number of reads so far."""

    def __init__(self, reads: int, jump: float = 1e9, source: Clock = time.perf_counter) -> None:
        if reads < 0:
            raise ValueError(f"reads must be >= 0; got {reads!r}")
        self.reads, self.jump, self.source = int(reads), float(jump), source
        self.count = 0

    def __call__(self) -> float:
        self.count += 1
        return self.source() + (self.jump if self.count > self.reads else 0.0)
