"""``soft-envs bench vector``: env-steps per second of the native vector envs against the number of
sub-envs ``N``, the single env as the baseline, and their memory.

Every figure of a row comes from one process, pinned to one core (``os.sched_setaffinity``, where
the platform has it): the single env (``gym.make``, stepped with uniform random actions and reset
at each episode's end, as a new user would) is measured before and after the vector sweep of its
env, and the ratio uses the mean of the two; the vector env is ``gym.make_vec(id, num_envs=N)``
(its ``vector_entry_point``) stepped with uniform random action batches, autoresetting. Memory, in a
fresh interpreter: the process's resident set (``/proc/self/statm``) before building ``N``
sub-envs and after 100 steps, per sub-env, and its growth between vector steps 1,000 and 10,000 (autoresets every 50
steps). The machine's load average is printed with the table: other jobs share the cores. Then,
not pinned, the soft envs at ``N = 1024`` with one thread and with every core of the process
(``num_threads``, :mod:`soft_envs.sim.threads`), next to the batched core alone stepping the same
arms at the same frame skip (:func:`paired_rates`: ``frame_skip`` calls of ``body.step`` per
env-step, the physics without the env's logic), both from one process, windows of the two
alternating, the best window of each.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from soft_envs import clock
from soft_envs.console import progress
from soft_envs.report import markdown_table, pyplot, save_figure
from soft_envs.sim import threads

TITLE = "Vector environments: env-steps per second against the number of sub-envs (one core, then threads)"
PETER = "soft_envs/PeterReach-v0"
PCC = "soft_envs/PCCTrack-v0"
SWEEP = (1, 4, 16, 64, 256, 1024, 4096)  # --full
QUICK_SWEEP = (1, 16, 256)  # default, plus each case's target N
MEMORY_STEPS = 10_000
THREADS_N = 1024  # sub-envs of the threads' table


@dataclass(frozen=True)
class Case:
    """One vectorised env variant and its throughput target (``target_ratio`` × the single env at
    ``target_n`` sub-envs)."""

    label: str
    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    target_n: int = 1024
    target_ratio: float = 50.0
    memory_n: int = 1024  # sub-envs of the 10,000-step memory run


CASES: tuple[Case, ...] = (
    Case("PeterReach-v0 soft", PETER, {}, target_n=1024, target_ratio=100.0, memory_n=16),
    Case("PeterReach-v0 kinematic", PETER, {"kinematic": True}, target_n=4096, target_ratio=50.0),
    Case("PCCTrack-v0", PCC, {}, target_n=256, target_ratio=50.0, memory_n=16),
)


@contextmanager
def one_core():
    """Run the block pinned to one core (the first one this process may use), where possible."""
    getter, setter = getattr(os, "sched_getaffinity", None), getattr(os, "sched_setaffinity", None)
    if getter is None or setter is None:
        yield "not pinned (no sched_setaffinity)"
        return
    before = getter(0)
    core = min(before)
    setter(0, {core})
    try:
        yield f"pinned to core {core}"
    finally:
        setter(0, before)


def rss_bytes() -> int:
    """The process's resident set size [bytes] (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def single_rate(case: Case, seconds: float, seed: int) -> float:
    """Env-steps/s of the single env (``gym.make``), random actions, reset at each episode's end."""
    env = gym.make(case.env_id, **case.kwargs)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(256)]
    steps, start = 0, clock.now()
    while True:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        steps += len(actions)
        elapsed = clock.now() - start
        if elapsed >= seconds:
            break
    env.close()
    return steps / elapsed


def vector_rate(case: Case, n: int, seconds: float, seed: int, **extra: Any) -> float:
    """Env-steps/s of ``gym.make_vec(id, num_envs=n)``, random action batches, autoresets."""
    envs = gym.make_vec(case.env_id, num_envs=n, **case.kwargs, **extra)
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    space = envs.single_action_space
    actions = [rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(space.dtype) for _ in range(8)]
    envs.step(actions[0])  # warm-up
    steps, start = 0, clock.now()
    while True:
        for batch in actions:
            envs.step(batch)
        steps += len(actions)
        elapsed = clock.now() - start
        if elapsed >= seconds:
            break
    envs.close()
    return steps * n / elapsed


