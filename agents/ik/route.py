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
duration at the rates; where no one-waypoint route is clear, a bidirectional tree search
(:func:`connect_route`, RRT-connect) until the deadline, its path shortened. A start closer than
``required`` may first be left straight out along the distance's gradient (:func:`leave_start`), so
that the rest of the route keeps ``required`` rather than the start's smaller distance. A segment is
checked at configurations no more than ``spacing`` apart in every coordinate
(:func:`segment_clearance`). :func:`advance` then moves the set-points along the route by at most one
control period's step per coordinate (``up`` while a coordinate grows, ``down`` while it falls), so
the actuators follow the checked route within a step; with those steps scaled by
:func:`arrival_pace`, the arrival is eased.

Units: the model's configuration units (PETER: inflation times [s]) and metres for distances.
(The tree search is Kuffner and LaValle's RRT-connect (ICRA 2000) with greedy shortcutting; the
pacing in the spirit of pink's velocity-limited differential IK with barriers; no code of either.)
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
#: :func:`connect_route`'s longest edge, as a fraction of each coordinate's range, and the most nodes
#: its two trees grow to (a bound on its memory and work besides the deadline: with 400, a 2-D passage
#: 6.6 % of the range wide was missed by 1 of 200 seeds; with 1000, by none, ~20 ms each).
CONNECT_STEP, CONNECT_NODES = 0.15, 1000
#: :func:`leave_start`'s steps along the distance's gradient, in multiples of the first-order step to the
#: required distance (the distance is not linear in the configuration, and a larger margin leaves room).
EXIT_FACTORS = (1.5, 2.5, 4.0, 6.0)
#: The most :func:`leave_start` moves a coordinate, as a fraction of its range.
EXIT_SPAN = 0.1
#: :func:`arrival_pace`'s slowest pace, a fraction of the route's.
ARRIVAL_FLOOR = 0.3
#: The share of the time left that the one-waypoint candidates may take before the tree search.
WAYPOINT_SHARE = 0.4


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
               seed: int = 0, leave: float | None = None) -> list[np.ndarray] | None:
    """A route ``[waypoint…, end]`` from ``start`` whose every configuration (checked ``spacing``
    apart, :func:`segment_clearance`) keeps the body at least ``min(required, d(start), d(end))`` [m]
    from the obstacles — ends closer than ``required`` (a start touching, an end on the IK's smaller
    clearance) lower the bar for their own route only. The straight segment if it is clear, else the
    clear one-waypoint route of the shortest :func:`duration` among the candidates, else
    :func:`connect_route`'s (module docstring); ``None`` when none is clear by the ``deadline``
    (:func:`soft_envs.clock.now` value).

    With ``leave`` [m], a start closer than ``required`` is left first (:func:`leave_start`): straight
    out along the distance's gradient to a configuration ``required`` clear, that segment keeping
    ``min(leave, d(start))``, the rest of the route ``required``; where no such exit is found, the whole
    route keeps ``min(leave, d(start), d(end))``.
    """
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    if leave is not None:
        near = terms.min_distance(start)
        if near < required:
            floor = min(leave, near)
            exit_point = leave_start(terms, start, required, floor, lower, upper, spacing)
            if exit_point is not None:
                rest = plan_route(terms, exit_point, end, up=up, down=down, lower=lower, upper=upper,
                                  required=required, spacing=spacing, deadline=deadline, seed=seed)
                if rest is not None:
                    return [exit_point, *rest]
            required = floor
    need = min(required, terms.min_distance(start), terms.min_distance(end))
    if segment_clearance(terms, start, end, spacing, need) >= need:
        return [end]
    candidates = _candidates(terms, start, end, lower, upper, spacing, np.random.default_rng(seed))
    costs = np.array([duration(start, w, up, down) + duration(w, end, up, down) for w in candidates])
    now = clock.now()
    waypoint_deadline = now + WAYPOINT_SHARE * max(deadline - now, 0.0)
    for i in np.argsort(costs, kind="stable"):
        if clock.now() > waypoint_deadline:
            break
        w = candidates[i]
        if terms.min_distance(w) < need:
            continue
        if segment_clearance(terms, start, w, spacing, need) >= need \
                and segment_clearance(terms, w, end, spacing, need) >= need:
            return [w, end]
    return connect_route(terms, start, end, lower=lower, upper=upper, need=need, spacing=spacing,
                         deadline=deadline, rng=np.random.default_rng(seed + 1))


