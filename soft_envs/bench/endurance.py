"""The long half of the reliability bench: stateful fuzzing of every env and a soak of every vector env.

* :func:`fuzz_table` runs the stateful fuzzer (:mod:`soft_envs.bench.fuzz`) over every env, single
  and vectorised, each env in a forked process with a deadline (a crash inside PyBullet is a row,
  not the end of the bench), and lists what it did: sequences, calls, accepted steps, replays,
  typed errors, and every failure found (hypothesis's minimal sequence).
* :func:`soak_table` runs every vector env (``gym.make_vec``: the native vector env where there is
  one) on uniform random actions with autoresets for a wall-clock budget, in a fresh process, and
  reports its resident memory after a warm-up and at the end.
* :data:`FIXED_DEFECTS` lists the defects the fuzzer found while it was written, each with its
  minimal reproducer, its fix, and the test that keeps it fixed.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from soft_envs import clock, console
from soft_envs.bench import markdown_table

#: (defect, minimal reproducer, root cause and fix, regression test in tests/envs/test_fuzz.py)
FIXED_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("the same seed and actions give another episode after other episodes (QuadrupedPose and QuadrupedWalk "
     "at `time_step=1e-4`; the issue's case)",
     "`env = gym.make('soft_envs/QuadrupedPose-v0', time_step=1e-4)`; `reset(seed=0)` + 5 fixed steps, twice: "
     "observations differ by 1.70 (every other episode); QuadrupedWalk: seed 1 after seed 0 differs by 1.55",
     "Bullet keeps each pair's contact manifold (points, warm-start impulses, friction anchors) over "
     "`resetBasePositionAndOrientation`; the reset now lifts the body 10 m and runs the collision pass, "
     "which empties every manifold (`QuadrupedBody.reset`)",
     "test_the_quadruped_replays_an_episode_whatever_ran_before"),
    ("a goal given as `reset(options={'goal': …})` with an angle beyond ±π gives an observation outside "
     "`observation_space` (QuadrupedPose; yaw 4 rad)",
     "`gym.make('soft_envs/QuadrupedPose-v0').reset(seed=0, options={'goal': (0, 0, 4.0)})`",
     "the goal is an orientation: it is stored as the canonical roll, pitch, yaw of that orientation "
     "(`QuadrupedPoseEnv._goal_option`)", "test_a_goal_of_any_angle_is_observed_in_its_canonical_form"),
    ("a goal option that is not three numbers raises numpy's `ValueError` (QuadrupedPose)",
     "`reset(options={'goal': 'up'})`", "checked and refused with `InvalidParameterError`",
     "test_a_goal_of_any_angle_is_observed_in_its_canonical_form"),
    ("a reset refused for its options (QuadrupedPose, a NaN goal) leaves the env half reset — the body placed, "
     "the goal drawn, the state not read — and `step` goes on from there",
     "`env.reset(seed=0)`; `env.reset(options={'goal': (nan, 0, 0)})` raises; `env.step(a)` gives a result",
     "the options are checked before anything changes, and a reset that raises leaves the env needing a "
     "reset (`step` raises `ResetNeeded`; `SoftEnv.reset`)", "test_a_refused_reset_leaves_the_env_needing_a_reset"),
    ("soft PeterReach under kilograms of payload on soft legs diverges: NaN tips, velocities of 1e13 m/s, "
     "`LinAlgError` (singular mass matrix) — the issue's observations outside the space with a payload",
     "`gym.make('soft_envs/PeterReach-v0', n_modules=4, payload=2.0, leg_stiffness=400)`, 50 random steps: a "
     "NaN tip at step 26; `payload=5.0, leg_stiffness=200`: `LinAlgError`",
     "the legs have no end stop, so the load crushed them through their length, beyond the PCC model: a load "
     "the legs cannot carry standing straight is refused at construction (`_check_load`), and an arm that "
     "leaves the model (a leg below half its length, a bend past 180°, a non-finite state) is stopped at its "
     "last valid state and ends the episode with `info['termination_reason']`, as PCCTrack does "
     "(`PeterReachEnv.model_violation`)",
     "test_a_payload_the_legs_cannot_carry_is_refused_and_a_collapse_ends_the_episode"),
    ("HexapodPose's `n_steps` (RK4 steps per rod) had no upper bound: `n_steps=10**6` was accepted and "
     "took minutes to construct and about 90 s a step (a hang, to a user)",
     "`gym.make('soft_envs/HexapodPose-v0', n_steps=10**6)`",
     "bounded at construction like every count keyword (2 to `MAX_ROD_STEPS` = 1000)",
     "test_a_count_keyword_has_an_upper_bound"),
    ("a keyword set the constructor accepts fails at every reset (PeterReach `radius=1.0` with a realism "
     "radius error)",
     "`gym.make('soft_envs/PeterReach-v0', radius=1.0, realism={'radius_error': (0, 0.1)}).reset()`",
     "the constructor builds the arm at both ends of each relative-error range (radius, mass, stiffness) "
     "and refuses the combination (`PeterReachEnv._check_plant_ranges`)",
     "test_a_realism_range_that_would_make_an_invalid_arm_is_refused_at_construction"),
    ("a constructor that refuses its keywords after connecting to PyBullet leaves the client connected as "
     "long as its error is kept (a REPL's `sys.last_value`, a logger, a test report)",
     "keep the `InvalidParameterError` of `gym.make('soft_envs/PeterReach-v0', physics='stiff', "
     "realism='realistic')` and of `gym.make('soft_envs/PCCTrack-v0', controller_period=0.0033)`: two "
     "PyBullet connections stay open",
     "every `SoftEnv` subclass's `__init__` is wrapped to disconnect its clients when it raises "
     "(`SoftEnv.__init_subclass__`)", "test_a_constructor_that_refuses_its_keywords_leaves_no_pybullet_client"),
    ("a reset refused for its options leaves a native vector env stepping on from its last state (the single "
     "envs need a reset after a refused one); Gymnasium's sync vector env over the single envs fails at the next "
     "step with its PassiveEnvChecker's own `TypeError` when the first reset raised",
     "`envs = gym.make_vec('soft_envs/PeterReach-v0', num_envs=1)`; `envs.reset(seed=0)`; "
     "`envs.reset(options={'unknown_option': 1})` raises; `envs.step(a)` gives a result",
     "a reset that raises leaves the native vector env needing a reset (`SoftVectorEnv.reset`); the fuzzer builds "
     "Gymnasium's vector envs from a spec without the checker, as its single envs (a Gymnasium 1.4 checker bug)",
     "test_a_refused_reset_leaves_a_native_vector_env_needing_a_reset"),
    ("a number keyword given as a string or `None` raises an untyped `TypeError` from numpy (PeterReach "
     "`radius`, `gap`, `n_modules`, `links_per_module`, `leg_stiffness`; PCCTrack `kv`, `max_pressure`, "
     "`n_segments`; HexapodPose and QuadrupedPose `goal_range`)",
     "`gym.make('soft_envs/PeterReach-v0', radius=None)`",
     "every such check goes through `check_finite` / `check_integer` / `check_positive` "
     "(`InvalidParameterError` naming the keyword)", "test_a_keyword_of_the_wrong_type_is_a_typed_error"),
)


# ------------------------------------------------------------------------------ fuzzing
def _fuzz_child(env_ids: list[str], sequences: int, vector: bool, seed: int, conn) -> None:
    from soft_envs.bench.fuzz import fuzz

    try:
        report = fuzz(env_ids, sequences, vector=vector, seed=seed, stop_on_failure=False)
        conn.send((asdict(report.counts), report.failures, report.seconds))
    except BaseException as exc:  # noqa: BLE001 - the outcome is what we measure
        conn.send(({}, [f"the fuzzer itself failed: {type(exc).__name__}: {exc}"], 0.0))
    finally:
        conn.close()


def fuzz_in_child(env_ids: Sequence[str], sequences: int, vector: bool, seed: int,
                  deadline: float) -> tuple[dict, list[str], float]:
    """:func:`~soft_envs.bench.fuzz.fuzz` in a forked process: ``(counts, failures, seconds)``; a
    crash or a hang is a failure."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_fuzz_child, args=(list(env_ids), sequences, vector, seed, child), daemon=True)
    proc.start()
    child.close()
    outcome = parent.recv() if parent.poll(deadline) else None
    proc.join(5.0)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if outcome is None:
        return {}, [f"crash (exit {proc.exitcode}) or hang (> {deadline:.0f} s)"], deadline
    return outcome


