"""Compiled Levenberg–Marquardt IK of any URDF chain: :func:`chain_ik` (one pose) and
:func:`chain_ik_batch` (many poses, on threads).

Both run the kernel of :mod:`soft_envs.agents.ik.chain_kernels` on a
:class:`~soft_envs.robots.bullet_chain.BulletChain`: forward kinematics and the geometric
Jacobian fused in one compiled pass over the chain's joint transforms, and the whole solve —
Levenberg–Marquardt iterations with Sugihara's error-dependent damping, the joint limits
(iterates clipped, joints on a limit held), seeded random restarts after stalled attempts —
without Python between iterations. Python reads the wall-clock budget (:mod:`soft_envs.clock`)
between chunks of :data:`CHUNK` iterations per target (about 0.2 ms), so a solve returns within
about that much of its ``timeout``, with its best effort and ``success=False`` when the pose was
not reached.

Targets and results are in the chain's base frame: positions [m], orientations as unit
quaternions ``(x, y, z, w)`` (or, for :func:`chain_ik`, a rotation matrix). Success, as for every
solver (:mod:`soft_envs.agents.ik.result`): position error ``< tol`` [m] and orientation error
angle ``< orientation_tol`` [rad]; solutions are always within the joint limits. The kernels are
compiled on the first call (about 10 s once; numba caches them on disk).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from types import ModuleType

import numpy as np

from soft_envs import clock
from soft_envs.agents.ik.jacobian import check_orientation
from soft_envs.agents.ik.jacobian_batch import check_quaternions
from soft_envs.agents.ik.result import (
    BatchIKResult,
    IKResult,
    budget_message,
    check_one_target,
    check_start,
    check_targets,
    check_timeout,
)
from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError, check_integer, check_positive
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.bullet_chain import BulletChain

DEFAULT_TIMEOUT = 0.01  # s: one pose (reachable poses take ~0.01–0.3 ms; TRAC-IK's default is 5 ms)
CHUNK = 256  # iterations per target between two reads of the clock (~0.2 ms for a 7-DOF arm)
_MASK = (1 << 64) - 1
_SEED_MIX, _TARGET_MIX = 0x9E3779B97F4A7C15, 0xD1B54A32D192ED03  # odd constants: distinct streams per seed, target


@cache
def _kernels() -> ModuleType:
    """The compiled kernels (imported on first use: the package imports without compiling them)."""
    import soft_envs.agents.ik.chain_kernels as chain_kernels

    return chain_kernels


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="chain_ik")


def _count(name: str, value: object, minimum: int) -> int:
    """:func:`check_integer` with a fast path for a plain ``int``."""
    if type(value) is int and value >= minimum:
        return value
    return check_integer(name, value, minimum=minimum)


def _positive(name: str, value: object) -> float:
    """:func:`check_positive` with a fast path for a plain finite ``float``."""
    if type(value) is float and 0.0 < value < math.inf:
        return value
    return check_positive(name, value)


def _options(chain: BulletChain, orientation: bool, tol: float, orientation_tol: float, max_iterations: int,
             restarts: int, stall_iterations: int, max_step: float, position_weight: float | None,
             seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The kernels' ``fopts`` and ``iopts`` (see :mod:`~soft_envs.agents.ik.chain_kernels`) and the
    checked seed; :class:`InvalidParameterError` for a bad option."""
    tol = _positive("tol [m]", tol)
    orientation_tol = _positive("orientation_tol [rad]", orientation_tol)
    iopts = np.array((6 if orientation else 3, _count("max_iterations", max_iterations, 1),
                      _count("restarts", restarts, 0), _count("stall_iterations", stall_iterations, 1), CHUNK),
                     dtype=np.int64)
    weight = 2.0 * math.pi / chain.reach if position_weight is None else _positive("position_weight [1/m]",
                                                                                   position_weight)
    fopts = np.array((tol, orientation_tol, _positive("max_step", max_step), weight))
    return fopts, iopts, _count("seed", seed, 0)


def _quaternion(orientation: np.ndarray) -> tuple[float, float, float, float]:
    """``(x, y, z, w)`` of an orientation (:func:`check_orientation`, with a fast path for a unit
    quaternion given as a float array)."""
    if isinstance(orientation, np.ndarray) and orientation.shape == (4,) and orientation.dtype == np.float64:
        x, y, z, w = orientation.tolist()
        norm = math.sqrt(x * x + y * y + z * z + w * w)
        if abs(norm - 1.0) <= 1e-6:  # False for NaN
            return x, y, z, w
    x, y, z, w = check_orientation(orientation).tolist()
    return x, y, z, w


def _check_chain(model: object, solver: str) -> BulletChain:
    if not isinstance(model, BulletChain):
        raise InvalidParameterError(f"{solver} solves the chains of URDFs (BulletChain); got {type(model).__name__}: "
                                    "use jacobian_ik for other kinematic models")
    return model


