"""Small batched rotation helpers (numpy, last axes are the vector/matrix axes)."""

from __future__ import annotations

import numpy as np


_YZX = np.array([1, 2, 0])
_ZXY = np.array([2, 0, 1])


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis, broadcasting the leading axes (faster than np.cross)."""
    return a[..., _YZX] * b[..., _ZXY] - a[..., _ZXY] * b[..., _YZX]


def skew(v: np.ndarray) -> np.ndarray:
    """``[v]×`` for ``v`` of shape ``(..., 3)`` -> ``(..., 3, 3)``."""
    z = np.zeros_like(v[..., 0])
    return np.stack(
        (
            np.stack((z, -v[..., 2], v[..., 1]), axis=-1),
            np.stack((v[..., 2], z, -v[..., 0]), axis=-1),
            np.stack((-v[..., 1], v[..., 0], z), axis=-1),
        ),
        axis=-2,
    )


def _series_coefficients(n_terms: int = 9) -> np.ndarray:
    """Taylor coefficients (in powers of q = θ²) of s, ds/dq, c, dc/dq, shape ``(n_terms, 4)``."""
    from math import factorial

    coef = np.zeros((n_terms, 4))
    for k in range(n_terms):
        sign = -1.0 if k % 2 else 1.0
        coef[k, 0] = sign / factorial(2 * k + 1)
        coef[k, 2] = sign / factorial(2 * k + 2)
        if k + 1 < n_terms:
            sign1 = -1.0 if (k + 1) % 2 else 1.0
            coef[k, 1] = sign1 * (k + 1) / factorial(2 * k + 3)
            coef[k, 3] = sign1 * (k + 1) / factorial(2 * k + 4)
    return coef


_SERIES = _series_coefficients()
_POWERS = np.arange(_SERIES.shape[0])


def bend_functions(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Smooth arc functions of ``q = θ²`` and their derivatives with respect to ``q``.

    Returns ``(s, ds, c, dc)`` with ``s = sin θ / θ`` and ``c = (1 − cos θ) / θ²``; Taylor series
    below θ = 0.5 rad, closed forms above (no cancellation in either range).
    """
    q = np.asarray(q, dtype=float)
    series = (q[..., None] ** _POWERS) @ _SERIES  # (..., 4), exact to ~1e-17 for q < 0.25
    small = q < 0.25
    if np.all(small):
        return series[..., 0], series[..., 1], series[..., 2], series[..., 3]
    th = np.sqrt(np.where(small, 1.0, q))
    sin, cos = np.sin(th), np.cos(th)
    closed = (
        sin / th,
        (th * cos - sin) / (2.0 * th**3),
        2.0 * np.sin(th / 2.0) ** 2 / th**2,
        (th * sin - 2.0 * (1.0 - cos)) / (2.0 * th**4),
    )
    return tuple(np.where(small, series[..., k], closed[k]) for k in range(4))  # type: ignore[return-value]


def bend_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation ``Rz(φ) Ry(θ) Rz(−φ)`` with ``a = θ cos φ``, ``b = θ sin φ`` -> ``(..., 3, 3)``.

    It is the rotation by θ about the in-plane axis ``(−sin φ, cos φ, 0)``, smooth in (a, b).
    """
    s, _, c, _ = bend_functions(a * a + b * b)
    w = np.stack((-b, a, np.zeros_like(a)), axis=-1)
    W = skew(w)
    eye = np.broadcast_to(np.eye(3), W.shape)
    return eye + s[..., None, None] * W + c[..., None, None] * (W @ W)


def matrix_to_quaternion(R: np.ndarray) -> np.ndarray:
    """Batched rotation matrices ``(..., 3, 3)`` -> quaternions ``(..., 4)`` xyzw with ``w ≥ 0``.

    Shepperd's method: each entry uses the largest of ``1 + tr R`` and ``1 + 2 R_ii − tr R``, so no
    branch divides by a small number.
    """
    R00, R11, R22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = R00 + R11 + R22
    cand = np.stack((1.0 + tr, 1.0 + 2 * R00 - tr, 1.0 + 2 * R11 - tr, 1.0 + 2 * R22 - tr), axis=-1)
    k = np.argmax(cand, axis=-1)
    s = 2.0 * np.sqrt(np.take_along_axis(cand, k[..., None], axis=-1)[..., 0])  # 4|component|
    d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
    s01, s02, s12 = R[..., 0, 1] + R[..., 1, 0], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1]
    quats = np.stack((
        np.stack((d21, d02, d10, 0.25 * s * s), axis=-1),  # k = 0: w largest (uses s = 4w)
        np.stack((0.25 * s * s, s01, s02, d21), axis=-1),
        np.stack((s01, 0.25 * s * s, s12, d02), axis=-1),
        np.stack((s02, s12, 0.25 * s * s, d10), axis=-1),
    ), axis=-2)
    q = np.take_along_axis(quats, k[..., None, None], axis=-2)[..., 0, :] / s[..., None]
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., 3:4] < 0, -q, q)


def quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    """Quaternion ``(..., 4)`` ``(x, y, z, w)`` -> rotation matrix ``(..., 3, 3)``."""
    q = np.asarray(q, dtype=float)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        (
            np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)), axis=-1),
            np.stack((2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)), axis=-1),
            np.stack((2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)), axis=-1),
        ),
        axis=-2,
    )


def chain_frames(values, kinds, offsets) -> tuple[np.ndarray, np.ndarray]:
    """Frames of a serial chain of 1-DOF joints, in the chain's base frame.

    Joint ``k`` sits ``offsets[k]`` [m] along the z axis of the previous link's frame and
    moves by ``values[k]``: a rotation [rad] about its z (``"revolute_z"``) or y
    (``"revolute_y"``) axis, or a translation [m] along z (``"prismatic_z"``). Returns the
    child-link frames: positions ``(K, 3)`` and rotations ``(K, 3, 3)``.
    """
    pos, rot = np.zeros(3), np.eye(3)
    positions, rotations = [], []
    for value, kind, offset in zip(values, kinds, offsets):
        pos = pos + rot[:, 2] * offset
        c, s = np.cos(value), np.sin(value)
        if kind == "revolute_z":
            rot = rot @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        elif kind == "revolute_y":
            rot = rot @ np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
        elif kind == "prismatic_z":
            pos = pos + rot[:, 2] * value
        else:
            raise ValueError(f"unknown joint kind {kind!r}")
        positions.append(pos)
        rotations.append(rot)
    return np.array(positions), np.array(rotations)
