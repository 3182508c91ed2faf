"""SQP inverse kinematics with an optional tip-angle secondary task (Keyvanara et al. 2023, eqs. 2–3).

:func:`sqp` solves ``min ‖x_d − x_tip(q)‖²`` within the model's bounds, as the paper does with
MATLAB's ``fmincon`` (SQP), here ``scipy.optimize.minimize(method="SLSQP")`` with the analytic
gradient. Two things make it exact and fast along trajectories:

* **Smooth coordinates.** For models that offer them (:class:`~soft_envs.robots.PCCArm`:
  ``smooth_kinematics``, ``to_smooth``/``from_smooth``, ``project_smooth``,
  ``smooth_constraint``) the solve runs in ``(ΔL, a = θ cos φ, b = θ sin φ)`` per segment:
  no singularity at ``θ = 0``, no periodic ``φ``; the bend limit is the disk
  ``a² + b² ≤ θ_max²`` (an inequality constraint for SLSQP, a radial projection for Newton).
  The answer is mapped back to ``(ΔL, θ, φ)`` nearest the warm start (``θ`` signed, ``φ``
  continuous). Other models are solved in their own coordinates with box bounds.
* **Warm-start fast path.** From the previous trajectory point a few minimum-norm
  Gauss–Newton steps ``Δu = J⁺ e`` (bounds by projection) converge quadratically to machine
  precision in 2–4 kinematics evaluations; SLSQP (and seeded random restarts) run only when
  that path stalls — e.g. on a bound, or for a cold start far from the target.

Secondary task (tip angle, paper eq. 3), **lexicographic, position first**: Newton uses the
task-priority step ``Δu = J⁺e + N (J_h N)⁺ (e_h − J_h J⁺ e)`` with ``N = I − J⁺J`` the
position null space, so the tip-angle correction never moves the tip to first order; the
SLSQP fallback is two-stage — stage 1 minimises the position error, stage 2 minimises
``(h(u) − h_d)²`` subject to the equality ``x_tip(u) = x_d`` — and stage 2 is kept only if
the position error is not worse than stage 1's. The model must provide ``tip_angle(q)`` and
``tip_angle_gradient(q)`` (the planar PCC arm: ``Σ θ_i``).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

from soft_envs.agents.ik.result import BatchIKResult, IKResult
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.base import KinematicModel, check_target


class _Problem:
    """Kinematics of a model in its smooth coordinates (identity for plain models)."""

    def __init__(self, model: KinematicModel) -> None:
        self.model = model
        self.smooth = hasattr(model, "smooth_kinematics")
        if self.smooth:
            self.lower, self.upper = model.smooth_lower, model.smooth_upper
        else:
            self.lower, self.upper = model.lower, model.upper

    def to_u(self, q: np.ndarray) -> np.ndarray:
        return self.model.to_smooth(q) if self.smooth else np.array(q, dtype=float)

    def to_q(self, u: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
        if not self.smooth:
            return np.clip(u, self.model.lower, self.model.upper)
        return np.clip(self.model.from_smooth(u, reference=reference), self.model.lower, self.model.upper)

    def kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.smooth:
            return self.model.smooth_kinematics(u)
        return self.model.forward(u), self.model.jacobian(u)

    def project(self, u: np.ndarray) -> np.ndarray:
        return self.model.project_smooth(u) if self.smooth else np.clip(u, self.lower, self.upper)

    def constraints(self) -> list[dict]:
        if not self.smooth:
            return []
        n_con = self.model.smooth_constraint(self.lower)[0].shape[0]
        if n_con == 0:
            return []
        return [{"type": "ineq", "fun": lambda u: self.model.smooth_constraint(u)[0],
                 "jac": lambda u: self.model.smooth_constraint(u)[1]}]


def _newton(problem: _Problem, target: np.ndarray, u0: np.ndarray, *, precision: float, max_steps: int,
            angle_target: float | None, angle_grad: np.ndarray | None, angle_fn) -> tuple[np.ndarray, float, int]:
    """Projected minimum-norm Gauss–Newton (with the task-priority tip-angle step). Returns the
    best ``u``, its position error and the number of kinematics evaluations."""
    u = u0.copy()
    best_u, best_err, stall = u.copy(), np.inf, 0
    n = u.shape[0]
    evaluations = 0
    for _ in range(max_steps):
        x, J = problem.kinematics(u)
        evaluations += 1
        e = target - x
        err = float(np.sqrt(e @ e))
        if err < best_err * (1 - 1e-3) or err < precision:
            stall = 0
        else:
            stall += 1
        if err <= best_err:
            best_u, best_err = u.copy(), err
        if stall >= 3:
            break
        eh = None if angle_target is None else angle_target - angle_fn(u)
        if err < precision and (eh is None or abs(eh) < 1e-12):
            break
        # Active set on the box bounds: variables the step would push through a bound are
        # moved onto it and frozen, and the step is recomputed with the others.
        free = np.ones(n, dtype=bool)
        fixed_move = np.zeros(n)
        for _ in range(n):
            step = _priority_step(J, e - J @ fixed_move, free, eh if eh is None else eh - float(
                angle_grad @ fixed_move), angle_grad)
            if step is None:
                break
            trial = u + fixed_move + step
            out = free & ((trial < problem.lower) | (trial > problem.upper))
            if not out.any():
                break
            free &= ~out
            fixed_move[out] = np.clip(trial[out], problem.lower[out], problem.upper[out]) - u[out]
        if step is None or not np.all(np.isfinite(step)):
            break
        u = problem.project(u + fixed_move + step)
    return best_u, best_err, evaluations


def _priority_step(J: np.ndarray, e: np.ndarray, free: np.ndarray, eh: float | None,
                   angle_grad: np.ndarray | None) -> np.ndarray | None:
    """Minimum-norm step on the free variables: ``J⁺ e`` plus the tip-angle step in the null space."""
    if not free.any():
        return None
    Jf = J * free
    # Damping far below J's scale only guards against exact rank loss.
    JJt = Jf @ Jf.T
    JJt[np.diag_indices(JJt.shape[0])] += 1e-14 * (np.trace(JJt) + 1e-30)
    step = Jf.T @ np.linalg.solve(JJt, e)
    if eh is not None:
        g = angle_grad * free
        proj_grad = g - Jf.T @ np.linalg.solve(JJt, Jf @ g)  # N J_hᵀ
        denom = float(g @ proj_grad)
        if denom > 1e-12:
            step = step + proj_grad * ((eh - float(g @ step)) / denom)
    return step


def _slsqp(problem: _Problem, target: np.ndarray, u0: np.ndarray, max_iterations: int) -> tuple[np.ndarray, int, str]:
    def fun(u):
        x, J = problem.kinematics(u)
        e = x - target
        return 0.5 * float(e @ e), J.T @ e

    bounds = list(zip(problem.lower, problem.upper))
    res = minimize(fun, np.clip(u0, problem.lower, problem.upper), jac=True, method="SLSQP", bounds=bounds,
                   constraints=problem.constraints(), options={"ftol": 1e-30, "maxiter": max_iterations})
    return problem.project(res.x), int(res.nfev), str(res.message)


def _slsqp_angle(problem: _Problem, target: np.ndarray, u0: np.ndarray, angle_target: float, angle_fn,
                 angle_grad: np.ndarray, max_iterations: int) -> tuple[np.ndarray, int]:
    """Stage 2 of the lexicographic solve: tip angle subject to ``x_tip(u) = x_d``."""
    cons = problem.constraints() + [{
        "type": "eq", "fun": lambda u: problem.kinematics(u)[0] - target,
        "jac": lambda u: problem.kinematics(u)[1]}]
    res = minimize(lambda u: (0.5 * (angle_fn(u) - angle_target) ** 2, (angle_fn(u) - angle_target) * angle_grad),
                   u0, jac=True, method="SLSQP", bounds=list(zip(problem.lower, problem.upper)),
                   constraints=cons, options={"ftol": 1e-24, "maxiter": max_iterations})
    return problem.project(res.x), int(res.nfev)


def sqp(
    model: KinematicModel,
    target: np.ndarray,
    c0: np.ndarray | None = None,
    *,
    tip_angle: float | None = None,
    tol: float = 1e-6,
    precision: float = 1e-11,
    method: str = "auto",
    max_iterations: int = 200,
    newton_steps: int = 12,
    restarts: int = 4,
    seed: int = 0,
) -> IKResult:
    """Solve ``model.forward(q) = target`` within the bounds (SQP; see the module docstring).

    Args:
        model: any :class:`~soft_envs.robots.base.KinematicModel`; PCC arms are solved in their
            smooth coordinates.
        target: tip position ``(3,)`` [m] in the model's base frame.
        c0: start (the previous trajectory point's solution); default all zeros clipped into
            the bounds (the paper's initial state: straight, relaxed arm).
        tip_angle: secondary-task target [rad] for ``model.tip_angle`` (lexicographic, position
            first); ``None`` for position only.
        tol: success threshold on the position error [m].
        precision: the solve stops once the position error is below this [m].
        method: ``"auto"`` (Newton fast path, SLSQP fallback), ``"newton"`` or ``"slsqp"``.
        max_iterations: SLSQP iteration cap per start.
        newton_steps: Gauss–Newton step cap.
        restarts: seeded random restarts when neither path reaches ``tol``.
        seed: seed of the restarts.

    Returns:
        :class:`IKResult`; ``iterations`` counts kinematics evaluations, ``orientation_error``
        is ``|tip_angle(q) − tip_angle|`` [rad] when a tip angle is requested.
    """
    start_time = time.perf_counter()
    target = check_target(target)
    if target.ndim != 1:
        raise InvalidParameterError("sqp solves one target (3,); use sqp_trajectory for (T, 3)")
    if method not in ("auto", "newton", "slsqp"):
        raise InvalidParameterError(f"method must be 'auto', 'newton' or 'slsqp'; got {method!r}")
    if not (tol > 0 and precision > 0 and max_iterations >= 1 and newton_steps >= 1 and restarts >= 0):
        raise InvalidParameterError("tol, precision > 0; max_iterations, newton_steps >= 1; restarts >= 0")
    if c0 is None:
        c0 = np.clip(np.zeros(model.n_dof), model.lower, model.upper)
    c0 = model.check_configuration(c0)
    if c0.ndim != 1:
        raise InvalidParameterError(f"c0 must have shape ({model.n_dof},)")
    c0 = np.clip(c0, model.lower, model.upper)
    angle_fn = angle_grad = None
    if tip_angle is not None:
        if not np.isfinite(tip_angle):
            raise InvalidParameterError(f"tip_angle must be finite [rad]; got {tip_angle!r}")
        if not hasattr(model, "tip_angle_gradient"):
            raise InvalidParameterError(f"{type(model).__name__} has no linear tip angle; use a planar arm")
        angle_grad = np.asarray(model.tip_angle_gradient(), dtype=float)
        angle_fn = lambda u: float(angle_grad @ u)  # noqa: E731 - linear in the (smooth = plain) planar coordinates
        tip_angle = float(tip_angle)

    problem = _Problem(model)
    u0 = problem.project(problem.to_u(c0))
    rng = np.random.default_rng(seed)
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

    for attempt in range(restarts + 1):
        start_u = u0 if attempt == 0 else problem.project(problem.to_u(model.sample(rng)))
        if method in ("auto", "newton"):
            u, err, n_eval = _newton(problem, target, start_u, precision=precision, max_steps=newton_steps,
                                     angle_target=tip_angle, angle_grad=angle_grad, angle_fn=angle_fn)
            evaluations += n_eval
            consider(u, err)
            message = "Gauss-Newton converged" if err < precision else "Gauss-Newton stalled"
            if err < precision or method == "newton":
                if best_err < tol:
                    break
                continue
        u, n_eval, message = _slsqp(problem, target, start_u, max_iterations)
        evaluations += n_eval
        err = consider(u)
        if method == "auto" and err < 1e-3:  # polish to machine precision (and the tip angle)
            u, err2, n_eval = _newton(problem, target, u, precision=precision, max_steps=newton_steps,
                                      angle_target=tip_angle, angle_grad=angle_grad, angle_fn=angle_fn)
            evaluations += n_eval
            consider(u, err2)
        if tip_angle is not None and best_err < tol and abs(angle_fn(best_u) - tip_angle) > 1e-9:
            # Lexicographic stage 2: the tip angle subject to the position equality, then a
            # task-priority Newton polish; kept only if the position is as good as stage 1's.
            u2, n_eval = _slsqp_angle(problem, target, best_u, tip_angle, angle_fn, angle_grad, max_iterations)
            evaluations += n_eval
            u2, err2, n_eval = _newton(problem, target, u2, precision=precision, max_steps=newton_steps,
                                       angle_target=tip_angle, angle_grad=angle_grad, angle_fn=angle_fn)
            evaluations += n_eval
            if err2 <= max(best_err, precision) and abs(angle_fn(u2) - tip_angle) < abs(angle_fn(best_u) - tip_angle):
                best_u, best_err = u2, err2
        if best_err < tol:
            break

    solution = problem.to_q(best_u, reference=c0)
    error = float(np.linalg.norm(model.forward(solution) - target))
    angle_error = None if tip_angle is None else float(abs(model.tip_angle(solution) - tip_angle))
    return IKResult(solution=solution, error=error, success=bool(error < tol), iterations=evaluations,
                    seconds=time.perf_counter() - start_time, orientation_error=angle_error, message=message)


def sqp_trajectory(
    model: KinematicModel,
    targets: np.ndarray,
    c0: np.ndarray | None = None,
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
    start_time = time.perf_counter()
    targets = check_target(targets)
    if targets.ndim != 2:
        raise InvalidParameterError("sqp_trajectory takes targets of shape (T, 3)")
    n = targets.shape[0]
    solutions = np.empty((n, model.n_dof))
    errors, seconds, iterations = np.empty(n), np.empty(n), np.empty(n, dtype=int)
    angle_errors = np.full(n, np.nan)
    previous, before = c0, None
    problem = _Problem(model)
    for i, target in enumerate(targets):
        t_pred = time.perf_counter()
        start = previous
        if extrapolate and before is not None:
            # Linear prediction in the smooth coordinates: the start is O(Δt²) from the solution.
            u_prev = problem.to_u(previous)
            predicted = problem.project(2 * u_prev - problem.to_u(before))
            start = problem.to_q(predicted, reference=previous)
        t0 = time.perf_counter()
        res = sqp(model, target, start, **options)
        res.seconds = time.perf_counter() - t0 + (t0 - t_pred)
        solutions[i], errors[i], seconds[i], iterations[i] = res.solution, res.error, res.seconds, res.iterations
        if res.orientation_error is not None:
            angle_errors[i] = res.orientation_error
        before, previous = previous, res.solution
    tol = options.get("tol", 1e-6)
    return BatchIKResult(solutions=solutions, errors=errors, success=errors < tol, iterations=iterations,
                         seconds=time.perf_counter() - start_time,
                         extra={"seconds": seconds, "tip_angle_errors": angle_errors})
