"""Compiled kernels of :mod:`soft_envs.agents.ik.chain_lm`: forward kinematics, the geometric
Jacobian and a Levenberg–Marquardt solve of a serial chain (numba, ``nogil``: threads run them in
parallel).

Chain layout (:meth:`soft_envs.robots.bullet_chain.BulletChain.joint_frames`): ``frames``
``(n + 1, 3, 4)``, row ``j < n`` the constant transform ``[A_R | A_p]`` of movable joint ``j``
(the fixed joints before it folded in, re-framed so that the joint turns about / slides along
its own z), row ``n`` the tip transform; ``kinds`` ``(n,)``: 1 revolute, 0 prismatic. Joint
``j``'s frame is ``T_j = T_{j−1} · A_j · Rz(q_j)`` (or ``· Tz(q_j)``), the end effector
``T_e = T_{n−1} · tip``; everything in the chain's base frame, metres and radians.

The solve (:func:`solve_targets`) works on targets ``(B, 3, 4)`` = ``[R_d | p_d]`` (base frame)
and keeps each target's state in arrays, so that a call can stop after ``chunk`` iterations per
target and the next call resume exactly where it stopped (Python checks the wall-clock budget
between calls; the result does not depend on ``chunk``):

* ``best_q (B, n)`` and ``best_f (B, 3)`` = (weighted cost, position error [m], orientation
  error [rad]) of the best iterate so far (a converged iterate always replaces it);
* ``current (B, n + 2)`` = the attempt's iterate ``q``, its damping factor ``μ`` and its
  checkpoint cost;
* ``counts (B, 4)`` = (iterations, restarts, status, iterations since the checkpoint), status one
  of :data:`FRESH`, :data:`RUNNING` (an attempt in progress), :data:`STALLED` (restart next),
  :data:`CONVERGED`, :data:`EXHAUSTED` (out of iterations or restarts);
* ``rng (B,)``: splitmix64 states of the random restarts.

Options: ``fopts = (tol [m], orientation_tol [rad], max_step [rad or m], position_weight [1/m])``
and ``iopts = (rows, max_iterations, restarts, stall_iterations, chunk)``, ``rows`` 6 (full pose)
or 3 (position only).

The iteration, with ``e = (w (p_d − p), θ n)`` (``w`` = ``position_weight``, ``θ n`` the rotation
vector of ``R_d Rᵀ``), ``J`` the geometric Jacobian with its linear rows scaled by ``w`` and the
cost ``E = ‖e‖²``: ``dq = (JᵀJ + λI)⁻¹ Jᵀe`` with ``λ = μE + λ_min`` (Levenberg–Marquardt with
Sugihara's error-dependent damping: undamped, quadratic convergence near a solution), ``μ``
×10 after a step that does not lower ``E`` (the step is rejected) and ×0.3 after one that
does; a joint on a limit whose step points outwards is held (its row and column removed, the
step solved again), a step longer than ``max_step`` in any joint is scaled down, the iterate is
clipped into the limits. An attempt stalls when ``E`` has not halved in ``stall_iterations``
iterations or ``μ`` passes 1e12; the next starts from a seeded uniform configuration within the
middle 60 % of every joint's range, 10 % wider for each restart, the full range from the fifth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit
from numba import types as nt
from numba.core.typing.templates import Signature

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)

FRESH, RUNNING, STALLED, CONVERGED, EXHAUSTED = 0, 1, 2, 3, 4
LAMBDA_MIN = 1e-9  # floor of the damping λ (units of the cost): keeps JᵀJ + λI positive definite when n > rows
SPREAD, SPREAD_GROWTH = 0.6, 0.1  # restart sampling: share of each joint's range, and its growth per restart

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)

def _jit(signature: Signature) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``njit`` for one explicit signature, cached on disk, without the GIL."""
    return njit(signature, cache=True, nogil=True, error_model="numpy")


# explicit signatures (one compile each, at import or from the cache): C-contiguous float64 arrays,
# the chain's constants read-only as BulletChain.joint_frames() gives them
_F, _I, _U1, _B1 = nt.float64, nt.int64, nt.uint64[::1], nt.boolean[::1]
_V1, _V2, _V3, _I1, _I2 = _F[::1], _F[:, ::1], _F[:, :, ::1], _I[::1], _I[:, ::1]
_FRAMES, _KINDS = nt.Array(_F, 3, "C", readonly=True), nt.Array(_I, 1, "C", readonly=True)
_SOLVE = (_FRAMES, _KINDS, _V1, _V1, _V3, _V2, _V1, _I1, _V2, _V2, _V2, _I2, _U1)


@_jit(_F(_U1, _I))
def uniform(rng, i):
    """A uniform number in ``[0, 1)`` from splitmix64 state ``rng[i]`` (advanced)."""
    rng[i] += _GOLDEN
    z = rng[i]
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * (1.0 / 9007199254740992.0)


