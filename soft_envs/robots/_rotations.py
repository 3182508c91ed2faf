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


def bend_quaternion(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion ``(x, y, z, w)`` of :func:`bend_rotation` (scalar part ≥ 0)."""
    theta = np.sqrt(a * a + b * b)
    half = 0.5 * theta
    # sin(θ/2)/θ, smooth at 0
    k = np.where(theta > 1e-8, np.sin(half) / np.where(theta > 1e-8, theta, 1.0), 0.5 - theta**2 / 48.0)
    return np.stack((-b * k, a * k, np.zeros_like(a), np.cos(half)), axis=-1)


def matrix_to_quaternion(R: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` -> quaternion ``(x, y, z, w)`` with ``w ≥ 0``."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R)
    if tr > 0:
        S = np.sqrt(tr + 1.0) * 2
        q = np.array([(R[2, 1] - R[1, 2]) / S, (R[0, 2] - R[2, 0]) / S, (R[1, 0] - R[0, 1]) / S, 0.25 * S])
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        S = np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2
        q = np.array([0.25 * S, (R[0, 1] + R[1, 0]) / S, (R[0, 2] + R[2, 0]) / S, (R[2, 1] - R[1, 2]) / S])
    elif R[1, 1] > R[2, 2]:
        S = np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2
        q = np.array([(R[0, 1] + R[1, 0]) / S, 0.25 * S, (R[1, 2] + R[2, 1]) / S, (R[0, 2] - R[2, 0]) / S])
    else:
        S = np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2
        q = np.array([(R[0, 2] + R[2, 0]) / S, (R[1, 2] + R[2, 1]) / S, 0.25 * S, (R[1, 0] - R[0, 1]) / S])
    q /= np.linalg.norm(q)
    return q if q[3] >= 0 else -q


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
