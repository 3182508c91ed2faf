"""Rotations and frames: the one geometry module of soft_envs (numpy, batched over leading axes).

Conventions, named in every function:

* **Quaternions are ``(x, y, z, w)``** — PyBullet's order — everywhere in the package's public
  API and observations. Functions return unit quaternions with ``w >= 0`` where a sign is chosen.
* **Rotation matrices** ``R`` map vectors of the rotated (body) frame into the reference frame:
  ``v_ref = R @ v_body``; the last two axes are the matrix axes.
* **Roll, pitch, yaw** [rad] are the fixed-axis ``x–y–z`` angles of URDF ``rpy`` and of the
  quadruped seed: ``R = Rz(yaw) Ry(pitch) Rx(roll)``.
* **Rotation vectors** ``θ n`` [rad]: axis ``n`` times angle ``θ``.

Nothing here imports from the rest of the package: it is the bottom layer
(``geometry → robots → sim → envs``).
"""

from __future__ import annotations

import math

import numpy as np

#: Standard gravity [m/s²], along the world's −z in every simulation of the package.
STANDARD_GRAVITY = 9.81

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
    factorial = math.factorial
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


# ---------------------------------------------------------------------------------------------
# Quaternions (x, y, z, w)
# ---------------------------------------------------------------------------------------------
def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` of quaternions ``(..., 4)`` in ``(x, y, z, w)`` order."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    vec = aw * bv + bw * av + cross(av, bv)
    return np.concatenate((vec, aw * bw - np.sum(av * bv, axis=-1, keepdims=True)), axis=-1)


def quaternion_conjugate(q: np.ndarray) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion) of ``(..., 4)`` quaternions ``(x, y, z, w)``."""
    return np.asarray(q, dtype=float) * np.array([-1.0, -1.0, -1.0, 1.0])


def quaternion_from_rotation_vector(rotation_vector: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(x, y, z, w)`` of rotation vectors ``(..., 3)`` [rad]."""
    v = np.asarray(rotation_vector, dtype=float)
    th = np.linalg.norm(v, axis=-1, keepdims=True)
    k = np.where(th > 1e-12, np.sin(0.5 * th) / np.where(th > 1e-12, th, 1.0), 0.5)
    return np.concatenate((k * v, np.cos(0.5 * th)), axis=-1)


def rotation_vector_error(q_desired: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Rotation vector [rad] of ``q_desired ⊗ q⁻¹`` the short way (quaternions ``(..., 4)`` ``(x, y, z, w)``).

    Its norm is the angle between the two orientations, its direction the axis (reference frame)
    that turns ``q`` into ``q_desired``.
    """
    d = quaternion_multiply(q_desired, quaternion_conjugate(q))
    d = np.where(d[..., 3:] < 0, -d, d)
    v = d[..., :3]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, d[..., 3:])
    return np.where(s > 1e-12, v / np.maximum(s, 1e-300) * angle, 2.0 * v)


def quaternion_error(R_desired: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, float]:
    """The quaternion orientation error of seed 003 from two rotation matrices ``(3, 3)``.

    Returns ``(ε, angle)``: ``ε`` the vector part ``(x, y, z)`` of ``Q_d ∗ Q⁻¹`` with the sign that
    makes its scalar part ``w ≥ 0`` (``ε ≈ θ n / 2`` near the goal) and the error rotation's angle
    ``θ`` [rad]. Exact near zero and near π (Shepperd's method there).
    """
    Re = R_desired @ R.T
    tr = Re[0, 0] + Re[1, 1] + Re[2, 2]
    vex = np.array((Re[2, 1] - Re[1, 2], Re[0, 2] - Re[2, 0], Re[1, 0] - Re[0, 1]))
    if tr > -0.5:  # w ≥ 0.35: no cancellation in ε = vex / 4w
        w = 0.5 * math.sqrt(1.0 + tr)
        eps = vex / (4.0 * w)
    else:
        quat = matrix_to_quaternion(Re)
        eps, w = quat[:3], float(quat[3])
    return eps, 2.0 * math.atan2(math.sqrt(float(eps @ eps)), w)


def quaternion_errors(R_desired: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`quaternion_error` of a batch: rotation matrices ``(k, 3, 3)`` -> ``ε`` ``(k, 3)`` (vector
    part ``(x, y, z)`` of ``Q_d ∗ Q⁻¹`` with ``w ≥ 0``) and the angles ``(k,)`` [rad] (Shepperd's
    method near a half turn)."""
    E = R_desired @ R.transpose(0, 2, 1)
    flat = E.reshape(len(E), 9)
    trace = flat[:, 0] + flat[:, 4] + flat[:, 8]
    vex = flat[:, [7, 2, 3]] - flat[:, [5, 6, 1]]  # (E21 − E12, E02 − E20, E10 − E01)
    w = 0.5 * np.sqrt(np.maximum(1.0 + trace, 0.0))
    far = trace <= -0.5
    eps = vex / (4.0 * np.where(far, 1.0, w))[:, None]
    if far.any():
        quat = matrix_to_quaternion(E[far])
        eps[far], w[far] = quat[:, :3], quat[:, 3]
    return eps, 2.0 * np.arctan2(np.sqrt(np.einsum("ki,ki->k", eps, eps)), w)


def check_unit_quaternion(quaternion: np.ndarray, *, what: str = "quaternion", tol: float = 1e-6) -> np.ndarray:
    """``quaternion`` ``(4,)`` ``(x, y, z, w)`` as a float array; ``ValueError`` unless it is finite with
    unit norm within ``tol`` (a non-unit quaternion is usually a wrong order or a typo, so it is
    never normalised silently)."""
    arr = np.asarray(quaternion, dtype=float)
    if arr.shape != (4,):
        raise ValueError(f"{what} must be a quaternion (x, y, z, w) of shape (4,); got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} (x, y, z, w) has NaN/inf: {arr}")
    norm = float(np.linalg.norm(arr))
    if abs(norm - 1.0) > tol:
        raise ValueError(f"{what} (x, y, z, w) must have unit norm (within {tol:g}); got norm {norm:.9g}")
    return arr


# ---------------------------------------------------------------------------------------------
# Roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)
# ---------------------------------------------------------------------------------------------
def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """``Rz(yaw) Ry(pitch) Rx(roll)`` ``(3, 3)`` for angles [rad] (URDF ``rpy``; body axes in the world)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def quaternion_to_rpy(quaternion: np.ndarray) -> np.ndarray:
    """``(roll, pitch, yaw)`` [rad] of a unit quaternion ``(x, y, z, w)``, ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    x, y, z, w = np.asarray(quaternion, dtype=float)
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.array([roll, pitch, yaw])


def quaternion_yaw(quaternion: np.ndarray) -> float:
    """Yaw [rad] (rotation about the world ``z``) of a unit quaternion ``(x, y, z, w)``."""
    x, y, z, w = np.asarray(quaternion, dtype=float)
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def rotation_angle(R_a: np.ndarray, R_b: np.ndarray) -> float:
    """Angle [rad] of the rotation ``R_aᵀ R_b`` (the geodesic distance of two rotation matrices).

    ``atan2(sin, cos)`` from the skew and the trace parts: accurate near 0, where the usual
    ``arccos((tr − 1)/2)`` loses half the digits.
    """
    m = R_a.T @ R_b
    sin = 0.5 * np.sqrt((m[2, 1] - m[1, 2]) ** 2 + (m[0, 2] - m[2, 0]) ** 2 + (m[1, 0] - m[0, 1]) ** 2)
    cos = 0.5 * (np.trace(m) - 1.0)
    return float(np.arctan2(sin, cos))
