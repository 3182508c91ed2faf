"""Trust-Region-Reflective IK (García-Samartín et al. 2025, section 3.2) and a batched solver.

``trr`` solves ``forward(q) = target`` within the model's bounds with the model's analytic
Jacobian, in two stages:

* **fast path** — a bounded Levenberg–Marquardt iteration on the tip residual (the damped
  minimum-norm step ``Δq = −Jᵀ (J Jᵀ + μ I)⁻¹ e`` with the variables pinned on a bound held
  fixed, then clipped into the bounds). It converges quadratically in a handful of steps and
  costs a few model evaluations and a 3×3 solve per step, no per-call set-up;
* **TRF** — ``scipy.optimize.least_squares(method="trf")``, the paper's trust-region-reflective
  method, from where the fast path stalled (a local minimum on the bounds, or slow progress).
  TRF converges very slowly when the Jacobian has fewer rows than columns, so a tiny Tikhonov
  residual ``ε (q − q_start)`` is appended (``ε = regularization``, default 1e-6 in the
  residual's units per unit of ``q``). It makes the problem well posed, selects the solution
  nearest the start (smooth trajectories when warm-started) and biases the tip by about
  ``ε² |Δq| / σ_min(J)`` — below 1e-10 m here.

Both stop as soon as the position error is below ``tol / 100``. A target the start does not lead
to is retried from seeded random starts; an unreachable target returns the best effort with
``success=False``, at the latest when the wall-clock budget ``timeout`` is spent. Shape control
(intermediate module targets) runs TRF directly.
"""


from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np
from scipy.linalg.lapack import dposv
from scipy.optimize import least_squares

from soft_envs import clock
from soft_envs.agents.ik.obstacles import (
    DEFAULT_CLEARANCE,
    DEFAULT_INFLUENCE,
    ObstacleTerms,
    barrier,
    check_clearance,
    check_influence,
    obstacle_rows,
    ranking,
)
from soft_envs.agents.ik.result import (
    BatchIKResult,
    IKResult,
    budget_message,
    budget_spent,
    check_one_target,
    check_start,
    check_targets,
    check_timeout,
    check_tol,
    is_success,
)
from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError, check_integer
from soft_envs.robots.base import KinematicModel, ModulePoints, check_target


