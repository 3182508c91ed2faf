"""Collision geometry of soft-arm contact: a backbone segment against primitive shapes (SI units, m).

The arm's body is modelled as capsules along its backbone: segments ``[a, b]`` with a radius. This
module computes, exactly and in closed form, the signed distance from ONE segment (radius 0; the
caller subtracts the arm's radius) to one primitive shape, with the witness points and the contact
normal. The algorithms follow C. Ericson, *Real-Time Collision Detection* (Morgan Kaufmann, 2005):
point–segment (§5.1.2), segment–segment with its degenerate and parallel branches (§5.1.9),
point–box (§5.1.4) and the half-space test (§5.1.1); the code is written for this package.

Packed shape rows (:data:`SHAPE_WIDTH` = 16 float64 entries, a fixed layout other kernels rely on)::

    [kind, px, py, pz, R00, R01, R02, R10, R11, R12, R20, R21, R22, s0, s1, s2]

``p`` is the shape frame's origin and ``R`` (row-major) its rotation, whose columns are the shape's
local axes, both in the frame the segment is given in (world or the arm's base frame). Kinds:
:data:`EMPTY` (an unused slot: distance +inf), :data:`PLANE` (half-space below the local xy plane,
outward normal local +z), :data:`SPHERE` (``s0`` radius), :data:`CAPSULE` (segment ``p ± s1·z``,
radius ``s0``), :data:`BOX` (half-extents ``s0, s1, s2`` along local x, y, z).

The kernel :func:`segment_shape_distance` is allocation-free, exception-free scalar math
(``numba.njit``, each function compiled once and called: numba's own inlining of them made the cold
compile minutes long; LLVM still inlines what pays); its Python source (``py_func``) also compiles
for CUDA, together with its callees listed in :data:`KERNEL_FUNCTIONS` (callees first). Segment–box is exact without
iteration: the signed distance of a convex set is convex along the segment, and its minimum lies at
one of 43 candidate parameters (the two end points; where the segment crosses the 6 face planes and
the 3 coordinate planes; the crossings of the 12 pairs of face-plane distances of different axes;
the closest points to the 12 edge lines and the 8 vertices), each evaluated with the closed-form
point–box signed distance (about 600 flops in all). The orientation of the Python shapes is a
quaternion in PyBullet's ``(x, y, z, w)`` order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numba
import numpy as np
from numpy.typing import ArrayLike

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.exceptions import InvalidParameterError, as_real_array, check_integer, check_positive
from soft_envs.geometry import check_unit_quaternion, matrix_to_quaternion, quaternion_to_matrix

#: numba's options of the kernels (cached on disk; no reference counting needed: scalars and views).
_KERNEL: dict[str, Any] = {"cache": True, "nogil": True, "error_model": "numpy"}

#: Entries of a packed shape row.
SHAPE_WIDTH = 16
#: Kind codes (entry 0 of a row).
EMPTY, PLANE, SPHERE, CAPSULE, BOX = 0, 1, 2, 3, 4

# Below this sin² of the angle between the arm segment and a capsule's axis the two are treated
# as parallel (the distance then varies by < 1e-13 times the segment's length along the overlap).
_PARALLEL_SIN2 = 1e-26


# ----------------------------------------------------------------------------------- kernels
@numba.njit(**_KERNEL)
def _clamp01(x):
    """``x`` clamped to ``[0, 1]`` (NaN -> 0)."""
    if x > 1.0:
        return 1.0
    if x > 0.0:
        return x
    return 0.0


@numba.njit(**_KERNEL)
def _pick(i, x, y, z):
    """Component ``i`` of ``(x, y, z)``."""
    if i == 0:
        return x
    if i == 1:
        return y
    return z


@numba.njit(**_KERNEL)
def _box_signed_distance(x, y, z, hx, hy, hz):
    """Signed distance [m] of the local point ``(x, y, z)`` to the box ``|q_i| ≤ h_i`` (Ericson §5.1.4)."""
    ex, ey, ez = abs(x) - hx, abs(y) - hy, abs(z) - hz
    ox, oy, oz = max(ex, 0.0), max(ey, 0.0), max(ez, 0.0)
    return math.sqrt(ox * ox + oy * oy + oz * oz) + min(max(ex, max(ey, ez)), 0.0)


@numba.njit(**_KERNEL)
def _box_try(s, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz):
    """Keep ``s`` if it lies in ``(0, 1)`` and its signed distance beats ``best`` (strictly)."""
    if s > 0.0 and s < 1.0:
        f = _box_signed_distance(ax + s * dx, ay + s * dy, az + s * dz, hx, hy, hz)
        if f < best:
            return f, s
    return best, best_s


@numba.njit(**_KERNEL)
def _segment_box(ax, ay, az, dx, dy, dz, hx, hy, hz):
    """``(signed distance, s)`` of the segment ``a + s d`` (box frame) to the box of half-extents ``h``.

    Exact minimum of the convex ``f(s)`` over the 43 candidates of the module docstring, in a fixed
    order (the first one of equal minima wins)."""
    best = _box_signed_distance(ax, ay, az, hx, hy, hz)
    best_s = 0.0
    f1 = _box_signed_distance(ax + dx, ay + dy, az + dz, hx, hy, hz)
    if f1 < best:
        best, best_s = f1, 1.0
    for i in range(3):
        ai, di, hi = _pick(i, ax, ay, az), _pick(i, dx, dy, dz), _pick(i, hx, hy, hz)
        if di != 0.0:
            # face planes q_i = ±h_i and the kink q_i = 0 of |q_i| (inside the box)
            best, best_s = _box_try((hi - ai) / di, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz)
            best, best_s = _box_try((-hi - ai) / di, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz)
            best, best_s = _box_try(-ai / di, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz)
        for j in range(i + 1, 3):
            aj, dj, hj = _pick(j, ax, ay, az), _pick(j, dx, dy, dz), _pick(j, hx, hy, hz)
            dd = di * di + dj * dj
            for k in range(4):
                si = 1.0 if k & 1 else -1.0
                sj = 1.0 if k & 2 else -1.0
                # inside: σ_i q_i − h_i = σ_j q_j − h_j (two face distances equal)
                den = si * di - sj * dj
                if den != 0.0:
                    s = ((sj * aj - hj) - (si * ai - hi)) / den
                    best, best_s = _box_try(s, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz)
                # outside: closest to the edge line q_i = σ_i h_i, q_j = σ_j h_j
                if dd > 0.0:
                    s = ((si * hi - ai) * di + (sj * hj - aj) * dj) / dd
                    best, best_s = _box_try(s, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz)
    dd = dx * dx + dy * dy + dz * dz
    if dd > 0.0:
        for k in range(8):  # outside: closest to a vertex
            sx = 1.0 if k & 1 else -1.0
            sy = 1.0 if k & 2 else -1.0
            sz = 1.0 if k & 4 else -1.0
            s = ((sx * hx - ax) * dx + (sy * hy - ay) * dy + (sz * hz - az) * dz) / dd
            best, best_s = _box_try(s, best, best_s, ax, ay, az, dx, dy, dz, hx, hy, hz)
    return best, best_s


@numba.njit(**_KERNEL)
def _point_on_axis(x, y, z, h):
    """Parameter ``t ∈ [0, 1]`` of the point of the segment ``(0, 0, −h) + t (0, 0, 2h)`` closest to ``(x, y, z)``."""
    if h > 0.0:
        return _clamp01((z + h) / (2.0 * h))
    return 0.0


@numba.njit(**_KERNEL)
def _axis_try(s, best, best_s, ax, ay, az, dx, dy, dz, h):
    """Keep ``s ∈ [0, 1]`` if the squared distance of ``a + s d`` to the axis segment beats ``best``."""
    x, y, z = ax + s * dx, ay + s * dy, az + s * dz
    t = _point_on_axis(x, y, z, h)
    w = z - (-h + 2.0 * h * t)
    d2 = x * x + y * y + w * w
    if d2 < best:
        return d2, s
    return best, best_s


@numba.njit(**_KERNEL)
def _segment_axis(ax, ay, az, dx, dy, dz, h):
    """``(squared distance, s)`` of the segment ``a + s d`` to the segment ``(0, 0, ±h)`` (Ericson §5.1.9).

    The minimum over the candidates that contain the optimum (line–line, the projections of the
    axis' end points, the segment's end points; each with the optimal axis point): exact and, near
    parallel, stable in the distance (the line–line parameter from components perpendicular to the
    axis). Parallel segments: the middle of the overlap comes first."""
    a2 = dx * dx + dy * dy + dz * dz
    best, best_s = math.inf, 0.0
    if a2 > 0.0:
        u2 = dx * dx + dy * dy  # the part of d perpendicular to the axis (z)
        if u2 > _PARALLEL_SIN2 * a2:
            s = _clamp01(-(ax * dx + ay * dy) / u2)
        else:  # parallel: the middle of [0, 1] ∩ the axis segment projected onto the segment
            u0 = ((0.0 - ax) * dx + (0.0 - ay) * dy + (-h - az) * dz) / a2
            u1 = ((0.0 - ax) * dx + (0.0 - ay) * dy + (h - az) * dz) / a2
            lo, hi = max(0.0, min(u0, u1)), min(1.0, max(u0, u1))
            s = 0.5 * (lo + hi) if lo <= hi else (0.0 if hi < 0.0 else 1.0)
        best, best_s = _axis_try(s, best, best_s, ax, ay, az, dx, dy, dz, h)
        s = _clamp01(((0.0 - ax) * dx + (0.0 - ay) * dy + (-h - az) * dz) / a2)
        best, best_s = _axis_try(s, best, best_s, ax, ay, az, dx, dy, dz, h)
        s = _clamp01(((0.0 - ax) * dx + (0.0 - ay) * dy + (h - az) * dz) / a2)
        best, best_s = _axis_try(s, best, best_s, ax, ay, az, dx, dy, dz, h)
    best, best_s = _axis_try(0.0, best, best_s, ax, ay, az, dx, dy, dz, h)
    best, best_s = _axis_try(1.0, best, best_s, ax, ay, az, dx, dy, dz, h)
    return best, best_s


@numba.njit(**_KERNEL)
def _perpendicular(dx, dy, dz):
    """A unit vector perpendicular to ``d`` (``d`` ≠ 0; deterministic), or ``(1, 0, 0)`` for ``d`` = 0."""
    if abs(dx) <= abs(dy) and abs(dx) <= abs(dz):  # cross with e_x
        px, py, pz = 0.0, dz, -dy
    elif abs(dy) <= abs(dz):  # cross with e_y
        px, py, pz = -dz, 0.0, dx
    else:  # cross with e_z
        px, py, pz = dy, -dx, 0.0
    n = math.sqrt(px * px + py * py + pz * pz)
    if n > 0.0:
        return px / n, py / n, pz / n
    return 1.0, 0.0, 0.0


@numba.njit(**_KERNEL)
def _write(out, dist, s, row, wx, wy, wz, nx, ny, nz):
    """``out`` from a local witness point ``w`` and normal ``n``: into the segment's frame via ``row``."""
    out[0] = dist
    out[1] = s
    for k in range(3):
        r0, r1, r2 = row[4 + 3 * k], row[5 + 3 * k], row[6 + 3 * k]
        out[2 + k] = row[1 + k] + r0 * wx + r1 * wy + r2 * wz
        out[5 + k] = r0 * nx + r1 * ny + r2 * nz


