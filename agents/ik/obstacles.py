"""Obstacles for the IK solvers: the body's distances to them, their Jacobians and a barrier.

The body of a soft arm (:class:`~soft_envs.robots.base.BodyBackbone`: PETER, the PCC arms) is
capsules of radius ``model.body_radius`` on the segments of its backbone ``model.backbone(q)``.
The obstacles are packed shape rows of :mod:`soft_envs.collision` (``(S, 16)``, in the model's
base frame; ``EMPTY`` rows are no obstacle) or shapes with a ``row()``. For every backbone segment
``k`` and obstacle ``j`` the kernel :func:`soft_envs.collision.segment_shape_distance` gives the
signed distance of the segment to the shape's surface, the witness ``s`` on the segment and the
unit normal ``n̂`` from the shape towards the segment; the capsule's distance is that minus the
body radius,

    ``d_kj(q) = dist(segment_k(q), shape_j) − r``,   ``∂d_kj/∂q = n̂ᵀ ((1 − s) ∂p_k/∂q + s ∂p_{k+1}/∂q)``

(the witness's own motion along the surfaces does not change the distance to first order).
:func:`~soft_envs.agents.ik.sqp` keeps ``d_kj(q) − clearance ≥ 0`` as SLSQP inequality
constraints; :func:`~soft_envs.agents.ik.trr` adds the :func:`barrier` of every pair as extra
least-squares residuals. Units: metres, the model's base frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from soft_envs.collision import BOX, CAPSULE, EMPTY, PLANE, SHAPE_WIDTH, SPHERE, segment_shape_distance
from soft_envs.exceptions import InvalidParameterError, check_finite, check_positive
from soft_envs.robots.base import BodyBackbone, KinematicModel

#: The default minimum distance [m] between the body's surface and every obstacle.
DEFAULT_CLEARANCE = 2e-3
#: The default influence band [m] of TRR's barrier beyond the clearance (no barrier beyond it).
DEFAULT_INFLUENCE = 1e-2
#: Slack [m] on the clearance within which a solution still counts as keeping it (SLSQP's and the
#: barrier's iterates land on the clearance to about this).
CLEARANCE_SLACK = 1e-6
_KINDS = (EMPTY, PLANE, SPHERE, CAPSULE, BOX)
_BARRIER_KNEE = 0.9  # beyond x = 0.9 of the band the barrier continues along its tangent


def obstacle_rows(obstacles: Any) -> np.ndarray:
    """The non-empty obstacle rows ``(S, 16)`` of ``obstacles``: ``None``, a sequence of shapes (with
    ``row()``), or packed rows ``(S, 16)`` / ``(16,)``; ``EMPTY`` rows dropped.

    Raises :class:`~soft_envs.exceptions.InvalidParameterError` (a ``ValueError``) for a wrong
    shape, a non-finite value, an unknown kind, a rotation that is not one (orthonormal to 1e-6,
    determinant +1) or a size that is not positive (sphere and capsule radius, box half extents;
    a capsule's half length ``>= 0``).
    """
    if obstacles is None:
        return np.zeros((0, SHAPE_WIDTH))
    if not isinstance(obstacles, np.ndarray) and isinstance(obstacles, Sequence) and obstacles \
            and all(hasattr(shape, "row") for shape in obstacles):
        obstacles = [shape.row() for shape in obstacles]
    try:
        rows = np.array(obstacles, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"obstacles must be shapes or packed rows (S, {SHAPE_WIDTH}); "
                                    f"got {obstacles!r}") from None
    if rows.size == 0:
        return np.zeros((0, SHAPE_WIDTH))
    if rows.ndim == 1:
        rows = rows[None]
    if rows.ndim != 2 or rows.shape[1] != SHAPE_WIDTH:
        raise InvalidParameterError(f"obstacle rows must have shape (S, {SHAPE_WIDTH}); got {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise InvalidParameterError("obstacle rows must be finite")
    kinds = rows[:, 0]
    if not np.all(np.isin(kinds, _KINDS)):
        raise InvalidParameterError(f"obstacle kinds must be one of {_KINDS}; got {np.unique(kinds).tolist()}")
    rows = rows[kinds != EMPTY]
    for row in rows:
        rotation = row[4:13].reshape(3, 3)
        if np.abs(rotation.T @ rotation - np.eye(3)).max() > 1e-6 or np.linalg.det(rotation) < 0:
            raise InvalidParameterError(f"obstacle rotation is not a rotation matrix: {rotation.tolist()}")
        kind, size = int(row[0]), row[13:16]
        bad = {SPHERE: not size[0] > 0, CAPSULE: not (size[0] > 0 and size[1] >= 0),
               BOX: not np.all(size > 0)}.get(kind, False)
        if bad:
            raise InvalidParameterError(f"obstacle of kind {kind} has a bad size {size.tolist()} [m]")
    return rows


def check_clearance(clearance: float) -> float:
    """The clearance [m] as a float: a finite number ``>= 0``."""
    value = check_finite("clearance [m]", clearance)
    if value < 0:
        raise InvalidParameterError(f"clearance must be >= 0 m; got {clearance!r}")
    return value


def check_influence(influence: float) -> float:
    """The barrier's influence band [m] as a float: a finite number ``> 0``."""
    return check_positive("influence [m]", influence)


def barrier(d: np.ndarray, clearance: float, influence: float) -> tuple[np.ndarray, np.ndarray]:
    """TRR's barrier residual of distances ``d`` [m] and its derivative ``dr/dd``.

    With ``x = (clearance + influence − d) / influence`` (0 at the edge of the band, 1 on the
    clearance): ``r = 0`` for ``x <= 0`` (no force beyond the influence distance), ``r = w x² / (1 − x)``
    in the band — zero with zero slope at its edge (C¹), growing without bound towards the clearance
    as a barrier does — and, past ``x = 0.9``, its tangent line, so that a start in collision still
    has a finite residual and a gradient out of the obstacle. ``w = influence`` [m] (the residual
    is in metres, as the tip's): the barrier outweighs a tip miss of ``w`` at ``x ≈ 0.6``.
    (After Drake's minimum-distance penalty — a smoothed hinge of the same normalised ``x`` — and
    pink's barriers, which grow as the distance falls to its limit; no code of either.)
    """
    d = np.asarray(d, dtype=float)
    x = (clearance + influence - d) / influence
    w = influence
    knee = _BARRIER_KNEE
    inside = np.clip(x, 0.0, knee)
    r = w * inside * inside / (1.0 - inside)
    dr_dx = w * inside * (2.0 - inside) / (1.0 - inside) ** 2
    past = x > knee
    if past.any():
        r = np.where(past, r + dr_dx * (x - knee), r)
    dr_dx = np.where(x > 0.0, dr_dx, 0.0)
    return r, -dr_dx / influence


class ObstacleTerms:
    """The distances of a model's body to obstacles and their Jacobians, in the coordinates a solver
    works in.

    Args:
        model: a :class:`~soft_envs.robots.base.BodyBackbone` model.
        rows: non-empty obstacle rows ``(S, 16)`` (:func:`obstacle_rows`).
        kinematics: ``x -> (backbone points (P, 3), ∂points/∂x (P, 3, n))`` in the solver's
            coordinates (default the model's ``backbone_kinematics``).
    """

    def __init__(self, model: KinematicModel, rows: np.ndarray,
                 kinematics: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        if not isinstance(model, BodyBackbone):
            raise InvalidParameterError(f"{type(model).__name__} has no body backbone: it cannot avoid obstacles")
        self.model = model
        self.rows = np.ascontiguousarray(rows, dtype=float)
        self.radius = float(model.body_radius)
        self.kinematics = kinematics if kinematics is not None else model.backbone_kinematics
        self._out = np.empty(8)

    @property
    def count(self) -> int:
        """Distances per evaluation: backbone segments × obstacles."""
        return (self.model.backbone(0.5 * (self.model.lower + self.model.upper)).shape[0] - 1) * self.rows.shape[0]

    def _pairs(self, points: np.ndarray):
        out = self._out
        for k in range(points.shape[0] - 1):
            a, b = points[k], points[k + 1]
            for row in self.rows:
                segment_shape_distance(a, b, row, out)
                yield k, out

    def distances(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Capsule-surface distances ``(M,)`` [m] (segment-major: segment ``k``, obstacle ``j`` at
        ``k S + j``) and their Jacobians ``(M, n)`` with respect to the solver's coordinates ``x``."""
        points, jac = self.kinematics(x)
        m = (points.shape[0] - 1) * self.rows.shape[0]
        d = np.empty(m)
        J = np.empty((m, jac.shape[-1]))
        i = 0
        n_rows = self.rows.shape[0]
        for k, out in self._pairs(points):
            s = out[1]
            normal = out[5:8]
            row = self.rows[i % n_rows]
            if row[0] == BOX and out[0] < 0.0 and 0.0 < s < 1.0:
                normal = _box_gradient_normal(points[k], points[k + 1], row, s, normal)
            d[i] = out[0] - self.radius
            J[i] = normal @ ((1.0 - s) * jac[k] + s * jac[k + 1])
            i += 1
        return d, J

    def min_distance(self, q: np.ndarray) -> float:
        """The smallest distance [m] between the body's surface (configuration ``q``) and any obstacle
        (negative: a penetration)."""
        best = math.inf
        for _, out in self._pairs(self.model.backbone(q)):
            best = min(best, float(out[0]))
        return best - self.radius


def _box_gradient_normal(a: np.ndarray, b: np.ndarray, row: np.ndarray, s: float, normal: np.ndarray) -> np.ndarray:
    """The direction whose ``n̂ᵀ δp`` is the derivative of a segment's penetration into a box.

    Inside a box the signed distance is ``max_i (|x_i| − h_i)``, piecewise linear along the segment,
    so its deepest point is generically where two pieces ``σ x_k − h_k`` cross (two faces, or the
    two sides of one where the segment crosses its mid-plane): there the kernel's normal (one face)
    is not the gradient. The gradient is the combination ``λ n_i + (1 − λ) n_j`` that is stationary
    along the segment, ``(λ n_i + (1 − λ) n_j)ᵀ (b − a) = 0`` (zero for the two sides of one face).
    """
    rotation = row[4:13].reshape(3, 3)
    x = rotation.T @ (a + s * (b - a) - row[1:4])
    # The pieces σ x_k − h_k (σ = ±1) of the signed distance and their outward normals σ R e_k.
    values = np.concatenate((x - row[13:16], -x - row[13:16]))
    normals = np.concatenate((rotation.T, -rotation.T))
    active = np.flatnonzero(values >= values.max() - 1e-12)
    if active.size != 2:
        return normal
    n_i, n_j = normals[active[0]], normals[active[1]]
    t = b - a
    slope_i, slope_j = float(n_i @ t), float(n_j @ t)
    if slope_i * slope_j >= 0.0:  # not a crossing of a rising and a falling piece: the kernel's face
        return normal
    weight = slope_j / (slope_j - slope_i)
    return weight * n_i + (1.0 - weight) * n_j


def tier(distance: float, clearance: float) -> int:
    """How well a configuration whose body is ``distance`` [m] from the obstacles keeps clear of them:
    0 (keeps the clearance, within :data:`CLEARANCE_SLACK`), 1 (collision-free) or 2 (in collision)."""
    if distance >= max(clearance - CLEARANCE_SLACK, 0.0):
        return 0
    return 1 if distance >= 0.0 else 2


def ranking(error: float, distance: float, clearance: float) -> tuple[int, float]:
    """Sort key of a candidate solution (smaller is better): its :func:`tier`, then the tip error [m]
    (kept clear or collision-free) or the penetration depth (in collision)."""
    level = tier(distance, clearance)
    return level, (error if level < 2 else -distance)