@_jit(nt.void(_FRAMES, _KINDS, _V1, _V1, _V2, _V2))
def pose_jacobian(frames, kinds, q, p, R, J):
    """End-effector position ``p (3,)`` [m], rotation ``R (3, 3)`` and geometric Jacobian ``J (6, n)``
    (linear rows, then angular rows; base frame) of configuration ``q (n,)``, written in place."""
    n = q.shape[0]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    for j in range(n):
        a = frames[j]
        ax, ay, az = a[0, 3], a[1, 3], a[2, 3]
        px, py, pz = (px + r00 * ax + r01 * ay + r02 * az, py + r10 * ax + r11 * ay + r12 * az,
                      pz + r20 * ax + r21 * ay + r22 * az)
        a00, a01, a02, a10, a11, a12, a20, a21, a22 = (a[0, 0], a[0, 1], a[0, 2], a[1, 0], a[1, 1], a[1, 2],
                                                       a[2, 0], a[2, 1], a[2, 2])
        revolute = kinds[j] == 1
        if revolute:  # A · Rz(q): the first two columns turn
            c, s = math.cos(q[j]), math.sin(q[j])
            a00, a01 = c * a00 + s * a01, c * a01 - s * a00
            a10, a11 = c * a10 + s * a11, c * a11 - s * a10
            a20, a21 = c * a20 + s * a21, c * a21 - s * a20
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            r00 * a00 + r01 * a10 + r02 * a20, r00 * a01 + r01 * a11 + r02 * a21, r00 * a02 + r01 * a12 + r02 * a22,
            r10 * a00 + r11 * a10 + r12 * a20, r10 * a01 + r11 * a11 + r12 * a21, r10 * a02 + r11 * a12 + r12 * a22,
            r20 * a00 + r21 * a10 + r22 * a20, r20 * a01 + r21 * a11 + r22 * a21, r20 * a02 + r21 * a12 + r22 * a22)
        if not revolute:  # · Tz(q)
            px, py, pz = px + q[j] * r02, py + q[j] * r12, pz + q[j] * r22
        # the joint's axis and origin, kept in J until the tip is known
        J[3, j], J[4, j], J[5, j] = r02, r12, r22
        J[0, j], J[1, j], J[2, j] = px, py, pz
    t = frames[n]
    tx, ty, tz = t[0, 3], t[1, 3], t[2, 3]
    ex, ey, ez = px + r00 * tx + r01 * ty + r02 * tz, py + r10 * tx + r11 * ty + r12 * tz, \
        pz + r20 * tx + r21 * ty + r22 * tz
    p[0], p[1], p[2] = ex, ey, ez
    for i in range(3):
        R[0, i] = r00 * t[0, i] + r01 * t[1, i] + r02 * t[2, i]
        R[1, i] = r10 * t[0, i] + r11 * t[1, i] + r12 * t[2, i]
        R[2, i] = r20 * t[0, i] + r21 * t[1, i] + r22 * t[2, i]
    for j in range(n):
        zx, zy, zz = J[3, j], J[4, j], J[5, j]
        if kinds[j] == 1:  # v = z × (tip − origin), ω = z
            dx, dy, dz = ex - J[0, j], ey - J[1, j], ez - J[2, j]
            J[0, j], J[1, j], J[2, j] = zy * dz - zz * dy, zz * dx - zx * dz, zx * dy - zy * dx
        else:  # v = z, ω = 0
            J[0, j], J[1, j], J[2, j] = zx, zy, zz
            J[3, j] = J[4, j] = J[5, j] = 0.0


