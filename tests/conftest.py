"""Suite-wide settings: no test depends on how fast the machine is, or on the order tests run in.

* Time budgets read :mod:`soft_envs.clock`. ``--slow-clock=K`` runs that clock ``K`` times as fast
  as real time for the whole run — every budget then looks like it ran on a machine ``K`` times
  slower (``K = 20``); ``K < 1`` makes the machine look faster (``K = 0.05``). Tests that check
  that "the budget ends the work" use :func:`expiring_clock` (the clock jumps past every deadline
  after a number of reads), so they assert the mechanism, not how much work fits in real time.
  They carry the ``budget`` marker: ``pytest -m budget --slow-clock=20`` runs them on a slowed
  clock (``.ci/run`` does).
* ``--test-order=reverse`` or ``--test-order=random:SEED`` runs the collected tests in another
  order, to show that no test depends on what ran before it.
* Hypothesis has no per-example deadline here (its default 200 ms is a wall-clock assertion).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

from soft_envs import clock

settings.register_profile("soft_envs", deadline=None, print_blob=True)
settings.load_profile("soft_envs")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow-clock", type=float, default=1.0, metavar="K",
                     help="run soft_envs.clock K times as fast as real time (K > 1: a slower machine)")
    parser.addoption("--test-order", default="default", metavar="ORDER",
                     help="'default', 'reverse' or 'random:SEED': the order the collected tests run in")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "budget: checks that a time budget ends the work (run with --slow-clock)")
    rate = config.getoption("--slow-clock")
    if not rate > 0:
        raise pytest.UsageError(f"--slow-clock must be > 0; got {rate!r}")
    if rate != 1.0:
        clock.set_clock(clock.ScaledClock(rate))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = config.getoption("--test-order")
    if order == "default":
        return
    if order == "reverse":
        items.reverse()
    elif order.startswith("random:"):
        random.Random(int(order.split(":", 1)[1])).shuffle(items)
    else:
        raise pytest.UsageError(f"--test-order must be 'default', 'reverse' or 'random:SEED'; got {order!r}")


@pytest.fixture
def expiring_clock() -> Iterator[Callable[[int], clock.ExpiringClock]]:
    """``expiring_clock(k)`` makes the budgets' clock jump past every deadline after ``k`` reads
    (on top of whatever clock the run uses); the previous clock is back after the test."""
    previous = clock.set_clock(None)
    clock.set_clock(previous)

    def install(reads: int) -> clock.ExpiringClock:
        fake = clock.ExpiringClock(reads, source=previous)
        clock.set_clock(fake)
        return fake

    yield install
    clock.set_clock(previous)
