"""Contact geometry against PyBullet: :mod:`soft_envs.collision` vs ``getClosestPoints`` (SI units, m).

An arm capsule (a backbone segment ``[a, b]`` with a radius) against a PLANE, SPHERE, CAPSULE and
BOX in random poses, separated and penetrating in equal numbers. Per pair it reports the largest
distance, normal and witness-point differences to PyBullet (``contactNormalOnB`` points from the
shape, body B, towards the arm, body A: the kernel's normal), which algorithm PyBullet uses there,
and the largest distance error to an independent brute-force reference (dense sampling of ``s``
and a bounded scalar minimisation of the exact point–shape signed distance, scipy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.collision import Box, Capsule, Plane, Shape, Sphere, capsule_distance
from soft_envs.geometry import matrix_to_quaternion, quaternion_to_matrix

PAIRS = ("plane", "sphere", "capsule", "box")

#: What PyBullet (Bullet 3) runs for an arm capsule against each shape (``btCollisionDispatcher``).
PYBULLET_ALGORITHM = {
    "plane": "exact (btConvexPlaneCollisionAlgorithm: support point of the capsule)",
    "sphere": "exact (sphere-capsule: point-segment distance)",
    "capsule": "exact (capsuleCapsuleDistance special case)",
    "box": "GJK/EPA on a box rounded by its 1 mm margin (btConvexConvexAlgorithm)",
}


def random_quaternion(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit quaternion ``(x, y, z, w)``."""
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_shape(pair: str, rng: np.random.Generator) -> Shape:
    """A random shape of kind ``pair`` near the origin (sizes 0.05–0.5 m)."""
    center = rng.uniform(-0.2, 0.2, 3)
    if pair == "plane":
        return Plane(center, rng.normal(size=3))
    if pair == "sphere":
        return Sphere(center, rng.uniform(0.05, 0.5))
    if pair == "capsule":
        return Capsule(center, half_length=rng.uniform(0.05, 0.5), radius=rng.uniform(0.02, 0.2),
                       orientation=random_quaternion(rng))
    if pair == "box":
        return Box(center, rng.uniform(0.05, 0.5, 3), random_quaternion(rng))
    raise ValueError(f"unknown pair {pair!r}; choose from {PAIRS}")


def random_case(pair: str, rng: np.random.Generator, penetrating: bool) -> tuple[np.ndarray, np.ndarray, float, Shape]:
    """``(a, b, radius, shape)``: an arm capsule and a shape that overlap iff ``penetrating``
    (clearances of at least 1 mm either way, so that the sign is unambiguous)."""
    while True:
        shape = random_shape(pair, rng)
        a = rng.uniform(-0.8, 0.8, 3)
        b = a + rng.normal(size=3) * rng.uniform(0.05, 0.6)
        radius = float(rng.uniform(0.01, 0.1))
        d = capsule_distance(a, b, radius, shape).distance
        if (d < -1e-3) if penetrating else (d > 1e-3):
            return a, b, radius, shape


def _frame_quaternion(axis: np.ndarray) -> np.ndarray:
    """A quaternion ``(x, y, z, w)`` whose local z is the unit ``axis``."""
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return matrix_to_quaternion(np.column_stack((x, np.cross(axis, x), axis)))