#: Sequences per env of a ``--full`` run (15,000 asked; hypothesis runs more while it shrinks: over 20,000).
FULL_SEQUENCES = {"soft_envs/PeterReach-v0": 3000, "soft_envs/PCCTrack-v0": 3000,
                  "soft_envs/QuadrupedWalk-v0": 2500, "soft_envs/QuadrupedPose-v0": 2500,
                  "soft_envs/HexapodPose-v0": 1500, "vector": 2500}


def fuzz_table(env_ids: Sequence[str], full: bool, seed: int) -> tuple[str, int]:
    """The fuzzing rows (one per env, then the vector envs) and the number of failures."""
    plan = [([env_id], False, FULL_SEQUENCES.get(env_id, 2000) if full else 40) for env_id in env_ids]
    plan.append((list(env_ids), True, FULL_SEQUENCES["vector"] if full else 30))
    rows, failures, totals = [], [], {"sequences": 0, "steps": 0, "calls": 0}
    for ids, vector, sequences in console.progress(plan, desc="fuzzing", leave=False):
        counts, found, seconds = fuzz_in_child(ids, sequences, vector, seed, deadline=sequences * 5.0 + 600)
        label = "vector envs (`gym.make_vec`) of " + ", ".join(i.split("/")[1] for i in ids) if vector \
            else ids[0].split("/")[1]
        for key in totals:
            totals[key] += counts.get(key, 0)
        failures += [f"{label}: {f}" for f in found]
        rows.append([label, counts.get("sequences", 0), counts.get("calls", 0), counts.get("steps", 0),
                     counts.get("replays", 0), counts.get("refused", 0), len(found), f"{seconds:.0f}"])
    table = markdown_table(["envs", "sequences", "calls", "accepted steps", "replays", "typed errors", "failures",
                            "s"], rows)
    found_text = "\n\n".join(f"```\n{f.strip()[:3000]}\n```" for f in failures) if failures else \
        "No invariant broken."
    text = (f"{totals['sequences']} random call sequences, {totals['calls']} calls, {totals['steps']} accepted "
            f"steps; {len(failures)} failures.\n\n{table}\n\n{found_text}")
    return text, len(failures)


