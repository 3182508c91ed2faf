"""The contract every IK solver keeps (``soft_envs.agents.ik.result``), checked over every solver.

A sibling of ``tests/envs/test_env_conventions.py``: the same invariants run over ``trr``,
``trr_batch``, ``sqp`` (3-D and planar PCC arms), ``newton_raphson``, ``newton_raphson_batch``,
``newton_raphson_legs``, ``jacobian_ik`` (pinv, DLS, transpose; position only and full pose on
the KUKA iiwa), ``jacobian_ik_batch`` (position only and full pose), the compiled ``chain_ik`` and
``chain_ik_batch`` (position only and full pose on the KUKA iiwa), the network hybrid ``NeuralIK.solve`` and
the obstacle-aware ``trr`` (PETER) and ``sqp`` (PCC arm) with ``obstacles=`` (shapes out of reach
and an EMPTY row, so that the reachable targets stay reachable):

* the result record: :class:`IKResult` (one target) or :class:`BatchIKResult`, its fields of
  the documented types; the solution finite and within the bounds; ``error ≥ 0`` equal to the
  recomputed forward-kinematics error; ``success`` ⇔ ``error < tol`` (and, with obstacles,
  ``collision_free``, ``min_distance`` the recomputed body–obstacle distance); ``iterations ≥ 0``;
  ``seconds ≥ 0``;
* bad input raises a ``ValueError``: a NaN target, a wrongly shaped target, millimetres for
  metres, a start ``q0`` of the wrong shape, ``tol ≤ 0`` or infinite, a count option (iterations,
  restarts) that is not a whole number (NaN, 2.5, −1), a ``timeout`` that is not > 0, bad
  obstacle rows or clearance (the obstacle-aware solvers);
* every solver has a wall-clock budget: with endless options (a million restarts or iterations)
  on an unreachable target it returns a best effort with ``success=False`` and ``timed_out`` set
  once the budget is spent — checked with a clock that jumps past the budget after a few reads
  (``tests/conftest.py``), so it holds on any machine, plus one real-time guard against hangs;
* an unreachable target gives the best effort with ``success=False``, never an exception;
* a warm start at a solution succeeds within a few iterations.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pybullet_data
import pytest

from soft_envs.agents.ik import (
    BatchIKResult,
    IKResult,
    chain_ik,
    chain_ik_batch,
    is_success,
    jacobian_ik,
    jacobian_ik_batch,
    newton_raphson,
    newton_raphson_batch,
    newton_raphson_legs,
    sqp,
    trr,
    trr_batch,
)
from soft_envs.agents.ik.obstacles import ObstacleTerms, obstacle_rows
from soft_envs.agents.nn import NeuralIK
from soft_envs.collision import Box, Sphere, shape_rows
from soft_envs.robots import BulletChain, PCCArm, Peter, PlanarPCCArm, Quadruped

ORIENTATION_TOL = 1e-6  # jacobian_ik's default [rad]
FEW_ITERATIONS = 5  # a warm start at a solution takes at most this many (NR: its fixed count)


@cache
def _iiwa() -> BulletChain:
    return BulletChain(f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf", "lbr_iiwa_link_7")


@cache
def _network() -> NeuralIK:
    return NeuralIK.pretrained(2)


@dataclass(frozen=True)
class Solver:
    """One IK solver under the contract.

    ``solve(robot, goal, q0, **options)`` calls it; a *goal* is a target position ``(3,)`` [m]
    (position then quaternion xyzw, ``(7,)``, for full-pose IK), or ``(B, 3)`` for the batched
    solvers. ``robot()`` is the model it runs on.
    """

    name: str
    robot: Callable[[], Any]
    solve: Callable[..., IKResult | BatchIKResult]
    unreachable: tuple[float, float, float]  # a target position [m] no configuration reaches
    tol: float = 1e-6  # the solver's default success threshold [m]
    batch: int = 0  # targets per call of a batched solver (0: one target, an IKResult)
    pose: bool = False  # full pose: the goal also has an orientation
    takes_q0: bool = True
    counts: tuple[str, ...] = ()  # options that must be whole numbers
    endless: tuple[tuple[str, int], ...] = ()  # options that would run for hours without a budget
    obstacles: np.ndarray | None = None  # the obstacle rows an obstacle-aware solver is given

    # -------------------------------------------------------------- the robot's kinematics
    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """Configurations for one call: ``(n_dof,)``, ``(B, n_dof)`` or the legs' ``(4, 3)``."""
        robot = self.robot()
        if isinstance(robot, Quadruped):
            return np.stack([robot.leg(name).sample(rng) for name in robot.legs])
        return robot.sample(rng, self.batch) if self.batch else robot.sample(rng)

    def positions(self, q: np.ndarray) -> np.ndarray:
        """End-effector positions [m] of configurations (what the solvers aim at)."""
        robot = self.robot()
        return robot.legs_forward(q) if isinstance(robot, Quadruped) else robot.forward(q)

    def goal(self, q: np.ndarray) -> np.ndarray:
        """The goal that configuration ``q`` reaches exactly."""
        if not self.pose:
            return self.positions(q)
        position, quaternion = self.robot().forward_pose(q)
        return np.concatenate((position, quaternion), axis=-1)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        robot = self.robot()
        if isinstance(robot, Quadruped):
            return robot.lower.reshape(4, 3), robot.upper.reshape(4, 3)
        return robot.lower, robot.upper

    def call(self, goal: np.ndarray, q0: np.ndarray | None = None, **options) -> IKResult | BatchIKResult:
        return self.solve(self.robot(), goal, q0, **options)


