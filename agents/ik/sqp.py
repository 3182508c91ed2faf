"""SQP inverse kinematics with an optional tip-angle secondary task (Keyvanara et al. 2023, eqs. 2–3).

:func:`sqp` solves ``min ‖x_d − x_tip(q)‖²`` within the model's bounds, as the paper does with
MATLAB's ``fmincon`` (SQP), here ``scipy.optimize.minimize(method="SLSQP")`` with the analytic
gradient. Two things make it exact and fast along trajectories:

* **Smooth coordinates.** For models that offer them (the
  :class:`~soft_envs.robots.base.SmoothCoordinates` protocol; :class:`~soft_envs.robots.PCCArm`)
  the solve runs in ``(ΔL, a = θ cos φ, b = θ sin φ)`` per segment:
  no singularity at ``θ = 0``, no periodic ``φ``; the bend limit is the disk
  ``a² + b² ≤ θ_max²`` (an inequality constraint for SLSQP, a radial projection for Newton).
  The answer is mapped back to ``(ΔL, θ, φ)`` nearest the warm start (``θ`` signed, ``φ``
  continuous). Other models are solved in their own coordinates with box bounds.
* **Warm-start fast path.** From the previous trajectory point a few minimum-norm
  Gauss–Newton steps ``Δu = J⁺ e`` (bounds by projection;
  :func:`soft_envs.robots.gauss_newton.gauss_newton`) converge quadratically to machine
  precision in 2–4 kinematics evaluations; SLSQP (and seeded random restarts) run only when
  that path stalls — e.g. on a bound, or for a cold start far from the target.

Secondary task (tip angle, paper eq. 3), **lexicographic, position first**: Newton uses the
task-priority step ``Δu = J⁺e + N (J_h N)⁺ (e_h − J_h J⁺ e)`` with ``N = I − J⁺J`` the
position null space, so the tip-angle correction never moves the tip to first order; the
SLSQP fallback is two-stage — stage 1 minimises the position error, stage 2 minimises
``(h(u) − h_d)²`` subject to the equality ``x_tip(u) = x_d`` — and stage 2 is kept only if
the position error is not worse than stage 1's. The model must be a
:class:`~soft_envs.robots.base.TipAngle` (the planar PCC arm: ``Σ θ_i``).
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
from scipy.optimize import minimize

from soft_envs import clock
from soft_envs.agents.ik.obstacles import DEFAULT_CLEARANCE, ObstacleTerms, check_clearance, obstacle_rows, ranking
from soft_envs.agents.ik.result import (
    BatchIKResult,
    IKResult,
    budget_message,
    budget_spent,
    check_one_target,
    check_targets,
    check_timeout,
    check_tol,
    is_success,
)
from soft_envs.exceptions import InvalidParameterError, check_integer
from soft_envs.robots.base import BodyBackbone, KinematicModel, SmoothCoordinates, TipAngle
from soft_envs.robots.gauss_newton import SolveCoordinates, clipped_start, gauss_newton, tip_angle_gradient


def _constraints(coords: SolveCoordinates) -> list[dict]:
    """SLSQP's inequality constraints of the smooth coordinates (the PCC bend disk), if any."""
    if not coords.smooth:
        return []
    model = cast(SmoothCoordinates, coords.model)
    n_con = model.smooth_constraint(coords.lower)[0].shape[0]
    if n_con == 0:
        return []
    return [{"type": "ineq", "fun": lambda u: model.smooth_constraint(u)[0],
             "jac": lambda u: model.smooth_constraint(u)[1]}]


def _stop_at(deadline: float):
    """An optimiser callback that stops the optimiser once ``clock.now()`` passes ``deadline``."""
    def callback(*_) -> None:
        if clock.now() > deadline:
            raise StopIteration
    return callback


def _slsqp(problem: SolveCoordinates, target: np.ndarray, u0: np.ndarray,
           max_iterations: int, deadline: float = math.inf) -> tuple[np.ndarray, int, str]:
    def fun(u):
        x, J = problem.kinematics(u)
        e = x - target
        return 0.5 * float(e @ e), J.T @ e

    bounds = list(zip(problem.lower, problem.upper))
    res = minimize(fun, np.clip(u0, problem.lower, problem.upper), jac=True, method="SLSQP", bounds=bounds,
                   constraints=_constraints(problem), options={"ftol": 1e-30, "maxiter": max_iterations},
                   callback=_stop_at(deadline))
    return problem.project(res.x), int(res.nfev), str(res.message)


