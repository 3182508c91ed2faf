"""Jacobian IK on robots nobody here wrote: KUKA iiwa and Franka Panda from ``pybullet_data``.

Targets are the end-effector poses (forward kinematics) of uniformly random joint configurations
within the limits (seeded). On the same targets: our pseudo-inverse, damped least squares and
transpose iterations (:func:`~soft_envs.agents.ik.jacobian.jacobian_ik`), the compiled
Levenberg–Marquardt solver (:func:`~soft_envs.agents.ik.chain_lm.chain_ik`), the batched solver
(:func:`~soft_envs.agents.ik.jacobian_batch.jacobian_ik_batch`), and
``pybullet.calculateInverseKinematics`` called once, and looped to convergence (reset the joints
to its answer and call again, as its maintainers advise). With ``peers=True``
(``soft-envs bench ik --peers``) the C++ and Python solvers of :mod:`soft_envs.bench.ik_peers`
run on the same targets too; TRAC-IK's published figures are shown for reference. A section of its
own (:func:`compiled_tables`) puts ``chain_ik`` and ``chain_ik_batch`` next to roboticstoolbox's
C++ ``ik_LM`` (when installed), both held to 1e-6 m / 1e-6 rad and the joint limits. Errors of every
solver are measured with our forward kinematics, which the tests check against PyBullet's
``getLinkState`` to 1e-12 m.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from soft_envs.agents.ik.chain_lm import chain_ik, chain_ik_batch
from soft_envs.agents.ik.jacobian import ik_step, jacobian_ik
from soft_envs.agents.ik.jacobian_batch import jacobian_ik_batch
from soft_envs.bench import ik_peers, markdown_table, pyplot, save_figure
from soft_envs.console import progress
from soft_envs.robots.bullet_chain import BulletChain

TITLE = ("Jacobian IK (pinv / DLS / transpose, compiled LM) on KUKA iiwa and Franka Panda, vs pybullet, "
         "roboticstoolbox and TRAC-IK")

# (urdf inside pybullet_data, end link, TRAC-IK success, TRAC-IK time [ms]) — SPEC section 5.
ROBOTS = {
    "KUKA iiwa": ("kuka_iiwa/model.urdf", "lbr_iiwa_link_7", 99.84, 0.31),
    "Franka Panda": ("franka_panda/panda.urdf", "panda_hand", 99.70, 0.38),
}
POSITION_TOL = 1e-5  # m
ORIENTATION_TOL = 1e-5  # rad


def load_robot(name: str) -> BulletChain:
    """The :class:`BulletChain` of one benchmark robot."""
    import pybullet_data

    urdf, end_link, _, _ = ROBOTS[name]
    return BulletChain(f"{pybullet_data.getDataPath()}/{urdf}", end_link)


def random_targets(chain: BulletChain, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(configurations, positions, quaternions)`` of ``n`` uniformly random configurations."""
    q = chain.sample(np.random.default_rng(seed), n)
    positions, quats = chain.forward_pose(q)
    return q, positions, quats


