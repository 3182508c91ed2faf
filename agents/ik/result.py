"""The contract every IK solver keeps: the result records, the one definition of success, and
the input checks the solvers share.

Every solver takes a :class:`~soft_envs.robots.base.KinematicModel` and a target position [m]
in the model's base frame, and returns an :class:`IKResult` (one target) or a
:class:`BatchIKResult` (``B`` targets):

* the solution is finite and within the model's bounds (best effort when the target is
  unreachable: never an exception, ``success=False``);
* ``error`` is the Euclidean position error ``‖x_d − forward(solution)‖`` [m];
* **success** is :func:`is_success`: ``error < tol``, strictly, with ``tol`` the solver's
  success threshold on the position error [m] (solvers that also solve an orientation
  additionally require ``orientation_error < orientation_tol``; an obstacle-aware solve, one given
  ``obstacles=``, additionally requires its solution ``collision_free``: the body's capsules at a
  distance ``min_distance >= 0`` from every obstacle);
* bad input (NaN, wrong shape, millimetres for metres, a start of the wrong shape, ``tol <= 0`` or
  ``inf``, a count that is not a whole number, NaN options) raises a :class:`ValueError` subclass
  from :mod:`soft_envs.exceptions` before any work;
* every solver has a wall-clock budget, its ``timeout`` keyword [s] (a default suited to the
  solver; ``math.inf`` for none): past it the solver returns its best effort so far, with
  ``success`` true only if that already meets the tolerances, and ``timed_out`` set (and, for
  one target, ``message`` saying "time budget of … s spent"). Budgets read
  :mod:`soft_envs.clock`, so tests drive them with a clock they control.

``tests/agents/test_solver_contract.py`` checks this over every solver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from soft_envs import clock
from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError, InvalidTargetError, check_positive
from soft_envs.robots.base import KinematicModel, check_target


def is_success(error: float | np.ndarray, tol: float) -> bool | np.ndarray:
    """The one definition of an IK success: position error [m] strictly below ``tol`` [m]
    (elementwise for a batch of errors)."""
    if isinstance(error, np.ndarray):
        return error < tol
    return bool(error < tol)


@dataclass
class IKResult:
    """Outcome of one IK solve.

    Attributes:
        solution: configuration found ``(n_dof,)`` (the model's units, within its bounds).
        error: Euclidean position error ``‖x_d − x(solution)‖`` [m].
        success: :func:`is_success` of ``error`` (and ``orientation_error`` below its own
            threshold when an orientation is solved).
        iterations: solver iterations (or function evaluations where the solver only counts those).
        seconds: wall time of the solve [s].
        orientation_error: angle of the orientation error [rad] (or the tip-angle error of
            ``sqp``), ``None`` for position-only IK.
        message: the solver's own words on how it stopped.
        restarts: random restarts the solver made after its first start (0: the first start
            was enough).
        timed_out: the wall-clock budget was spent before a success (the solve may have been cut
            short; ``message`` says so).
        min_distance: an obstacle-aware solve's (``obstacles=``) smallest distance [m] between the
            body's capsule surface and any obstacle at ``solution`` (negative: a penetration;
            ``inf`` when every obstacle row was empty); ``None`` for a solve without obstacles.
        collision_free: an obstacle-aware solve's ``min_distance >= 0`` (``None`` without
            obstacles); its ``success`` also requires it.
    """

    solution: np.ndarray
    error: float
    success: bool
    iterations: int
    seconds: float
    orientation_error: float | None = None
    message: str = ""
    restarts: int = 0
    timed_out: bool = False
    min_distance: float | None = None
    collision_free: bool | None = None


@dataclass
class BatchIKResult:
    """Outcome of a batched solve of ``B`` targets; the fields of :class:`IKResult`, one per target.

    Attributes:
        solutions: ``(B, n_dof)`` configurations.
        errors: ``(B,)`` position errors [m].
        success: ``(B,)`` booleans, :func:`is_success` of ``errors``.
        iterations: ``(B,)`` iterations spent on each target.
        seconds: wall time of the whole batch [s].
        extra: solver-specific figures (e.g. how many targets ``trr_batch`` polished).
        orientation_errors: ``(B,)`` orientation error angles [rad] of a full-pose solve, else ``None``.
        restarts: ``(B,)`` random restarts spent on each target, or ``None`` for solvers without restarts.
        timed_out: ``(B,)`` booleans: the batch's wall-clock budget was spent before that target
            succeeded (:func:`budget_spent`).
    """

    solutions: np.ndarray
    errors: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    seconds: float
    extra: dict = field(default_factory=dict)
    orientation_errors: np.ndarray | None = None
    restarts: np.ndarray | None = None
    timed_out: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.errors.shape[0])

    def item(self, index: int, *, seconds: float | None = None, message: str = "") -> IKResult:
        """Target ``index`` as an :class:`IKResult` (``seconds`` default: the whole batch's)."""
        return IKResult(solution=self.solutions[index], error=float(self.errors[index]),
                        success=bool(self.success[index]), iterations=int(self.iterations[index]),
                        seconds=self.seconds if seconds is None else float(seconds), message=message,
                        orientation_error=(None if self.orientation_errors is None
                                           else float(self.orientation_errors[index])),
                        restarts=0 if self.restarts is None else int(self.restarts[index]),
                        timed_out=False if self.timed_out is None else bool(self.timed_out[index]))


def budget_spent(deadline: float, success: bool | np.ndarray) -> bool | np.ndarray:
    """Whether the budget ending at ``deadline`` (a :func:`soft_envs.clock.now` value) is spent
    without a success: ``timed_out`` of a result (elementwise for a batch's ``success``)."""
    expired = clock.now() > deadline
    if isinstance(success, np.ndarray):
        return expired & ~success
    return bool(expired and not success)


def budget_message(timeout: float) -> str:
    """The words every solver's ``message`` carries when its budget ended the work."""
    return f"time budget of {timeout:g} s spent"


# ---------------------------------------------------------------------------------------------
# Input checks shared by the solvers (each raises a ValueError subclass)
# ---------------------------------------------------------------------------------------------
def check_tol(tol: float, name: str = "tol") -> float:
    """``tol`` as a float if it is a finite number > 0 [m], else :class:`InvalidParameterError`."""
    return check_positive(f"{name} [m]", tol)


def check_timeout(timeout: float, name: str = "timeout") -> float:
    """The wall-clock budget [s] as a float: a number > 0 (``math.inf``: no budget), else
    :class:`InvalidParameterError`."""
    numeric = isinstance(timeout, (int, float, np.integer, np.floating)) and not isinstance(timeout, bool)
    value = float(timeout) if numeric else math.nan
    if not value > 0:
        raise InvalidParameterError(f"{name} must be a number of seconds > 0 (math.inf: no budget); got {timeout!r}")
    return value


def check_one_target(model: KinematicModel, target: np.ndarray, solver: str) -> np.ndarray:
    """One target position ``(3,)`` [m] for ``model`` (NaN, another shape, or a target more
    than 100 reaches away — millimetres for metres — raise :class:`InvalidTargetError`)."""
    arr = np.asarray(target, dtype=float)
    if arr.shape == (3,):  # the common case, checked in floats
        x, y, z = arr.tolist()
        reach = model.reach
        distance = math.sqrt(x * x + y * y + z * z)
        if math.isfinite(distance) and (reach is None or distance <= 100.0 * reach):
            return arr
    arr = check_target(target, reach=model.reach)
    if arr.ndim != 1:
        raise InvalidTargetError(f"{solver} solves one target of shape (3,); got {arr.shape}")
    return arr


def check_targets(model: KinematicModel, targets: np.ndarray, solver: str) -> np.ndarray:
    """A batch of target positions ``(B, 3)`` [m] for ``model`` (see :func:`check_one_target`)."""
    arr = check_target(targets, reach=model.reach)
    if arr.ndim != 2:
        raise InvalidTargetError(f"{solver} takes targets of shape (B, 3); got {arr.shape}")
    return arr


def check_start(model: KinematicModel, q0: np.ndarray | None, default: np.ndarray) -> np.ndarray:
    """The start configuration ``(n_dof,)``: ``q0`` checked (finite, right shape; not clipped),
    or ``default`` when ``q0`` is ``None``."""
    if q0 is None:
        return default
    arr = model.check_configuration(q0)
    if arr.ndim != 1:
        raise InvalidConfigurationError(f"q0 must be one configuration of shape ({model.n_dof},); got {arr.shape}")
    return arr