def _slsqp_angle(problem: SolveCoordinates, target: np.ndarray, u0: np.ndarray, angle_target: float, angle_fn,
                 angle_grad: np.ndarray, max_iterations: int, deadline: float = math.inf) -> tuple[np.ndarray, int]:
    """Stage 2 of the lexicographic solve: tip angle subject to ``x_tip(u) = x_d``."""
    cons = _constraints(problem) + [{
        "type": "eq", "fun": lambda u: problem.kinematics(u)[0] - target,
        "jac": lambda u: problem.kinematics(u)[1]}]
    res = minimize(lambda u: (0.5 * (angle_fn(u) - angle_target) ** 2, (angle_fn(u) - angle_target) * angle_grad),
                   u0, jac=True, method="SLSQP", bounds=list(zip(problem.lower, problem.upper)),
                   constraints=cons, options={"ftol": 1e-24, "maxiter": max_iterations}, callback=_stop_at(deadline))
    return problem.project(res.x), int(res.nfev)



def _starts(model: KinematicModel, problem: SolveCoordinates, u0: np.ndarray, restarts: int, seed: int,
            deadline: float):
    """``(attempt, start)`` in the solve coordinates: ``u0`` first, then up to ``restarts`` random
    starts of ``model.sample`` (one generator seeded by ``seed``, made at the first restart) while
    the clock is before ``deadline`` [s]."""
    rng: np.random.Generator | None = None
    for attempt in range(restarts + 1):
        if attempt and clock.now() > deadline:
            return
        if attempt:
            rng = np.random.default_rng(seed) if rng is None else rng
        yield attempt, (u0 if rng is None else problem.project(problem.to_u(model.sample(rng))))


