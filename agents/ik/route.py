"""Routes in configuration space that keep the body clear of obstacles, paced at the actuators' rates.

An obstacle-aware IK solve (:func:`~soft_envs.agents.ik.trr` with a barrier,
:func:`~soft_envs.agents.ik.sqp` with distance constraints) gives an END configuration clear of the
obstacles; the arm still has to get there. A soft arm's actuators move at finite rates (PETER's
legs fill at 10 mm/s and vent at the env's ``vent_rate``), so a command far from the current
configuration is a motion the body sweeps on the way. :func:`plan_route` finds a route of straight
segments in configuration space from the current set-points to the end configuration whose every
configuration keeps the body ``required`` [m] from the obstacles: the straight segment if it is
clear, else one waypoint — candidates pushed off the obstacle along the distance's gradient at the
segment's worst point, and seeded random ones near the two ends — the clear route of the shortest
duration at the rates. A segment is checked at configurations no more than ``spacing`` apart in
every coordinate (:func:`segment_clearance`). :func:`advance` then moves the set-points along the
route by at most one control period's step per coordinate (``up`` while a coordinate grows,
``down`` while it falls), so the actuators follow the checked route within a step.

Units: the model's configuration units (PETER: inflation times [s]) and metres for distances.
(A sampling planner in the spirit of RRT-connect's straight-line shortcuts and pink's
velocity-limited differential IK with barriers; no code of either.)
"""

from __future__ import annotations

import math

import numpy as np

from soft_envs import clock
from soft_envs.agents.ik.obstacles import ObstacleTerms

#: The waypoints' offsets [configuration units] off the worst point of a blocked segment, along the
#: distance's gradient (from a nudge to most of PETER's 2 s inflation range).
DETOUR_STEPS = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5)
#: Random waypoint candidates drawn per blocked route.
RANDOM_CANDIDATES = 200


def duration(a: np.ndarray, b: np.ndarray, up: np.ndarray, down: np.ndarray) -> float:
    """Control periods to move from ``a`` to ``b`` at the per-period steps ``up`` (growing
    coordinates) and ``down`` (falling ones): the slowest coordinate's."""
    delta = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    return float(np.max(np.where(delta >= 0.0, delta / up, -delta / down), initial=0.0))


def segment_clearance(terms: ObstacleTerms, a: np.ndarray, b: np.ndarray, spacing: float,
                      floor: float = -math.inf) -> float:
    """The smallest body–obstacle distance [m] at configurations of the straight segment ``a → b``
    no more than ``spacing`` apart in every coordinate (both ends included); it stops as soon as one
    is below ``floor`` (and returns that one)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = max(1, math.ceil(float(np.max(np.abs(b - a), initial=0.0)) / spacing))
    best = math.inf
    # The far end first (a route's start is where the arm is), then from the middle outwards.
    order = [n, *sorted(range(n), key=lambda i: abs(i - n / 2))]
    for i in order:
        best = min(best, terms.min_distance(a + (i / n) * (b - a)))
        if best < floor:
            break
    return best


def _worst_point(terms: ObstacleTerms, a: np.ndarray, b: np.ndarray, spacing: float) -> np.ndarray:
    n = max(1, math.ceil(float(np.max(np.abs(b - a), initial=0.0)) / spacing))
    points = [a + (i / n) * (b - a) for i in range(n + 1)]
    return points[int(np.argmin([terms.min_distance(q) for q in points]))]


def _candidates(terms: ObstacleTerms, a: np.ndarray, b: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                spacing: float, rng: np.random.Generator) -> np.ndarray:
    """Waypoint candidates ``(K, n)`` for a blocked segment ``a → b`` (module docstring)."""
    worst = _worst_point(terms, a, b, spacing)
    d, J = terms.distances(worst)
    out: list[np.ndarray] = []
    for k in np.argsort(d)[:3]:  # the closest pairs' gradients: away from that obstacle
        g = J[k]
        norm = float(np.linalg.norm(g))
        if norm > 0.0:
            out.extend(worst + step * g / norm for step in DETOUR_STEPS)
    span = np.maximum(np.abs(b - a), 0.25 * (upper - lower))
    centre = 0.5 * (a + b)
    out.extend(centre + span * rng.uniform(-1.0, 1.0, (RANDOM_CANDIDATES // 2, a.size)))
    out.extend(rng.uniform(lower, upper, (RANDOM_CANDIDATES - RANDOM_CANDIDATES // 2, a.size)))
    return np.clip(np.array(out), lower, upper)


def plan_route(terms: ObstacleTerms, start: np.ndarray, end: np.ndarray, *, up: np.ndarray, down: np.ndarray,
               lower: np.ndarray, upper: np.ndarray, required: float, spacing: float, deadline: float = math.inf,
               seed: int = 0) -> list[np.ndarray] | None:
    """A route ``[waypoint…, end]`` from ``start`` whose every configuration (checked ``spacing``
    apart, :func:`segment_clearance`) keeps the body at least ``min(required, d(start), d(end))`` [m]
    from the obstacles — ends closer than ``required`` (a start touching, an end on the IK's smaller
    clearance) lower the bar for their own route only. The straight segment if it is clear, else the
    clear one-waypoint route of the shortest :func:`duration` among the candidates (module
    docstring); ``None`` when none is clear by the ``deadline`` (:func:`soft_envs.clock.now` value).
    """
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    need = min(required, terms.min_distance(start), terms.min_distance(end))
    if segment_clearance(terms, start, end, spacing, need) >= need:
        return [end]
    candidates = _candidates(terms, start, end, lower, upper, spacing, np.random.default_rng(seed))
    costs = np.array([duration(start, w, up, down) + duration(w, end, up, down) for w in candidates])
    for i in np.argsort(costs, kind="stable"):
        if clock.now() > deadline:
            break
        w = candidates[i]
        if terms.min_distance(w) < need:
            continue
        if segment_clearance(terms, start, w, spacing, need) >= need \
                and segment_clearance(terms, w, end, spacing, need) >= need:
            return [w, end]
    return None


def advance(position: np.ndarray, route: list[np.ndarray], up: np.ndarray, down: np.ndarray) -> np.ndarray:
    """The next set-points from ``position`` along ``route`` (consumed in place as waypoints are
    reached): one control period's motion, each coordinate by at most ``up`` growing and ``down``
    falling; the period's rest carries on to the next waypoint."""
    q = np.asarray(position, dtype=float).copy()
    budget = 1.0  # of the period
    while route and budget > 1e-12:
        target = route[0]
        need = duration(q, target, up, down)
        if need <= budget:
            q = np.array(target, dtype=float)
            route.pop(0)
            budget -= need
        else:
            q = q + (budget / need) * (target - q)
            budget = 0.0
    return q