def paired_rates(case: Case, n: int, seed: int, num_threads: int, rounds: int = 5,
                 steps: int = 8) -> tuple[float, float]:
    """(env-steps/s of ``gym.make_vec(id, num_envs=n, num_threads=...)``, env-steps/s of its batched core
    alone at the same frame skip): ``rounds`` windows of ``steps`` vector steps (random action batches,
    autoresets) alternating with windows of ``steps × frame_skip`` calls of ``body.step`` (zero torque,
    from the env's state, which is put back after), the best window of each — the estimate of idle
    cores (other work on the machine slows a window, never speeds it up)."""
    envs = gym.make_vec(case.env_id, num_envs=n, num_threads=num_threads, **case.kwargs)
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    space = envs.single_action_space
    actions = [rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(space.dtype) for _ in range(steps)]
    env = envs.unwrapped
    body, frame_skip, dt = env.body, env.single.frame_skip, env.single.time_step
    zero = np.zeros((n, body.n_dof))
    envs.step(actions[0])  # warm-up
    vector = core = np.inf
    for _ in range(rounds):
        start = clock.now()
        for batch in actions:
            envs.step(batch)
        vector = min(vector, clock.now() - start)
        state = body.state
        start = clock.now()
        for _ in range(steps * frame_skip):
            body.step(dt, zero)
        core = min(core, clock.now() - start)
        body.state = state  # (the env's arms go on from where they were)
    envs.close()
    return steps * n / vector, steps * n / core


def memory(case: Case, n: int, steps: int, seed: int) -> tuple[int, int | None]:
    """(resident bytes the vector env of ``n`` sub-envs added after 100 steps, RSS growth [bytes]
    between step 1,000 and step ``steps``, ``None`` for fewer steps)."""
    import soft_envs  # noqa: F401 - registers the envs (in a spawned child too)

    before = rss_bytes()
    envs = gym.make_vec(case.env_id, num_envs=n, **case.kwargs)
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    space = envs.single_action_space
    actions = [rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(space.dtype) for _ in range(8)]
    warm = built = None
    for k in progress(range(steps), desc=f"{case.label} memory, N={n}", leave=False):
        envs.step(actions[k % len(actions)])
        if k + 1 == min(100, steps):
            built = rss_bytes()
        if k + 1 == 1000:
            warm = rss_bytes()
    growth = None if warm is None or steps < 1000 else rss_bytes() - warm
    envs.close()
    return built - before, growth