def chain_ik(
    chain: BulletChain,
    position: np.ndarray,
    orientation: np.ndarray | None = None,
    *,
    q0: np.ndarray | None = None,
    tol: float = 1e-6,
    orientation_tol: float = 1e-6,
    max_iterations: int = 100_000,
    restarts: int = 10_000,
    stall_iterations: int = 4,
    max_step: float = 1.0,
    position_weight: float | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    seed: int = 0,
) -> IKResult:
    """Solve one end-effector pose (or position) of a URDF chain with compiled Levenberg–Marquardt.

    Args:
        chain: the chain (:class:`~soft_envs.robots.bullet_chain.BulletChain`).
        position: desired end-effector position ``(3,)`` [m], base frame.
        orientation: desired orientation, a unit quaternion ``(x, y, z, w)`` (norm within 1e-6)
            or a ``(3, 3)`` rotation matrix, base frame; ``None`` for position-only IK.
        q0: first start ``(n_dof,)`` (clipped into the limits); default the middle of the limits.
        tol: success threshold on the position error [m].
        orientation_tol: success threshold on the orientation error angle [rad].
        max_iterations: cap on the iterations over all attempts.
        restarts: most random restarts (the ``timeout`` usually ends the search first).
        stall_iterations: an attempt whose cost has not halved in this many iterations is abandoned.
        max_step: largest change of any joint per iteration [rad or m].
        position_weight: ``w`` [1/m] of the cost ``w² ‖e_p‖² + θ²``; default ``2π / chain.reach``
            (a position error of one reach weighs as a full turn).
        timeout: wall-clock budget [s] (default 10 ms; ``math.inf``: none).
        seed: seed of the random restarts (the same seed, the same answer).

    Returns:
        :class:`IKResult`: ``solution`` within the limits, position ``error`` [m],
        ``orientation_error`` [rad] (``None`` for position only), ``iterations``, ``restarts``.
    """
    start_time = clock.now()
    chain = _check_chain(chain, "chain_ik")
    kernels = _kernels()
    position = check_one_target(chain, position, "chain_ik")
    quat = None if orientation is None else _quaternion(orientation)
    fopts, iopts, seed = _options(chain, quat is not None, tol, orientation_tol, max_iterations, restarts,
                                  stall_iterations, max_step, position_weight, seed)
    deadline = start_time + check_timeout(timeout)
    lower, upper = chain.lower, chain.upper
    n = lower.shape[0]
    starts = np.empty((1, n))
    if q0 is None:
        np.add(lower, upper, out=starts[0])
        starts *= 0.5
    else:
        starts[0] = check_start(chain, q0, lower)
    px, py, pz = position.tolist()
    if quat is None:
        frame = [1.0, 0.0, 0.0, px, 0.0, 1.0, 0.0, py, 0.0, 0.0, 1.0, pz]
    else:  # [R_d | p_d], R_d of the quaternion, row-major
        x, y, z, w = quat
        frame = [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w), px,
                 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w), py,
                 2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y), pz]
    targets = np.array(frame).reshape(1, 3, 4)
    best_q, best_f = np.empty((1, n)), np.empty((1, 3))
    best_f[0, 0] = math.inf  # the kernel keeps any first iterate
    current, counts = np.empty((1, n + 2)), np.zeros((1, 4), dtype=np.int64)
    rng = np.array([(seed * _SEED_MIX + _TARGET_MIX) & _MASK], dtype=np.uint64)
    frames, kinds = chain.joint_frames()
    while True:
        expired = clock.now() > deadline
        iopts[4] = 0 if expired else CHUNK  # past the budget: only the start is evaluated
        kernels.solve_targets(frames, kinds, lower, upper, targets, starts, fopts, iopts, best_q, best_f, current,
                              counts, rng)
        if expired or counts[0, 2] >= kernels.CONVERGED:
            break
    perr, oerr = float(best_f[0, 1]), float(best_f[0, 2])
    success = bool(perr < fopts[0] and oerr < fopts[1])
    iterations, attempts = int(counts[0, 0]), int(counts[0, 1])
    how = f"{iterations} iterations, {attempts} restarts"
    timed_out = expired and not success
    message = (f"converged after {how}" if success else
               f"not converged: {how}" + (f", {budget_message(timeout)}" if timed_out else ""))
    return IKResult(solution=best_q[0], error=perr, success=success, iterations=iterations,
                    seconds=clock.now() - start_time, orientation_error=oerr if quat is not None else None,
                    message=message, restarts=attempts, timed_out=timed_out)


