"""Newton–Raphson IK with move splitting (Orbegoso et al. 2021, seed 001 eqs. 1–4).

``q_{k+1} = q_k + J(q_k)^{-1} (P − F(q_k))`` for a fixed number of iterations (5 in the seed).
A move longer than ``max_step`` (0.6 cm in the seed) is split into equal straight-line steps
of at most ``max_step`` from the current foot position; each intermediate target gets the
same number of iterations, the last one is the target itself.

The inverse Jacobian is the model's closed form when it has one (the
:class:`~soft_envs.robots.base.JacobianSolve` protocol, e.g.
:class:`~soft_envs.robots.quadruped.QuadrupedLeg`), otherwise a linear solve of the analytic
Jacobian (square models) or its pseudo-inverse. At a singular Jacobian the step falls back to
damped least squares, so a singular or unreachable target gives a finite best effort with
``success=False`` — never NaN.

Two thresholds, two names: ``tol`` is the success threshold on the final position error [m]
(``success = error < tol``, as in every solver); ``stop_tol`` is the early-stopping rule — a
(sub-)move stops iterating once its error is at most ``stop_tol`` [m] (0, the default: never,
the seed's fixed iteration count).

* :func:`newton_raphson` — one target on any :class:`~soft_envs.robots.base.KinematicModel`.
* :func:`newton_raphson_batch` — ``B`` targets on one model, vectorised.
* :func:`newton_raphson_legs` — the four legs of a :class:`~soft_envs.robots.Quadruped` in one
  vectorised solve (each leg with its own target and start).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from math import cos, sin

import numpy as np

from soft_envs import clock
from soft_envs.agents.ik.result import (
    BatchIKResult,
    IKResult,
    budget_message,
    budget_spent,
    check_one_target,
    check_start,
    check_timeout,
    check_tol,
    is_success,
)
from soft_envs.exceptions import (
    InvalidConfigurationError,
    InvalidParameterError,
    InvalidTargetError,
    check_integer,
    check_nonnegative,
)
from soft_envs.robots.base import JacobianSolve, KinematicModel, check_target
from soft_envs.robots.quadruped import Quadruped, leg_forward_components, leg_newton_step

SINGULAR_DET = 1e-14  # |det J| below this [m³ for a 3-DOF leg] counts as singular
DAMPING = 1e-3  # damped-least-squares λ used at singular configurations


def _check_options(iterations: int, max_step: float | None, tol: float, stop_tol: float,
                   timeout: float) -> tuple[int, float, float]:
    """Check the options shared by the three solvers; returns ``(iterations, tol, deadline)``."""
    start = clock.now()
    iterations = check_integer("iterations", iterations, minimum=1)
    if max_step is not None and not (np.isfinite(max_step) and max_step > 0):
        raise InvalidParameterError(f"max_step must be > 0 [m] or None; got {max_step!r}")
    check_nonnegative(stop_tol=stop_tol)
    return iterations, check_tol(tol), start + check_timeout(timeout)


def _dls(jac: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Damped-least-squares step ``Jᵀ (J Jᵀ + λ² I)^{-1} r`` (batched)."""
    jjt = jac @ np.swapaxes(jac, -1, -2) + DAMPING**2 * np.eye(jac.shape[-2])
    return np.einsum("bji,bj->bi", jac, np.linalg.solve(jjt, r[..., None])[..., 0])