def memory_in_child(case: Case, n: int, steps: int, seed: int) -> tuple[int, int | None]:
    """:func:`memory` in a fresh interpreter (spawned; it inherits the core pinning), so that the
    memory the sweep freed and the allocator kept does not hide what ``n`` sub-envs take."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(memory, case, n, steps, seed).result()


def _plot(rates: dict[str, dict[int, float]], baselines: dict[str, float], plot_dir: str) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for k, (label, by_n) in enumerate(rates.items()):
        colour = f"C{k}"
        ns = sorted(by_n)
        ax.loglog(ns, [by_n[n] for n in ns], "o-", color=colour, label=f"{label}, vector env")
        ax.axhline(baselines[label], color=colour, linestyle="--", linewidth=1, label=f"{label}, single env")
    ax.set_xlabel("sub-envs N")
    ax.set_ylabel("env-steps per second")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, plot_dir, "vector_throughput.png")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    seconds = 2.0 if full else 0.5
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    rows, targets, memory_rows = [], [], []
    rates: dict[str, dict[int, float]] = {}
    baselines: dict[str, float] = {}
    with one_core() as pinning:
        for case in CASES:
            sweep = sorted(set(SWEEP if full else QUICK_SWEEP) | {case.target_n})
            first = single_rate(case, seconds, seed)
            by_n = {n: vector_rate(case, n, seconds, seed)
                    for n in progress(sweep, desc=f"{case.label} sweep", leave=False)}
            last = single_rate(case, seconds, seed)
            baseline = 0.5 * (first + last)
            rates[case.label], baselines[case.label] = by_n, baseline
            rows.append([case.label, "single env", f"{baseline:,.0f} ({first:,.0f} / {last:,.0f})", "1",
                         f"{1e6 / baseline:.1f}"])
            rows += [[case.label, n, f"{rate:,.0f}", f"{rate / baseline:.1f}", f"{1e6 / rate:.2f}"]
                     for n, rate in by_n.items()]
            ratio = by_n[case.target_n] / baseline
            targets.append([case.label, f"≥ {case.target_ratio:g}× at N = {case.target_n}", f"{ratio:.0f}×",
                            "yes" if ratio >= case.target_ratio else "**no**"])
            fixed, _ = memory_in_child(case, 1, 100, seed)
            total, _ = memory_in_child(case, case.target_n, 100, seed)
            _, growth = memory_in_child(case, case.memory_n, MEMORY_STEPS, seed)
            memory_rows.append([case.label, f"{fixed / 1e6:.0f}", case.target_n, f"{total / 1e6:.0f}",
                                f"{(total - fixed) / (case.target_n - 1) / 1e3:.1f}", case.memory_n,
                                f"{growth / 1e3:+.0f}"])
    thread_rows = []
    cores = threads.available_cores()
    for case in (c for c in CASES if not c.kwargs.get("kinematic")):  # the arms' physics is what threads split
        by_threads = {nt: paired_rates(case, THREADS_N, seed, nt, rounds=7 if full else 3)
                      for nt in sorted({1, cores})}
        one, core_one = by_threads[1]
        thread_rows += [[case.label, THREADS_N, nt, f"{rate:,.0f}", f"{rate / one:.2f}", f"{core:,.0f}",
                         f"{core / core_one:.2f}", f"{rate / core:.2f}"] for nt, (rate, core) in by_threads.items()]
    load_text = "" if load is None else \
        f" Load average at the start: {load[0]:.1f} (1 min), {load[1]:.1f} (5 min) on {os.cpu_count()} cores."
    text = (f"One process, {pinning}; {seconds:g} s per measurement; random actions (uniform in the box), "
            f"autoresets (50-step episodes).{load_text} The single env's rate is the mean of its runs "
            "before and after the sweep (both in brackets).\n\n")
    text += markdown_table(["env", "N", "env-steps/s", "× single env", "µs per env-step"], rows)
    text += "\n\nTargets:\n\n" + markdown_table(["env", "target", "measured", "met"], targets)
    text += ("\n\nMemory (resident set of a fresh process, after building the vector env and 100 steps): what one "
             "sub-env costs in all (the prototype single env, which opens no PyBullet client, and the compiled core), "
             "what N "
             "cost, the difference per added sub-env, and the growth between vector steps 1,000 and "
             f"{MEMORY_STEPS:,} of N' sub-envs (an autoreset every 50 steps):\n\n")
    text += markdown_table(["env", "RSS at N = 1 [MB]", "N", "RSS at N [MB]", "per added sub-env [kB]", "N'",
                            f"RSS growth, steps 1,000–{MEMORY_STEPS:,} [kB]"], memory_rows)
    text += (f"\n\nThreads (`num_threads=`, default: the cores this process may use; not pinned), N = {THREADS_N}, "
             "in the same run, next to the batched core alone stepping the same arms at the same frame skip "
             "(`frame_skip` calls of `body.step` an env-step: the physics without the env's logic); one process "
             f"per row, {7 if full else 3} windows of 8 env-steps of each, alternating, the best of each:\n\n"
             + markdown_table(["env", "N", "threads", "env-steps/s", "× one thread", "core alone, env-steps/s",
                               "core × one thread", "vector ÷ core"], thread_rows))
    if plot_dir is not None:
        text += f"\n\n![env-steps per second against N]({_plot(rates, baselines, plot_dir)})"
    return text