def _single(function, **fixed):
    return lambda robot, goal, q0, **options: function(robot, goal, q0, **fixed, **options)


def _sqp(robot, goal, q0, **options):
    return sqp(robot, goal, q0=q0, **options)


def _jacobian(method: str, pose: bool):
    def solve(robot, goal, q0, **options):
        goal = np.asarray(goal, dtype=float)
        if pose:
            return jacobian_ik(robot, goal[:3], goal[3:], method=method, q0=q0, **options)
        return jacobian_ik(robot, goal, method=method, q0=q0, **options)
    return solve


def _jacobian_batch(pose: bool):
    def solve(robot, goal, q0, **options):
        goal = np.asarray(goal, dtype=float)
        if pose:
            return jacobian_ik_batch(robot, goal[..., :3], goal[..., 3:], q0=q0, **options)
        return jacobian_ik_batch(robot, goal, q0=q0, **options)
    return solve


def _chain(batch: bool, pose: bool):
    def solve(robot, goal, q0, **options):
        goal = np.asarray(goal, dtype=float)
        function = chain_ik_batch if batch else chain_ik
        if pose:
            return function(robot, goal[..., :3], goal[..., 3:], q0=q0, **options)
        return function(robot, goal, q0=q0, **options)
    return solve


def _network_solve(robot, goal, q0, **options):
    assert q0 is None, "the hybrid starts from the network's answer"
    return _network().solve(goal, **options)


# Obstacles out of the arms' reach (PETER 0.14 m, the PCC arm 0.21 m) and an EMPTY row.
_FAR = shape_rows([Sphere((0.35, 0.0, 0.1), 0.05), None, Box((-0.3, 0.1, 0.05), (0.02, 0.03, 0.04))])


def _aware(function, **fixed):
    return lambda robot, goal, q0, **options: function(robot, goal, q0, obstacles=_FAR, **fixed, **options)


_TRR = dict(counts=("max_iterations", "restarts"), endless=(("max_iterations", 10**6), ("restarts", 10**6)))
_SQP = dict(counts=("max_iterations", "restarts", "newton_steps"), endless=(("restarts", 10**6),))
_NEWTON = dict(counts=("iterations",), endless=(("iterations", 10**7),))
_JACOBIAN = dict(counts=("max_iterations", "restarts", "stall_iterations"),
                 endless=(("max_iterations", 10**8), ("restarts", 10**7)))