def model_step(model: KinematicModel) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The Newton step ``J(q)^{-1} r`` of ``model`` for batches ``(B, n)``, ``(B, 3)``.

    Uses the closed form of a :class:`~soft_envs.robots.base.JacobianSolve` model; singular rows
    get a damped-least-squares step.
    """
    closed_form = model.jacobian_solve if isinstance(model, JacobianSolve) else None

    def step(q: np.ndarray, r: np.ndarray) -> np.ndarray:
        if closed_form is not None:
            dq, det = closed_form(q, r)
            bad = ~(np.abs(det) > SINGULAR_DET) | ~np.all(np.isfinite(dq), axis=-1)
            if not bad.any():
                return dq
            dq = np.where(bad[:, None], 0.0, dq)
            dq[bad] = _dls(model.jacobian(q[bad]), r[bad])
            return dq
        jac = model.jacobian(q)
        if jac.shape[-1] != jac.shape[-2]:  # redundant or under-actuated: pseudo-inverse
            return np.einsum("bij,bj->bi", np.linalg.pinv(jac), r)
        det = np.linalg.det(jac)
        bad = ~(np.abs(det) > SINGULAR_DET)
        dq = np.empty_like(q)
        if (~bad).any():
            dq[~bad] = np.linalg.solve(jac[~bad], r[~bad][..., None])[..., 0]
        if bad.any():
            dq[bad] = _dls(jac[bad], r[bad])
        return dq

    return step


def _newton_core(forward, step, q, targets, iterations, max_step, stop_tol, lower, upper, deadline=math.inf):
    """Vectorised NR with splitting over rows; returns ``(q, iterations per row)``. Past
    ``deadline`` (``soft_envs.clock.now()`` value) it stops between sub-moves."""
    start = forward(q)
    move = targets - start
    if max_step is None:
        n_seg = np.ones(len(q), dtype=int)
    else:
        n_seg = np.maximum(1, np.ceil(np.sqrt(np.einsum("bi,bi->b", move, move)) / max_step - 1e-12)).astype(int)
    iters = np.zeros(len(q), dtype=int)
    for k in range(1, int(n_seg.max()) + 1):
        active = k <= n_seg
        if active.all() and k == n_seg[0] and (n_seg == k).all():
            goal = targets
        else:
            frac = np.minimum(k / n_seg, 1.0)[:, None]
            goal = np.where((k >= n_seg)[:, None], targets, start + frac * move)
        for _ in range(iterations):
            if clock.now() > deadline:
                break
            r = goal - forward(q)
            live = active
            if stop_tol > 0:
                live = live & (np.sqrt(np.einsum("bi,bi->b", r, r)) > stop_tol)
            if not live.any():
                break
            dq = step(q, r)
            live = live & np.all(np.isfinite(dq), axis=-1)
            new_q = q + dq
            if lower is not None:
                np.clip(new_q, lower, upper, out=new_q)
            q = np.where(live[:, None], new_q, q) if not live.all() else new_q
            iters += live
    return q, iters


def newton_raphson(
    model: KinematicModel,
    target: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    iterations: int = 5,
    max_step: float | None = 0.006,
    tol: float = 1e-9,
    stop_tol: float = 0.0,
    respect_bounds: bool = True,
    timeout: float = 1.0,
) -> IKResult:
    """Solve ``model.forward(q) = target`` [m] by Newton–Raphson from ``q0``.

    Args:
        model: any kinematic model (closed-form inverse Jacobian used when it has one).
        target: ``(3,)`` position [m] in the model's base frame.
        q0: start configuration ``(n_dof,)`` (default: the middle of the bounds).
        iterations: Newton iterations per (sub-)move (seed: 5).
        max_step: split moves longer than this [m] into equal steps (seed: 0.006); ``None``
            never splits.
        tol: success threshold on the final position error [m] (``success = error < tol``).
        stop_tol: stop iterating a (sub-)move once its error is at most ``stop_tol`` [m] (0: never,
            the seed's fixed iteration count).
        respect_bounds: project every iterate into the model's bounds (``False``: the seed's
            unconstrained iteration).
        timeout: wall-clock budget [s] (``math.inf``: none): a long split move stops between
            sub-moves once it is spent, with the error reached (``success`` only if below ``tol``).

    Returns:
        :class:`IKResult` with ``iterations`` = Newton steps taken over all sub-moves.
    """
    iterations, tol, deadline = _check_options(iterations, max_step, tol, stop_tol, timeout)
    target = check_one_target(model, target, "newton_raphson (use newton_raphson_batch for (B, 3))")
    q = check_start(model, q0, 0.5 * (model.lower + model.upper))
    batch = _solve(model, target[None, :], q, iterations, max_step, float(stop_tol), respect_bounds, tol, deadline)
    message = "converged" if batch.success[0] else ("unreachable or singular target: best effort"
                                                    if np.isfinite(batch.errors[0]) else "diverged")
    if batch.timed_out[0]:
        message = f"{budget_message(timeout)}; {message}"
    return batch.item(0, message=message)


def newton_raphson_batch(
    model: KinematicModel,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    iterations: int = 5,
    max_step: float | None = 0.006,
    tol: float = 1e-9,
    stop_tol: float = 0.0,
    respect_bounds: bool = True,
    timeout: float = 1.0,
) -> BatchIKResult:
    """:func:`newton_raphson` for ``B`` targets ``(B, 3)`` at once (``q0`` ``(n,)`` or ``(B, n)``)."""
    iterations, tol, deadline = _check_options(iterations, max_step, tol, stop_tol, timeout)
    targets = check_target(targets, reach=model.reach)
    if targets.ndim == 1:
        targets = targets[None, :]
    q = 0.5 * (model.lower + model.upper) if q0 is None else model.check_configuration(q0)
    if q.ndim == 2 and q.shape[0] != len(targets):
        raise InvalidConfigurationError(f"q0 must have shape ({model.n_dof},) or ({len(targets)}, {model.n_dof}); "
                                        f"got {q.shape}")
    return _solve(model, targets, q, iterations, max_step, float(stop_tol), respect_bounds, tol, deadline)


def _solve(model: KinematicModel, targets: np.ndarray, q0: np.ndarray, iterations: int, max_step: float | None,
           stop_tol: float, respect_bounds: bool, tol: float, deadline: float) -> BatchIKResult:
    """The checked inputs of :func:`newton_raphson` / :func:`newton_raphson_batch` -> the result."""
    q = np.broadcast_to(q0, (len(targets), model.n_dof)).astype(float)
    start = clock.now()
    lower, upper = (model.lower, model.upper) if respect_bounds else (None, None)
    q, iters = _newton_core(model.forward, model_step(model), q, targets, iterations, max_step, stop_tol,
                            lower, upper, deadline)
    seconds = clock.now() - start
    errors = np.linalg.norm(targets - model.forward(q), axis=-1)
    success = is_success(errors, tol)
    return BatchIKResult(solutions=q, errors=errors, success=success, iterations=iters,
                         seconds=seconds, timed_out=budget_spent(deadline, success))


def newton_raphson_legs(
    robot: Quadruped,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    iterations: int = 5,
    max_step: float | None = 0.006,
    tol: float = 1e-9,
    stop_tol: float = 0.0,
    respect_bounds: bool = True,
    timeout: float = 1.0,
) -> BatchIKResult:
    """All four legs of a :class:`~soft_envs.robots.Quadruped` in one vectorised solve.

    Args:
        robot: the quadruped (its legs' closed-form kinematics and bounds are used).
        targets: ``(4, 3)`` foot targets [m], each in its own leg base frame, legs in the
            order of :data:`~soft_envs.robots.quadruped.LEG_NAMES`.
        q0: ``(4, 3)`` (or ``(12,)``) start joint angles [rad]; default the standing pose.
        iterations, max_step, tol, stop_tol, respect_bounds, timeout: as in :func:`newton_raphson`.

    Returns:
        :class:`BatchIKResult` with ``solutions`` ``(4, 3)``.
    """
    iterations, tol, deadline = _check_options(iterations, max_step, tol, stop_tol, timeout)
    targets = check_target(targets, reach=robot.leg_reach)
    if targets.shape != (4, 3):
        raise InvalidTargetError(f"targets must have shape (4, 3); got {targets.shape}")
    q = robot.standing_configuration() if q0 is None else robot.check_joint_vector(q0).copy()
    start = clock.now()
    q, iters = legs_solve(robot, q, targets, iterations=iterations, max_step=max_step,
                          stop_tol=float(stop_tol), respect_bounds=respect_bounds, deadline=deadline)
    seconds = clock.now() - start
    errors = np.linalg.norm(targets - robot.legs_forward(q), axis=-1)
    success = is_success(errors, tol)
    return BatchIKResult(solutions=q, errors=errors, success=success, iterations=iters,
                         seconds=seconds, timed_out=budget_spent(deadline, success))


@lru_cache(maxsize=16)
def _leg_constants(lengths: tuple, sides: tuple, lower: tuple, upper: tuple) -> tuple:
    """Per-robot constants of the fused loop as floats: the lengths, and per leg its side and the
    middle and half-width of its three joint ranges."""
    legs = tuple((float(sides[i]), tuple(0.5 * (lower[3 * i + j] + upper[3 * i + j]) for j in range(3)),
                  tuple(0.5 * (upper[3 * i + j] - lower[3 * i + j]) for j in range(3))) for i in range(4))
    return tuple(float(v) for v in lengths), legs


def _fused_leg(k0: float, k1: float, k2: float, k3: float, side: float, a0: float, a1: float, a2: float,
               target: list[float], iterations: int, limit: float,
               deadline: float) -> tuple[float, float, float] | None:
    """The fused Newton loop of one leg in floats, or ``None`` when the general core must take over
    (the move must be split, a singular step, out of time)."""
    a12 = a1 + a2
    gx, gy, gz = target[0], side * target[1], target[2]
    for k in range(iterations):
        if k and clock.now() > deadline:
            return None
        s0, c0 = sin(a0), cos(a0)
        s1, c1 = sin(a1) * k2, cos(a1) * k2  # l2 sin q1, l2 cos q1
        s12, c12 = sin(a12) * k3, cos(a12) * k3  # l3 sin(q1+q2), l3 cos(q1+q2)
        c = s1 - s12 - k0  # foot height in the abduction-rotated plane
        rx = gx - c12 + c1
        u = gy - k1 * c0 - c * s0  # side · (target_y − Y)
        rz = gz - c * c0 + k1 * s0
        if k == 0 and rx * rx + u * u + rz * rz > limit:
            return None  # the move must be split
        det = s12 * c1 - c12 * s1  # l2 l3 sin q2
        if c == 0.0 or det == 0.0:
            return None
        d0 = (u * c0 - rz * s0) / c
        m = u * s0 + rz * c0 + k1 * d0
        a0 += d0
        a1 += (s12 * m - rx * c12) / det
        a12 += (s1 * m - c1 * rx) / det
    return a0, a1, a12 - a1


def legs_solve(robot: Quadruped, q: np.ndarray, targets: np.ndarray, *, iterations: int = 5,
               max_step: float | None = 0.006, stop_tol: float = 0.0,
               respect_bounds: bool = True, deadline: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """The unchecked core of :func:`newton_raphson_legs` (for controllers in a loop):
    ``(q (4, 3), iterations (4,))``.

    The common case — every foot within ``max_step`` of its target, no early stop — runs a
    fused loop per leg in plain floats: forward kinematics and the closed-form inverse Jacobian
    share the sines and cosines of ``(q0, q1, q1 + q2)`` (about 40 float operations per
    iteration). Anything else (splitting, early stop, a singular leg, an iterate out of the
    bounds) goes through the general vectorised core, from the start.
    """
    q = np.asarray(q, dtype=float)
    if stop_tol == 0:
        (k0, k1, k2, k3), legs = _leg_constants(robot.lengths, tuple(robot.sides), tuple(robot.lower),
                                                tuple(robot.upper))
        limit = math.inf if max_step is None else max_step**2
        rows, goals = q.tolist(), targets.tolist()
        out = []
        try:
            for (side, mid, half), (a0, a1, a2), goal in zip(legs, rows, goals):
                leg = _fused_leg(k0, k1, k2, k3, side, a0, a1, a2, goal, iterations, limit, deadline)
                # A split move, a singular leg or an iterate out of the bounds: the general core.
                if leg is None or not all(abs(v - m) <= h if respect_bounds else abs(v) < 1e3
                                          for v, m, h in zip(leg, mid, half)):
                    break
                out.append(leg)
        except (ValueError, OverflowError, ZeroDivisionError):  # a diverging iterate (sin of inf, ...)
            out = []
        if len(out) == 4:
            return np.array(out), np.full(4, iterations)
    lower, upper = (robot.lower.reshape(4, 3), robot.upper.reshape(4, 3)) if respect_bounds else (None, None)
    return _legs_general(robot, q, targets, iterations, max_step, stop_tol, lower, upper, deadline)


def _legs_general(robot, q, targets, iterations, max_step, stop_tol, lower, upper, deadline=math.inf):
    sides = robot.sides
    lengths = robot.lengths
    legs = list(robot.legs.values())

    def forward(qq):
        x, y, z = leg_forward_components(qq[:, 0], qq[:, 1], qq[:, 2], sides, *lengths)
        return np.stack((x, y, z), axis=-1)

    def step(qq, r):
        with np.errstate(divide="ignore", invalid="ignore"):
            d0, d1, d2, det = leg_newton_step(qq[:, 0], qq[:, 1], qq[:, 2], sides, r[:, 0], r[:, 1], r[:, 2],
                                              *lengths)
        dq = np.stack((d0, d1, d2), axis=-1)
        bad = ~(np.abs(det) > SINGULAR_DET)
        if bad.any():
            dq[~np.isfinite(dq)] = 0.0
            for i in np.flatnonzero(bad):
                dq[i] = _dls(legs[i].jacobian(qq[i][None]), r[i][None])[0]
        return dq

    return _newton_core(forward, step, np.asarray(q, dtype=float), targets, iterations, max_step, stop_tol,
                        lower, upper, deadline)
