"""``soft_envs.clock``: the one clock every time budget reads, and the test clocks that drive it."""

from __future__ import annotations

import math
import time

import pytest

from soft_envs import clock


class Manual:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_deadline_reads_the_clock_in_use():
    manual = Manual()
    with clock.use_clock(manual):
        budget = clock.Deadline(2.0)
        assert budget.start == 100.0 and not budget.expired() and budget.remaining() == 2.0
        manual.t = 101.5
        assert budget.elapsed() == 1.5 and not budget.expired()
        manual.t = 102.5
        assert budget.expired() and budget.remaining() == -0.5
    assert clock.now() != manual.t  # the previous clock is back


def test_no_budget_never_expires():
    manual = Manual()
    with clock.use_clock(manual):
        budget = clock.Deadline(math.inf)
        manual.t = 1e300
        assert not budget.expired()


def test_use_clock_restores_after_an_error():
    previous = clock.set_clock(None)
    clock.set_clock(previous)
    with pytest.raises(RuntimeError), clock.use_clock(Manual()):
        raise RuntimeError
    assert clock.set_clock(previous) is previous


def test_scaled_clock_runs_at_its_rate():
    manual = Manual()
    fast = clock.ScaledClock(20.0, source=manual)
    manual.t += 0.5
    assert fast() == pytest.approx(100.0 + 10.0)
    with pytest.raises(ValueError):
        clock.ScaledClock(0.0)


def test_expiring_clock_jumps_after_its_reads():
    manual = Manual()
    fake = clock.ExpiringClock(2, jump=50.0, source=manual)
    assert [fake(), fake(), fake(), fake()] == [100.0, 100.0, 150.0, 150.0]
    assert fake.count == 4
    with pytest.raises(ValueError):
        clock.ExpiringClock(-1)


def test_the_real_clock_moves_forward():
    a = clock.now()
    time.sleep(0.001)
    assert clock.now() > a
