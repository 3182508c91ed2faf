"""``soft-envs bench batched``: the batched soft-arm core alone — physics steps of B arms against the
single PyBullet core, in one process on one core, and the implementation candidates.

Rows: per-arm CPU time of one physics step (``time.thread_time``, the best of a few rounds, so
that other processes on the machine count less) for a 2-module PETER (1/120 s steps) and a
2-segment 3-D PCC arm (5 ms), the single :class:`SoftArmBody` (PyBullet's terms) as the
baseline. Candidates for the rigid-body terms (the bulk of a step): the numba kernel
(:mod:`soft_envs.sim.batched_kernels`) against recursive Newton–Euler written with numpy over
joints, B vectorised (:func:`numpy_bias`: the bias alone, half the kernel's work).
"""

from __future__ import annotations

import time

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import PCCArm, Peter
from soft_envs.sim import threads
from soft_envs.sim.batched_arm import BatchedSoftArm, terms
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter

TITLE = "Batched soft-arm core"


def _cpu_seconds(call, reps: int, rounds: int = 3) -> float:
    """Best per-call CPU time [s] of ``call`` over ``rounds`` of ``reps`` calls (this thread only)."""
    best = np.inf
    for _ in range(rounds):
        start = time.thread_time()  # CPU time of this thread: a benchmark, not a budget
        for _ in range(reps):
            call()
        best = min(best, (time.thread_time() - start) / reps)
    return best


def numpy_bias(arm: BatchedSoftArm, c: np.ndarray, cd: np.ndarray, cdd: np.ndarray) -> np.ndarray:
    """``Bᵀ ID(q, q̇, q̈)`` of every arm by recursive Newton–Euler with numpy over joints (B vectorised);
    the candidate the kernel was measured against (``(B, 3N)``)."""
    topo, p = arm.topology, arm.params
    B = c.shape[0]
    R = np.broadcast_to(np.eye(3), (B, 3, 3)).copy()
    o = np.zeros((B, 3))
    omega, vel = np.zeros((B, 3)), np.zeros((B, 3))
    alpha, acc = np.zeros((B, 3)), -p.gravity.copy()
    forces, axes = [], []
    for j, (kind, slot, _) in enumerate(topo.ints.tolist()):
        off, coef = topo.table[j, 0], topo.table[j, 1]
        q, qd, qdd = coef * c[:, slot], coef * cd[:, slot], coef * cdd[:, slot]
        o = o + off * R[:, :, 2]
        if kind == 2:
            axis = R[:, :, 2].copy()
            o = o + q[:, None] * axis
            s_w, s_v = np.zeros((B, 3)), axis
        else:
            col = 2 if kind == 0 else 1
            axis = R[:, :, col].copy()
            cs, sn = np.cos(q)[:, None], np.sin(q)[:, None]
            a, b = (1, 0) if kind == 0 else (0, 2)  # R Rz(q) and R Ry(q) turn these two columns
            Ra, Rb = R[:, :, a].copy(), R[:, :, b].copy()
            R[:, :, a], R[:, :, b] = cs * Ra - sn * Rb, sn * Ra + cs * Rb
            s_w, s_v = axis, np.cross(o, axis)
        t_w, t_v = s_w * qd[:, None], s_v * qd[:, None]
        omega, vel = omega + t_w, vel + t_v
        alpha = alpha + s_w * qdd[:, None] + np.cross(omega, t_w)
        acc = acc + s_v * qdd[:, None] + np.cross(omega, t_v) + np.cross(vel, t_w)
        m = p.mass[:, j][:, None]
        com = o + np.einsum("bij,j->bi", R, topo.table[j, 2:5])
        h = m * com
        inertia = np.einsum("bij,bj,bkj->bik", R, p.inertia[:, j], R) + m[:, :, None] * (
            np.einsum("bi,bi->b", com, com)[:, None, None] * np.eye(3) - np.einsum("bi,bk->bik", com, com))
        n_ = np.einsum("bij,bj->bi", inertia, alpha) + np.cross(h, acc)
        f_ = m * acc - np.cross(h, alpha)
        L = np.einsum("bij,bj->bi", inertia, omega) + np.cross(h, vel)
        P = m * vel - np.cross(h, omega)
        forces.append((n_ + np.cross(omega, L) + np.cross(vel, P), f_ + np.cross(omega, P)))
        axes.append((s_w, s_v))
    out = np.zeros_like(c)
    n_tot, f_tot = np.zeros((B, 3)), np.zeros((B, 3))
    for j in range(len(forces) - 1, -1, -1):
        n_tot, f_tot = n_tot + forces[j][0], f_tot + forces[j][1]
        tau = np.einsum("bi,bi->b", axes[j][0], n_tot) + np.einsum("bi,bi->b", axes[j][1], f_tot)
        out[:, topo.ints[j, 1]] += topo.table[j, 1] * tau
    return out


def _arms(B: int, num_threads: int = 1):
    peter = BatchedSoftPeter(Peter(2), B, payload=0.2, num_threads=num_threads)
    peter.reset_inflation(None, np.full(6, 1.0))
    peter.set_rest(None, peter.state.rest + 0.002)
    pcc = BatchedPCCBody(PCCArm(2, 6), B, num_threads=num_threads)
    pcc.reset_configuration(None, np.array([0.001, 0.5, 0.3, 0.0, 0.8, -1.0]))
    return {"PETER 2 modules (18 joints)": (peter, 1 / 120), "PCC 2 segments (30 joints)": (pcc, 5e-3)}