def defects_table() -> str:
    return markdown_table(["defect the fuzzer found", "minimal reproducer", "root cause and fix",
                           "regression test (tests/envs/test_fuzz.py)"],
                          [[d.replace("|", "/") for d in row] for row in FIXED_DEFECTS])


# ------------------------------------------------------------------------------ soak
def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _soak_child(env_id: str, num_envs: int, seconds: float, warmup: float, conn) -> None:
    import warnings

    import gymnasium as gym

    import soft_envs  # noqa: F401

    warnings.simplefilter("ignore")
    envs = gym.make_vec(env_id, num_envs=num_envs)
    envs.action_space.seed(0)
    envs.reset(seed=0)
    steps = episodes = 0
    start_rss, warm_rss = _rss_mb(), None
    budget = clock.Deadline(seconds)
    while not budget.expired():
        _, _, terminated, truncated, _ = envs.step(envs.action_space.sample())
        steps += num_envs
        episodes += int(np.sum(terminated | truncated))
        if warm_rss is None and budget.elapsed() >= warmup:
            warm_rss = _rss_mb()
    end_rss = _rss_mb()
    kind = type(envs).__name__
    envs.close()
    conn.send((kind, steps, episodes, start_rss, warm_rss if warm_rss is not None else end_rss, end_rss))
    conn.close()


def soak(env_id: str, seconds: float, num_envs: int = 4, warmup: float | None = None) -> tuple:
    """Random actions with autoresets on ``gym.make_vec(env_id, num_envs)`` for ``seconds``, in a fresh
    process: ``(vector env class, steps, episodes ended, RSS at the start, after the warm-up
    (10 % of the time) and at the end [MB])``."""
    warmup = 0.1 * seconds if warmup is None else warmup
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_soak_child, args=(env_id, num_envs, seconds, warmup, child), daemon=True)
    proc.start()
    child.close()
    outcome = parent.recv() if parent.poll(seconds + 600) else None
    proc.join(5.0)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if outcome is None:
        raise RuntimeError(f"soak of {env_id}: crash (exit {proc.exitcode}) or hang")
    return outcome


def soak_table(env_ids: Sequence[str], full: bool) -> str:
    seconds = 600.0 if full else 10.0
    rows = []
    for env_id in console.progress(env_ids, desc="soak", leave=False):
        kind, steps, episodes, start, warm, end = soak(env_id, seconds)
        rows.append([env_id, kind, f"{seconds / 60:.3g}", steps, episodes, f"{start:.1f}", f"{warm:.1f}",
                     f"{end:.1f}", f"{end - warm:+.2f}", "yes" if abs(end - warm) <= 1.0 else "**no**"])
    return (f"Soak: `gym.make_vec(id, num_envs=4)` (the env's native vector form where it has one) on uniform "
            f"random actions with autoresets for {seconds / 60:.3g} min per env, in a fresh process; resident "
            "memory at the start, after a warm-up of 10 % of the time, and at the end.\n\n"
            + markdown_table(["env", "vector env", "minutes", "sub-env steps", "episodes ended", "RSS at start [MB]",
                              "RSS after warm-up [MB]", "RSS at end [MB]", "end − warm-up [MB]",
                              "flat within 1 MB"], rows))