def leave_start(terms: ObstacleTerms, start: np.ndarray, required: float, floor: float, lower: np.ndarray,
                upper: np.ndarray, spacing: float) -> np.ndarray | None:
    """A configuration at least ``required`` [m] clear, reached from ``start`` by a straight segment that
    keeps ``floor`` [m] (:func:`segment_clearance`): ``start`` moved along the gradient of its closest
    pair's distance by :data:`EXIT_FACTORS` times the first-order step to ``required`` (within the
    bounds, no coordinate by more than :data:`EXIT_SPAN` of its range: a short detour), the first that
    is; ``None`` if none is."""
    d, J = terms.distances(start)
    k = int(np.argmin(d))
    slope = float(np.linalg.norm(J[k]))
    if slope <= 0.0:
        return None
    direction = J[k] / slope
    span = _ranges(lower, upper)
    for factor in EXIT_FACTORS:
        q = np.clip(start + factor * (required - d[k]) / slope * direction, lower, upper)
        if np.max(np.abs(q - start) / span) > EXIT_SPAN:
            break
        if terms.min_distance(q) >= required and segment_clearance(terms, start, q, spacing, floor) >= floor:
            return q
    return None


def connect_route(terms: ObstacleTerms, start: np.ndarray, end: np.ndarray, *, lower: np.ndarray,
                  upper: np.ndarray, need: float, spacing: float, deadline: float,
                  rng: np.random.Generator) -> list[np.ndarray] | None:
    """A route ``[waypoint…, end]`` from ``start`` clear by ``need`` [m] (every segment checked
    ``spacing`` apart) found by RRT-connect: two trees, rooted at ``start`` and ``end``, grown in turn
    towards uniform samples of the bounds by edges of at most :data:`CONNECT_STEP` of each coordinate's
    range, each new node followed by the other tree extending straight towards it until blocked or
    joined; the joined path then shortened greedily (from each waypoint to the farthest later one with
    a clear segment). ``None`` when the trees have not joined by the ``deadline`` or
    :data:`CONNECT_NODES` nodes."""
    span = _ranges(lower, upper)
    step = CONNECT_STEP * span
    forward: tuple[list[np.ndarray], list[int]] = ([start], [-1])
    trees = [forward, ([end], [-1])]

    def clear(a: np.ndarray, b: np.ndarray) -> bool:
        return segment_clearance(terms, a, b, spacing, need) >= need

    def extend(tree: tuple[list[np.ndarray], list[int]], toward: np.ndarray, whole: bool) -> int:
        """Grow ``tree`` from its node nearest ``toward`` (one edge, or with ``whole`` edge after edge
        until there): the index of its last new node, or −1."""
        nodes, parents = tree
        scaled = (np.array(nodes) - toward) / span
        last = int(np.argmin(np.einsum("ij,ij->i", scaled, scaled)))
        added = -1
        while True:
            q = nodes[last]
            delta = toward - q
            ratio = float(np.max(np.abs(delta) / step))
            if ratio <= 1e-12:
                return added
            nxt = toward if ratio <= 1.0 else q + delta / ratio
            if not clear(q, nxt):
                return added
            nodes.append(nxt)
            parents.append(last)
            last = added = len(nodes) - 1
            if not whole or ratio <= 1.0:
                return added

    while clock.now() <= deadline and len(trees[0][0]) + len(trees[1][0]) < CONNECT_NODES:
        grown = extend(trees[0], rng.uniform(lower, upper), whole=False)
        if grown >= 0:
            target = trees[0][0][grown]
            joined = extend(trees[1], target, whole=True)
            if joined >= 0 and np.array_equal(trees[1][0][joined], target):
                ends = (_path(trees[0], grown), _path(trees[1], joined))  # each: target … its root
                to_start, to_end = ends if trees[0] is forward else ends[::-1]
                return _shortcut([*to_start[::-1], *to_end[1:]], clear)
        trees.reverse()
    return None


def _ranges(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Each coordinate's range (1 where the bounds meet): the scale of the searches' steps."""
    return np.where(upper > lower, upper - lower, 1.0)


def _path(tree: tuple[list[np.ndarray], list[int]], index: int) -> list[np.ndarray]:
    """The nodes from ``index`` back to the tree's root."""
    nodes, parents = tree
    out = []
    while index >= 0:
        out.append(nodes[index])
        index = parents[index]
    return out


def _shortcut(path: list[np.ndarray], clear) -> list[np.ndarray]:
    """``path`` (its first node the start) shortened greedily: from each kept node straight to the
    farthest later node ``clear(a, b)`` allows; the route after the start."""
    out, i = [], 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and not clear(path[i], path[j]):
            j -= 1
        out.append(path[j])
        i = j
    return out


def arrival_pace(position: np.ndarray, route: list[np.ndarray], up: np.ndarray, down: np.ndarray,
                 periods: float, floor: float = ARRIVAL_FLOOR) -> float:
    """The fraction of the steps ``up``/``down`` to move by in this control period: 1 while more than
    ``periods`` periods of the route are left (:func:`duration` from ``position`` through its
    waypoints), then in proportion to what is left, not below ``floor`` — a soft arm arriving at the
    route's full pace rings past the plan; ``periods = 0``: always 1."""
    if periods <= 0 or not route:
        return 1.0
    points = [np.asarray(position, dtype=float), *route]
    left = sum(duration(a, b, up, down) for a, b in zip(points, points[1:], strict=False))
    return max(floor, min(1.0, left / periods))


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