def _single(name: str, client, backend: str = "pybullet"):
    from soft_envs.sim.pcc_body import PCCBody
    from soft_envs.sim.peter_soft import SoftPeterBody

    if name.startswith("PETER"):
        body = SoftPeterBody(client, Peter(2), payload=0.2, backend=backend)
        body.reset(np.full(6, 1.0))
        body.set_rest_legs(body.legs_of_arc(body.u) + 0.002)
        return body, 1 / 120
    body = PCCBody(client, PCCArm(2, 6), backend=backend)
    body.reset(np.array([0.001, 0.5, 0.3, 0.0, 0.8, -1.0]))
    return body, 5e-3


def measure(batches=(1, 64, 1024), budget_steps: int = 4000) -> list[list]:
    """Rows ``[arm, B, µs per arm and step, × the single core, µs per arm for the terms (numba),
    µs per arm for the bias (numpy candidate)]``."""
    from soft_envs.sim.bullet import connect, disconnect  # PyBullet: the single core, the baseline

    rows = []
    client = connect()
    try:
        singles, defaults = {}, {}
        for name in _arms(1):
            for backend, into in (("pybullet", singles), ("batched", defaults)):
                body, dt = _single(name, client, backend)
                zero = np.zeros(body.n_dof)
                into[name] = _cpu_seconds(lambda body=body, dt=dt, zero=zero: body.step(dt, zero), 100)
        for B in batches:
            for name, (arm, dt) in _arms(B).items():
                reps = max(2, budget_steps // B)
                arm.step(dt, 0.0)
                per_step = _cpu_seconds(lambda arm=arm, dt=dt: arm.step(dt, 0.0), reps) / B
                per_terms = _cpu_seconds(lambda arm=arm: terms(arm.topology, arm.params, arm.state), reps) / B
                c = arm.state.c
                cd = np.random.default_rng(0).normal(size=c.shape)
                per_numpy = _cpu_seconds(lambda arm=arm, c=c, cd=cd: numpy_bias(arm, c, cd, cd), max(1, reps // 4)) / B
                rows.append([name, B, f"{per_step * 1e6:.2f}", f"{singles[name] / per_step:.0f}",
                             f"{per_terms * 1e6:.2f}", f"{per_numpy * 1e6:.2f}"])
        names = (("PETER", "PETER 2 modules (18 joints)"), ("PCC", "PCC 2 segments (30 joints)"))
        for k, (arm, name) in enumerate(names):
            rows.insert(2 * k, [f"single body, PyBullet's terms, {arm}", 1, f"{singles[name] * 1e6:.1f}", "1", "", ""])
            rows.insert(2 * k + 1, [f"single body, batched core (the default), {arm}", 1,
                                    f"{defaults[name] * 1e6:.1f}", f"{singles[name] / defaults[name]:.1f}", "", ""])
    finally:
        disconnect(client)
    return rows


def thread_rows(B: int = 1024, steps: int = 20, rounds: int = 25) -> list[list]:
    """``[arm, B, threads, µs per arm and step (wall clock), × one thread]`` for one thread and every
    core of this process (:mod:`soft_envs.sim.threads`), in one run: each thread count's rounds in a row
    (the pool's threads and the second core's clock kept busy; interleaving them measured lower), the best
    (the estimate of idle cores: on a host whose cores other work shares, a round that other work
    interrupts is slower, never faster; 25 rounds of 0.1-0.2 s each)."""
    rows = []
    for name in _arms(1):
        base = None
        for nt in sorted({1, threads.available_cores()}):
            arm, dt = _arms(B, num_threads=nt)[name]
            arm.step(dt, 0.0)
            best = np.inf
            for _ in range(rounds):
                start = time.perf_counter()  # wall clock: the threads' work in parallel
                for _ in range(steps):
                    arm.step(dt, 0.0)
                best = min(best, (time.perf_counter() - start) / steps / B)
            base = best if base is None else base
            rows.append([name, B, nt, f"{best * 1e6:.2f}", f"{base / best:.2f}"])
    return rows


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None, device: str = "cpu") -> str:
    """The bench's markdown (``device="cuda"``: :mod:`soft_envs.bench.batched_device`)."""
    if device == "cuda":
        from soft_envs.bench import batched_device

        return batched_device.run(full=full, seed=seed, plot_dir=plot_dir)
    if device != "cpu":
        raise InvalidParameterError(f"device must be 'cpu' or 'cuda'; got {device!r}")
    batches = (1, 16, 64, 256, 1024, 4096) if full else (1, 64, 1024)
    rows = measure(batches)
    table = markdown_table(["arm", "B", "µs per arm and physics step", "× single core", "terms (numba) µs/arm",
                            "bias (numpy over joints) µs/arm"], rows)
    return (table + "\n\nCPU time of this thread (best of 3 rounds) in one process; a step is one compiled call "
            "for the batch (`sim.batched_integrator`: the terms at its start, the predictor, the terms `M`, "
            "`C u̇ + G` at its predicted end, the corrector); the single core runs the same compiled step on "
            "PyBullet's terms (`backend=\"pybullet\"`, the reference; the single envs' default, `\"batched\"`, is the "
            "batched core with B = 1, the rows B = 1, through the env logic they share with the vector envs). One "
            "thread throughout; the threads' table below in wall-clock time.\n\n"
            + markdown_table(["arm", "B", "threads", "µs per arm and step (wall)", "× one thread"], thread_rows())
            + "\n\nThe batch split into blocks of arms, one thread each (`num_threads=`, default: the cores this "
            "process may use); the results are identical to one thread's (`tests/sim/test_threads.py`).")