def _errors(chain: BulletChain, q: np.ndarray, positions: np.ndarray,
            quats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position errors [m] and orientation error angles [rad] (no arccos: exact near 0); rows of
    ``q`` that are NaN (a solver's failure) get infinite errors."""
    pos_err, ori_err = np.full(len(q), np.inf), np.full(len(q), np.inf)
    ok = np.all(np.isfinite(q), axis=1)
    if ok.any():
        p, quat = chain.forward_pose(q[ok])
        pos_err[ok] = np.linalg.norm(p - positions[ok], axis=1)
        w = np.abs(np.einsum("bi,bi->b", quat, quats[ok]))
        # vector part of Q_d ∗ Q^{-1}
        vec = quat[:, 3:4] * quats[ok, :3] - quats[ok, 3:4] * quat[:, :3] - np.cross(quats[ok, :3], quat[:, :3])
        ori_err[ok] = 2.0 * np.arctan2(np.linalg.norm(vec, axis=1), w)
    return pos_err, ori_err


HEADERS = ["robot", "solver", "targets", "success", "median pos err [m]", "max pos err [m]", "median ori err [rad]",
           "max ori err [rad]", "limit violations", "median [ms]", "p99 [ms]", "median ÷ ours (DLS)"]


def _row(robot: str, solver: str, chain: BulletChain, q: np.ndarray, seconds: np.ndarray,
         positions: np.ndarray, quats: np.ndarray, reference: float | None = None) -> tuple[list, float]:
    """A table row and the success fraction; ``reference``: our DLS median time [s] for the ratio."""
    pos_err, ori_err = _errors(chain, q, positions, quats)
    within = np.all((q >= chain.lower) & (q <= chain.upper), axis=1) | ~np.all(np.isfinite(q), axis=1)
    ok = (pos_err < POSITION_TOL) & (ori_err < ORIENTATION_TOL) & within
    median = float(np.median(seconds))
    row = [robot, solver, len(q), f"{ok.mean() * 100:.2f} %", f"{np.median(pos_err):.1e}", f"{pos_err.max():.1e}",
           f"{np.median(ori_err):.1e}", f"{ori_err.max():.1e}", int((~within).sum()),
           f"{median * 1e3:.3f}", f"{np.percentile(seconds, 99) * 1e3:.2f}",
           "1" if reference is None else f"{median / reference:.2f}"]
    return row, float(ok.mean())


def run_ours(chain: BulletChain, positions: np.ndarray, quats: np.ndarray, method: str, seed: int = 0,
             desc: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Solve every target with ``jacobian_ik``; ``(solutions, seconds)``."""
    sols, secs = np.empty((len(positions), chain.n_dof)), np.empty(len(positions))
    for i in progress(range(len(positions)), desc=desc or method, leave=False):
        res = jacobian_ik(chain, positions[i], quats[i], method=method, seed=seed)
        sols[i], secs[i] = res.solution, res.seconds
    return sols, secs


def run_compiled(chain: BulletChain, positions: np.ndarray, quats: np.ndarray, seed: int = 0,
                 desc: str = "chain_ik") -> tuple[np.ndarray, np.ndarray]:
    """Solve every target with the compiled ``chain_ik`` (defaults); ``(solutions, seconds)``, each
    time the wall time of the whole call."""
    chain_ik(chain, positions[0], quats[0])  # the kernels compile (or load) outside the timing
    sols, secs = np.empty((len(positions), chain.n_dof)), np.empty(len(positions))
    for i in progress(range(len(positions)), desc=desc, leave=False):
        t0 = time.perf_counter()
        sols[i] = chain_ik(chain, positions[i], quats[i], seed=seed).solution
        secs[i] = time.perf_counter() - t0
    return sols, secs


def run_pybullet(chain: BulletChain, positions: np.ndarray, quats: np.ndarray, looped: bool,
                 max_calls: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """``calculateInverseKinematics`` from the middle of the limits (our first start too), once or
    looped: set the joints to the answer and call again until the pose is within the
    tolerances or ``max_calls`` calls. ``(solutions, seconds)``."""
    import pybullet

    from soft_envs.sim.bullet import connect

    client = connect()
    try:
        body = client.loadURDF(chain.urdf_path, useFixedBase=True)
        movable = [j for j in range(client.getNumJoints(body))
                   if client.getJointInfo(body, j)[2] != pybullet.JOINT_FIXED]
        end_index = next(j for j in range(client.getNumJoints(body))
                         if client.getJointInfo(body, j)[12].decode() == chain.end_link)
        columns = [movable.index(j) for j in chain.joint_indices]
        start = 0.5 * (chain.lower + chain.upper)
        sols, secs = np.empty((len(positions), chain.n_dof)), np.empty(len(positions))
        for i in progress(range(len(positions)), desc="pybullet looped" if looped else "pybullet", leave=False):
            for j, v in zip(chain.joint_indices, start):
                client.resetJointState(body, j, v)
            t0 = time.perf_counter()
            for _ in range(max_calls if looped else 1):
                answer = client.calculateInverseKinematics(body, end_index, positions[i].tolist(), quats[i].tolist())
                q = np.array(answer)[columns]
                if not looped:
                    break
                for j, v in zip(chain.joint_indices, q):
                    client.resetJointState(body, j, v)
                state = client.getLinkState(body, end_index, computeForwardKinematics=True)
                pos_err = np.linalg.norm(np.array(state[4]) - positions[i])
                dot = min(1.0, abs(float(np.dot(state[5], quats[i]))))
                # getLinkState's link frame loses ~1e-7 m (inertial-frame inverse): stop well inside tol.
                if pos_err < 0.5 * POSITION_TOL and 2.0 * np.arccos(dot) < 0.5 * ORIENTATION_TOL:
                    break
            secs[i] = time.perf_counter() - t0
            sols[i] = q
    finally:
        client.disconnect()
    return sols, secs


def comparison(n_targets: int, n_transpose: int, seed: int, plot_dir: str | None = None,
               peers: bool = False) -> tuple[str, dict]:
    """The side-by-side table; also returns ``{(robot, solver): success fraction}``."""
    rows, success, times = [], {}, {}
    for robot, (_, _, trac_success, trac_ms) in ROBOTS.items():
        chain = load_robot(robot)
        _, positions, quats = random_targets(chain, n_targets, seed)
        reference = None
        for method, n in (("dls", n_targets), ("pinv", n_targets), ("transpose", n_transpose)):
            if n == 0:
                continue
            sols, secs = run_ours(chain, positions[:n], quats[:n], method, desc=f"{robot} {method}")
            row, ok = _row(robot, f"ours, {method}", chain, sols, secs, positions[:n], quats[:n], reference)
            reference = reference or float(np.median(secs))
            rows.append(row)
            success[(robot, method)], times[(robot, method)] = ok, secs
        sols, secs = run_compiled(chain, positions, quats, desc=f"{robot} chain_ik")
        row, ok = _row(robot, "ours, compiled LM `chain_ik`", chain, sols, secs, positions, quats, reference)
        rows.append(row)
        success[(robot, "chain_ik")], times[(robot, "chain_ik")] = ok, secs
        batch = jacobian_ik_batch(chain, positions, quats)
        row, ok = _row(robot, "ours, `jacobian_ik_batch` (time: batch ÷ targets)", chain, batch.solutions,
                       np.full(n_targets, batch.seconds / n_targets), positions, quats, reference)
        rows.append(row)
        success[(robot, "batch")] = ok
        for looped in (False, True):
            name = "pybullet looped" if looped else "pybullet, one call"
            sols, secs = run_pybullet(chain, positions, quats, looped)
            row, ok = _row(robot, f"`calculateInverseKinematics`, {'looped ≤ 100 calls' if looped else 'one call'}",
                           chain, sols, secs, positions, quats, reference)
            rows.append(row)
            success[(robot, name)], times[(robot, name)] = ok, secs
        if peers:
            for name in ik_peers.PEERS:
                out = ik_peers.run_peer(name, chain, positions, quats, limit=None if "ikpy" not in name
                                        else max(1, n_targets // 5))
                if isinstance(out, str):
                    rows.append([robot, name, "—", out] + ["—"] * (len(HEADERS) - 4))
                    continue
                sols, secs = out
                row, ok = _row(robot, name, chain, sols, secs, positions[:len(sols)], quats[:len(sols)], reference)
                rows.append(row)
                success[(robot, name)], times[(robot, name)] = ok, secs
        rows.append([robot, "TRAC-IK (published, C++, 5 ms timeout)", "—", f"{trac_success:.2f} %", "—", "—", "—",
                     "—", "—", f"{trac_ms:.2f} (mean)", "—", "—"])
    table = markdown_table(HEADERS, rows)
    if plot_dir:
        _plot_times(times, plot_dir)
    return table, success


def batch_table(n_targets: int, seed: int) -> str:
    """``jacobian_ik_batch`` throughput, next to ``jacobian_ik`` one target at a time (same run)."""
    rows = []
    for robot in ROBOTS:
        chain = load_robot(robot)
        _, positions, quats = random_targets(chain, n_targets, seed + 1)
        batch = jacobian_ik_batch(chain, positions, quats)
        k = min(n_targets, 200)
        _, secs = run_ours(chain, positions[:k], quats[:k], "dls", desc=f"{robot} one by one")
        rate, single = n_targets / batch.seconds, 1.0 / float(np.mean(secs))
        rows.append([robot, n_targets, f"{rate:,.0f}", f"{batch.success.mean() * 100:.2f} %",
                     f"{batch.errors.max():.1e}", f"{batch.orientation_errors.max():.1e}",
                     f"{np.mean(batch.restarts > 0) * 100:.1f} %", f"{single:,.0f}", f"{rate / single:.1f}×"])
    return markdown_table(["robot", "targets", "poses/s (batch)", "success", "max pos err [m]", "max ori err [rad]",
                           "targets that restarted", "poses/s (one at a time, first 200)", "batch ÷ one at a time"],
                          rows)


LM_TOL = 1e-6  # m and rad: what the compiled-LM section asks of both solvers


def _lm_row(robot: str, solver: str, chain: BulletChain, sols: list[np.ndarray], secs: np.ndarray,
            positions: np.ndarray, quats: np.ndarray) -> tuple[list, dict]:
    """A row of the compiled-LM table from ``rounds`` rounds (``sols``: each round's solutions,
    ``secs (2, rounds, n)``: wall and thread CPU times [s]): every figure the median over the
    rounds; also the figures by name."""
    scores = []
    for q in sols:
        pos_err, ori_err = _errors(chain, q, positions, quats)
        within = np.all((q >= chain.lower) & (q <= chain.upper), axis=1) | ~np.all(np.isfinite(q), axis=1)
        scores.append(((pos_err < LM_TOL) & (ori_err < LM_TOL) & within, pos_err, ori_err, ~within))
    median_ms, p99_ms = np.median(secs, axis=2) * 1e3, np.percentile(secs, 99, axis=2) * 1e3  # (2, rounds)
    figures = {"success": float(np.median([ok.mean() for ok, *_ in scores])),
               "median_ms": float(np.median(median_ms[0])), "p99_ms": float(np.median(p99_ms[0])),
               "median_cpu_ms": float(np.median(median_ms[1])), "p99_cpu_ms": float(np.median(p99_ms[1])),
               "rate": float(np.median(secs.shape[2] / secs[0].sum(axis=1)))}
    row = [robot, solver, secs.shape[2], f"{figures['success'] * 100:.2f} %",
           f"{max(e.max() for _, e, _, _ in scores):.1e}", f"{max(e.max() for _, _, e, _ in scores):.1e}",
           int(max(v.sum() for *_, v in scores))]
    for k, name in enumerate(("", "_cpu")):
        median, p99 = figures[f"median{name}_ms"], figures[f"p99{name}_ms"]
        row += [f"{median:.4f} ({median_ms[k].min():.4f}–{median_ms[k].max():.4f})",
                f"{p99:.3f} ({p99_ms[k].min():.3f}–{p99_ms[k].max():.3f})", f"{p99 / median:.1f}"]
    return row + [f"{figures['rate']:,.0f}"], figures


def _timed(call: Callable[[], object]) -> tuple[object, float, float]:
    """``call()``'s result, wall time and CPU time of this thread [s]."""
    wall, cpu = time.perf_counter(), time.thread_time()
    out = call()
    return out, time.perf_counter() - wall, time.thread_time() - cpu


def compiled_tables(n_targets: int, seed: int, rounds: int = 3, batch_targets: int = 2000) -> tuple[str, dict]:
    """``chain_ik`` / ``chain_ik_batch`` next to roboticstoolbox's ``ik_LM`` on the same targets,
    both held to :data:`LM_TOL` and the joint limits; the two solvers alternate target by target
    (so that the load of a shared machine falls on both alike), ``rounds`` times. Returns the
    markdown and ``{(robot, solver): figures}``."""
    rows, batch_rows, figures = [], [], {}
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    for robot in ROBOTS:
        chain = load_robot(robot)
        _, positions, quats = random_targets(chain, n_targets, seed)
        start = 0.5 * (chain.lower + chain.upper)
        try:
            rtb = ik_peers.rtb_solver(chain, "ik_LM", tol=LM_TOL)
            rtb(positions[0], quats[0], start.copy())  # warm
        except ImportError:
            rtb = None
        chain_ik(chain, positions[0], quats[0])  # the kernels compile (or load) before the timing
        ours_t, rtb_t = np.empty((2, rounds, n_targets)), np.empty((2, rounds, n_targets))
        ours_q, rtb_q = [], []
        for r in range(rounds):
            q_ours, q_rtb = np.empty((n_targets, chain.n_dof)), np.full((n_targets, chain.n_dof), np.nan)
            for i in progress(range(n_targets), desc=f"{robot} chain_ik vs ik_LM, round {r + 1}", leave=False):
                position, quat = positions[i], quats[i]
                res, ours_t[0, r, i], ours_t[1, r, i] = _timed(partial(chain_ik, chain, position, quat))
                q_ours[i] = res.solution  # type: ignore[attr-defined]
                if rtb is not None:
                    answer, rtb_t[0, r, i], rtb_t[1, r, i] = _timed(partial(rtb, position, quat, start.copy()))
                    if answer is not None:
                        q_rtb[i] = answer
            ours_q.append(q_ours)
            rtb_q.append(q_rtb)
        row, ours = _lm_row(robot, "ours, `chain_ik` (compiled LM)", chain, ours_q, ours_t, positions, quats)
        figures[(robot, "chain_ik")] = ours
        if rtb is None:
            missing = "not installed: pip install \"soft_envs[peers]\""
            rows += [row + ["—"], [robot, "roboticstoolbox `ik_LM`", "—", missing] + ["—"] * 11]
            reference = None
        else:
            rtb_row, reference = _lm_row(robot, "roboticstoolbox `ik_LM` (C++)", chain, rtb_q, rtb_t, positions, quats)
            figures[(robot, "ik_LM")] = reference
            rows += [row + [f"{ours['median_ms'] / reference['median_ms']:.2f}"], rtb_row + ["1"]]
        _, b_positions, b_quats = random_targets(chain, batch_targets, seed + 1)
        for threads in sorted({1, cpus}):
            rates, cpu_rates, ok = [], [], []
            for _ in range(rounds):
                cpu = time.process_time()
                batch = chain_ik_batch(chain, b_positions, b_quats, threads=threads)
                cpu_rates.append(batch_targets / (time.process_time() - cpu))
                rates.append(batch_targets / batch.seconds)
                pos_err, ori_err = _errors(chain, batch.solutions, b_positions, b_quats)
                ok.append(float(np.mean((pos_err < LM_TOL) & (ori_err < LM_TOL))))
            rate = float(np.median(rates))
            figures[(robot, f"chain_ik_batch threads={threads}")] = {"rate": rate, "success": float(np.median(ok))}
            peer_rate = "—" if reference is None else f"{reference['rate']:,.0f}"
            batch_rows.append([robot, f"`chain_ik_batch`, {threads} thread{'s' if threads > 1 else ''}", batch_targets,
                               f"{np.median(ok) * 100:.2f} %", f"{rate:,.0f} ({min(rates):,.0f}–{max(rates):,.0f})",
                               f"{np.median(cpu_rates):,.0f}", peer_rate,
                               "—" if reference is None else f"{rate / reference['rate']:.1f}×"])
    text = markdown_table(["robot", "solver", "targets", "success", "max pos err [m]", "max ori err [rad]",
                           "limit violations", "median [ms] (rounds)", "p99 [ms] (rounds)", "p99 ÷ median",
                           "median CPU [ms]", "p99 CPU [ms]", "p99 ÷ median, CPU", "poses/s, one thread",
                           "median ÷ `ik_LM`"], rows)
    text += "\n\n" + markdown_table(["robot", "solver", "targets", "success", "poses/s (rounds)",
                                      "poses per CPU-second", "`ik_LM` poses/s, one thread", "batch ÷ `ik_LM`"],
                                     batch_rows)
    return text, figures


def unreachable_table() -> str:
    """Time to give up on unreachable poses with the default budget (50 ms)."""
    rows = []
    for robot in ROBOTS:
        chain = load_robot(robot)
        _, quat = chain.forward_pose(0.5 * (chain.lower + chain.upper))
        for label, position in (("2 m away", np.array([2.0, 0.0, 0.5])),
                                ("in reach, orientation impossible there", np.array([0.0, 0.0, 0.2]))):
            res = jacobian_ik(chain, position, quat)
            rows.append([robot, label, "no" if not res.success else "yes", f"{res.seconds * 1e3:.1f}", res.restarts,
                         res.iterations])
    return markdown_table(["robot", "target", "success", "returned after [ms]", "restarts", "iterations"], rows)


def seed_table(n_targets: int, seed: int, seeds: tuple[int, ...] = (0, 1, 2)) -> str:
    """DLS success on the same targets with different restart seeds."""
    rows = []
    for robot in ROBOTS:
        chain = load_robot(robot)
        _, positions, quats = random_targets(chain, n_targets, seed)
        cells = []
        for s in seeds:
            sols, _ = run_ours(chain, positions, quats, "dls", seed=s, desc=f"{robot} dls seed {s}")
            pos_err, ori_err = _errors(chain, sols, positions, quats)
            cells.append(f"{np.mean((pos_err < POSITION_TOL) & (ori_err < ORIENTATION_TOL)) * 100:.2f} %")
        rows.append([robot, n_targets] + cells)
    return markdown_table(["robot", "targets"] + [f"seed {s}" for s in seeds], rows)


def singularity_table() -> str:
    """Raw step norm ``‖Δq‖`` near the stretched iiwa (joint 2 and 4 at δ), target 1 cm along the arm."""
    chain = load_robot("KUKA iiwa")
    rows = []
    for delta in (1e-1, 1e-2, 1e-3, 1e-4, 1e-6):
        q = np.zeros(chain.n_dof)
        q[1] = q[3] = delta
        target = chain.forward(q) + np.array([0.0, 0.0, 0.01])
        cells = [f"{np.linalg.norm(ik_step(chain, q, target, method=m, damping=0.05)):.3g}"
                 for m in ("pinv", "dls", "transpose")]
        sigma = np.linalg.svd(chain.jacobian(q), compute_uv=False)[-1]
        rows.append([f"{delta:g}", f"{sigma:.2g}"] + cells)
    return markdown_table(["δ [rad]", "σ_min(J_v) [m]", "pinv ‖Δq‖ [rad]", "DLS λ = 0.05 ‖Δq‖ [rad]",
                           "transpose ‖Δq‖ [rad]"], rows)


def _plot_times(times: dict, plot_dir: str) -> None:

    plt = pyplot()
    fig, axes = plt.subplots(1, len(ROBOTS), figsize=(10, 3.5), sharey=True)
    for ax, robot in zip(np.atleast_1d(axes), ROBOTS):
        for (r, solver), secs in times.items():
            if r == robot:
                ax.hist(np.log10(secs * 1e3), bins=40, alpha=0.5, label=solver)
        ax.set_title(robot)
        ax.set_xlabel("log10 solve time [ms]")
    np.atleast_1d(axes)[0].set_ylabel("targets")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    save_figure(fig, plot_dir, "chain_ik_times.png")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None, peers: bool = False) -> str:
    n_targets = 1000 if full else 100
    n_transpose = 200 if full else 10
    table, _ = comparison(n_targets, n_transpose, seed, plot_dir, peers=peers)
    text = (
        f"Full pose (position and orientation of the end link: `lbr_iiwa_link_7`, `panda_hand`), targets = "
        f"forward kinematics of uniformly random joint configurations within the limits (seed {seed}). "
        f"*Success* = position error < {POSITION_TOL:g} m **and** orientation error < {ORIENTATION_TOL:g} rad "
        "**and** every joint within its limits. Ours: `jacobian_ik(chain, position, quaternion, method=…)` with "
        "default settings (tolerances 1e-6 m / 1e-6 rad, first start at the middle of the limits, seeded random "
        "restarts on stall, DLS with adaptive damping, 50 ms budget); the transpose method on the first "
        f"{n_transpose} targets only (it converges linearly: thousands of iterations). `jacobian_ik_batch`: all "
        "targets in one call, time per target = the batch's time ÷ targets. pybullet: "
        "`calculateInverseKinematics(body, link, position, orientation)` from the same start, default "
        "parameters (its DLS, 20 iterations), once; and looped (joints reset to its answer, called again until "
        "within half the tolerances, ≤ 100 calls — the maintainer's `accurateCalculateInverseKinematics`, "
        "https://github.com/bulletphysics/bullet3/issues/1380). Times are wall time per target on the machine "
        "named above, every row in the same run; the last column is the row's median over our DLS median "
        "(> 1: slower than ours). TRAC-IK's published figures (C++, SPEC section 5) are its paper's means."
    )
    if peers:
        text += ("\n\nPeers (`--peers`, the `peers` extra), same targets, same first guess, each asked for the "
                 "same accuracy (ikpy on the first fifth of the targets: it is slow):\n\n"
                 + markdown_table(["peer", "settings"], [[k, v] for k, v in ik_peers.SETTINGS.items()]))
    text += "\n\n" + table
    if plot_dir:
        text += f"\n\nSolve-time histograms: `{plot_dir}/chain_ik_times.png`."
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lm_text, _ = compiled_tables(1000 if full else 200, seed)
    text += (
        "\n\nCompiled Levenberg–Marquardt, `chain_ik(chain, position, quaternion)` with its defaults (forward "
        "kinematics, geometric Jacobian and the whole solve in one numba kernel: Sugihara's damping, joint limits, "
        "seeded random restarts, 10 ms budget), next to roboticstoolbox's C++ `ik_LM` on the same targets in the "
        f"same process, both asked for {LM_TOL:g} m and {LM_TOL:g} rad (`ik_LM`: `tol = ½·(1e-6)²`, its other "
        "settings as in the peers table, same first guess) and scored alike: *success* = position error and "
        f"orientation error < {LM_TOL:g} and every joint within its limits. The two alternate target by target, "
        "three rounds; each figure is the median over the rounds (the range in brackets), times are the wall time "
        "of the whole call (input checks and result record included). *poses/s, one thread* = targets ÷ the "
        "round's total time. `chain_ik_batch`: other targets (seed + 1), one call, on 1 thread and on every CPU "
        "(the kernel runs without the GIL), compared with `ik_LM`'s one-thread rate above. Load average (1 min) "
        f"{load:.1f} before this section, {os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan'):.1f} "
        "after it (a shared machine: times are noisier than the idle machine's).\n\n" + lm_text)
    text += ("\n\nBatched full-pose IK (`jacobian_ik_batch`: vectorised adaptive DLS, restarts in parallel across "
             "the batch, the last stragglers finished one at a time), next to `jacobian_ik` one target at a time "
             "in the same run:\n\n" + batch_table(10_000 if full else 2000, seed))
    text += ("\n\nUnreachable poses with the default wall-clock budget (50 ms; TRAC-IK's default is 5 ms): the "
             "solver returns its best effort with `success=False`:\n\n" + unreachable_table())
    text += ("\n\nThe success rate does not hinge on the restart seed (DLS, same targets, seeds of the random "
             "restarts):\n\n" + seed_table(n_targets if full else 50, seed))
    text += ("\n\nAt a singularity (KUKA iiwa stretched upright, joints 2 and 4 at δ, target 1 cm further along "
             "the arm, position only): the raw step `J† K e` of the pseudo-inverse grows like 1/σ_min, DLS "
             "stays below ‖e‖ / 2λ = 0.1 rad:\n\n" + singularity_table())
    return text
