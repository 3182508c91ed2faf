"""Long jobs that lose nothing: a results file written as they go, workers that may die, signals.

Harness code on top of the layers (used by :mod:`soft_envs.evaluate`). Three pieces:

* :class:`ResultsFile` — JSON Lines, one record per finished job, appended as the job finishes
  and flushed and ``fsync``-ed per line, so a killed process loses at most the line it was
  writing. Reading ignores a truncated last line (with a warning); appending first cuts it off.
* :func:`run_jobs` — run ``fn(payload)`` for every payload in ``workers`` processes and hand each
  result to a callback as it arrives. Locally every worker is a spawned process that runs one job
  at a time, so the parent always knows which job a worker holds: a worker that dies (a signal,
  the out-of-memory killer, a crash inside PyBullet) puts its job back in the queue, at most
  ``max_retries`` times, then :class:`JobFailedError` names the job — never a hang (Python's
  ``multiprocessing.Pool`` waits forever for a task whose worker died). On Ray the same through
  Ray's task retries (``max_retries``: a task whose worker process died is rerun elsewhere).
  An exception raised *by* a job is not retried (it would raise again): it ends the run as a
  :class:`JobFailedError` with the job's traceback.
* :func:`stop_on_signals` — SIGTERM (and SIGINT, Ctrl-C) raise :class:`Interrupted` in the main
  thread, so the caller stops its workers, keeps what finished and reports it.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import signal
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import wait
from typing import IO, Any

from soft_envs.exceptions import InvalidParameterError, MissingDependencyError, SoftEnvsError, check_integer

POLL_INTERVAL = 0.5  # s: how often the parent looks at its workers when nothing arrives
MAX_WORKERS = 1024  # the most worker processes (or Ray workers) of one run
MAX_RETRIES = 100  # the most reruns of a job whose worker died


class JobFailedError(SoftEnvsError, RuntimeError):
    """A job raised an exception, or its worker process died more than ``max_retries`` times."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while jobs were running (:attr:`signum` says which). A
    ``KeyboardInterrupt``, so no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = int(signum)


class ResultsFileError(SoftEnvsError, ValueError):
    """A results file that cannot be continued: a corrupt line before the last, or records where a
    fresh run was asked for."""


# ------------------------------------------------------------------------------ the results file
def _json_value(value: Any) -> Any:
    """``value`` as JSON has it: NaN/inf floats become ``null`` (JSON has no NaN), numpy scalars
    and arrays plain numbers and lists."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


class ResultsFile:
    """A JSON Lines file of finished jobs (one object a line), keyed by the fields ``key_fields``.

    Args:
        path: the file (created on the first :meth:`append`).
        key_fields: the record fields that name a job (e.g. task, controller, preset, seed).
    """

    def __init__(self, path: str | os.PathLike, key_fields: Sequence[str]) -> None:
        self.path = os.fspath(path)
        self.key_fields = tuple(key_fields)
        self._handle: IO[bytes] | None = None

    def key(self, record: dict[str, Any]) -> tuple:
        """The job a record belongs to."""
        return tuple(record[name] for name in self.key_fields)

    def _scan(self) -> tuple[list[dict[str, Any]], int]:
        """``(records, length of the valid part [bytes])``; a bad last line is left out (warning),
        a bad line before it is a :class:`ResultsFileError`."""
        if not os.path.exists(self.path):
            return [], 0
        with open(self.path, "rb") as fh:
            data = fh.read()
        records, good, start = [], 0, 0
        lines = data.split(b"\n")
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    record = json.loads(line)
                    if not isinstance(record, dict) or any(name not in record for name in self.key_fields):
                        raise ValueError(f"not a record with the fields {self.key_fields}")
                except ValueError as exc:
                    if any(rest.strip() for rest in lines[number:]):
                        raise ResultsFileError(f"{self.path}, line {number}: not a JSON record ({exc}); only "
                                               "a truncated last line is skipped") from exc
                    warnings.warn(f"{self.path}: the last line ({len(line)} bytes) is truncated or corrupt "
                                  "(a run killed while writing it?); it is ignored", stacklevel=3)
                    break
                records.append(record)  # (a complete record without its newline counts: open() adds it)
            start += len(line) + 1
            good = min(start, len(data))
        return records, good

    def _unique(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen, out = set(), []
        for record in records:
            key = self.key(record)
            if key in seen:
                named = dict(zip(self.key_fields, key, strict=True))
                warnings.warn(f"{self.path}: {named} appears twice; the first is kept", stacklevel=3)
                continue
            seen.add(key)
            out.append(record)
        return out

    def read(self) -> list[dict[str, Any]]:
        """Every complete record, in file order (a truncated last line is skipped with a warning;
        of two records of one job the first counts)."""
        return self._unique(self._scan()[0])

    def open(self, resume: bool) -> list[dict[str, Any]]:
        """Open for appending; returns the records already there. ``resume=False`` refuses a file
        that already holds records (:class:`ResultsFileError`); ``resume=True`` cuts off a truncated
        last line first, so the next record starts on a line of its own."""
        records, good = self._scan()
        if records and not resume:
            raise ResultsFileError(f"{self.path} already holds {len(records)} records: continue it with "
                                   "--resume (resume=True) or write to another file")
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        handle = self._handle = open(self.path, "ab")  # noqa: SIM115 (kept open until close())
        if handle.tell() > good:
            handle.truncate(good)
            handle.seek(good)
        if good and not self._ends_with_newline(good):
            self._write(b"\n")
        return self._unique(records)

    def _ends_with_newline(self, length: int) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(length - 1)
            return fh.read(1) == b"\n"

    def _write(self, data: bytes) -> None:
        handle = self._handle
        if handle is None:
            raise InvalidParameterError("ResultsFile written before open()")
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a line, flushed and on disk when this returns."""
        if self._handle is None:
            raise InvalidParameterError("ResultsFile.append() before open()")
        self._write((json.dumps(_json_value(record), allow_nan=False) + "\n").encode())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