@numba.njit(**_KERNEL)
def segment_shape_distance(a, b, row, out):
    """Signed distance [m] from the segment ``[a, b]`` (radius 0) to the shape of a packed ``row``.

    ``a``, ``b`` ``(3,)`` [m] and ``row`` ``(16,)`` in the same frame; writes ``out`` ``(8,)``:
    ``out[0]`` the signed distance (negative: minus the penetration depth; +inf for EMPTY or an
    unknown kind, the rest then 0), ``out[1]`` the parameter ``s ∈ [0, 1]`` of the segment's witness
    point ``a + s (b − a)``, ``out[2:5]`` the witness point on the shape's surface [m], ``out[5:8]``
    the unit normal from the shape towards the segment's witness point (for a penetrating segment
    the direction of least penetration). Exact (closed form); no allocation, no exception.
    """
    kind = row[0]
    # the segment in the shape's frame: R^T (a − p), R^T d
    ex, ey, ez = a[0] - row[1], a[1] - row[2], a[2] - row[3]
    fx, fy, fz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    ax = row[4] * ex + row[7] * ey + row[10] * ez
    ay = row[5] * ex + row[8] * ey + row[11] * ez
    az = row[6] * ex + row[9] * ey + row[12] * ez
    dx = row[4] * fx + row[7] * fy + row[10] * fz
    dy = row[5] * fx + row[8] * fy + row[11] * fz
    dz = row[6] * fx + row[9] * fy + row[12] * fz
    if kind == PLANE:
        zb = az + dz
        if az < zb:
            s = 0.0
        elif zb < az:
            s = 1.0
        else:  # parallel: every point is closest, the middle is returned
            s = 0.5
        x, y, z = ax + s * dx, ay + s * dy, az + s * dz
        _write(out, z, s, row, x, y, 0.0, 0.0, 0.0, 1.0)
    elif kind == SPHERE or kind == CAPSULE:
        r = row[13]
        h = row[14] if kind == CAPSULE else 0.0
        d2, s = _segment_axis(ax, ay, az, dx, dy, dz, h)
        x, y, z = ax + s * dx, ay + s * dy, az + s * dz
        c = -h + 2.0 * h * _point_on_axis(x, y, z, h)
        vx, vy, vz = x, y, z - c
        n = math.sqrt(vx * vx + vy * vy + vz * vz)
        if n > 0.0:
            nx, ny, nz = vx / n, vy / n, vz / n
        elif dx * dx + dy * dy > 0.0:  # crossing the axis: perpendicular to both (z × d)
            m = math.sqrt(dx * dx + dy * dy)
            nx, ny, nz = -dy / m, dx / m, 0.0
        elif h > 0.0:  # along the axis: local x
            nx, ny, nz = 1.0, 0.0, 0.0
        else:  # through a sphere's centre: perpendicular to the segment
            nx, ny, nz = _perpendicular(dx, dy, dz)
        _write(out, n - r, s, row, r * nx, r * ny, c + r * nz, nx, ny, nz)
    elif kind == BOX:
        hx, hy, hz = row[13], row[14], row[15]
        dist, s = _segment_box(ax, ay, az, dx, dy, dz, hx, hy, hz)
        x, y, z = ax + s * dx, ay + s * dy, az + s * dz
        cx, cy, cz = min(max(x, -hx), hx), min(max(y, -hy), hy), min(max(z, -hz), hz)
        vx, vy, vz = x - cx, y - cy, z - cz
        n = math.sqrt(vx * vx + vy * vy + vz * vz)
        if n > 0.0:
            _write(out, dist, s, row, cx, cy, cz, vx / n, vy / n, vz / n)
        else:  # inside or on the surface: the face of least penetration (the first of equals)
            ex, ey, ez = abs(x) - hx, abs(y) - hy, abs(z) - hz
            sx = 1.0 if x >= 0.0 else -1.0
            sy = 1.0 if y >= 0.0 else -1.0
            sz = 1.0 if z >= 0.0 else -1.0
            if ex >= ey and ex >= ez:
                _write(out, dist, s, row, sx * hx, y, z, sx, 0.0, 0.0)
            elif ey >= ez:
                _write(out, dist, s, row, x, sy * hy, z, 0.0, sy, 0.0)
            else:
                _write(out, dist, s, row, x, y, sz * hz, 0.0, 0.0, sz)
    else:  # EMPTY or unknown: never in contact
        out[0] = math.inf
        for k in range(1, 8):
            out[k] = 0.0