def sqp(
    model: KinematicModel,
    target: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    tip_angle: float | None = None,
    tol: float = 1e-6,
    precision: float = 1e-11,
    method: str = "auto",
    max_iterations: int = 200,
    newton_steps: int = 12,
    restarts: int = 4,
    seed: int = 0,
    timeout: float = 1.0,
    obstacles=None,
    clearance: float = DEFAULT_CLEARANCE,
) -> IKResult:
    """Solve ``model.forward(q) = target`` within the bounds (SQP; see the module docstring).

    Args:
        model: any :class:`~soft_envs.robots.base.KinematicModel`; models with
            :class:`~soft_envs.robots.base.SmoothCoordinates` (the PCC arms) are solved in them.
        target: tip position ``(3,)`` [m] in the model's base frame.
        q0: start (the previous trajectory point's solution); default all zeros clipped into
            the bounds (the paper's initial state: straight, relaxed arm).
        tip_angle: secondary-task target [rad] for ``model.tip_angle`` (lexicographic, position
            first; the model must be a :class:`~soft_envs.robots.base.TipAngle`); ``None`` for
            position only.
        tol: success threshold on the position error [m].
        precision: the solve stops once the position error is below this [m].
        method: ``"auto"`` (Newton fast path, SLSQP fallback), ``"newton"`` or ``"slsqp"``.
        max_iterations: SLSQP iteration cap per start.
        newton_steps: Gauss–Newton step cap.
        restarts: seeded random restarts when neither path reaches ``tol``.
        seed: seed of the restarts.
        timeout: wall-clock budget [s] (``math.inf``: none); past it the best effort so far is
            returned.
        obstacles: shapes or packed rows ``(S, 16)`` (:mod:`soft_envs.collision`, the model's base
            frame; ``EMPTY`` rows ignored) the body must keep ``clearance`` from: SLSQP inequality
            constraints ``d(q) − clearance ≥ 0`` per backbone segment and obstacle (see
            :func:`_sqp_obstacles`; the model must be a :class:`~soft_envs.robots.base.BodyBackbone`;
            position only, ``method`` ``"auto"`` or ``"slsqp"``). ``None`` (or only empty rows):
            the plain solve.
        clearance: minimum distance [m] between the body's capsule surface and every obstacle.

    Returns:
        :class:`IKResult`; ``iterations`` counts kinematics evaluations, ``orientation_error``
        is ``|tip_angle(q) − tip_angle|`` [rad] when a tip angle is requested; with
        ``obstacles``, ``min_distance`` and ``collision_free`` (and ``success`` requires the latter).
    """
    start_time = clock.now()
    target = check_one_target(model, target, "sqp (use sqp_trajectory for (T, 3))")
    if method not in ("auto", "newton", "slsqp"):
        raise InvalidParameterError(f"method must be 'auto', 'newton' or 'slsqp'; got {method!r}")
    tol = check_tol(tol)
    precision = check_tol(precision, "precision")
    max_iterations = check_integer("max_iterations", max_iterations, minimum=1)
    newton_steps = check_integer("newton_steps", newton_steps, minimum=1)
    restarts = check_integer("restarts", restarts, minimum=0)
    deadline = start_time + check_timeout(timeout)
    q0 = clipped_start(model, q0)
    angle_grad = tip_angle_gradient(model, tip_angle)
    gradient = np.zeros(model.n_dof) if angle_grad is None else angle_grad

    def angle_fn(u: np.ndarray) -> float:  # used only with a tip angle: linear in the planar coordinates
        return float(gradient @ u)

    if tip_angle is not None:
        tip_angle = float(tip_angle)
    if obstacles is not None:
        rows = obstacle_rows(obstacles)
        clearance = check_clearance(clearance)
        if tip_angle is not None:
            raise InvalidParameterError("sqp avoids obstacles on the position task only (no tip_angle)")
        if method == "newton":
            raise InvalidParameterError("method='newton' cannot keep obstacle constraints: use 'auto' or 'slsqp'")
        if rows.shape[0]:
            return _sqp_obstacles(model, target, q0, rows, clearance, tol=tol, precision=precision, method=method,
                                  max_iterations=max_iterations, newton_steps=newton_steps, restarts=restarts,
                                  seed=seed, timeout=timeout, start_time=start_time)

    problem = SolveCoordinates(model)
    u0 = problem.project(problem.to_u(q0))
    evaluations, message = 0, ""
    best_u, best_err = u0, np.inf

    def consider(u: np.ndarray, err: float | None = None) -> float:
        nonlocal best_u, best_err
        if err is None:
            e = target - problem.kinematics(u)[0]
            err = float(np.sqrt(e @ e))
        if err < best_err or (tip_angle is not None and err <= max(best_err, precision)
                              and abs(angle_fn(u) - tip_angle) < abs(angle_fn(best_u) - tip_angle)):
            best_u, best_err = u, err
        return err

    attempt = 0
    for attempt, start_u in _starts(model, problem, u0, restarts, seed, deadline):  # noqa: B007 (read after)
        if method in ("auto", "newton"):
            u, err, n_eval = gauss_newton(problem, target, start_u, precision=precision, max_steps=newton_steps,
                                         angle_target=tip_angle, angle_grad=angle_grad)
            evaluations += n_eval
            consider(u, err)
            message = "Gauss-Newton converged" if err < precision else "Gauss-Newton stalled"
            if err < precision or method == "newton":
                if best_err < tol:
                    break
                continue
        u, n_eval, message = _slsqp(problem, target, start_u, max_iterations, deadline)
        evaluations += n_eval
        err = consider(u)
        if method == "auto" and err < 1e-3:  # polish to machine precision (and the tip angle)
            u, err2, n_eval = gauss_newton(problem, target, u, precision=precision, max_steps=newton_steps,
                                          angle_target=tip_angle, angle_grad=angle_grad)
            evaluations += n_eval
            consider(u, err2)
        if tip_angle is not None and best_err < tol and abs(angle_fn(best_u) - tip_angle) > 1e-9:
            # Lexicographic stage 2: the tip angle subject to the position equality, then a
            # task-priority Newton polish; kept only if the position is as good as stage 1's.
            u2, n_eval = _slsqp_angle(problem, target, best_u, tip_angle, angle_fn, gradient, max_iterations,
                                      deadline)
            evaluations += n_eval
            u2, err2, n_eval = gauss_newton(problem, target, u2, precision=precision, max_steps=newton_steps,
                                           angle_target=tip_angle, angle_grad=angle_grad)
            evaluations += n_eval
            if err2 <= max(best_err, precision) and abs(angle_fn(u2) - tip_angle) < abs(angle_fn(best_u) - tip_angle):
                best_u, best_err = u2, err2
        if best_err < tol:
            break

    solution = problem.to_q(best_u, reference=q0)
    error = float(np.linalg.norm(model.forward(solution) - target))
    angle_error = None if tip_angle is None else float(abs(cast(TipAngle, model).tip_angle(solution) - tip_angle))
    success = bool(is_success(error, tol))
    timed_out = budget_spent(deadline, success)
    if timed_out:
        message = f"{budget_message(timeout)}; " + message
    return IKResult(solution=solution, error=error, success=success, iterations=evaluations,
                    seconds=clock.now() - start_time, orientation_error=angle_error, message=message,
                    restarts=attempt, timed_out=timed_out,
                    **({} if obstacles is None else {"min_distance": math.inf, "collision_free": True}))