SOLVERS = [
    Solver("trr", lambda: Peter(2), _single(trr), (0.0, 0.0, 1.0), **_TRR),
    Solver("trr_batch", lambda: Peter(2), _single(trr_batch), (0.0, 0.0, 1.0), batch=3, counts=("max_iterations",),
           endless=(("max_iterations", 10**7),)),
    Solver("sqp-PCCArm", lambda: PCCArm(3, 6), _sqp, (0.0, 0.0, 0.5), **_SQP),
    Solver("sqp-PlanarPCCArm", lambda: PlanarPCCArm(4, 6), _sqp, (0.0, 0.0, 1.0), **_SQP),
    Solver("newton_raphson", lambda: Quadruped().leg("front_left"), _single(newton_raphson), (0.0, 0.0, -0.5),
           tol=1e-9, **_NEWTON),
    Solver("newton_raphson_batch", lambda: Quadruped().leg("front_left"), _single(newton_raphson_batch),
           (0.0, 0.0, -0.5), tol=1e-9, batch=3, **_NEWTON),
    Solver("newton_raphson_legs", Quadruped, _single(newton_raphson_legs), (0.0, 0.0, -0.5), tol=1e-9, batch=4,
           **_NEWTON),
    *[Solver(f"jacobian_ik-{method}{'-pose' if pose else ''}", _iiwa, _jacobian(method, pose), (2.0, 0.0, 0.5),
             pose=pose, **_JACOBIAN)
      for pose in (False, True) for method in ("pinv", "dls", "transpose")],
    *[Solver(f"jacobian_ik_batch{'-pose' if pose else ''}", _iiwa, _jacobian_batch(pose), (2.0, 0.0, 0.5), batch=3,
             pose=pose, **_JACOBIAN) for pose in (False, True)],
    *[Solver(f"chain_ik{'_batch' if batch else ''}{'-pose' if pose else ''}", _iiwa, _chain(batch, pose),
             (2.0, 0.0, 0.5), batch=3 if batch else 0, pose=pose, **_JACOBIAN)
      for batch in (False, True) for pose in (False, True)],
    Solver("NeuralIK.solve", lambda: _network().model, _network_solve, (0.0, 0.0, 1.0), takes_q0=False),
    Solver("trr-obstacles", lambda: Peter(2), _aware(trr), (0.0, 0.0, 1.0), obstacles=_FAR, **_TRR),
    Solver("sqp-PCCArm-obstacles", lambda: PCCArm(3, 6), _aware(sqp), (0.0, 0.0, 0.5), obstacles=_FAR, **_SQP),
]
BY_NAME = {solver.name: solver for solver in SOLVERS}
NAMES = list(BY_NAME)


@pytest.fixture(params=NAMES)
def solver(request) -> Solver:
    return BY_NAME[request.param]


def _unreachable_goal(solver: Solver, rng: np.random.Generator) -> np.ndarray:
    """A goal whose position (every row's, for a batch) cannot be reached."""
    far = np.asarray(solver.unreachable, dtype=float)
    goal = solver.goal(solver.sample(rng))
    if solver.pose:
        return np.concatenate((np.broadcast_to(far, goal[..., :3].shape), goal[..., 3:]), axis=-1)
    if solver.batch:
        return np.broadcast_to(far, goal.shape).copy()
    return far


def _slow_options(solver: Solver) -> dict:
    """Options that keep the best-effort solves short (the contract holds for any options)."""
    if solver.name.startswith(("jacobian_ik", "chain_ik")):
        return {"max_iterations": 300, "restarts": 2}
    if solver.name in ("trr", "sqp-PCCArm", "sqp-PlanarPCCArm", "trr-obstacles", "sqp-PCCArm-obstacles"):
        return {"restarts": 1}
    return {}


# ------------------------------------------------------------------------------ the record
def check_record(solver: Solver, goal: np.ndarray, result, tol: float) -> None:
    """Every invariant of the result record for ``goal`` solved with success threshold ``tol``."""
    lower, upper = solver.bounds()
    target = np.asarray(goal, dtype=float)[..., :3]
    if solver.batch:
        assert isinstance(result, BatchIKResult)
        solutions, errors, success = result.solutions, result.errors, result.success
        assert isinstance(solutions, np.ndarray) and solutions.shape == (solver.batch, *lower.shape[-1:])
        assert isinstance(errors, np.ndarray) and errors.shape == (solver.batch,) and errors.dtype == float
        assert isinstance(success, np.ndarray) and success.shape == (solver.batch,) and success.dtype == bool
        iterations = np.asarray(result.iterations)
        assert iterations.shape == (solver.batch,) and np.issubdtype(iterations.dtype, np.integer)
        assert len(result) == solver.batch and isinstance(result.extra, dict)
        timed_out = result.timed_out
        assert isinstance(timed_out, np.ndarray) and timed_out.shape == (solver.batch,) and timed_out.dtype == bool
    else:
        assert isinstance(result, IKResult)
        solutions, errors = result.solution, np.array([result.error])
        assert isinstance(solutions, np.ndarray) and solutions.shape == lower.shape
        assert isinstance(result.error, float) and isinstance(result.success, bool)
        assert isinstance(result.iterations, (int, np.integer)) and isinstance(result.message, str)
        iterations, success = np.array([result.iterations]), np.array([result.success])
        if solver.pose:
            assert isinstance(result.orientation_error, float) and result.orientation_error >= 0
        else:
            assert result.orientation_error is None
        assert isinstance(result.restarts, (int, np.integer))
        assert isinstance(result.timed_out, bool)
        timed_out = np.array([result.timed_out])
        assert result.timed_out == ("time budget of" in result.message)  # the message says so
    assert not np.any(timed_out & success), "a success is never a timeout"
    assert isinstance(result.seconds, float) and result.seconds >= 0
    assert np.all(np.isfinite(solutions))
    assert np.all(solutions >= lower) and np.all(solutions <= upper)
    assert np.all(iterations >= 0)
    assert np.all(errors >= 0)
    recomputed = np.linalg.norm(solver.positions(solutions) - target, axis=-1)
    np.testing.assert_allclose(errors, recomputed, rtol=1e-9, atol=1e-12)
    expected = is_success(errors, tol)
    np.testing.assert_array_equal(expected, errors < tol)  # the one definition of success
    if solver.pose:
        orientation = result.orientation_errors if solver.batch else result.orientation_error
        assert np.all(np.asarray(orientation) >= 0)
        expected = expected & (np.asarray(orientation) < ORIENTATION_TOL)
    elif solver.batch:
        assert result.orientation_errors is None
    if solver.obstacles is not None:  # success also requires a collision-free body
        assert isinstance(result.min_distance, float) and isinstance(result.collision_free, bool)
        terms = ObstacleTerms(solver.robot(), obstacle_rows(solver.obstacles))
        assert result.min_distance == pytest.approx(terms.min_distance(result.solution), abs=1e-12)
        assert result.collision_free == (result.min_distance >= 0)
        expected = expected & result.collision_free
    elif not solver.batch:
        assert result.min_distance is None and result.collision_free is None
    restarts = np.asarray(result.restarts if not solver.batch or result.restarts is not None else 0)
    assert np.issubdtype(restarts.dtype, np.integer) and np.all(restarts >= 0)
    np.testing.assert_array_equal(success, expected)