@numba.njit(**_KERNEL)
def shape_bound_distance(a, b, row):
    """A cheap lower bound [m] of :func:`segment_shape_distance`'s distance (same frame and arguments).

    PLANE and SPHERE exact; CAPSULE and BOX the distance to the bounding sphere about the shape's
    origin; EMPTY (or an unknown kind) +inf. For skipping far pairs."""
    kind = row[0]
    if kind == PLANE:
        za = (a[0] - row[1]) * row[6] + (a[1] - row[2]) * row[9] + (a[2] - row[3]) * row[12]
        zb = (b[0] - row[1]) * row[6] + (b[1] - row[2]) * row[9] + (b[2] - row[3]) * row[12]
        return min(za, zb)
    if kind == SPHERE:
        radius = row[13]
    elif kind == CAPSULE:
        radius = row[13] + row[14]
    elif kind == BOX:
        radius = math.sqrt(row[13] * row[13] + row[14] * row[14] + row[15] * row[15])
    else:
        return math.inf
    ex, ey, ez = a[0] - row[1], a[1] - row[2], a[2] - row[3]
    dx, dy, dz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    dd = dx * dx + dy * dy + dz * dz
    t = _clamp01(-(ex * dx + ey * dy + ez * dz) / dd) if dd > 0.0 else 0.0
    x, y, z = ex + t * dx, ey + t * dy, ez + t * dz
    return math.sqrt(x * x + y * y + z * z) - radius


