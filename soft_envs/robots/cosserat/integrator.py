"""The rod ODE and its RK4 integrator, with the scalar-first quaternion state of seed 002.

A private numerical detail of :mod:`soft_envs.robots.cosserat`: the state carries the
orientation as ``q = (w, x, y, z)`` (scalar first, as in the seed's eq. 11) and ``R(q)`` uses the
``2/|q|²`` form, so drift of ``|q|`` never shears the frame. Every public quaternion of the
package is ``(x, y, z, w)``; :func:`to_xyzw` and :func:`to_wxyz` convert at the boundary.

Frames and units (SI): arc length ``s`` [m]; centreline ``p`` [m] and internal force ``n`` [N]
in the world frame; curvature/twist ``u`` [1/m] in the body frame; ``E`` the elastic energy [J].

    p' = R e3        q' = ½ q ⊗ (0, u)        u' = −K⁻¹(u × K u + e3 × Rᵀ n)        E' = ½ uᵀ K u
"""

from __future__ import annotations

import numpy as np

import soft_envs.robots.cosserat.compiled as compiled
from soft_envs.geometry import quaternion_conjugate, quaternion_multiply

#: Rows of the stacked state ``(p, q, u, E)`` (``q`` scalar first).
POSITION, QUATERNION, CURVATURE, ENERGY = slice(0, 3), slice(3, 7), slice(7, 10), 10
#: The identity orientation in the integrator's scalar-first order ``(w, x, y, z)``.
IDENTITY_WXYZ = np.array([1.0, 0.0, 0.0, 0.0])


def to_xyzw(q: np.ndarray) -> np.ndarray:
    """Scalar-first quaternions ``(..., 4)`` ``(w, x, y, z)`` -> ``(x, y, z, w)`` (a copy)."""
    return np.asarray(q)[..., [1, 2, 3, 0]]


def to_wxyz(q: np.ndarray) -> np.ndarray:
    """Quaternions ``(..., 4)`` ``(x, y, z, w)`` -> scalar-first ``(w, x, y, z)`` (a copy)."""
    return np.asarray(q)[..., [3, 0, 1, 2]]


def rotation_matrix_wxyz(q: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(..., 3, 3)`` of scalar-first quaternions ``(..., 4)`` ``(w, x, y, z)``.

    The seed's eq. 11 with ``2/|q|²``: ``q`` need not be unit (``R(c q) = R(q)``).
    """
    q = np.asarray(q, dtype=float)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return np.stack((
        np.stack((1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)), axis=-1),
        np.stack((s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)), axis=-1),
        np.stack((s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)), axis=-1),
    ), axis=-2)


def rotation_variation_wxyz(dq: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``2 vec(δq ⊗ q*)`` ``(..., 3)`` [rad]: the rotation vector (world frame) of a variation ``δq``
    of a unit quaternion ``q``, both scalar first ``(w, x, y, z)`` (integrator states)."""
    return 2.0 * quaternion_multiply(to_xyzw(dq), quaternion_conjugate(to_xyzw(q)))[..., :3]


def _derivative(Y: np.ndarray, n: np.ndarray, EI: float, GJ: float) -> np.ndarray:
    """``dY/ds`` for the stacked state ``Y = (p, q, u, E)`` of shape ``(11, B)``; ``n`` is ``(3, B)``.

    ``R(q)`` is the seed's eq. 11 (with ``2/|q|²``). Written as few numpy calls on rows of
    length ``B``: the cost is per call, not per rod, so batches of rods are almost free.
    """
    w, x, y, z = Y[3], Y[4], Y[5], Y[6]
    ux, uy, uz = Y[7], Y[8], Y[9]
    n1, n2, n3 = n[0], n[1], n[2]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    wx, wy, wz = w * x, w * y, w * z
    xx, xy, xz, yy, yz, zz = x * x, x * y, x * z, y * y, y * z, z * z
    dY = np.empty_like(Y)
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
    return dY


def integrate_rods(p0: np.ndarray, q0: np.ndarray, u0: np.ndarray, n: np.ndarray, *, EI: float, GJ: float,
                   length: float, n_steps: int, store: bool = False) -> np.ndarray:
    """Integrate a batch of ``B`` Kirchhoff rods from ``s = 0`` to ``s = length`` with RK4.

    Args:
        p0: base positions ``(B, 3)`` [m], world frame.
        q0: base orientations ``(B, 4)``, scalar first ``(w, x, y, z)``.
        u0: base curvatures ``(B, 3)`` [1/m], body frame.
        n: internal forces ``(B, 3)`` [N], world frame (constant along each rod).
        EI, GJ: bending and torsional stiffness [N m²]; length [m]; n_steps: RK4 steps (>= 1).
        store: return every station (``(n_steps + 1, 11, B)``) instead of the tip only (``(11, B)``).

    The state rows are ``p (0:3), q (3:7) (w, x, y, z), u (7:10), E (10)``. Without ``store`` the
    compiled kernel (:mod:`~soft_envs.robots.cosserat.compiled`, the same arithmetic) runs when enabled.
    """
    if not store and compiled.enabled():
        return compiled.integrate_tips(*compiled.arrays(p0, q0, u0, n), float(EI), float(GJ), float(length),
                                       int(n_steps))
    B = p0.shape[0]
    Y = np.empty((11, B))
    Y[0:3] = p0.T
    Y[3:7] = q0.T
    Y[7:10] = u0.T
    Y[10] = 0.0
    nT = np.ascontiguousarray(n.T)
    h = length / n_steps
    out = np.empty((n_steps + 1, 11, B)) if store else None
    if store:
        out[0] = Y
    for k in range(n_steps):
        k1 = _derivative(Y, nT, EI, GJ)
        k2 = _derivative(Y + (0.5 * h) * k1, nT, EI, GJ)
        k3 = _derivative(Y + (0.5 * h) * k2, nT, EI, GJ)
        k4 = _derivative(Y + h * k3, nT, EI, GJ)
        Y = Y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
        if store:
            out[k + 1] = Y
    return out if store else Y