@_jit(nt.UniTuple(_F, 2)(_V2, _V1, _V2, _I, _V1))
def pose_error(target, p, R, rows, e):
    """Error ``e`` (``rows``,) of pose ``(p, R)`` from ``target = [R_d | p_d]``: ``p_d − p`` [m], then
    (``rows == 6``) the rotation vector θ·n [rad] of ``R_d Rᵀ`` (from its quaternion by Shepperd's
    method, ``w ≥ 0``: exact near 0 and near a half turn). Returns (position error [m], θ [rad])."""
    e[0], e[1], e[2] = target[0, 3] - p[0], target[1, 3] - p[1], target[2, 3] - p[2]
    perr = math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    if rows == 3:
        return perr, 0.0
    m00 = target[0, 0] * R[0, 0] + target[0, 1] * R[0, 1] + target[0, 2] * R[0, 2]
    m01 = target[0, 0] * R[1, 0] + target[0, 1] * R[1, 1] + target[0, 2] * R[1, 2]
    m02 = target[0, 0] * R[2, 0] + target[0, 1] * R[2, 1] + target[0, 2] * R[2, 2]
    m10 = target[1, 0] * R[0, 0] + target[1, 1] * R[0, 1] + target[1, 2] * R[0, 2]
    m11 = target[1, 0] * R[1, 0] + target[1, 1] * R[1, 1] + target[1, 2] * R[1, 2]
    m12 = target[1, 0] * R[2, 0] + target[1, 1] * R[2, 1] + target[1, 2] * R[2, 2]
    m20 = target[2, 0] * R[0, 0] + target[2, 1] * R[0, 1] + target[2, 2] * R[0, 2]
    m21 = target[2, 0] * R[1, 0] + target[2, 1] * R[1, 1] + target[2, 2] * R[1, 2]
    m22 = target[2, 0] * R[2, 0] + target[2, 1] * R[2, 1] + target[2, 2] * R[2, 2]
    trace = m00 + m11 + m22
    if trace > -0.5:
        w = 0.5 * math.sqrt(1.0 + trace)
        k = 0.25 / w
        x, y, z = (m21 - m12) * k, (m02 - m20) * k, (m10 - m01) * k
    else:
        c0, c1, c2 = 1.0 + 2.0 * m00 - trace, 1.0 + 2.0 * m11 - trace, 1.0 + 2.0 * m22 - trace
        if c0 >= c1 and c0 >= c2:
            x = 0.5 * math.sqrt(c0)
            k = 0.25 / x
            y, z, w = (m01 + m10) * k, (m02 + m20) * k, (m21 - m12) * k
        elif c1 >= c2:
            y = 0.5 * math.sqrt(c1)
            k = 0.25 / y
            x, z, w = (m01 + m10) * k, (m12 + m21) * k, (m02 - m20) * k
        else:
            z = 0.5 * math.sqrt(c2)
            k = 0.25 / z
            x, y, w = (m02 + m20) * k, (m12 + m21) * k, (m10 - m01) * k
        k = math.copysign(1.0, w) / math.sqrt(x * x + y * y + z * z + w * w)
        x, y, z, w = x * k, y * k, z * k, w * k
    s = math.sqrt(x * x + y * y + z * z)
    angle = 2.0 * math.atan2(s, w)
    scale = angle / s if s > 1e-12 else 2.0 / w  # θ / sin(θ/2) → 2 as θ → 0
    e[3], e[4], e[5] = scale * x, scale * y, scale * z
    return perr, angle


@_jit(nt.void(_V2, _V1, _I, _V2, _V1))
def normal_equations(J, e, rows, H, g):
    """``H = JᵀJ`` (lower triangle) and ``g = Jᵀe`` over the first ``rows`` rows of ``J (6, n)``."""
    n = J.shape[1]
    for a in range(n):
        ga = 0.0
        for r in range(rows):
            ga += J[r, a] * e[r]
        g[a] = ga
        for b in range(a + 1):
            h = 0.0
            for r in range(rows):
                h += J[r, a] * J[r, b]
            H[a, b] = h


@_jit(nt.void(_V2, _V1, _F, _B1, _V2, _V1, _V1))
def damped_solve(H, g, lam, pinned, L, inv, dq):
    """``dq = (H + λI)⁻¹ g`` over the joints not ``pinned`` (those get 0), by Cholesky of the lower
    triangle of ``H``; ``L`` ``(n, n)`` and ``inv`` ``(n,)`` (reciprocals of its diagonal) are scratch."""
    n = g.shape[0]
    for a in range(n):
        if pinned[a]:
            inv[a] = 0.0
            for b in range(a):
                L[a, b] = 0.0
            continue
        for b in range(a):
            if pinned[b]:
                L[a, b] = 0.0
                continue
            s = H[a, b]
            for k in range(b):
                s -= L[a, k] * L[b, k]
            L[a, b] = s * inv[b]
        s = H[a, a] + lam
        for k in range(a):
            s -= L[a, k] * L[a, k]
        inv[a] = 1.0 / math.sqrt(s if s > 1e-300 else 1e-300)
    for a in range(n):  # L y = g
        s = g[a]
        for k in range(a):
            s -= L[a, k] * dq[k]
        dq[a] = s * inv[a]
    for a in range(n - 1, -1, -1):  # Lᵀ dq = y
        s = dq[a]
        for k in range(a + 1, n):
            s -= L[k, a] * dq[k]
        dq[a] = s * inv[a]


@_jit(_F(_FRAMES, _KINDS, _V2, _I, _F, _V1, _V1, _V2, _V2, _V1, _V1))
def evaluate(frames, kinds, target, rows, weight, q, p, R, J, e, errors):
    """Pose, weighted Jacobian ``J`` and error ``e`` at ``q``; ``errors`` = (position error [m],
    orientation error [rad]); returns the cost ``‖e‖²``."""
    pose_jacobian(frames, kinds, q, p, R, J)
    perr, oerr = pose_error(target, p, R, rows, e)
    for r in range(3):
        e[r] *= weight
        for j in range(J.shape[1]):
            J[r, j] *= weight
    errors[0], errors[1] = perr, oerr
    return weight * weight * perr * perr + oerr * oerr