@pytest.mark.parametrize("seed", [0, 1])
def test_result_record_on_reachable_targets(solver, seed):
    rng = np.random.default_rng(seed)
    goal = solver.goal(solver.sample(rng))
    check_record(solver, goal, solver.call(goal), solver.tol)


def test_success_follows_the_tol_given(solver):
    """``success`` ⇔ ``error < tol`` for the ``tol`` passed, loose or strict."""
    goal = solver.goal(solver.sample(np.random.default_rng(2)))
    for tol in (1e-2, 1e-15):
        check_record(solver, goal, solver.call(goal, tol=tol, **_slow_options(solver)), tol)


def test_unreachable_target_is_a_best_effort(solver):
    goal = _unreachable_goal(solver, np.random.default_rng(3))
    result = solver.call(goal, **_slow_options(solver))
    check_record(solver, goal, result, solver.tol)
    assert not np.any(result.success)
    assert np.all(np.asarray(result.errors if solver.batch else result.error) > 0)


def test_warm_start_at_a_solution_succeeds_at_once(solver):
    if not solver.takes_q0:
        pytest.skip(f"{solver.name} takes no start configuration")
    q = solver.sample(np.random.default_rng(4))
    goal = solver.goal(q)
    result = solver.call(goal, q)
    check_record(solver, goal, result, solver.tol)
    assert np.all(result.success)
    assert np.all(np.asarray(result.iterations) <= FEW_ITERATIONS)


# ------------------------------------------------------------------------------ bad input
def _bad_goals(solver: Solver) -> dict[str, np.ndarray]:
    goal = solver.goal(solver.sample(np.random.default_rng(5)))
    position = goal[..., :3]
    nan = goal.copy()
    nan[..., 1] = np.nan
    millimetres = goal.copy()
    millimetres[..., :3] = 1000.0 * position + np.array([0.0, 0.0, 1000.0])
    bad = {"nan": nan, "millimetres": millimetres, "two numbers": goal[..., :2]}
    if solver.batch:
        bad["(B, 4)"] = np.zeros((solver.batch, 4))
        bad["(B, 3, 3)"] = np.zeros((solver.batch, 3, 3))
    else:
        bad["(2, 3)"] = np.zeros((2, goal.shape[-1]))
    return bad


@pytest.mark.parametrize("kind", ["nan", "millimetres", "two numbers", "wrong shape"])
def test_bad_target_raises_value_error(solver, kind):
    bad = _bad_goals(solver)
    goals = [bad[k] for k in bad if k[0] == "("] if kind == "wrong shape" else [bad[kind]]
    for goal in goals:
        with pytest.raises(ValueError):
            solver.call(goal)