def _residual_function(
    model: KinematicModel,
    target: np.ndarray,
    intermediate_targets: np.ndarray | None,
    shape_weight: float,
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, float]]:
    """``q -> (residual, jacobian, tip error)`` for the tip task and the optional shape task."""
    if intermediate_targets is None:
        if isinstance(model, ModulePoints):
            def evaluate(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
                points, jac = model.module_points_jacobian(q)
                res = points[-1] - target
                return res, jac[-1], float(np.sqrt(res @ res))
        else:
            def evaluate(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
                res = model.forward(q) - target
                return res, model.jacobian(q), float(np.sqrt(res @ res))
        return evaluate

    n_inter = intermediate_targets.shape[0]
    modules = cast(ModulePoints, model)  # trr checks it before asking for a shape task

    def evaluate_shape(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        points, jac = modules.module_points_jacobian(q)
        tip_res = points[-1] - target
        inter_res = shape_weight * (points[:n_inter] - intermediate_targets)
        res = np.concatenate((tip_res, inter_res.ravel()))
        J = np.concatenate((jac[-1], shape_weight * jac[:n_inter].reshape(3 * n_inter, -1)))
        return res, J, float(np.sqrt(tip_res @ tip_res))

    return evaluate_shape


def _bounded_lm(model: KinematicModel, target: np.ndarray, q: np.ndarray, stop_error: float,
               max_evaluations: int, deadline: float) -> tuple[np.ndarray, float, int]:
    """The fast path: bounded Levenberg–Marquardt on the tip from ``q`` (inside the bounds).

    Returns the best configuration, its tip error [m] and the evaluations spent. Stops below
    ``stop_error`` [m], after ``max_evaluations`` forward evaluations, past ``deadline``
    (``soft_envs.clock.now()`` value), or when the damping has to grow beyond recovery (stalled).
    """
    lower, upper = model.lower, model.upper
    e = model.forward(q) - target
    cost = float(e @ e)
    J = model.jacobian(q)
    mu, evaluations = 1e-6, 1
    rows = J.shape[0]
    while cost >= stop_error * stop_error and evaluations < max_evaluations:
        grad = e @ J
        pinned = ((q <= lower) & (grad > 0)) | ((q >= upper) & (grad < 0))
        Jf = J * ~pinned if pinned.any() else J
        A = Jf @ Jf.T
        A.flat[:: rows + 1] += mu * (A.trace() / rows) + 1e-300  # μ relative to ‖J‖²
        x, info = dposv(A, e)[1:]  # Cholesky: J Jᵀ + μ I is positive definite
        if info:
            break
        q_new = np.minimum(np.maximum(q - Jf.T @ x, lower), upper)
        e_new = model.forward(q_new) - target
        cost_new = float(e_new @ e_new)
        evaluations += 1
        if cost_new < cost:
            q, e, cost = q_new, e_new, cost_new
            mu = max(0.1 * mu, 1e-12)
            if cost < stop_error * stop_error:
                break
            J = model.jacobian(q)
        else:
            mu *= 10.0
            if mu > 1e6:
                break
        if clock.now() > deadline:
            break
    return q, math.sqrt(cost), evaluations


def trr(
    model: KinematicModel,
    target: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    intermediate_targets: np.ndarray | None = None,
    shape_weight: float = 0.0,
    tol: float = 1e-6,
    max_iterations: int = 2000,
    regularization: float = 1e-6,
    restarts: int = 8,
    seed: int = 0,
    timeout: float = 1.0,
    obstacles=None,
    clearance: float = DEFAULT_CLEARANCE,
    influence: float = DEFAULT_INFLUENCE,
) -> IKResult:
    """Solve ``model.forward(q) = target`` within the model's bounds (fast bounded LM, then TRF).

    Args:
        model: any :class:`~soft_envs.robots.base.KinematicModel` (e.g. ``Peter``).
        target: desired tip position ``(3,)`` [m] in the model's base frame.
        q0: start (warm start on a trajectory); default the middle of the bounds.
        intermediate_targets: optional ``(k, 3)`` [m] targets for the first ``k`` module tops
            (shape control; the model must offer :class:`~soft_envs.robots.base.ModulePoints`).
        shape_weight: weight α of the shape residuals relative to the tip residual.
        tol: success threshold on the tip position error [m].
        max_iterations: cap on function evaluations per start, fast path and TRF each (the
            paper: 2000 for TRF).
        regularization: ε of TRF's Tikhonov residual (see the module docstring); 0 disables it.
        restarts: extra seeded random starts tried when a start does not reach ``tol``.
        seed: seed of the random restarts.
        timeout: wall-clock budget [s] of the whole solve (``math.inf``: none).
        obstacles: shapes or packed rows ``(S, 16)`` (:mod:`soft_envs.collision`, the model's base
            frame; ``EMPTY`` rows ignored) the body must keep ``clearance`` from (the model must be
            a :class:`~soft_envs.robots.base.BodyBackbone`): see :func:`_trr_obstacles`. ``None``
            (or only empty rows): the plain solve.
        clearance: minimum distance [m] between the body's capsule surface and every obstacle.
        influence: width [m] of the barrier's band beyond ``clearance``
            (:func:`~soft_envs.agents.ik.obstacles.barrier`).

    Returns:
        :class:`IKResult`; ``iterations`` counts function evaluations over every start,
        ``restarts`` the random starts used; with ``obstacles``, ``min_distance`` and
        ``collision_free`` (and ``success`` requires the latter).
    """
    start_time = clock.now()
    target = check_one_target(model, target, "trr")
    lower, upper = model.lower, model.upper
    q0 = np.clip(check_start(model, q0, 0.5 * (lower + upper)), lower, upper)
    if intermediate_targets is not None:
        if not isinstance(model, ModulePoints):
            raise InvalidParameterError(f"{type(model).__name__} has no intermediate points for shape control")
        intermediate_targets = np.atleast_2d(check_target(intermediate_targets, reach=model.reach))
        if intermediate_targets.shape[0] >= model.n_modules:
            raise InvalidParameterError(
                f"intermediate_targets gives {intermediate_targets.shape[0]} points; the arm has "
                f"{model.n_modules - 1} intermediate modules")
        if not np.isfinite(shape_weight) or shape_weight < 0:
            raise InvalidParameterError(f"shape_weight must be >= 0; got {shape_weight!r}")
    tol = check_tol(tol)
    max_iterations = check_integer("max_iterations", max_iterations, minimum=1)
    restarts = check_integer("restarts", restarts, minimum=0)
    deadline = start_time + check_timeout(timeout)
    if not (regularization >= 0 and math.isfinite(regularization)):
        raise InvalidParameterError(f"regularization must be a finite number >= 0; got {regularization!r}")
    if obstacles is not None:
        rows = obstacle_rows(obstacles)
        clearance, influence = check_clearance(clearance), check_influence(influence)
        if intermediate_targets is not None:
            raise InvalidParameterError("trr avoids obstacles on the tip task only (no intermediate_targets)")
        if rows.shape[0]:
            return _trr_obstacles(model, target, q0, ObstacleTerms(model, rows), clearance, influence, tol=tol,
                                  max_iterations=max_iterations, regularization=regularization, restarts=restarts,
                                  seed=seed, timeout=timeout, start_time=start_time)

    stop_error = tol * 1e-2 if intermediate_targets is None else 0.0
    # TRF's residual, Tikhonov rows and the restarts' generator: made when needed
    evaluate: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, float]] | None = None
    eye = np.empty((0, model.n_dof))
    rng: np.random.Generator | None = None
    evaluations, message, attempt = 0, "", 0

    best = {"cost": np.inf, "err": np.inf, "q": q0}  # over every start
    for attempt in range(restarts + 1):
        if attempt:
            rng = np.random.default_rng(seed) if rng is None else rng
        start = q0 if rng is None else model.sample(rng)
        if intermediate_targets is None:
            q_fast, err_fast, n_fast = _bounded_lm(model, target, start, stop_error, max_iterations, deadline)
            evaluations += n_fast
            if err_fast < best["err"]:
                best.update(cost=err_fast * err_fast, err=err_fast, q=q_fast)
            message = "bounded LM converged" if err_fast < stop_error else "bounded LM stalled"
            if err_fast < stop_error or clock.now() > deadline:
                break
            first = q_fast  # TRF goes on from where the fast path stalled
        else:
            first = start
        if evaluate is None:
            evaluate = _residual_function(model, target, intermediate_targets, shape_weight)
            eye = regularization * np.eye(model.n_dof)
        cache: dict[str, np.ndarray] = {}

        def fun(q: np.ndarray) -> np.ndarray:
            res, J, err = evaluate(q)
            cache["q"], cache["J"] = q.copy(), J
            cost = float(res @ res)  # the task's cost, without the regularisation
            if cost < best["cost"]:
                best.update(cost=cost, err=err, q=q.copy())
            if regularization:
                res = np.concatenate((res, regularization * (q - start)))
            return res

        def jac(q: np.ndarray) -> np.ndarray:
            if "q" not in cache or not np.array_equal(cache["q"], q):
                fun(q)
            J = cache["J"]
            return np.concatenate((J, eye)) if regularization else J

        def callback(intermediate_result) -> None:
            if best["err"] < stop_error or clock.now() > deadline:
                raise StopIteration

        sol = least_squares(fun, first, jac=jac, bounds=(lower, upper), method="trf",
                            xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=max_iterations,
                            callback=callback)
        evaluations += int(sol.nfev)
        message = "TRF: " + str(sol.message)
        if best["err"] < tol or clock.now() > deadline:
            break
    best_q, best_err = best["q"], best["err"]
    success = is_success(best_err, tol)
    timed_out = budget_spent(deadline, success)
    if timed_out:
        message = f"{budget_message(timeout)}; " + message

    best_q = np.clip(best_q, lower, upper)
    return IKResult(solution=best_q, error=float(best_err), success=success,
                    iterations=evaluations, seconds=clock.now() - start_time, message=message,
                    restarts=attempt, timed_out=timed_out,
                    **({} if obstacles is None else {"min_distance": math.inf, "collision_free": True}))


def _trr_obstacles(model: KinematicModel, target: np.ndarray, q0: np.ndarray, terms: ObstacleTerms,
                   clearance: float, influence: float, *, tol: float, max_iterations: int, regularization: float,
                   restarts: int, seed: int, timeout: float, start_time: float) -> IKResult:
    """:func:`trr` with obstacles (inputs checked): per start, the fast path on the tip alone — kept if
    its solution keeps the clearance — then TRF on the tip residual, a barrier residual per
    backbone segment and obstacle (:func:`~soft_envs.agents.ik.obstacles.barrier` of the capsule's
    distance ``d`` [m], Jacobian ``barrier'(d) n̂ᵀ ∂p/∂q`` at the witness point) and the Tikhonov
    rows. The barrier is zero beyond ``clearance + influence``; a solution the band still biases
    (the tip close to an obstacle) is refined with the band shrunk tenfold, twice. The answer is
    the best configuration seen: keeping the clearance with the smallest tip error, else
    collision-free, else the least penetration (:func:`~soft_envs.agents.ik.obstacles.ranking`).
    """
    lower, upper = model.lower, model.upper
    deadline = start_time + timeout
    stop_error = tol * 1e-2
    eye = regularization * np.eye(model.n_dof)
    rng: np.random.Generator | None = None
    evaluations, message, attempt = 0, "", 0
    best: dict = {"key": (3, math.inf), "q": q0, "err": math.inf, "distance": -math.inf}

    def consider(q: np.ndarray, err: float, distance: float) -> None:
        key = ranking(err, distance, clearance)
        if key < best["key"]:
            best.update(key=key, q=q.copy(), err=err, distance=distance)

    def done(threshold: float) -> bool:
        return best["key"][0] == 0 and best["err"] < threshold

    for attempt in range(restarts + 1):
        if attempt:
            rng = np.random.default_rng(seed) if rng is None else rng
        start = q0 if rng is None else model.sample(rng)
        q_fast, err_fast, n_fast = _bounded_lm(model, target, start, stop_error, max_iterations, deadline)
        evaluations += n_fast
        consider(q_fast, err_fast, terms.min_distance(q_fast))
        message = "bounded LM converged clear of the obstacles"
        if done(stop_error) or clock.now() > deadline:
            break
        first, band = q_fast, influence
        for _ in range(3):
            cache: dict[str, np.ndarray] = {}

            def fun(q: np.ndarray, band: float = band, start: np.ndarray = start) -> np.ndarray:
                res = model.forward(q) - target
                d, Jd = terms.distances(q)
                r, dr = barrier(d, clearance, band)
                consider(q, float(np.sqrt(res @ res)), float(d.min()))
                cache["q"] = q.copy()
                cache["J"] = np.concatenate((model.jacobian(q), dr[:, None] * Jd, eye))
                return np.concatenate((res, r, regularization * (q - start)))

            def jac(q: np.ndarray) -> np.ndarray:
                if "q" not in cache or not np.array_equal(cache["q"], q):
                    fun(q)
                return cache["J"]

            def callback(intermediate_result) -> None:
                if done(tol) or clock.now() > deadline:  # the polish below takes the last digits
                    raise StopIteration

            sol = least_squares(fun, np.clip(first, lower, upper), jac=jac, bounds=(lower, upper), method="trf",
                                xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=max_iterations, callback=callback)
            evaluations += int(sol.nfev)
            message = f"TRF with a {band:.1g} m barrier band: {sol.message}"
            if best["key"][0] == 0 and stop_error <= best["err"] < 1e-3 and clock.now() <= deadline:
                # Polish on the tip alone (TRF's last digits are slow); kept only if still clear.
                q_lm, err_lm, n_lm = _bounded_lm(model, target, best["q"], stop_error, 20, deadline)
                evaluations += n_lm
                consider(q_lm, err_lm, terms.min_distance(q_lm))
            if done(tol) or clock.now() > deadline:
                break
            # The band may bias the tip near an obstacle: refine from the best clear solution.
            first = best["q"] if best["key"][0] == 0 else sol.x
            band *= 0.1
        if done(tol) or clock.now() > deadline:
            break
    distance = float(best["distance"])
    collision_free = distance >= 0.0
    success = bool(is_success(best["err"], tol)) and collision_free
    timed_out = budget_spent(deadline, success)
    if timed_out:
        message = f"{budget_message(timeout)}; " + message
    return IKResult(solution=np.clip(best["q"], lower, upper), error=float(best["err"]), success=success,
                    iterations=evaluations, seconds=clock.now() - start_time, message=message, restarts=attempt,
                    timed_out=timed_out, min_distance=distance, collision_free=collision_free)


def trr_batch(
    model: KinematicModel,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    tol: float = 1e-6,
    max_iterations: int = 60,
    polish: bool = True,
    seed: int = 0,
    timeout: float = 60.0,
) -> BatchIKResult:
    """Solve many targets at once: vectorised bounded Levenberg–Marquardt, then ``trr``.

    Every iteration evaluates the model and its Jacobian for the whole batch in one call and
    takes, for each target, the damped minimum-norm step ``Δq = −Jᵀ (J Jᵀ + μ I)⁻¹ e`` with the
    variables pinned on a bound (and pushed outwards by the gradient) held fixed, then clips
    into the bounds. Each target keeps its own damping ``μ`` (decreased after a successful
    step, increased after a failed one). Targets still above ``tol`` at the end are finished by
    :func:`trr` (``polish=True``), so the batch has the same accuracy as solving one by one.

    Args:
        model: a kinematic model with batched ``forward`` / ``jacobian``.
        targets: ``(B, 3)`` [m].
        q0: ``(n_dof,)`` or ``(B, n_dof)`` starts; default the middle of the bounds.
        tol: success threshold on the position error [m].
        max_iterations: vectorised iterations before polishing.
        polish: finish unconverged targets with :func:`trr`.
        seed: seed of ``trr``'s random restarts.
        timeout: wall-clock budget [s] of the whole batch (``math.inf``: none); targets not
            finished by then keep their best effort.
    """
    start_time = clock.now()
    targets = check_targets(model, targets, "trr_batch")
    tol = check_tol(tol)
    max_iterations = check_integer("max_iterations", max_iterations, minimum=0)
    deadline = start_time + check_timeout(timeout)
    batch = targets.shape[0]
    lower, upper = model.lower, model.upper
    start = 0.5 * (lower + upper) if q0 is None else model.check_configuration(q0)
    if start.ndim == 2 and start.shape[0] != batch:
        raise InvalidConfigurationError(f"q0 must have shape ({model.n_dof},) or ({batch}, {model.n_dof}); "
                                        f"got {start.shape}")
    q = np.broadcast_to(start, (batch, model.n_dof)).copy()
    q = np.clip(q, lower, upper)
    mu = np.full(batch, 1e-6)
    iterations = np.zeros(batch, dtype=int)
    eye = np.eye(targets.shape[1])
    x = model.forward(q)
    e = x - targets
    cost = np.einsum("bi,bi->b", e, e)
    active = np.sqrt(cost) >= tol * 1e-2
    for _ in range(max_iterations):
        idx = np.flatnonzero(active)
        if idx.size == 0 or clock.now() > deadline:
            break
        qa, ea = q[idx], e[idx]
        J = model.jacobian(qa)
        grad = np.einsum("bij,bi->bj", J, ea)  # d(½‖e‖²)/dq
        pinned = ((qa <= lower + 1e-12) & (grad > 0)) | ((qa >= upper - 1e-12) & (grad < 0))
        Jf = J * ~pinned[:, None, :]
        scale = np.einsum("bij,bij->b", Jf, Jf) / 3.0 + 1e-30  # keeps μ relative to ‖J‖²
        A = Jf @ Jf.transpose(0, 2, 1) + (mu[idx] * scale)[:, None, None] * eye
        step = -np.einsum("bij,bi->bj", Jf, np.linalg.solve(A, ea[..., None])[..., 0])
        q_new = np.clip(qa + step, lower, upper)
        e_new = model.forward(q_new) - targets[idx]
        cost_new = np.einsum("bi,bi->b", e_new, e_new)
        better = cost_new < cost[idx]
        ok = idx[better]
        q[ok], e[ok], cost[ok] = q_new[better], e_new[better], cost_new[better]
        mu[idx] = np.where(better, np.maximum(mu[idx] * 0.1, 1e-12), mu[idx] * 10.0)
        iterations[idx] += 1
        active[idx] = (np.sqrt(cost[idx]) >= tol * 1e-2) & (mu[idx] < 1e6)
    errors = np.sqrt(cost)
    polished = 0
    if polish:
        for i in np.flatnonzero(errors >= tol):
            remaining = deadline - clock.now()
            if remaining <= 0:
                break
            res = trr(model, targets[i], q[i], tol=tol, seed=seed, timeout=remaining)
            if res.error < errors[i]:
                q[i], errors[i] = res.solution, res.error
            iterations[i] += res.iterations
            polished += 1
    success = is_success(errors, tol)
    return BatchIKResult(solutions=q, errors=errors, success=success, iterations=iterations,
                         seconds=clock.now() - start_time, extra={"polished": polished},
                         timed_out=budget_spent(deadline, success))