def _backbone_in(problem: SolveCoordinates):
    """The model's backbone kinematics in the solve coordinates: ``u -> (points, ∂points/∂u)``."""
    model = problem.model
    if not isinstance(model, BodyBackbone):
        raise InvalidParameterError(f"{type(model).__name__} has no body backbone: it cannot avoid obstacles")
    if not problem.smooth:
        return model.backbone_kinematics
    smooth = getattr(model, "smooth_backbone_kinematics", None)
    if smooth is None:
        raise InvalidParameterError(f"{type(model).__name__} has no backbone Jacobian in its smooth coordinates")
    return smooth


def _sqp_obstacles(model: KinematicModel, target: np.ndarray, q0: np.ndarray, rows: np.ndarray, clearance: float,
                   *, tol: float, precision: float, method: str, max_iterations: int, newton_steps: int,
                   restarts: int, seed: int, timeout: float, start_time: float) -> IKResult:
    """:func:`sqp` with obstacles (inputs checked). Per start: the Gauss–Newton fast path on the tip
    alone (``method="auto"``), kept if its solution keeps the clearance; else SLSQP from there with
    the constraints ``d_kj(u) − clearance ≥ 0`` for every backbone segment ``k`` and obstacle ``j``
    (Jacobians ``n̂ᵀ ∂p/∂u`` at the witness point, :class:`~soft_envs.agents.ik.obstacles.ObstacleTerms`)
    besides the bend disk, then a Gauss–Newton polish kept only if it still keeps the clearance.
    The answer is the best configuration seen (:func:`~soft_envs.agents.ik.obstacles.ranking`).
    """
    deadline = start_time + timeout
    problem = SolveCoordinates(model)
    terms = ObstacleTerms(model, rows, kinematics=_backbone_in(problem))
    cache: dict[str, np.ndarray] = {}

    def distances(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if "u" not in cache or not np.array_equal(cache["u"], u):
            cache["u"] = np.array(u, dtype=float)
            cache["d"], cache["J"] = terms.distances(cache["u"])
        return cache["d"], cache["J"]

    constraints = _constraints(problem) + [{"type": "ineq", "fun": lambda u: distances(u)[0] - clearance,
                                            "jac": lambda u: distances(u)[1]}]
    u0 = problem.project(problem.to_u(q0))
    evaluations, message, attempt = 0, "", 0
    best: dict = {"key": (3, math.inf), "u": u0}

    def consider(u: np.ndarray, err: float | None = None) -> None:
        if err is None:
            e = target - problem.kinematics(u)[0]
            err = float(np.sqrt(e @ e))
        key = ranking(err, float(distances(u)[0].min()), clearance)
        if key < best["key"]:
            best.update(key=key, u=np.array(u, dtype=float))

    def done(threshold: float) -> bool:
        return best["key"][0] == 0 and best["key"][1] < threshold

    for attempt, start_u in _starts(model, problem, u0, restarts, seed, deadline):  # noqa: B007 (read after)
        if method == "auto":
            u, err, n_eval = gauss_newton(problem, target, start_u, precision=precision, max_steps=newton_steps)
            evaluations += n_eval
            consider(u, err)
            message = "Gauss-Newton converged clear of the obstacles"
            if done(precision):
                break
            start_u = u
        res = minimize(lambda u: _half_squared_error(problem, target, u),
                       np.clip(start_u, problem.lower, problem.upper), jac=True, method="SLSQP",
                       bounds=list(zip(problem.lower, problem.upper)),
                       constraints=constraints, options={"ftol": 1e-30, "maxiter": max_iterations},
                       callback=_stop_at(deadline))
        u = problem.project(res.x)
        evaluations += int(res.nfev)
        message = f"SLSQP with {len(rows)} obstacle(s): {res.message}"
        consider(u)
        if method == "auto" and best["key"][0] == 0 and precision <= best["key"][1] < 1e-3:
            u, err, n_eval = gauss_newton(problem, target, best["u"], precision=precision, max_steps=newton_steps)
            evaluations += n_eval
            consider(u, err)  # kept only if it still keeps the clearance
        if done(tol) or clock.now() > deadline:
            break

    solution = problem.to_q(best["u"], reference=q0)
    error = float(np.linalg.norm(model.forward(solution) - target))
    distance = ObstacleTerms(model, rows).min_distance(solution)
    collision_free = distance >= 0.0
    success = bool(is_success(error, tol)) and collision_free
    timed_out = budget_spent(deadline, success)
    if timed_out:
        message = f"{budget_message(timeout)}; " + message
    return IKResult(solution=solution, error=error, success=success, iterations=evaluations,
                    seconds=clock.now() - start_time, message=message, restarts=attempt, timed_out=timed_out,
                    min_distance=distance, collision_free=collision_free)


def _half_squared_error(problem: SolveCoordinates, target: np.ndarray, u: np.ndarray) -> tuple[float, np.ndarray]:
    """SLSQP's objective ``½‖x(u) − x_d‖²`` and its gradient."""
    x, J = problem.kinematics(u)
    e = x - target
    return 0.5 * float(e @ e), J.T @ e


def sqp_trajectory(
    model: KinematicModel,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    extrapolate: bool = True,
    **options,
) -> BatchIKResult:
    """Solve a trajectory point by point, each warm-started from the previous solution.

    ``targets`` ``(T, 3)`` [m]; ``options`` go to :func:`sqp`. With ``extrapolate`` the start
    is the linear prediction from the two previous solutions (in smooth coordinates), which
    saves one Gauss–Newton step per point; the timing of each point includes it. ``extra`` holds per-point
    ``seconds`` and (with ``tip_angle``) ``tip_angle_errors`` [rad].
    """
    start_time = clock.now()
    targets = check_targets(model, targets, "sqp_trajectory")
    tol = check_tol(options.get("tol", 1e-6))
    n = targets.shape[0]
    solutions = np.empty((n, model.n_dof))
    errors, seconds, iterations = np.empty(n), np.empty(n), np.empty(n, dtype=int)
    angle_errors = np.full(n, np.nan)
    timed_out = np.zeros(n, dtype=bool)
    previous, before = q0, None
    problem = SolveCoordinates(model)
    for i, target in enumerate(targets):
        t_pred = clock.now()
        start = previous
        if extrapolate and before is not None and previous is not None:
            # Linear prediction in the smooth coordinates: the start is O(Δt²) from the solution.
            u_prev = problem.to_u(previous)
            predicted = problem.project(2 * u_prev - problem.to_u(before))
            start = problem.to_q(predicted, reference=previous)
        t0 = clock.now()
        res = sqp(model, target, start, **options)
        res.seconds = clock.now() - t0 + (t0 - t_pred)
        solutions[i], errors[i], seconds[i], iterations[i] = res.solution, res.error, res.seconds, res.iterations
        timed_out[i] = res.timed_out
        if res.orientation_error is not None:
            angle_errors[i] = res.orientation_error
        before, previous = previous, res.solution
    return BatchIKResult(solutions=solutions, errors=errors, success=errors < tol, iterations=iterations,
                         seconds=clock.now() - start_time, timed_out=timed_out,
                         extra={"seconds": seconds, "tip_angle_errors": angle_errors})