#: The kernel functions, callees first (what a CUDA build compiles from their ``py_func``).
KERNEL_FUNCTIONS: tuple[str, ...] = (
    "_clamp01", "_pick", "_box_signed_distance", "_box_try", "_segment_box", "_point_on_axis", "_axis_try",
    "_segment_axis", "_perpendicular", "_write", "segment_shape_distance", "shape_bound_distance",
)


# ----------------------------------------------------------------------------------- shapes
def _vector(name: str, value, size: int = 3) -> np.ndarray:
    arr = as_real_array(value, name, InvalidParameterError)
    if arr.shape != (size,):
        raise InvalidParameterError(f"{name} must have shape ({size},); got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be finite; got {arr}")
    return arr


def _direction(name: str, value) -> np.ndarray:
    arr = _vector(name, value)
    norm = float(np.linalg.norm(arr))
    if not norm > 0.0:
        raise InvalidParameterError(f"{name} must be a non-zero direction; got {arr}")
    return arr / norm


def _quaternion(name: str, value) -> np.ndarray:
    """A quaternion ``(x, y, z, w)`` (PyBullet's order) of unit norm within 1e-6, normalised exactly."""
    arr = _vector(name, value, 4)
    try:
        arr = check_unit_quaternion(arr, what=name)
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None
    return arr / np.linalg.norm(arr)