def test_bad_start_raises_value_error(solver):
    if not solver.takes_q0:
        pytest.skip(f"{solver.name} takes no start configuration")
    q = solver.sample(np.random.default_rng(6))
    goal = solver.goal(q)
    n_dof = q.shape[-1]
    bad_starts = [np.zeros(n_dof + 1), np.full(q.shape, np.nan)]
    bad_starts.append(np.zeros((2, 3)) if isinstance(solver.robot(), Quadruped) and solver.batch == 4
                      else np.zeros((max(solver.batch, 1) + 1, n_dof)))
    for q0 in bad_starts:
        with pytest.raises(ValueError):
            solver.call(goal, q0)


@pytest.mark.parametrize("tol", [0.0, -1e-6, np.nan, np.inf])
def test_bad_tol_raises_value_error(solver, tol):
    goal = solver.goal(solver.sample(np.random.default_rng(7)))
    with pytest.raises(ValueError):
        solver.call(goal, tol=tol)


@pytest.mark.parametrize("value", [np.nan, 2.5, -1, np.inf, "3", True])
def test_count_options_must_be_whole_numbers(solver, value):
    """``max_iterations=nan`` used to hang, ``restarts=2.5`` raised a TypeError: now ValueErrors."""
    if not solver.counts:
        pytest.skip(f"{solver.name} has no count options")
    goal = solver.goal(solver.sample(np.random.default_rng(8)))
    for name in solver.counts:
        with pytest.raises(ValueError):
            solver.call(goal, **{name: value})


@pytest.mark.parametrize("name", [name for name in NAMES if BY_NAME[name].obstacles is not None])
@pytest.mark.parametrize("bad", ["width 15", "NaN", "kind 9", "not a rotation", "radius -1", "clearance -1"])
def test_bad_obstacles_raise_value_error(name, bad):
    solver = BY_NAME[name]
    assert solver.obstacles is not None
    goal = solver.goal(solver.sample(np.random.default_rng(11)))
    rows = solver.obstacles.copy()
    options: dict[str, Any] = {}
    if bad == "width 15":
        rows = rows[:, :15]
    elif bad == "NaN":
        rows[0, 1] = np.nan
    elif bad == "kind 9":
        rows[0, 0] = 9
    elif bad == "not a rotation":
        rows[0, 4] = 2.0
    elif bad == "radius -1":
        rows[0, 13] = -1.0
    else:
        options["clearance"] = -1.0
    solve = trr if solver.name.startswith("trr") else sqp  # the aware solver, given the bad rows instead
    with pytest.raises(ValueError):
        solve(solver.robot(), goal, obstacles=rows, **options)


@pytest.mark.parametrize("timeout", [0.0, -1.0, np.nan, "1"])
def test_bad_timeout_raises_value_error(solver, timeout):
    goal = solver.goal(solver.sample(np.random.default_rng(9)))
    with pytest.raises(ValueError):
        solver.call(goal, timeout=timeout)


@pytest.mark.budget
def test_the_budget_ends_an_endless_solve(solver, expiring_clock):
    """Options that would take hours on an unreachable target and a 50 ms budget: the clock jumps
    past the budget after 30 reads at the latest (whatever the machine's speed), and the solver
    comes back — the budget is checked — with its best effort, ``success=False``, ``timed_out``
    set and (one target) the message saying so."""
    goal = _unreachable_goal(solver, np.random.default_rng(10))
    expiring_clock(30)
    result = solver.call(goal, timeout=0.05, **dict(solver.endless))
    check_record(solver, goal, result, solver.tol)
    assert not np.any(result.success)
    assert np.all(result.timed_out)
    if not solver.batch:
        assert "time budget of 0.05 s spent" in result.message


def test_a_real_budget_ends_an_endless_solve(solver):
    """End to end on the real clock, a guard against a hang only: endless options and a 0.2 s
    budget come back (the bound, 60 s of the test's own clock, is for any machine and load)."""
    goal = _unreachable_goal(solver, np.random.default_rng(10))
    start = time.perf_counter()
    result = solver.call(goal, timeout=0.2, **dict(solver.endless))
    assert time.perf_counter() - start < 60.0, f"{solver.name} ignored its budget"
    assert not np.any(result.success)


def test_every_solver_is_under_the_contract():
    """A solver added to ``soft_envs.agents.ik`` must join :data:`SOLVERS` (or say why not)."""
    from soft_envs.agents import ik

    not_solvers = {"IKResult", "BatchIKResult", "is_success",
                   "ik_step",  # one raw step for analysis, no result record
                   "sqp_trajectory"}  # sqp point by point (warm-started): covered through sqp
    covered = {solver.name.split("-")[0] for solver in SOLVERS}
    assert set(ik.__all__) - not_solvers == covered - {"NeuralIK.solve"}
