"""PETER's tip for a batch of arms, written column by column (structure of arrays).

The fused float path of one configuration (:mod:`soft_envs.robots.peter_single`) applied to numpy
columns: every quantity of that straight-line arithmetic is a ``(B,)`` array, one entry per arm,
so a batch costs a few dozen numpy calls per module whatever ``B`` (about 0.1 µs per arm and
module at ``B = 4096``, against ~1.2 µs for :meth:`Peter.module_points`' matrix form, which also
builds the arc's rotation matrices and Jacobian machinery). The arithmetic is the single path's,
operation for operation, so the two agree to the last bits of ``sin``/``sqrt``
(``tests/robots/test_peter_columns.py``: 1e-15 m).

Every arm may have its own leg-circle radius (the realism's ``radius_error``): the parameters
that depend on it (the PCC map from leg lengths to ``(L, a, b)``, the tilted model's leg feet)
are columns too. Units: inflation times [s], lengths [m]; frame: each arm's base frame.
"""

from __future__ import annotations

import numpy as np


def pcc_tip_columns(q_from_l: list[list], rest: float, rate: float, gap: float, t: np.ndarray) -> np.ndarray:
    """Tips ``(B, 3)`` [m] of the PCC kinematics for inflation times ``t`` ``(B, 3N)`` [s].

    ``q_from_l``: the 3×3 map from a module's leg lengths to ``(L, a, b)``, each entry a float
    or a ``(B,)`` column (per-arm radius).
    """
    n = t.shape[1]
    (q00, q01, q02), (q10, q11, q12), (q20, q21, q22) = q_from_l
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    for i in range(0, n, 3):
        l0, l1, l2 = rest + rate * t[:, i], rest + rate * t[:, i + 1], rest + rate * t[:, i + 2]
        L = l0 * q00 + l1 * q01 + l2 * q02
        a = l0 * q10 + l1 * q11 + l2 * q12
        b = l0 * q20 + l1 * q21 + l2 * q22
        q = a * a + b * b
        bent = q > 0.0
        th = np.sqrt(q)
        half = np.sin(0.5 * th)
        with np.errstate(divide="ignore", invalid="ignore"):  # straight arms take the limits 1 and 1/2
            s = np.where(bent, np.sin(th) / th, 1.0)
            c = np.where(bent, 2.0 * half * half / q, 0.5)
        Lc = L * c
        ex, ey, ez = Lc * a, Lc * b, L * s  # arc end in the module frame
        tx = px + r00 * ex + r01 * ey + r02 * ez
        ty = py + r10 * ex + r11 * ey + r12 * ez
        tz = pz + r20 * ex + r21 * ey + r22 * ez
        if i == n - 3:  # the tip: no frame above it
            break
        # R ← R · (I + s W + c W²), W = [(−b, a, 0)]×
        cab, sa, sb = c * a * b, s * a, s * b
        m00, m11, m22 = 1.0 - c * a * a, 1.0 - c * b * b, 1.0 - c * q
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            r00 * m00 - r01 * cab - r02 * sa, r01 * m11 - r00 * cab - r02 * sb, r00 * sa + r01 * sb + r02 * m22,
            r10 * m00 - r11 * cab - r12 * sa, r11 * m11 - r10 * cab - r12 * sb, r10 * sa + r11 * sb + r12 * m22,
            r20 * m00 - r21 * cab - r22 * sa, r21 * m11 - r20 * cab - r22 * sb, r20 * sa + r21 * sb + r22 * m22)
        px, py, pz = tx + gap * r02, ty + gap * r12, tz + gap * r22
    return np.stack((tx, ty, tz), axis=-1)


def tilted_tip_columns(feet: list[list], rest: float, rate: float, gap: float, t: np.ndarray) -> np.ndarray:
    """Tips ``(B, 3)`` [m] of the tilted-plane model (paper eqs. 2–5) for inflation times ``t``
    ``(B, 3N)`` [s]; ``feet``: the first module's leg feet (3 legs × xyz), each a float or a
    ``(B,)`` column."""
    n = t.shape[1]
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = feet
    nx, ny, nz = 0.0, 0.0, 1.0
    third = 1.0 / 3.0
    for i in range(0, n, 3):
        l0, l1, l2 = rest + rate * t[:, i], rest + rate * t[:, i + 1], rest + rate * t[:, i + 2]
        ax, ay, az = ax + l0 * nx, ay + l0 * ny, az + l0 * nz
        bx, by, bz = bx + l1 * nx, by + l1 * ny, bz + l1 * nz
        cx, cy, cz = cx + l2 * nx, cy + l2 * ny, cz + l2 * nz
        if i == n - 3:
            break
        ux, uy, uz = bx - ax, by - ay, bz - az
        vx, vy, vz = cx - ax, cy - ay, cz - az
        mx, my, mz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        norm = np.sqrt(mx * mx + my * my + mz * mz)
        mx, my, mz = mx / norm, my / norm, mz / norm
        gx, gy, gz = gap * mx, gap * my, gap * mz
        ax, ay, az, bx, by, bz, cx, cy, cz = (ax + gx, ay + gy, az + gz, bx + gx, by + gy, bz + gz,
                                              cx + gx, cy + gy, cz + gz)
        nx, ny, nz = mx, my, mz
    return np.stack(((ax + bx + cx) * third, (ay + by + cy) * third, (az + bz + cz) * third), axis=-1)