def _frame_with_z(axis: np.ndarray) -> np.ndarray:
    """A rotation matrix whose third column is the unit ``axis`` (deterministic first two columns)."""
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return np.column_stack((x, np.cross(axis, x), axis))


def _row(kind: int, origin, rotation: np.ndarray, sizes=(0.0, 0.0, 0.0)) -> np.ndarray:
    row = np.zeros(SHAPE_WIDTH)
    row[0] = kind
    row[1:4] = origin
    row[4:13] = np.asarray(rotation, dtype=float).reshape(9)
    row[13:13 + len(sizes)] = sizes
    return row


def _tuple(arr: np.ndarray) -> tuple[float, ...]:
    return tuple(float(v) for v in arr)


@dataclass(frozen=True)
class Plane:
    """The half-space below a plane: ``point`` [m] on its surface, outward unit ``normal`` (any
    non-zero length given; stored normalised); the solid lies on the side opposite the normal."""

    point: ArrayLike
    normal: ArrayLike

    def __post_init__(self) -> None:
        object.__setattr__(self, "point", _tuple(_vector("Plane.point", self.point)))
        object.__setattr__(self, "normal", _tuple(_direction("Plane.normal", self.normal)))

    def row(self) -> np.ndarray:
        """The packed row (:data:`PLANE`; local +z = the normal)."""
        return _row(PLANE, self.point, _frame_with_z(np.array(self.normal)))


