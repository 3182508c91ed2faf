"""Reliability bench: bad and extreme inputs to every public entry point, lifecycle cycles, stateful
fuzzing of every env and a soak of every vector env.

Every case runs in a forked child process with a deadline, so a crash (a signal inside
PyBullet) or a hang is *measured* — as ``crash`` or ``hang`` — instead of taking the bench
down. A case names the outcome a user should get: a ``ValueError`` (a clear message at the
earliest point), a best effort that says so (``success=False`` / ``converged=False``), or a
normal answer. The table lists what each case did; the cycle table makes/resets/steps/closes
every environment many times and reports the process's resident memory before and after. The
fuzzing and soak halves are :mod:`soft_envs.bench.endurance` (``--full``: at least 10,000 random
call sequences, and 10 minutes of random actions per vector env).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import tempfile
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.console import progress
from soft_envs.exceptions import SoftEnvsError

TITLE = "Reliability — bad and extreme inputs, lifecycle cycles, stateful fuzzing, soak and memory"

ENV_IDS = ("soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0", "soft_envs/QuadrupedWalk-v0",
           "soft_envs/QuadrupedPose-v0", "soft_envs/HexapodPose-v0")
VALUE_ERROR, BEST_EFFORT, ANSWER = "ValueError", "best effort", "answer"
CLEAR_ERROR = "typed error"  # a package error or Gymnasium's own (e.g. ResetNeeded): says what to do


# ------------------------------------------------------------------------------ the cases
def _make(env_id: str, **kwargs):
    import gymnasium as gym

    import soft_envs  # noqa: F401

    return gym.make(env_id, **kwargs)


def _env_construction_cases() -> list[tuple[str, str, Callable]]:
    cases = []
    bad = [("width=-5", {"render_mode": "rgb_array", "width": -5}),
           ("height=0", {"render_mode": "rgb_array", "height": 0}),
           ("width=0", {"render_mode": "rgb_array", "width": 0}), ("frame_skip=10**7", {"frame_skip": 10**7}),
           ("frame_skip=0", {"frame_skip": 0}), ("time_step=nan", {"time_step": float("nan")}),
           ("render_mode='video'", {"render_mode": "video"}), ("realism='noisy'", {"realism": "noisy"}),
           ("realism={'warp': 1}", {"realism": {"warp": 1.0}}),
           ("realism={'payload': -1}", {"realism": {"payload": -1.0}})]
    for env_id in ENV_IDS:
        short = env_id.split("/")[1]
        for label, kwargs in bad:
            def case(env_id=env_id, kwargs=kwargs):
                env = _make(env_id, **kwargs)
                env.reset(seed=0)
                env.render()
                env.close()
            cases.append((f"`{short}` {label}", VALUE_ERROR, case))
    return cases


def _lifecycle_cases() -> list[tuple[str, str, Callable]]:
    cases = []
    for env_id in ENV_IDS:
        short = env_id.split("/")[1]

        def step_before_reset(env_id=env_id):
            env = _make(env_id).unwrapped
            env.step(env.action_space.sample())

        def after_close(env_id=env_id, what="step"):
            env = _make(env_id, render_mode="rgb_array").unwrapped
            env.reset(seed=0)
            env.close()
            if what == "step":
                env.step(env.action_space.sample())
            else:
                env.render()

        def nan_action(env_id=env_id):
            env = _make(env_id)
            env.reset(seed=0)
            env.step(np.full(env.action_space.shape, np.nan, dtype=np.float32))

        cases += [(f"`{short}` step before reset", CLEAR_ERROR, step_before_reset),
                  (f"`{short}` step after close", CLEAR_ERROR, after_close),
                  (f"`{short}` render after close", CLEAR_ERROR, lambda env_id=env_id: after_close(env_id, "render")),
                  (f"`{short}` NaN action", VALUE_ERROR, nan_action)]
    return cases


def _solver_cases() -> list[tuple[str, str, Callable]]:
    from soft_envs.agents.ik import jacobian_ik, newton_raphson, sqp, trr
    from soft_envs.agents.nn import NeuralIK
    from soft_envs.robots import PCCArm, Peter

    peter = Peter(2)
    t_mid = np.ones(6)
    tip = peter.forward(t_mid)
    pcc = PCCArm(2)
    far = np.array([0.0, 0.0, 0.5])

    def best_effort(result) -> str:
        return BEST_EFFORT if not result.success else ANSWER

    return [
        ("`trr` target in millimetres", VALUE_ERROR, lambda: trr(peter, tip * 1000)),
        ("`trr` NaN target", VALUE_ERROR, lambda: trr(peter, [np.nan, 0, 0.1])),
        ("`trr` max_iterations=nan", VALUE_ERROR, lambda: trr(peter, tip, max_iterations=float("nan"))),
        ("`trr` restarts=2.5", VALUE_ERROR, lambda: trr(peter, tip, restarts=2.5)),
        ("`trr` tol=inf", VALUE_ERROR, lambda: trr(peter, tip, tol=float("inf"))),
        ("`trr` unreachable target", BEST_EFFORT, lambda: best_effort(trr(peter, far))),
        ("`sqp` target in millimetres", VALUE_ERROR, lambda: sqp(pcc, pcc.forward(np.zeros(6)) * 1000)),
        ("`sqp` tol=inf", VALUE_ERROR, lambda: sqp(pcc, pcc.forward(np.zeros(6)), tol=float("inf"))),
        ("`sqp` unreachable target", BEST_EFFORT, lambda: best_effort(sqp(pcc, far))),
        ("`newton_raphson` PETER target in millimetres", VALUE_ERROR, lambda: newton_raphson(peter, tip * 1000)),
        ("`newton_raphson` tol=inf", VALUE_ERROR, lambda: newton_raphson(peter, tip, tol=float("inf"))),
        ("`jacobian_ik` quaternion off unit norm", VALUE_ERROR,
         lambda: jacobian_ik(peter, tip, orientation=[0.0, 0.0, 0.0, 2.0])),
        ("`NeuralIK.predict` target in millimetres", VALUE_ERROR,
         lambda: NeuralIK.pretrained(2).predict([0.0, 0.0, 120.0])),
        ("`NeuralIK.predict` 1e300 m target", VALUE_ERROR, lambda: NeuralIK.pretrained(2).predict([1e300, 0.0, 0.0])),
    ]


def _urdf_case(text: str, end_link: str, base_link: str | None = None) -> Callable:
    def case():
        import tempfile

        from soft_envs.robots import BulletChain

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "robot.urdf")
            with open(path, "w") as fh:
                fh.write(text.replace("MESH", os.path.join(folder, "bad.obj")))
            with open(os.path.join(folder, "bad.obj"), "w") as fh:
                fh.write("f 1 2 3\n")
            kwargs = {} if base_link is None else {"base_link": base_link}
            BulletChain(path, end_link=end_link, **kwargs)
    return case


def _link(name: str, mesh: bool = False) -> str:
    visual = '<visual><geometry><mesh filename="MESH"/></geometry></visual>' if mesh else ""
    inertia = '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
    return f'<link name="{name}"><inertial><mass value="1"/>{inertia}</inertial>{visual}</link>'


def _joint(name: str, parent: str, child: str) -> str:
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


def _chain_cases() -> list[tuple[str, str, Callable]]:
    robot = '<robot name="r">{}</robot>'
    duplicate = robot.format(_link("l0") + _link("l1") + _link("l2")
                             + _joint("j", "l0", "l1") + _joint("j", "l1", "l2"))
    cyclic = robot.format(_link("l0") + _link("l1") + _link("l2") + _joint("a", "l0", "l1") + _joint("b", "l1", "l2")
                          + _joint("c", "l2", "l1"))
    bad_mesh = robot.format(_link("l0") + _link("l1", mesh=True) + _joint("a", "l0", "l1"))
    return [("`BulletChain` two joints of the same name", VALUE_ERROR, _urdf_case(duplicate, "l2")),
            ("`BulletChain` cyclic URDF", VALUE_ERROR, _urdf_case(cyclic, "l2", base_link="l0")),
            ("`BulletChain` OBJ mesh with no vertices", VALUE_ERROR, _urdf_case(bad_mesh, "l1"))]


def _rod_cases() -> list[tuple[str, str, Callable]]:
    from soft_envs.robots.cosserat import Hexapod6PFS, Rod

    rod = Rod(0.25, 0.00065, 207e9)

    def converged(sol) -> str:
        return ANSWER if sol.converged and np.all(np.isfinite(sol.tip_position)) else BEST_EFFORT

    return [
        ("`Rod.solve_clamped` 8 N tip force (stable branch)", ANSWER,
         lambda: ANSWER if converged(rod.solve_clamped(tip_force=[8.0, 0, 0])) == ANSWER
         and rod.solve_clamped(tip_force=[8.0, 0, 0]).tip_position[0] > 0 else "wrong branch"),
        ("`Rod.solve_clamped` absurd guess", ANSWER, lambda: converged(rod.solve_clamped(tip_force=[1.0, 0, 0],
                                                                                       guess=[1e6, 0, 0]))),
        ("`Rod.solve_clamped` 1e3 N·m tip moment (beyond the RK4 steps)", VALUE_ERROR,
         lambda: converged(rod.solve_clamped(tip_moment=[1e3, 0, 0]))),
        ("`Rod.solve_clamped` n_steps=0", VALUE_ERROR, lambda: rod.solve_clamped(tip_force=[1.0, 0, 0], n_steps=0)),
        ("`Hexapod6PFS.forward_kinematics` input_steps=0", VALUE_ERROR,
         lambda: Hexapod6PFS().forward_kinematics([0.01] * 6, input_steps=0, max_mode=1, max_combinations=4,
                                                  radial=False, stability=False)),
    ]


def _physics_cases() -> list[tuple[str, str, Callable]]:
    def torque_ones():
        env = _make("soft_envs/PCCTrack-v0", action_type="torque")
        env.reset(seed=0)
        for _ in range(40):
            obs, _, terminated, _, info = env.step(np.ones(env.action_space.shape, dtype=np.float32))
            if not np.all(np.isfinite(obs)):
                return "NaN observation"
            if terminated:
                return ANSWER if info.get("termination_reason") else "terminated without a reason"
        return ANSWER

    return [("`PCCTrack` torque action of ones for 40 steps", ANSWER, torque_ones),
            ("`PeterReach` 4 modules × 15 links (over 128 joints)", VALUE_ERROR,
             lambda: _make("soft_envs/PeterReach-v0", n_modules=4, links_per_module=15).reset(seed=0)),
            ("`PCCTrack` 9 segments (over 128 joints)", VALUE_ERROR,
             lambda: _make("soft_envs/PCCTrack-v0", n_segments=9).reset(seed=0))]


def cases() -> list[tuple[str, str, Callable]]:
    """Every case: ``(label, expected outcome, callable)``."""
    return (_env_construction_cases() + _lifecycle_cases() + _solver_cases() + _chain_cases() + _rod_cases()
            + _physics_cases())


# ------------------------------------------------------------------------------ running
def _message(exc: BaseException) -> str:
    """``exc``'s message for the table: a temporary folder of this machine (a case's URDF written to
    one) shown as ``$TMPDIR/…`` (no machine paths in BENCHMARKS), cut at 90 characters."""
    text = re.sub(re.escape(tempfile.gettempdir()) + r"/[^/\s]+", "$TMPDIR/…", str(exc))
    return f"{type(exc).__name__}: {text[:90]}"


def _child(fn: Callable, conn) -> None:
    try:
        value = fn()
        conn.send(value if value in (VALUE_ERROR, BEST_EFFORT, ANSWER) or isinstance(value, str) and value
                  else ANSWER)
    except ValueError as exc:
        conn.send(f"{VALUE_ERROR}: {_message(exc)}")
    except (SoftEnvsError, gym.error.Error) as exc:
        conn.send(f"{CLEAR_ERROR}: {_message(exc)}")
    except BaseException as exc:  # noqa: BLE001 - the outcome is what we measure
        conn.send(_message(exc))
    finally:
        conn.close()


def run_case(fn: Callable, deadline: float) -> tuple[str, float]:
    """Run ``fn`` in a forked child; returns ``(outcome, seconds)`` — ``crash`` and ``hang`` included."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    start = time.perf_counter()
    proc = ctx.Process(target=_child, args=(fn, child), daemon=True)
    proc.start()
    child.close()
    outcome = None
    if parent.poll(deadline):
        try:
            outcome = parent.recv()
        except EOFError:
            outcome = None
    proc.join(1.0 if outcome is not None else 0.1)
    seconds = time.perf_counter() - start
    if proc.is_alive():
        proc.kill()
        proc.join()
        if outcome is None:
            return f"hang (> {deadline:.0f} s)", seconds
    if outcome is None:
        return f"crash (exit {proc.exitcode})", seconds
    return outcome, seconds


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _cycles_child(env_id: str, n_cycles: int, resets: bool, conn) -> None:
    env_rss = []
    env = _make(env_id, realism="realistic") if resets else None
    for k in range(n_cycles):
        if not resets:
            env = _make(env_id)
        env.reset(seed=k)
        env.step(env.action_space.sample())
        if not resets:
            env.close()
        if k in (n_cycles // 10, n_cycles - 1):
            env_rss.append(_rss_mb())
    conn.send(env_rss)
    conn.close()


def cycles(env_id: str, n_cycles: int, resets: bool = False) -> tuple[float, float]:
    """RSS [MB] after 10 % and after all of ``n_cycles`` make/reset/step/close cycles (``resets``:
    reset/step cycles of one env under ``realism="realistic"``, a new robot drawn each time), in a
    fresh process."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_cycles_child, args=(env_id, n_cycles, resets, child), daemon=True)
    proc.start()
    child.close()
    values = parent.recv()
    proc.join()
    return values[0], values[1]


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    rows, counts = [], {"as expected": 0, "not as expected": 0}
    for label, expected, fn in progress(cases(), desc="reliability cases", leave=False):
        outcome, seconds = run_case(fn, deadline=120.0 if full else 60.0)
        ok = outcome.startswith(expected) or (expected == CLEAR_ERROR and outcome.startswith(VALUE_ERROR))
        counts["as expected" if ok else "not as expected"] += 1
        rows.append([label, expected, outcome.replace("|", "/"), f"{seconds:.2f}", "yes" if ok else "**no**"])
    n_cycles = 1000 if full else 100
    cycle_rows = []
    for resets in (False, True):
        for env_id in progress(ENV_IDS, desc="realistic resets" if resets else "lifecycle cycles", leave=False):
            before, after = cycles(env_id, n_cycles, resets)
            cycle_rows.append([env_id, "reset/step, realistic" if resets else "make/reset/step/close", n_cycles,
                               f"{before:.1f}", f"{after:.1f}", f"{(after - before) * 1e3 / (0.9 * n_cycles):.1f}"])
    text = (f"{len(rows)} cases, each in a forked process with a deadline; {counts['as expected']} as expected, "
            f"{counts['not as expected']} not.\n\n"
            + markdown_table(["case", "a user should get", "outcome", "s", "as expected"], rows)
            + f"\n\nLifecycle: `gym.make` → `reset` → one random `step` → `close`, {n_cycles} times per env in a "
              "fresh process; then one env under `realism=\"realistic\"` reset (a new robot drawn) and stepped "
              f"{n_cycles} times; resident memory after 10 % of the cycles and after all of them.\n\n"
            + markdown_table(["env", "cycle", "cycles", "RSS after 10 % [MB]", "RSS at the end [MB]",
                              "growth per cycle [KB]"], cycle_rows))
    from soft_envs.bench.endurance import defects_table, fuzz_table, soak_table

    fuzz_text, _ = fuzz_table(ENV_IDS, full, seed)
    text += ("\n\n### Stateful fuzzing\n\nhypothesis `RuleBasedStateMachine` (`soft_envs.bench.fuzz`): random "
             "keyword sets (valid and invalid), then `reset` (with and without seed and options), `step` (valid, "
             "clipped, extreme, NaN, inf, wrong-shape actions), `render`, `close`, calls after `close`, and replays "
             "of earlier episodes in the same env and in a fresh one. Invariants: a valid result or a typed error; "
             "observations inside `observation_space`, no NaN; reward terms summing to the reward; no PyBullet "
             "client left after `close` or a refused construction; the same seed and actions give the same "
             "episode, bit for bit, whatever ran before. Each env in a forked process.\n\n" + fuzz_text
             + "\n\nDefects the fuzzer found while it was written (each fixed at its root, each with a regression "
               "test):\n\n" + defects_table()
             + "\n\n### Soak\n\n" + soak_table(ENV_IDS, full))
    return text