def chain_ik_batch(
    chain: BulletChain,
    positions: np.ndarray,
    orientations: np.ndarray | None = None,
    *,
    q0: np.ndarray | None = None,
    tol: float = 1e-6,
    orientation_tol: float = 1e-6,
    max_iterations: int = 100_000,
    restarts: int = 10_000,
    stall_iterations: int = 4,
    max_step: float = 1.0,
    position_weight: float | None = None,
    timeout: float | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> BatchIKResult:
    """Solve ``B`` end-effector poses (or positions) of a URDF chain at once: :func:`chain_ik`'s
    iteration per target, the targets shared out between ``threads`` threads (the kernel runs
    without the GIL). ``tol``, ``orientation_tol``, ``max_iterations``, ``restarts``,
    ``stall_iterations``, ``max_step`` and ``position_weight`` are :func:`chain_ik`'s, per target.

    Args:
        chain: the chain (:class:`~soft_envs.robots.bullet_chain.BulletChain`).
        positions: ``(B, 3)`` [m], base frame.
        orientations: ``(B, 4)`` unit quaternions ``(x, y, z, w)``, or ``None`` for position only.
        q0: first start, ``(n_dof,)`` or ``(B, n_dof)`` (clipped into the limits); default the
            middle of the limits.
        timeout: wall-clock budget of the whole batch [s]; default ``0.05 + 0.001 B``
            (``math.inf``: none).
        seed: seed of the random restarts (target ``i`` of a batch draws as :func:`chain_ik`
            does only for ``i = 0``; results do not depend on ``threads``).
        threads: worker threads; default the CPUs this process may use, at most one per 32 targets.

    Returns:
        :class:`BatchIKResult`: ``solutions`` ``(B, n_dof)`` within the limits, position
        ``errors`` [m], ``success``, ``iterations``, ``orientation_errors`` [rad] (``None`` for
        position only), ``restarts`` per target; ``extra["threads"]``.
    """
    start_time = clock.now()
    chain = _check_chain(chain, "chain_ik_batch")
    kernels = _kernels()
    positions = check_targets(chain, positions, "chain_ik_batch")
    batch = positions.shape[0]
    fopts, iopts, seed = _options(chain, orientations is not None, tol, orientation_tol, max_iterations, restarts,
                                  stall_iterations, max_step, position_weight, seed)
    deadline = start_time + check_timeout(0.05 + 1e-3 * batch if timeout is None else timeout)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, min(cpus, batch // 32)) if threads is None else check_integer("threads", threads, minimum=1)
    lower, upper = chain.lower, chain.upper
    n = lower.shape[0]
    targets = np.zeros((batch, 3, 4))
    targets[:, :, 3] = positions
    if orientations is not None:
        targets[:, :, :3] = quaternion_to_matrix(check_quaternions(orientations, batch))
    if q0 is None or np.ndim(q0) == 1:
        starts = np.tile(check_start(chain, q0, 0.5 * (lower + upper)), (batch, 1))
    else:
        starts = np.ascontiguousarray(chain.check_configuration(q0))
        if starts.shape != (batch, n):
            raise InvalidConfigurationError(f"q0 must have shape ({n},) or ({batch}, {n}); got {starts.shape}")
    best_q, best_f = np.empty((batch, n)), np.full((batch, 3), np.inf)
    current, counts = np.empty((batch, n + 2)), np.zeros((batch, 4), dtype=np.int64)
    rng = np.arange(1, batch + 1, dtype=np.uint64) * np.uint64(_TARGET_MIX) + np.uint64((seed * _SEED_MIX) & _MASK)
    frames, kinds = chain.joint_frames()
    edges = np.linspace(0, batch, min(batch, 8 * threads) + 1).astype(int) if threads > 1 else np.array([0, batch])
    blocks = list(zip(edges[:-1].tolist(), edges[1:].tolist()))

    def run(block: tuple[int, int], chunk_options: np.ndarray) -> None:
        a, b = block
        kernels.solve_targets(frames, kinds, lower, upper, targets[a:b], starts[a:b], fopts, chunk_options,
                              best_q[a:b], best_f[a:b], current[a:b], counts[a:b], rng[a:b])

    while True:
        expired = clock.now() > deadline
        chunk_options = iopts.copy()
        chunk_options[4] = 0 if expired else CHUNK  # past the budget: only starts not yet evaluated are
        todo = [(a, b) for a, b in blocks if counts[a:b, 2].min() < kernels.CONVERGED]
        if len(todo) > 1 and threads > 1:
            list(_pool(threads).map(run, todo, [chunk_options] * len(todo)))
        else:
            for block in todo:
                run(block, chunk_options)
        if expired or not (counts[:, 2] < kernels.CONVERGED).any():
            break
    errors, angles = best_f[:, 1].copy(), best_f[:, 2].copy()
    success = (errors < fopts[0]) & (angles < fopts[1])
    return BatchIKResult(solutions=best_q, errors=errors, success=success, iterations=counts[:, 0].copy(),
                         seconds=clock.now() - start_time,
                         extra={"timeout": float(deadline - start_time), "threads": threads},
                         timed_out=expired & (counts[:, 2] < kernels.CONVERGED) & ~success,
                         orientation_errors=angles if orientations is not None else None, restarts=counts[:, 1].copy())


__all__ = ["chain_ik", "chain_ik_batch"]