@_jit(nt.void(_I, *_SOLVE))
def solve_target(i, frames, kinds, lower, upper, targets, starts, fopts, iopts, best_q, best_f, current, counts, rng):
    """Work on target ``i`` until it converges, runs out of iterations or restarts, or has spent
    ``chunk`` iterations in this call (its attempt is then saved in ``current`` and ``counts``)."""
    n = lower.shape[0]
    tol, otol, max_step, weight = fopts[0], fopts[1], fopts[2], fopts[3]
    rows, max_iterations, restarts, stall, chunk = iopts[0], iopts[1], iopts[2], iopts[3], iopts[4]
    target, state = targets[i], counts[i]
    q, q_new, dq = np.empty(n), np.empty(n), np.empty(n)
    g, inv, pinned = np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_)
    H, L = np.empty((n, n)), np.empty((n, n))
    p, R, J, J_new = np.empty(3), np.empty((3, 3)), np.empty((6, n)), np.empty((6, n))
    e, e_new, errors = np.empty(6), np.empty(6), np.empty(2)
    spent = 0
    while state[2] < CONVERGED:
        if state[2] == RUNNING:  # resume the attempt a previous call stopped
            q[:] = current[i, :n]
            mu, checkpoint = current[i, n], current[i, n + 1]
        else:
            if state[2] == FRESH:
                for j in range(n):
                    q[j] = min(max(starts[i, j], lower[j]), upper[j])
            elif state[1] >= restarts:
                state[2] = EXHAUSTED
                break
            else:
                spread = min(1.0, SPREAD + SPREAD_GROWTH * state[1])
                for j in range(n):
                    q[j] = lower[j] + (upper[j] - lower[j]) * (0.5 + spread * (uniform(rng, i) - 0.5))
                state[1] += 1
            mu, checkpoint, state[3] = 1.0, -1.0, 0  # checkpoint < 0: the attempt's first cost
            state[2] = RUNNING
        cost = evaluate(frames, kinds, target, rows, weight, q, p, R, J, e, errors)
        perr, oerr = errors[0], errors[1]
        if checkpoint < 0.0:
            checkpoint = cost
        normal_equations(J, e, rows, H, g)
        while True:
            done = perr < tol and oerr < otol
            if done or cost < best_f[i, 0]:
                best_f[i, 0], best_f[i, 1], best_f[i, 2] = cost, perr, oerr
                best_q[i, :] = q
            if done:
                state[2] = CONVERGED
                return
            if state[0] >= max_iterations:
                state[2] = EXHAUSTED
                return
            if spent >= chunk:  # save the attempt and hand back to Python
                current[i, :n] = q
                current[i, n], current[i, n + 1] = mu, checkpoint
                return
            lam = mu * cost + LAMBDA_MIN
            for j in range(n):
                pinned[j] = False
            for _ in range(n):  # hold the joints on a limit whose step points outwards, until none is left
                damped_solve(H, g, lam, pinned, L, inv, dq)
                again = False
                for j in range(n):
                    if not pinned[j] and ((q[j] <= lower[j] and dq[j] < 0.0) or (q[j] >= upper[j] and dq[j] > 0.0)):
                        pinned[j] = again = True
                if not again:
                    break
            largest = 0.0
            for j in range(n):
                largest = max(largest, abs(dq[j]))
            shrink = max_step / largest if largest > max_step else 1.0
            for j in range(n):
                q_new[j] = min(max(q[j] + shrink * dq[j], lower[j]), upper[j])
            cost_new = evaluate(frames, kinds, target, rows, weight, q_new, p, R, J_new, e_new, errors)
            state[0] += 1
            state[3] += 1
            spent += 1
            if cost_new < cost:
                q[:], J[:, :], e[:] = q_new, J_new, e_new
                cost, perr, oerr = cost_new, errors[0], errors[1]
                normal_equations(J, e, rows, H, g)
                mu = max(0.3 * mu, 1e-6)
            else:
                mu *= 10.0
            if cost < 0.5 * checkpoint:
                checkpoint, state[3] = cost, 0
            elif state[3] >= stall or mu > 1e12:  # no progress: restart
                state[2] = STALLED
                break


@_jit(nt.void(*_SOLVE))
def solve_targets(frames, kinds, lower, upper, targets, starts, fopts, iopts, best_q, best_f, current, counts, rng):
    """:func:`solve_target` for every target of the batch, one after the other (one thread, no GIL)."""
    for i in range(targets.shape[0]):
        if counts[i, 2] < CONVERGED:
            solve_target(i, frames, kinds, lower, upper, targets, starts, fopts, iopts, best_q, best_f, current,
                         counts, rng)