# ------------------------------------------------------------------------------ signals
@contextmanager
def stop_on_signals(signums: Sequence[int] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Inside the block, each of ``signums`` raises :class:`Interrupted` (in the main thread; from
    another thread this does nothing). The previous handlers are restored on the way out."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):  # noqa: ARG001
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


# ------------------------------------------------------------------------------ local workers
def _worker_main(conn) -> None:
    """A worker: run ``fn(payload)`` for each ``(fn, index, payload)`` received, send the outcome
    back; end on ``None`` or when the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers on Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        fn, index, payload = message
        try:
            outcome = ("ok", index, fn(payload))
        except Exception as exc:  # noqa: BLE001 - sent back to the parent, which names the job
            outcome = ("error", index, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            conn.send(outcome)
        except (OSError, ValueError):  # the parent is gone
            return


class _Worker:
    def __init__(self, ctx) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child,), daemon=True)
        previous = signal.getsignal(signal.SIGINT)
        try:  # an ignored SIGINT survives the exec: Ctrl-C during the child's imports cannot kill it
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread
            previous = None
        try:
            self.proc.start()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        child.close()
        self.job: int | None = None

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5.0)
        self.conn.close()


def _run_local(payloads: Sequence[Any], fn: Callable[[Any], Any], workers: int, max_retries: int,
               on_result: Callable[[int, Any], None], describe: Callable[[int], str]) -> None:
    ctx = mp.get_context("spawn")
    queue = deque(range(len(payloads)))
    deaths = [0] * len(payloads)
    pool = [_Worker(ctx) for _ in range(min(workers, len(payloads)))]
    try:
        while queue or any(w.job is not None for w in pool):
            for w in pool:
                if w.job is None and queue:
                    w.job = queue.popleft()
                    w.conn.send((fn, w.job, payloads[w.job]))
            busy = [w for w in pool if w.job is not None]
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=POLL_INTERVAL))
            for k, w in enumerate(pool):
                if w.job is None or not (w.conn in ready or w.proc.sentinel in ready):
                    continue
                outcome = None
                if w.conn in ready:
                    try:
                        outcome = w.conn.recv()
                    except (EOFError, OSError):
                        outcome = None
                if outcome is None:  # the worker died holding its job
                    job, w.job = w.job, None
                    w.proc.join(1.0)
                    code = w.proc.exitcode
                    w.stop()
                    deaths[job] += 1
                    if deaths[job] > max_retries:
                        raise JobFailedError(f"{describe(job)}: its worker process died {deaths[job]} times (last "
                                             f"exit code {code}); max_retries={max_retries}")
                    queue.appendleft(job)
                    pool[k] = _Worker(ctx)
                    continue
                kind, index, value = outcome
                w.job = None
                if kind == "error":
                    raise JobFailedError(f"{describe(index)} raised {value}")
                on_result(index, value)
    finally:
        for w in pool:
            w.stop()


# ------------------------------------------------------------------------------ Ray
def _call(fn: Callable[[Any], Any], payload: Any) -> Any:
    return fn(payload)


def _run_ray(payloads: Sequence[Any], fn: Callable[[Any], Any], workers: int, max_retries: int,
             on_result: Callable[[int, Any], None], describe: Callable[[int], str], address: str) -> None:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingDependencyError("--ray needs the 'ray' extra: pip install 'soft_envs[ray]'") from exc
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, log_to_driver=False)
    # max_retries: Ray reruns a task whose worker process died (system failures only, as here locally)
    remote = ray.remote(num_cpus=1, max_retries=max_retries)(_call)
    queue = deque(range(len(payloads)))
    in_flight: dict[Any, int] = {}
    try:
        while queue or in_flight:
            while queue and len(in_flight) < workers:
                job = queue.popleft()
                in_flight[remote.remote(fn, payloads[job])] = job
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_INTERVAL)
            for ref in done:
                job = in_flight.pop(ref)
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    raise JobFailedError(f"{describe(job)} raised {exc}") from None
                except ray.exceptions.RayError as exc:  # the worker died more than max_retries times
                    raise JobFailedError(f"{describe(job)}: {type(exc).__name__} after max_retries={max_retries} "
                                         f"retries: {str(exc).splitlines()[0] if str(exc) else ''}") from None
                on_result(job, value)
    finally:
        for ref in in_flight:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass


def run_jobs(payloads: Sequence[Any], fn: Callable[[Any], Any], on_result: Callable[[int, Any], None], *,
             workers: int = 2, max_retries: int = 2, ray_address: str | None = None,
             describe: Callable[[int], str] | None = None) -> None:
    """Run ``fn(payloads[i])`` for every ``i`` in ``workers`` processes (or Ray workers at
    ``ray_address``: an address, ``"auto"`` or ``"local"``; 1 to :data:`MAX_WORKERS`);
    ``on_result(i, value)`` is called in this process as each job finishes, in the order they finish.

    A job whose worker dies is rerun, at most ``max_retries`` (≤ :data:`MAX_RETRIES`) times; then, or when a job raises,
    :class:`JobFailedError` (its message names the job through ``describe(i)``). ``fn`` and the
    payloads must pickle (module-level functions). Workers are stopped on the way out, also when
    ``on_result`` or a signal (:func:`stop_on_signals`) raises.
    """
    workers = check_integer("workers", workers, minimum=1, maximum=MAX_WORKERS)
    max_retries = check_integer("max_retries", max_retries, minimum=0, maximum=MAX_RETRIES)
    describe = describe or (lambda i: f"job {i}")
    if not payloads:
        return
    if ray_address is None:
        _run_local(payloads, fn, workers, max_retries, on_result, describe)
    else:
        _run_ray(payloads, fn, workers, max_retries, on_result, describe, ray_address)


def process_pool(workers: int, ray_address: str | None):
    """A plain process pool (``multiprocessing`` spawn, or Ray's drop-in pool at ``ray_address``),
    for callers that map a function over a few long items (``train_seeds`` of the learners). Unlike
    :func:`run_jobs` it does not rerun an item whose worker died (Python's pool then waits for it
    forever). ``workers``: 1 to :data:`MAX_WORKERS`."""
    workers = check_integer("workers", workers, minimum=1, maximum=MAX_WORKERS)
    if ray_address is None:
        return mp.get_context("spawn").Pool(workers)
    try:
        import ray
        from ray.util.multiprocessing import Pool
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingDependencyError("--ray needs the 'ray' extra: pip install 'soft_envs[ray]'") from exc
    if not ray.is_initialized():
        ray.init(address=None if ray_address == "local" else ray_address, log_to_driver=False)
    return Pool(processes=workers)
