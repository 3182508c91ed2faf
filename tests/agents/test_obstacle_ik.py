"""Obstacle-aware IK: ``trr`` and ``sqp`` with ``obstacles=`` / ``clearance=`` (agents/ik/obstacles.py).

* the distance Jacobians ``n̂ᵀ ∂p/∂q`` at the witness point against central finite differences
  (every shape kind, PETER and the PCC arm, configuration and smooth coordinates), and the barrier;
* a goal whose obstacle-blind solution runs its body into a sphere, capsule or box (placed so that
  another solution of the same goal keeps clear of it): the blind solver collides, the aware ones
  reach it within 1 mm, collision-free;
* no obstacles (``[]``, only EMPTY rows) gives the plain solvers' results;
* an obstacle covering the target: ``success=False`` with a best effort;
* bad obstacle rows, clearances and models raise ``ValueError``s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from soft_envs.agents.ik import sqp, trr
from soft_envs.agents.ik.obstacles import ObstacleTerms, barrier, obstacle_rows, ranking, tier
from soft_envs.collision import BOX, EMPTY, SHAPE_WIDTH, Box, Capsule, Plane, Sphere
from soft_envs.geometry import matrix_to_quaternion
from soft_envs.robots import PCCArm, Peter, Quadruped

SOLVERS = {"trr": trr, "sqp": sqp}


def _frame_with_z(v: np.ndarray) -> np.ndarray:
    helper = np.array([1.0, 0.0, 0.0]) if abs(v[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(v, helper)
    e1 /= np.linalg.norm(e1)
    return np.stack((e1, np.cross(v, e1), v), axis=-1)


def _shape(kind: str, centre: np.ndarray, v: np.ndarray, size: float):
    """A shape of ``kind`` whose extent along the unit ``v`` from ``centre`` is ``size`` [m]."""
    if kind == "sphere":
        return Sphere(tuple(centre), size)
    frame = _frame_with_z(v)
    if kind == "capsule":
        return Capsule(tuple(centre), axis=tuple(frame[:, 0]), half_length=2 * size, radius=size)
    return Box(tuple(centre), (2 * size, 2 * size, size), tuple(matrix_to_quaternion(frame)))


def _min_distance(arm, shape, q: np.ndarray) -> float:
    return ObstacleTerms(arm, obstacle_rows([shape])).min_distance(q)


def _detour(arm, solver: str, kind: str, clearance: float):
    """A goal, an obstacle and the blind solution: the blind solution's body penetrates the obstacle
    (by 0.5 mm, at its backbone point farthest sideways from another solution's) while another
    configuration reaching the goal keeps ``clearance`` + 1 mm from it. Seeds searched in order."""
    solve = SOLVERS[solver]
    for seed in range(60):
        rng = np.random.default_rng(seed)
        other = arm.sample(rng)
        if isinstance(arm, Peter):
            other[3:] = arm.upper[3:] - other[:3]  # an S-shape: the modules bend opposite ways
        goal = arm.forward(other)
        blind = solve(arm, goal)
        if not blind.success:
            continue
        mine, theirs = arm.backbone(blind.solution), arm.backbone(other)
        k = 1 + int(np.argmax(np.linalg.norm(mine - theirs, axis=1)[1:-1]))
        tangent = mine[k + 1] - mine[k - 1]
        tangent /= np.linalg.norm(tangent)
        side = mine[k] - theirs[k]
        side -= (side @ tangent) * tangent
        if np.linalg.norm(side) < 2e-3:
            continue
        side /= np.linalg.norm(side)
        size = 2e-3
        shape = _shape(kind, mine[k] + side * (arm.body_radius + size - 5e-4), side, size)
        if _min_distance(arm, shape, blind.solution) < 0 and _min_distance(arm, shape, other) > clearance + 1e-3:
            return goal, shape, blind
    raise AssertionError(f"no detour scenario for {arm!r}, {solver}, {kind}")


# ------------------------------------------------------------------------------ the Jacobians
def _shapes_near(points: np.ndarray, rng: np.random.Generator) -> list:
    """One shape of each kind near the backbone (centres off the backbone by 1–3 cm)."""
    out = []
    for kind in ("sphere", "capsule", "box"):
        k = rng.integers(1, points.shape[0] - 1)
        v = rng.normal(size=3)
        v /= np.linalg.norm(v)
        out.append(_shape(kind, points[k] + rng.uniform(0.01, 0.03) * v, v, 4e-3))
    out.append(Plane(tuple(points[-1] + np.array([0.0, 0.0, 0.02])), (0.3, 0.1, -1.0)))
    return out


def _central_difference(function, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    return np.stack([(function(x + step * e) - function(x - step * e)) / (2 * step) for e in np.eye(x.size)], -1)


@pytest.mark.parametrize("arm", [Peter(2), Peter(3, kinematics="pcc"), PCCArm(3, 6)], ids=repr)
@pytest.mark.parametrize("seed", range(4))
def test_distance_jacobians_match_central_differences(arm, seed):
    rng = np.random.default_rng(seed)
    q = arm.lower + rng.uniform(0.05, 0.95, arm.n_dof) * (arm.upper - arm.lower)
    terms = ObstacleTerms(arm, obstacle_rows(_shapes_near(arm.backbone(q), rng)))
    d, J = terms.distances(q)
    assert d.shape == (terms.count,) and J.shape == (terms.count, arm.n_dof)
    assert terms.min_distance(q) == pytest.approx(d.min(), abs=1e-15)
    numeric = _central_difference(lambda x: terms.distances(x)[0], q)
    np.testing.assert_allclose(J, numeric, atol=1e-6 * max(1.0, np.abs(J).max()))


@pytest.mark.parametrize("seed", range(3))
def test_distance_jacobians_in_smooth_coordinates(seed):
    arm = PCCArm(3, 6)
    rng = np.random.default_rng(seed)
    u = arm.to_smooth(arm.sample(rng))
    u[4:6] = 0.0  # a straight segment: (θ, φ) singular, the smooth coordinates not
    terms = ObstacleTerms(arm, obstacle_rows(_shapes_near(arm.smooth_backbone_kinematics(u)[0], rng)),
                          kinematics=arm.smooth_backbone_kinematics)
    d, J = terms.distances(u)
    numeric = _central_difference(lambda x: terms.distances(x)[0], u)
    np.testing.assert_allclose(J, numeric, atol=1e-6 * max(1.0, np.abs(J).max()))


def test_the_barrier_is_zero_beyond_its_band_smooth_and_steep():
    clearance, influence = 2e-3, 1e-2
    d = np.linspace(-0.01, 0.03, 4001)
    r, dr = barrier(d, clearance, influence)
    assert np.all(r[d >= clearance + influence] == 0.0) and np.all(dr[d >= clearance + influence] == 0.0)
    assert np.all(np.diff(r) <= 0) and np.all(np.isfinite(r))  # grows as the distance falls, finite in collision
    assert barrier(np.array([clearance]), clearance, influence)[0][0] > 10 * influence  # steep at the clearance
    numeric = (barrier(d + 1e-9, clearance, influence)[0] - barrier(d - 1e-9, clearance, influence)[0]) / 2e-9
    np.testing.assert_allclose(dr, numeric, rtol=1e-5, atol=1e-6)
    edge = clearance + influence
    assert abs(barrier(np.array([edge - 1e-7]), clearance, influence)[1][0]) < 1e-4  # C¹ at the edge


def test_ranking_prefers_clear_then_collision_free_then_least_penetration():
    assert tier(3e-3, 2e-3) == 0 and tier(1e-3, 2e-3) == 1 and tier(-1e-4, 2e-3) == 2
    assert ranking(1e-2, 3e-3, 2e-3) < ranking(1e-9, 1e-3, 2e-3) < ranking(0.0, -1e-3, 2e-3) < ranking(0.0, -2e-3, 2e-3)


# ------------------------------------------------------------------------------ the detours
DETOURS = [(arm, solver, kind) for arm in ("pcc",) for solver in SOLVERS for kind in ("sphere", "capsule", "box")] \
    + [("peter", solver, kind) for solver in SOLVERS for kind in ("sphere", "capsule")] + [("peter", "trr", "box")]


@pytest.mark.parametrize(("robot", "solver", "kind"), DETOURS)
def test_the_aware_solvers_go_around_what_the_blind_ones_hit(robot, solver, kind):
    arm = PCCArm(3, 6) if robot == "pcc" else Peter(2)
    clearance = 2e-3 if robot == "pcc" else 1e-3  # PETER's body hardly moves with its tip held
    goal, shape, blind = _detour(arm, solver, kind, clearance)
    assert blind.success and blind.min_distance is None and _min_distance(arm, shape, blind.solution) < 0
    result = SOLVERS[solver](arm, goal, obstacles=[shape], clearance=clearance)
    assert result.success and result.collision_free and result.error < 1e-3
    assert result.min_distance == pytest.approx(_min_distance(arm, shape, result.solution), abs=1e-12)
    assert result.min_distance >= clearance - 1e-6
    assert np.all(result.solution >= arm.lower) and np.all(result.solution <= arm.upper)
    np.testing.assert_allclose(np.linalg.norm(arm.forward(result.solution) - goal), result.error, atol=1e-15)


@pytest.mark.parametrize(("robot", "solver"), [("peter", "trr"), ("peter", "sqp"), ("pcc", "trr"), ("pcc", "sqp")])
def test_no_obstacles_give_the_plain_results(robot, solver):
    arm = PCCArm(3, 6) if robot == "pcc" else Peter(2)
    goal = arm.forward(arm.sample(np.random.default_rng(11)))
    plain = SOLVERS[solver](arm, goal)
    empty_row = np.zeros((2, SHAPE_WIDTH))
    empty_row[:, 0] = EMPTY
    for obstacles in ([], empty_row):
        result = SOLVERS[solver](arm, goal, obstacles=obstacles)
        np.testing.assert_array_equal(result.solution, plain.solution)
        assert result.error == plain.error and result.success == plain.success
        assert result.min_distance == math.inf and result.collision_free is True
    assert plain.min_distance is None and plain.collision_free is None


@pytest.mark.parametrize(("robot", "solver"), [("peter", "trr"), ("peter", "sqp"), ("pcc", "trr"), ("pcc", "sqp")])
def test_an_obstacle_over_the_target_is_a_best_effort(robot, solver):
    arm = PCCArm(3, 6) if robot == "pcc" else Peter(2)
    goal = arm.forward(arm.sample(np.random.default_rng(12)))
    shape = Sphere(tuple(goal), 0.01)
    result = SOLVERS[solver](arm, goal, obstacles=[shape], restarts=1, timeout=0.5)
    assert not result.success
    assert np.all(np.isfinite(result.solution))
    assert np.all(result.solution >= arm.lower) and np.all(result.solution <= arm.upper)
    assert result.error > 0.01 - 1e-6 or not result.collision_free  # the tip cannot be in the ball
    assert result.min_distance == pytest.approx(_min_distance(arm, shape, result.solution), abs=1e-12)
    assert result.collision_free == (result.min_distance >= 0)


# ------------------------------------------------------------------------------ bad input
def _row(kind: int = 2, size=(0.01, 0.0, 0.0), rotation=None) -> np.ndarray:
    row = np.zeros(SHAPE_WIDTH)
    row[0], row[1:4] = kind, (0.1, 0.0, 0.05)
    row[4:13] = (np.eye(3) if rotation is None else rotation).ravel()
    row[13:16] = size
    return row


BAD_OBSTACLES = {
    "width 15": np.zeros((1, 15)),
    "3-D": np.zeros((1, 1, SHAPE_WIDTH)),
    "NaN": np.where(np.arange(SHAPE_WIDTH) == 2, np.nan, _row())[None],
    "kind 7": _row(kind=7)[None],
    "kind 2.5": _row(kind=2.5)[None],  # type: ignore[arg-type]
    "not a rotation": _row(rotation=2 * np.eye(3))[None],
    "a reflection": _row(rotation=np.diag([1.0, 1.0, -1.0]))[None],
    "sphere radius 0": _row(size=(0.0, 0.0, 0.0))[None],
    "box half extent < 0": _row(kind=BOX, size=(0.01, -0.01, 0.01))[None],
    "text": "sphere",
}


@pytest.mark.parametrize("solver", list(SOLVERS))
@pytest.mark.parametrize("bad", list(BAD_OBSTACLES))
def test_bad_obstacles_raise_value_error(solver, bad):
    arm = PCCArm(3, 6) if solver == "sqp" else Peter(2)
    goal = arm.forward(arm.sample(np.random.default_rng(13)))
    with pytest.raises(ValueError):
        SOLVERS[solver](arm, goal, obstacles=BAD_OBSTACLES[bad])


@pytest.mark.parametrize("solver", list(SOLVERS))
@pytest.mark.parametrize("clearance", [-1e-3, math.nan, math.inf, "2"])
def test_bad_clearance_raises_value_error(solver, clearance):
    arm = Peter(2)
    goal = arm.forward(arm.sample(np.random.default_rng(14)))
    with pytest.raises(ValueError):
        SOLVERS[solver](arm, goal, obstacles=[_row()], clearance=clearance)


def test_a_model_without_a_body_cannot_avoid_obstacles():
    leg = Quadruped().leg("front_left")
    goal = leg.forward(leg.sample(np.random.default_rng(15)))
    for solve in SOLVERS.values():
        with pytest.raises(ValueError):
            solve(leg, goal, obstacles=[_row()])