@dataclass(frozen=True)
class Sphere:
    """A ball: ``center`` [m], ``radius`` [m] > 0."""

    center: ArrayLike
    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _tuple(_vector("Sphere.center", self.center)))
        object.__setattr__(self, "radius", check_positive("Sphere.radius", self.radius))

    def row(self) -> np.ndarray:
        """The packed row (:data:`SPHERE`, identity rotation)."""
        return _row(SPHERE, self.center, np.eye(3), (self.radius,))


@dataclass(frozen=True)
class Capsule:
    """A capsule: the segment ``center ± half_length · axis`` [m] swept by a ball of ``radius`` [m].

    Give either ``axis`` (a non-zero direction, stored normalised) or ``orientation``, a unit
    quaternion in PyBullet's ``(x, y, z, w)`` order whose local z is the axis (PyBullet's capsule
    convention, ``height = 2 · half_length``); the other one is filled in. ``half_length`` ≥ 0.
    """

    center: ArrayLike
    axis: ArrayLike | None = None
    half_length: float = 0.0
    radius: float = 0.0
    orientation: ArrayLike | None = field(default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _tuple(_vector("Capsule.center", self.center)))
        if (self.axis is None) == (self.orientation is None):
            raise InvalidParameterError("Capsule needs exactly one of axis and orientation (x, y, z, w)")
        if self.orientation is not None:
            quat = _quaternion("Capsule.orientation", self.orientation)
            axis = quaternion_to_matrix(quat)[:, 2]
        else:
            axis = _direction("Capsule.axis", self.axis)
            quat = matrix_to_quaternion(_frame_with_z(axis))
        object.__setattr__(self, "axis", _tuple(axis / np.linalg.norm(axis)))
        object.__setattr__(self, "orientation", _tuple(quat))
        half = self.half_length
        if not (isinstance(half, (int, float, np.floating, np.integer)) and not isinstance(half, bool)
                and math.isfinite(half) and half >= 0):
            raise InvalidParameterError(f"Capsule.half_length must be a finite number >= 0; got {half!r}")
        object.__setattr__(self, "half_length", float(half))
        object.__setattr__(self, "radius", check_positive("Capsule.radius", self.radius))

    def rotation(self) -> np.ndarray:
        """The rotation matrix ``(3, 3)`` of :attr:`orientation` (local z = :attr:`axis`)."""
        return quaternion_to_matrix(np.array(self.orientation))

    def row(self) -> np.ndarray:
        """The packed row (:data:`CAPSULE`)."""
        return _row(CAPSULE, self.center, self.rotation(), (self.radius, self.half_length))


@dataclass(frozen=True)
class Box:
    """A box: ``center`` [m], ``half_extents`` [m] > 0 along its local x, y, z, ``orientation`` a
    unit quaternion in PyBullet's ``(x, y, z, w)`` order (local axes in the reference frame)."""

    center: ArrayLike
    half_extents: ArrayLike
    orientation: ArrayLike = (0.0, 0.0, 0.0, 1.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _tuple(_vector("Box.center", self.center)))
        half = _vector("Box.half_extents", self.half_extents)
        object.__setattr__(self, "half_extents", tuple(check_positive(f"Box.half_extents[{k}]", float(v))
                                                       for k, v in enumerate(half)))
        object.__setattr__(self, "orientation", _tuple(_quaternion("Box.orientation", self.orientation)))

    def rotation(self) -> np.ndarray:
        """The rotation matrix ``(3, 3)`` of :attr:`orientation`."""
        return quaternion_to_matrix(np.array(self.orientation))

    def row(self) -> np.ndarray:
        """The packed row (:data:`BOX`)."""
        return _row(BOX, self.center, self.rotation(), self.half_extents)


