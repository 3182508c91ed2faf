"""The batched core's batch loops across threads: a batch split into contiguous blocks of
arms, each block stepped by the same compiled driver in its own thread.

The drivers (:func:`~soft_envs.sim.batched_integrator.batch_step`) release the GIL (``nogil``)
and each call allocates its own scratch, and every arm's step reads and writes only that arm's
rows, so a split batch gives results identical to one call, bit for bit, whatever the number of
threads. The pools are shared per thread count and live as long as the process (a forked
child makes its own).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from soft_envs.exceptions import check_integer

#: The fewest arms one thread is given: below this a thread's start costs more than its share.
MIN_ARMS_PER_THREAD = 32
#: The most threads a batch (or a learner's torch) is stepped on.
MAX_THREADS = 1024


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


def check_threads(num_threads: int | None) -> int:
    """``num_threads`` checked, 1 to :data:`MAX_THREADS` (``None``: :func:`available_cores`)."""
    if num_threads is None:
        return available_cores()
    return check_integer("num_threads", num_threads, minimum=1, maximum=MAX_THREADS)


@cache
def _pool(num_threads: int, pid: int) -> ThreadPoolExecutor:
    """The shared pool of ``num_threads`` threads of process ``pid`` (a forked child, whose copy of
    the parent's pool has no threads, gets its own)."""
    return ThreadPoolExecutor(max_workers=num_threads, thread_name_prefix="soft_envs-batch")


def blocks(n_arms: int, num_threads: int) -> list[slice]:
    """Contiguous blocks of arms, one per thread used (at most ``num_threads``, each at least
    :data:`MIN_ARMS_PER_THREAD` arms unless there is one)."""
    used = max(1, min(num_threads, n_arms // MIN_ARMS_PER_THREAD))
    if used == 1:
        return [slice(0, n_arms)]
    edges = [n_arms * k // used for k in range(used + 1)]
    return [slice(edges[k], edges[k + 1]) for k in range(used)]


def run_blocks(call: Callable[[slice], None], n_arms: int, num_threads: int) -> None:
    """``call(block)`` for every block of :func:`blocks`, in parallel threads where there are several."""
    parts = blocks(n_arms, num_threads)
    if len(parts) == 1:
        call(parts[0])
        return
    for future in [_pool(len(parts), os.getpid()).submit(call, part) for part in parts]:
        future.result()
