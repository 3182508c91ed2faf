"""Compiled (numba) kernels of the Cosserat solvers: the rod RK4 and the hexapod's 43 equations.

Why compiled: the hot path of ``HexapodPose-v0`` is one Newton solve per step, each iteration a
forward-difference Jacobian that integrates 42 rods (6 nominal, 36 perturbed) over 32 RK4 steps.
The numpy integrator (:func:`~soft_envs.robots.cosserat.integrator.integrate_rods`) is
vectorised across rods, but a rod is sequential along its length, so one integration is 128
derivative evaluations of ~25 numpy calls each on rows of 42 numbers: ~3,200 calls whose
overhead (not the ~0.5 Mflop of arithmetic) was 94 % of an env step (cProfile). Here each rod is
one compiled loop, the rods a loop around it, and the residual assembly and its finite
differences are compiled too, so an iteration costs one call.

The arithmetic is the numpy path's, written in the same order (the same RK4 stages, the same
quaternion form ``2/|q|²`` and the same forward differences with the same step), so the two
paths agree to round-off (the tests compare them; tip states agree to ~1e-16 and the hexapod's
equilibria to far below 1e-9 m). Quaternions here are the integrator's scalar-first
``(w, x, y, z)`` (see :mod:`~soft_envs.robots.cosserat.integrator`).

:func:`enabled` says whether the kernels are used (numba importable and not switched off);
:func:`disabled` switches them off inside a ``with`` block — the numpy reference path, used to
measure the speed-up in one process and by the tests that compare the two.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

try:
    from numba import njit

    from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache)
except ImportError:  # pragma: no cover - numba is a dependency; the numpy path stays complete
    njit = None

_ENABLED = njit is not None


def enabled() -> bool:
    """Whether the compiled kernels are in use."""
    return _ENABLED


@contextmanager
def disabled() -> Iterator[None]:
    """``with disabled():`` — every Cosserat solve inside takes the numpy reference path."""
    global _ENABLED
    previous = _ENABLED
    _ENABLED = False
    try:
        yield
    finally:
        _ENABLED = previous


def arrays(*values: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arguments as C-contiguous, writeable float arrays (copies only where needed), so that
    each kernel is compiled (and cached on disk) for one signature only."""
    return tuple(np.require(v, dtype=float, requirements=("C", "W")) for v in values)


def _jit(function):  # noqa: ANN001, ANN202 - decorator
    return function if njit is None else njit(cache=True, nogil=True)(function)


@_jit
def _derivative(Y, n1, n2, n3, EI, GJ, dY):  # noqa: ANN001, ANN202 - compiled
    """``dY/ds`` of one rod's state ``Y (11,)`` into ``dY`` (the numpy ``_derivative``, same order)."""
    w, x, y, z = Y[3], Y[4], Y[5], Y[6]
    ux, uy, uz = Y[7], Y[8], Y[9]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    wx, wy, wz = w * x, w * y, w * z
    xx, xy, xz, yy, yz, zz = x * x, x * y, x * z, y * y, y * z, z * z
    dY[0] = s * (xz + wy)
    dY[1] = s * (yz - wx)
    dY[2] = 1.0 - s * (xx + yy)
    dY[3] = -0.5 * (x * ux + y * uy + z * uz)
    dY[4] = 0.5 * (w * ux + y * uz - z * uy)
    dY[5] = 0.5 * (w * uy + z * ux - x * uz)
    dY[6] = 0.5 * (w * uz + x * uy - y * ux)
    v1 = n1 - s * ((yy + zz) * n1 - (xy + wz) * n2 - (xz - wy) * n3)
    v2 = n2 - s * ((xx + zz) * n2 - (xy - wz) * n1 - (yz + wx) * n3)
    dY[7] = (v2 - (GJ - EI) * uy * uz) / EI
    dY[8] = -(v1 + (EI - GJ) * ux * uz) / EI
    dY[9] = 0.0
    dY[10] = 0.5 * (EI * (ux * ux + uy * uy) + GJ * uz * uz)


