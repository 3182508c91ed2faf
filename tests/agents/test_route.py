"""Routes around obstacles in configuration space (agents/ik/route.py) on a point in a 2-D box with
walls: distances exact, so what a route must clear is known.

The maze: the unit square, two bars the point must zigzag around (right of the lower one, then left
of the upper one): no straight segment and no one-waypoint route joins its lower-left and upper-right
corners, the tree search's route does.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from soft_envs import clock
from soft_envs.agents.ik.route import (
    ARRIVAL_FLOOR,
    advance,
    arrival_pace,
    connect_route,
    leave_start,
    plan_route,
    segment_clearance,
)

LOWER, UPPER = np.zeros(2), np.ones(2)
SPACING = 0.01
#: Bars ``(x0, y0, x1, y1)``: the lower one open on the right, the upper one on the left.
MAZE = ((0.0, 0.30, 0.80, 0.36), (0.20, 0.62, 1.0, 0.68))
START, END = np.array([0.1, 0.1]), np.array([0.9, 0.9])


class PointTerms:
    """``min_distance`` and ``distances`` of a point to axis-aligned bars (what the planner reads of
    :class:`~soft_envs.agents.ik.obstacles.ObstacleTerms`)."""

    def __init__(self, bars) -> None:
        self.bars = [np.array(b, dtype=float) for b in bars]

    def _one(self, q: np.ndarray, bar: np.ndarray) -> tuple[float, np.ndarray]:
        nearest = np.clip(q, bar[:2], bar[2:])
        offset = q - nearest
        d = float(np.linalg.norm(offset))
        if d > 0.0:
            return d, offset / d
        inside = np.array([q[0] - bar[0], bar[2] - q[0], q[1] - bar[1], bar[3] - q[1]])
        k = int(np.argmin(inside))
        return -float(inside[k]), np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])[k]

    def distances(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pairs = [self._one(np.asarray(q, dtype=float), bar) for bar in self.bars]
        return np.array([d for d, _ in pairs]), np.array([g for _, g in pairs])

    def min_distance(self, q: np.ndarray) -> float:
        return float(np.min(self.distances(q)[0]))


def _clear_everywhere(terms: PointTerms, start: np.ndarray, route: list[np.ndarray], need: float) -> bool:
    """Every configuration of the route, checked a tenth of the planner's spacing apart, at least ``need``
    less what a point's distance can lose between two of the planner's checks (half a diagonal step)."""
    points = [start, *route]
    slack = SPACING * np.sqrt(2.0) / 2.0
    return all(segment_clearance(terms, a, b, SPACING / 10) >= need - slack for a, b in zip(points, points[1:]))


def test_the_zigzag_needs_the_tree_search_and_its_route_is_clear():
    terms = PointTerms(MAZE)
    steps = np.full(2, 0.05)
    assert segment_clearance(terms, START, END, SPACING) < 0.0
    route = plan_route(terms, START, END, up=steps, down=steps, lower=LOWER, upper=UPPER, required=0.02,
                       spacing=SPACING, deadline=clock.now() + 5.0)
    assert route is not None and len(route) >= 3  # more than one waypoint
    np.testing.assert_array_equal(route[-1], END)
    assert _clear_everywhere(terms, START, route, 0.02)


def test_an_enclosed_end_gives_none_by_the_deadline():
    walls = ((0.7, 0.7, 1.0, 0.75), (0.7, 0.75, 0.75, 1.0))  # the corner (0.9, 0.9) boxed in
    terms = PointTerms(walls)
    began = clock.now()
    route = connect_route(terms, START, END, lower=LOWER, upper=UPPER, need=0.02, spacing=SPACING,
                          deadline=began + 0.3, rng=np.random.default_rng(0))
    assert route is None
    assert clock.now() - began < 2.0  # the deadline (or the node bound) stops it


@settings(max_examples=25, deadline=None)
@given(gap=st.floats(0.08, 0.3), height=st.floats(0.25, 0.7), seed=st.integers(0, 2**16))
@example(gap=0.0859375, height=0.5625, seed=4310)  # not joined within 400 nodes
def test_a_route_the_tree_search_returns_is_clear_and_ends_at_the_end(gap, height, seed):
    """A wall across the square with a gap at its right end: the tree search finds a route, which keeps
    ``need`` everywhere and ends at the end."""
    terms = PointTerms(((0.0, height, 1.0 - gap, height + 0.05),))
    route = connect_route(terms, START, END, lower=LOWER, upper=UPPER, need=0.01, spacing=SPACING,
                          deadline=clock.now() + 2.0, rng=np.random.default_rng(seed))
    assert route is not None
    np.testing.assert_array_equal(route[-1], END)
    assert _clear_everywhere(terms, START, route, 0.01)


def test_a_start_beside_an_obstacle_is_left_first_and_the_rest_keeps_the_requirement():
    """The start 5 mm below a bar, the end far off to its left: with ``leave`` the route's first waypoint
    is straight out (away from the bar) and 20 mm clear, the rest of the route 20 mm clear; without it
    the whole route keeps the start's 5 mm."""
    terms = PointTerms(((0.3, 0.5, 1.0, 0.6),))
    start, end = np.array([0.6, 0.495]), np.array([0.1, 0.9])
    steps = np.full(2, 0.05)
    exit_point = leave_start(terms, start, 0.02, 0.005, LOWER, UPPER, SPACING)
    assert exit_point is not None and terms.min_distance(exit_point) >= 0.02
    assert exit_point[1] < start[1] and abs(exit_point[0] - start[0]) < 1e-12  # straight down, off the bar
    route = plan_route(terms, start, end, up=steps, down=steps, lower=LOWER, upper=UPPER, required=0.02,
                       spacing=SPACING, deadline=clock.now() + 5.0, leave=0.004)
    assert route is not None
    np.testing.assert_array_equal(route[0], exit_point)
    np.testing.assert_array_equal(route[-1], end)
    assert _clear_everywhere(terms, route[0], route[1:], 0.02)
    assert segment_clearance(terms, start, route[0], SPACING / 10) >= 0.005 - 1e-12
    without = plan_route(terms, start, end, up=steps, down=steps, lower=LOWER, upper=UPPER, required=0.005,
                         spacing=SPACING, deadline=clock.now() + 5.0)
    assert without is not None and min(terms.min_distance(q) for q in without) >= 0.005 - 1e-12


def test_the_arrival_slows_with_what_is_left_of_the_route():
    steps = np.full(2, 0.1)
    start, route = np.zeros(2), [np.array([0.5, 0.0]), np.array([0.5, 0.3])]  # 5 + 3 periods at full pace
    assert arrival_pace(start, route, steps, steps, 6) == 1.0
    assert arrival_pace(np.array([0.5, 0.0]), route[1:], steps, steps, 6) == pytest.approx(0.5)
    assert arrival_pace(np.array([0.5, 0.29]), route[1:], steps, steps, 6) == ARRIVAL_FLOOR
    assert arrival_pace(np.array([0.5, 0.29]), route[1:], steps, steps, 0) == 1.0  # no easing
    q, todo, periods = start, [w.copy() for w in route], 0
    while todo:
        pace = arrival_pace(q, todo, steps, steps, 6)
        nxt = advance(q, todo, pace * steps, pace * steps)
        assert np.all(np.abs(nxt - q) <= pace * 0.1 + 1e-12)
        q, periods = nxt, periods + 1
    np.testing.assert_array_equal(q, route[-1])
    assert 8 < periods < 8 / ARRIVAL_FLOOR  # slower than the full pace's 8, faster than the floor's throughout