#: A primitive shape of the Python side.
Shape = Plane | Sphere | Capsule | Box


def shape_rows(shapes: Sequence[Shape | None], slots: int | None = None) -> np.ndarray:
    """The packed rows ``(S, 16)`` of ``shapes`` (``None`` an EMPTY row), padded with EMPTY rows to
    ``slots`` (``S = slots``, or ``len(shapes)`` when ``slots`` is None)."""
    shapes = list(shapes)
    count = len(shapes) if slots is None else check_integer("slots", slots, minimum=len(shapes))
    rows = np.zeros((count, SHAPE_WIDTH))
    for k, shape in enumerate(shapes):
        if shape is None:
            continue
        if not isinstance(shape, (Plane, Sphere, Capsule, Box)):
            raise InvalidParameterError(f"shapes[{k}] must be a Plane, Sphere, Capsule or Box; got {shape!r}")
        rows[k] = shape.row()
    return rows


def _check_row(row) -> np.ndarray:
    arr = _vector("row", row, SHAPE_WIDTH)
    kind = arr[0]
    if kind not in (EMPTY, PLANE, SPHERE, CAPSULE, BOX):
        raise InvalidParameterError(f"row[0] must be a shape kind 0..4; got {kind}")
    if kind != EMPTY:
        R = arr[4:13].reshape(3, 3)
        if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise InvalidParameterError("row[4:13] must be a rotation matrix (row-major)")
    return arr


def shape_from_row(row) -> Shape | None:
    """The shape of a packed row ``(16,)`` (``None`` for an EMPTY row); inverse of ``.row()``."""
    arr = _check_row(row)
    kind, origin, R = int(arr[0]), arr[1:4], arr[4:13].reshape(3, 3)
    if kind == PLANE:
        return Plane(origin, R[:, 2])
    if kind == SPHERE:
        return Sphere(origin, float(arr[13]))
    if kind == CAPSULE:
        return Capsule(origin, half_length=float(arr[14]), radius=float(arr[13]),
                       orientation=matrix_to_quaternion(R))
    if kind == BOX:
        return Box(origin, arr[13:16], matrix_to_quaternion(R))
    return None


class ClosestPoints(NamedTuple):
    """The result of :func:`closest_points` (all in the segment's frame, SI units)."""

    distance: float  #: signed distance [m] (negative: minus the penetration depth)
    s: float  #: parameter in [0, 1] of the segment's witness point a + s (b − a)
    point_on_shape: np.ndarray  #: witness point on the shape's surface [m], (3,)
    normal: np.ndarray  #: unit normal from the shape towards the segment's witness point, (3,)
    point_on_segment: np.ndarray  #: the segment's witness point a + s (b − a) [m], (3,)


def closest_points(a, b, shape: Shape | np.ndarray) -> ClosestPoints:
    """Closest points of the segment ``[a, b]`` (``(3,)`` [m] each, radius 0) and ``shape`` (a shape
    object or a packed row, in the same frame): :func:`segment_shape_distance` with checked inputs."""
    a_arr, b_arr = _vector("a", a), _vector("b", b)
    row = shape.row() if isinstance(shape, (Plane, Sphere, Capsule, Box)) else _check_row(shape)
    out = np.empty(8)
    segment_shape_distance(a_arr, b_arr, row, out)
    s = float(out[1])
    return ClosestPoints(float(out[0]), s, out[2:5].copy(), out[5:8].copy(), a_arr + s * (b_arr - a_arr))


def capsule_distance(a, b, radius: float, shape: Shape | np.ndarray) -> ClosestPoints:
    """:func:`closest_points` of the arm capsule ``[a, b]`` of ``radius`` [m] > 0: the distance is the
    segment's minus ``radius``; ``point_on_segment`` stays on the backbone (the capsule's surface
    point is ``point_on_segment − radius · normal``)."""
    r = check_positive("radius", radius)
    result = closest_points(a, b, shape)
    return result._replace(distance=result.distance - r)