def pybullet_closest(client: Any, a: np.ndarray, b: np.ndarray, radius: float, shape: Shape) -> dict[str, Any]:
    """PyBullet's closest points of the arm capsule (body A) and ``shape`` (body B) in ``client``
    (a ``BulletClient``): distance, normal (from B to A), point on A's and on B's surface."""
    import pybullet

    length = float(np.linalg.norm(b - a))
    arm = client.createCollisionShape(pybullet.GEOM_CAPSULE, radius=radius, height=length)
    orientation = (0.0, 0.0, 0.0, 1.0)
    if isinstance(shape, Plane):
        other = client.createCollisionShape(pybullet.GEOM_PLANE, planeNormal=[0.0, 0.0, 1.0])
        position, orientation = shape.point, tuple(_frame_quaternion(np.array(shape.normal)))
    elif isinstance(shape, Sphere):
        other = client.createCollisionShape(pybullet.GEOM_SPHERE, radius=shape.radius)
        position = shape.center
    elif isinstance(shape, Capsule):
        other = client.createCollisionShape(pybullet.GEOM_CAPSULE, radius=shape.radius, height=2 * shape.half_length)
        position, orientation = shape.center, shape.orientation
    else:
        other = client.createCollisionShape(pybullet.GEOM_BOX, halfExtents=list(shape.half_extents))
        position, orientation = shape.center, shape.orientation
    found = client.getClosestPoints(
        bodyA=-1, bodyB=-1, distance=10.0, collisionShapeA=arm, collisionShapeB=other,
        collisionShapePositionA=list(0.5 * (a + b)), collisionShapePositionB=list(position),
        collisionShapeOrientationA=list(_frame_quaternion((b - a) / length)),
        collisionShapeOrientationB=list(orientation))
    if not found:
        return {"distance": np.inf, "normal": np.full(3, np.nan), "on_arm": np.full(3, np.nan),
                "on_shape": np.full(3, np.nan)}
    best = min(found, key=lambda c: c[8])
    return {"distance": float(best[8]), "normal": np.array(best[7]), "on_arm": np.array(best[5]),
            "on_shape": np.array(best[6])}


# ----------------------------------------------------------------- brute-force reference
def point_signed_distance(q: np.ndarray, shape: Shape) -> np.ndarray:
    """Exact signed distance [m] of points ``q`` ``(..., 3)`` to ``shape`` (numpy, independent of the kernel)."""
    q = np.asarray(q, dtype=float)
    if isinstance(shape, Plane):
        return (q - np.array(shape.point)) @ np.array(shape.normal)
    if isinstance(shape, Sphere):
        return np.linalg.norm(q - np.array(shape.center), axis=-1) - shape.radius
    if isinstance(shape, Capsule):
        axis, c = np.array(shape.axis), np.array(shape.center)
        t = np.clip((q - c) @ axis, -shape.half_length, shape.half_length)
        return np.linalg.norm(q - c - t[..., None] * axis, axis=-1) - shape.radius
    local = (q - np.array(shape.center)) @ quaternion_to_matrix(np.array(shape.orientation))
    excess = np.abs(local) - np.array(shape.half_extents)
    outside = np.linalg.norm(np.maximum(excess, 0.0), axis=-1)
    return outside + np.minimum(excess.max(axis=-1), 0.0)


def reference_distance(a: np.ndarray, b: np.ndarray, shape: Shape, samples: int = 2001) -> tuple[float, float]:
    """``(signed distance, s)`` of the segment ``[a, b]`` (radius 0) to ``shape`` by brute force:
    ``samples`` values of ``s``, then scipy's golden-section search (a bracketing method, robust on
    the kinks of a box's inside distance) of the exact point–shape signed distance, continued
    convexly beyond ``[0, 1]``, from the best sample and its neighbours to a relative 1e-15."""
    from scipy.optimize import minimize_scalar

    def f(x: float) -> float:
        inside = min(max(x, 0.0), 1.0)
        return float(point_signed_distance(a + inside * (b - a), shape)) + abs(x - inside)

    s = np.linspace(0.0, 1.0, samples)
    values = point_signed_distance(a + s[:, None] * (b - a), shape)
    k = int(np.argmin(values))
    best, best_s = float(values[k]), float(s[k])
    h = 1.0 / (samples - 1)
    try:
        found = minimize_scalar(f, bracket=(s[k] - h, s[k], s[k] + h), method="golden", tol=1e-15)
    except ValueError:  # flat around the best sample: it is a minimum already
        return best, best_s
    if found.fun < best:
        return float(found.fun), float(min(max(found.x, 0.0), 1.0))
    return best, best_s


#: PyBullet's collision margin of a ``GEOM_BOX`` [m]: Bullet's box is the box shrunk by it and
#: swept by a ball of that radius (edges and corners rounded); measured: with it the separated
#: distances agree to 1e-15 m, without it they differ by up to (√3 − 1) · 1 mm at corners.
BOX_MARGIN = 0.001