@_jit
def _integrate_one(p0, q0, u0, n, EI, GJ, length, n_steps, out):  # noqa: ANN001, ANN202 - compiled
    """RK4 of one rod from ``(p0, q0, u0)`` under force ``n``; the tip state into ``out (11,)``."""
    Y = np.empty(11)
    T = np.empty(11)
    k1, k2, k3, k4 = np.empty(11), np.empty(11), np.empty(11), np.empty(11)
    Y[0:3] = p0
    Y[3:7] = q0
    Y[7:10] = u0
    Y[10] = 0.0
    n1, n2, n3 = n[0], n[1], n[2]
    h = length / n_steps
    half, sixth = 0.5 * h, h / 6.0
    for _ in range(n_steps):
        _derivative(Y, n1, n2, n3, EI, GJ, k1)
        for r in range(11):
            T[r] = Y[r] + half * k1[r]
        _derivative(T, n1, n2, n3, EI, GJ, k2)
        for r in range(11):
            T[r] = Y[r] + half * k2[r]
        _derivative(T, n1, n2, n3, EI, GJ, k3)
        for r in range(11):
            T[r] = Y[r] + h * k3[r]
        _derivative(T, n1, n2, n3, EI, GJ, k4)
        for r in range(11):
            Y[r] = Y[r] + sixth * (k1[r] + 2.0 * (k2[r] + k3[r]) + k4[r])
    out[:] = Y


@_jit
def integrate_tips(p0, q0, u0, n, EI, GJ, length, n_steps):  # noqa: ANN001, ANN201 - compiled
    """Tip states ``(11, B)`` of ``B`` rods (the layout of ``integrate_rods(..., store=False)``):
    bases ``p0 (B, 3)`` [m], ``q0 (B, 4)`` scalar first, ``u0 (B, 3)`` [1/m], forces ``n (B, 3)`` [N]."""
    B = p0.shape[0]
    out = np.empty((11, B))
    tip = np.empty(11)
    for b in range(B):
        _integrate_one(p0[b], q0[b], u0[b], n[b], EI, GJ, length, n_steps, tip)
        out[:, b] = tip
    return out