def pybullet_model(shape: Shape) -> tuple[Shape, float]:
    """``(shape, margin)``: the shape PyBullet collides with is ``shape`` swept by ``margin`` [m]
    (a box: shrunk by :data:`BOX_MARGIN` and rounded; the others exactly as given)."""
    if isinstance(shape, Box):
        return Box(shape.center, np.array(shape.half_extents) - BOX_MARGIN, shape.orientation), BOX_MARGIN
    return shape, 0.0


def compare_case(client: Any, a: np.ndarray, b: np.ndarray, radius: float, shape: Shape) -> dict[str, Any]:
    """Kernel vs PyBullet (and vs the brute-force reference) for one arm capsule and shape.

    PyBullet's penetration depth is the minimum translation that separates the two bodies; the
    kernel's is the depth of the arm's deepest point. They are equal exactly when translating the
    arm by the kernel's depth along its normal separates it (``comparable``); otherwise PyBullet's
    depth is larger (its distance lower: ``pybullet_excess`` ≤ 0)."""
    model, margin = pybullet_model(shape)
    mine = capsule_distance(a, b, radius + margin, model)
    theirs = pybullet_closest(client, a, b, radius, shape)
    sharp = capsule_distance(a, b, radius, shape)
    ref, _ = reference_distance(a, b, shape)
    shift = -min(mine.distance, 0.0) * mine.normal
    moved = capsule_distance(a + shift, b + shift, radius + margin, model).distance
    comparable = mine.distance >= 0.0 or moved >= -1e-12
    on_arm = mine.point_on_segment - radius * mine.normal
    on_shape = mine.point_on_shape + margin * mine.normal
    return {
        "distance": sharp.distance,
        "comparable": comparable,
        "pybullet_excess": theirs["distance"] - mine.distance,
        "distance_error": abs(mine.distance - theirs["distance"]) if comparable else 0.0,
        "normal_error": float(np.linalg.norm(mine.normal - theirs["normal"])) if comparable else 0.0,
        "point_error": float(max(np.linalg.norm(on_arm - theirs["on_arm"]),
                                 np.linalg.norm(on_shape - theirs["on_shape"]))) if comparable else 0.0,
        "sharp_difference": abs(sharp.distance - theirs["distance"]),
        "reference_error": abs(sharp.distance - (ref - radius)),
    }


def geometry_check(n_per_pair: int = 500, seed: int = 0) -> list[dict]:
    """The kernel against PyBullet's ``getClosestPoints`` and the brute-force reference, per pair:
    ``n_per_pair`` random cases (half separated, half penetrating). One dict per pair: ``pair``,
    ``cases``, ``max_distance_error_m`` (to PyBullet's shape model, :func:`pybullet_model`, over the
    separated cases and the penetrating ones whose depths are ``comparable``, of which
    ``comparable_cases``), ``max_normal_error``, ``max_point_error_m``, ``max_sharp_difference_m``
    (to PyBullet with the kernel on the given, sharp shape), ``max_pybullet_excess_m`` (PyBullet's
    distance minus the kernel's on PyBullet's model: ≤ ~1e-12 expected, never above), ``pybullet_algorithm`` and
    ``max_error_to_reference_m`` (the kernel vs the brute-force reference)."""
    import pybullet
    from pybullet_utils.bullet_client import BulletClient

    client = BulletClient(connection_mode=pybullet.DIRECT)
    rng = np.random.default_rng(seed)
    rows = []
    try:
        for pair in PAIRS:
            cases = [compare_case(client, *random_case(pair, rng, bool(k % 2))) for k in range(n_per_pair)]
            rows.append({
                "pair": f"capsule-{pair}", "cases": len(cases),
                "comparable_cases": sum(c["comparable"] for c in cases),
                "max_distance_error_m": max(c["distance_error"] for c in cases),
                "max_normal_error": max(c["normal_error"] for c in cases),
                "max_point_error_m": max(c["point_error"] for c in cases),
                "max_sharp_difference_m": max(c["sharp_difference"] for c in cases),
                "max_pybullet_excess_m": max(c["pybullet_excess"] for c in cases),
                "pybullet_algorithm": PYBULLET_ALGORITHM[pair],
                "max_error_to_reference_m": max(c["reference_error"] for c in cases),
            })
    finally:
        client.disconnect()
    return rows