@_jit
def _rotation(q, R):  # noqa: ANN001, ANN202 - compiled
    """``R(q)`` ``(3, 3)`` of a scalar-first quaternion with ``2/|q|²`` (``rotation_matrix_wxyz``)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    R[0, 0], R[0, 1], R[0, 2] = 1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)
    R[1, 0], R[1, 1], R[1, 2] = s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)
    R[2, 0], R[2, 1], R[2, 2] = s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)


@_jit
def _assemble(z, tips, platform_points, L, EI, GJ, g):  # noqa: ANN001, ANN202 - compiled
    """The 43 scaled residuals ``g`` of variables ``z (49,)`` and rod tip states ``tips (6, 11)``
    (``HexapodEquations.assemble`` for one problem)."""
    R = np.empty((3, 3))
    Rt = np.empty((3, 3))
    _rotation(z[39:43], R)
    fs = EI / L**2
    p0, p1, p2 = z[36] * L, z[37] * L, z[38] * L
    F0, F1, F2 = z[43] * fs, z[44] * fs, z[45] * fs
    sn0 = sn1 = sn2 = 0.0
    sm0 = sm1 = sm2 = 0.0
    for k in range(6):
        t = tips[k]
        r = platform_points[k]
        for a in range(3):
            b_pred = (p0, p1, p2)[a] + (R[a, 0] * r[0] + R[a, 1] * r[1] + R[a, 2] * r[2])
            g[3 * k + a] = (t[a] - b_pred) / L
            g[18 + 3 * k + a] = t[7 + a] * L
        n0, n1, n2 = z[18 + 3 * k] * fs, z[19 + 3 * k] * fs, z[20 + 3 * k] * fs
        _rotation(t[3:7], Rt)
        ku0, ku1, ku2 = t[7] * EI, t[8] * EI, t[9] * GJ
        sn0 += n0
        sn1 += n1
        sn2 += n2
        sm0 += (t[1] * n2 - t[2] * n1) + (Rt[0, 0] * ku0 + Rt[0, 1] * ku1 + Rt[0, 2] * ku2)
        sm1 += (t[2] * n0 - t[0] * n2) + (Rt[1, 0] * ku0 + Rt[1, 1] * ku1 + Rt[1, 2] * ku2)
        sm2 += (t[0] * n1 - t[1] * n0) + (Rt[2, 0] * ku0 + Rt[2, 1] * ku1 + Rt[2, 2] * ku2)
    g[36] = (sn0 - F0) * (L * L / EI)
    g[37] = (sn1 - F1) * (L * L / EI)
    g[38] = (sn2 - F2) * (L * L / EI)
    ms = EI / L
    g[39] = (sm0 - (p1 * F2 - p2 * F1) - z[46] * ms) * (L / EI)
    g[40] = (sm1 - (p2 * F0 - p0 * F2) - z[47] * ms) * (L / EI)
    g[41] = (sm2 - (p0 * F1 - p1 * F0) - z[48] * ms) * (L / EI)
    g[42] = z[39] * z[39] + z[40] * z[40] + z[41] * z[41] + z[42] * z[42] - 1.0


@_jit
def _rods(z, rho, base_points, guide_directions, base_q, L, EI, GJ, n_steps, tips):  # noqa: ANN001, ANN202
    """Integrate the six rods of ``z`` at inputs ``rho``; tip states into ``tips (6, 11)``."""
    fs = EI / L**2
    p0, u0, n = np.empty(3), np.empty(3), np.empty(3)
    for k in range(6):
        for a in range(3):
            p0[a] = base_points[k, a] + rho[k] * guide_directions[k, a]
            u0[a] = z[3 * k + a] / L
            n[a] = z[18 + 3 * k + a] * fs
        _integrate_one(p0, base_q[k], u0, n, EI, GJ, L, n_steps, tips[k])


@_jit
def fk_residuals(Z, rho, base_points, guide_directions, base_q, platform_points, L, EI, GJ,
                 n_steps):  # noqa: ANN001, ANN201 - compiled
    """Residuals ``(P, 43)`` and tip states ``(P, 6, 11)`` of ``P`` problems ``Z (P, 49)`` at
    inputs ``rho (P, 6)`` [m] (``HexapodEquations.residual``)."""
    P = Z.shape[0]
    g = np.empty((P, 43))
    tips = np.empty((P, 6, 11))
    for q in range(P):
        _rods(Z[q], rho[q], base_points, guide_directions, base_q, L, EI, GJ, n_steps, tips[q])
        _assemble(Z[q], tips[q], platform_points, L, EI, GJ, g[q])
    return g, tips


@_jit
def fk_jacobians(Z, rho, base_points, guide_directions, base_q, platform_points, L, EI, GJ, n_steps,
                 h):  # noqa: ANN001, ANN201 - compiled
    """Residuals ``(P, 43)``, forward-difference Jacobians ``∂g/∂z[:43]`` ``(P, 43, 43)``, tip
    states ``(P, 6, 11)`` and the perturbed rods' tips ``(P, 36, 11)`` (``HexapodEquations.jacobian``
    with ``free = FK_FREE``): a rod column re-integrates only the perturbed rod, a pose column
    re-assembles."""
    P = Z.shape[0]
    g = np.empty((P, 43))
    J = np.empty((P, 43, 43))
    tips = np.empty((P, 6, 11))
    tips_p = np.empty((P, 36, 11))
    fs = EI / L**2
    zc = np.empty(49)
    tc = np.empty((6, 11))
    gc = np.empty(43)
    p0, u0, n = np.empty(3), np.empty(3), np.empty(3)
    for q in range(P):
        z = Z[q]
        _rods(z, rho[q], base_points, guide_directions, base_q, L, EI, GJ, n_steps, tips[q])
        _assemble(z, tips[q], platform_points, L, EI, GJ, g[q])
        for col in range(43):
            zc[:] = z
            zc[col] += h
            tc[:, :] = tips[q]
            if col < 36:
                k = col // 3 if col < 18 else (col - 18) // 3
                for a in range(3):
                    p0[a] = base_points[k, a] + rho[q, k] * guide_directions[k, a]
                    u0[a] = zc[3 * k + a] / L
                    n[a] = zc[18 + 3 * k + a] * fs
                _integrate_one(p0, base_q[k], u0, n, EI, GJ, L, n_steps, tc[k])
                tips_p[q, col] = tc[k]
            _assemble(zc, tc, platform_points, L, EI, GJ, gc)
            for r in range(43):
                J[q, r, col] = (gc[r] - g[q, r]) / h
    return g, J, tips, tips_p
