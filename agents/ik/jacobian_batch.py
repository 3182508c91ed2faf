"""Batched Jacobian IK: many end-effector poses solved at once, restarts in parallel.

:func:`jacobian_ik_batch` runs the damped-least-squares iteration of
:func:`~soft_envs.agents.ik.jacobian.jacobian_ik` (adaptive Levenberg–Marquardt damping
``λ² = μ ‖e‖²``, joints on a limit whose step points outwards held fixed, steps clamped to
``max_step``, iterates clipped into the limits) on every target of a batch at once: one
vectorised ``pose_and_jacobian`` call and one batched 6×6 solve per iteration for all the
targets still running. A target whose attempt stalls (its cost has not halved in
``stall_iterations`` iterations, or no step descends) restarts at once from a seeded random
configuration while the others go on, so restarts cost no extra pass; targets leave the batch
as they converge. Same result record as ``trr_batch`` (:class:`BatchIKResult`), with the
orientation errors and the restarts of each target.

Quaternions are ``(x, y, z, w)``; positions [m] and orientations in the model's base frame.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from soft_envs import clock
from soft_envs.agents.ik.jacobian import jacobian_ik
from soft_envs.agents.ik.result import BatchIKResult, budget_spent, check_start, check_targets, check_timeout, check_tol
from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError, InvalidTargetError, check_integer
from soft_envs.geometry import quaternion_errors, quaternion_to_matrix
from soft_envs.robots.base import KinematicModel, PoseKinematics

TAIL = 16  # targets still running when the batch hands them to the one-target solver


def check_quaternions(quaternions: np.ndarray, batch: int) -> np.ndarray:
    """``(B, 4)`` unit quaternions ``(x, y, z, w)``; :class:`InvalidTargetError` for another shape,
    NaN/inf, or a norm off by more than 1e-6 (never normalised silently)."""
    arr = np.asarray(quaternions, dtype=float)
    if arr.shape != (batch, 4):
        raise InvalidTargetError(f"orientations must be quaternions (x, y, z, w) of shape ({batch}, 4); "
                                 f"got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidTargetError("orientations (x, y, z, w) have NaN/inf")
    norms = np.linalg.norm(arr, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > 1e-6)
    if bad.size:
        raise InvalidTargetError(f"orientations (x, y, z, w) must have unit norm (within 1e-6); row {bad[0]} "
                                 f"has norm {norms[bad[0]]:.9g}")
    return arr


def _dls_steps(J: np.ndarray, ke: np.ndarray, lam2: np.ndarray) -> np.ndarray:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹ K e`` for every row of a batch."""
    A = J @ J.transpose(0, 2, 1)
    rows = J.shape[1]
    A.reshape(len(A), rows * rows)[:, :: rows + 1] += lam2[:, None]
    try:
        x = np.linalg.solve(A, ke[..., None])[..., 0]
    except np.linalg.LinAlgError:  # an exactly singular row (λ = 0): least squares row by row
        x = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(A, ke)])
    return np.einsum("kri,kr->ki", J, x)


def jacobian_ik_batch(
    model: KinematicModel,
    positions: np.ndarray,
    orientations: np.ndarray | None = None,
    *,
    q0: np.ndarray | None = None,
    gain: float | np.ndarray | None = None,
    tol: float = 1e-6,
    orientation_tol: float = 1e-6,
    max_iterations: int = 2000,
    max_step: float = 0.5,
    restarts: int = 100,
    stall_iterations: int = 10,
    timeout: float | None = None,
    seed: int = 0,
) -> BatchIKResult:
    """Solve ``B`` end-effector positions (and orientations) at once with adaptive DLS.

    Args:
        model: a kinematic model with batched ``forward``/``jacobian``; with ``orientations`` it
            needs :class:`~soft_envs.robots.base.PoseKinematics` (batched ``pose_and_jacobian``).
        positions: ``(B, 3)`` [m] in the model's base frame.
        orientations: ``(B, 4)`` unit quaternions ``(x, y, z, w)``, or ``None`` for position only.
        q0: first start, ``(n_dof,)`` or ``(B, n_dof)`` (clipped into the limits); default the
            middle of the limits.
        gain: ``K`` as a scalar or a ``(3,)``/``(6,)`` vector; default ``(1, 1, 1, 2, 2, 2)``.
        tol: success threshold on the position error [m].
        orientation_tol: success threshold on the orientation error angle [rad].
        max_iterations: cap on the iterations of each target over all its attempts.
        max_step: largest change of any joint per iteration [rad or m].
        restarts: most random restarts of each target.
        stall_iterations: an attempt whose cost has not halved in this many iterations restarts.
        timeout: wall-clock budget of the whole batch [s]; default ``0.5 + 0.001 B``
            (``math.inf``: none). Targets not converged by then keep their best effort.
        seed: seed of the random restarts.

    Returns:
        :class:`BatchIKResult`: ``solutions`` ``(B, n_dof)`` within the limits, position
        ``errors`` [m], ``success`` (position and orientation within tolerance),
        ``iterations``, ``orientation_errors`` [rad] (``None`` for position only) and
        ``restarts`` per target.
    """
    start_time = clock.now()
    positions = check_targets(model, positions, "jacobian_ik_batch")
    batch = positions.shape[0]
    with_orientation = orientations is not None
    R_desired: np.ndarray | None = None  # position only
    if orientations is not None:
        if not isinstance(model, PoseKinematics):
            raise InvalidParameterError(f"{type(model).__name__} has no end-effector orientation (PoseKinematics): "
                                        "it supports position-only IK (orientations=None)")
        R_desired = quaternion_to_matrix(check_quaternions(orientations, batch))
    posed = cast(PoseKinematics, model)  # used only with orientations
    tol = check_tol(tol)
    orientation_tol = check_tol(orientation_tol, "orientation_tol")
    max_iterations = check_integer("max_iterations", max_iterations, minimum=1)
    restarts = check_integer("restarts", restarts, minimum=0)
    stall_iterations = check_integer("stall_iterations", stall_iterations, minimum=1)
    deadline = start_time + check_timeout(0.5 + 1e-3 * batch if timeout is None else timeout)
    if not (np.isfinite(max_step) and max_step > 0):
        raise InvalidParameterError(f"max_step must be a positive number; got {max_step!r}")
    rows = 6 if with_orientation else 3
    gain_vec = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0][:rows]) if gain is None else \
        np.broadcast_to(np.asarray(gain, dtype=float), (rows,)).copy()
    if not (np.all(np.isfinite(gain_vec)) and np.all(gain_vec > 0)):
        raise InvalidParameterError(f"gain must be a positive scalar or ({rows},) vector; got {gain!r}")
    lower, upper = model.lower, model.upper
    n = model.n_dof
    if q0 is None or np.ndim(q0) == 1:
        start = check_start(model, q0, 0.5 * (lower + upper))
    else:
        start = model.check_configuration(q0)
        if start.shape != (batch, n):
            raise InvalidConfigurationError(f"q0 must have shape ({n},) or ({batch}, {n}); got {start.shape}")
    q = np.clip(np.broadcast_to(start, (batch, n)), lower, upper)

    def evaluate(qs: np.ndarray, idx: np.ndarray):
        """Gain-scaled error ``(k, rows)``, Jacobian, position error, orientation error, cost."""
        if with_orientation:
            p, R, J = posed.pose_and_jacobian(qs)
            assert R_desired is not None  # with_orientation
            eps, angle = quaternion_errors(R_desired[idx], R)
            ep = positions[idx] - p
            e = np.concatenate((ep, eps), axis=1)
        else:
            ep = positions[idx] - model.forward(qs)
            J, angle = model.jacobian(qs), np.zeros(len(idx))
            e = ep
        perr = np.sqrt(np.einsum("ki,ki->k", ep, ep))
        return e * gain_vec, J[:, :rows], perr, angle, perr * perr + angle * angle

    everyone = np.arange(batch)
    e, J, perr, oerr, cost = evaluate(q, everyone)
    best_q, best_cost, best_perr, best_oerr = q.copy(), cost.copy(), perr.copy(), oerr.copy()
    mu = np.ones(batch)
    iterations = np.zeros(batch, dtype=int)
    attempts = np.zeros(batch, dtype=int)
    checkpoint_cost, checkpoint_iter = cost.copy(), np.zeros(batch, dtype=int)
    rng = np.random.default_rng(seed)

    def converged(idx: np.ndarray) -> np.ndarray:
        return (perr[idx] < tol) & (oerr[idx] < orientation_tol)

    active = everyone[~converged(everyone)]
    while active.size and clock.now() <= deadline:
        qa, Ja, ea = q[active], J[active], e[active]
        lam2 = mu[active] * cost[active]
        step = _dls_steps(Ja, ea, lam2)
        pinned = ((qa <= lower) & (step < 0)) | ((qa >= upper) & (step > 0))
        some = pinned.any(axis=1)
        if some.any():  # joints on a limit pushing outwards: solve again without them
            free = ~pinned[some]
            again = _dls_steps(Ja[some] * free[:, None, :], ea[some], lam2[some])
            step[some] = np.where(free, again, 0.0)
        largest = np.abs(step).max(axis=1)
        step *= np.minimum(1.0, max_step / np.maximum(largest, 1e-300))[:, None]
        q_new = np.minimum(np.maximum(qa + step, lower), upper)
        e_new, J_new, perr_new, oerr_new, cost_new = evaluate(q_new, active)
        iterations[active] += 1
        better = cost_new < cost[active]
        ok, worse = active[better], active[~better]
        q[ok], e[ok], J[ok], perr[ok], oerr[ok], cost[ok] = (q_new[better], e_new[better], J_new[better],
                                                          perr_new[better], oerr_new[better], cost_new[better])
        mu[ok] = np.maximum(0.3 * mu[ok], 1e-6)
        mu[worse] *= 10.0
        improved = ok[cost[ok] < best_cost[ok]]
        best_q[improved], best_cost[improved] = q[improved], cost[improved]
        best_perr[improved], best_oerr[improved] = perr[improved], oerr[improved]
        halved = active[cost[active] < 0.5 * checkpoint_cost[active]]
        checkpoint_cost[halved], checkpoint_iter[halved] = cost[halved], iterations[halved]

        done = converged(active) | (iterations[active] >= max_iterations)
        stalled = ~done & ((mu[active] > 1e12) | (iterations[active] - checkpoint_iter[active] >= stall_iterations))
        out_of_restarts = stalled & (attempts[active] >= restarts)
        again = active[stalled & ~out_of_restarts]
        if again.size:  # restart these from random configurations, in the same pass as the others
            q[again] = rng.uniform(lower, upper, size=(again.size, n))
            attempts[again] += 1
            e[again], J[again], perr[again], oerr[again], cost[again] = evaluate(q[again], again)
            mu[again] = 1.0
            checkpoint_cost[again], checkpoint_iter[again] = cost[again], iterations[again]
            improved = again[cost[again] < best_cost[again]]
            best_q[improved], best_cost[improved] = q[improved], cost[improved]
            best_perr[improved], best_oerr[improved] = perr[improved], oerr[improved]
            done_now = converged(again)  # a random start can land on the target
            done[np.isin(active, again[done_now])] = True
        active = active[~(done | out_of_restarts)]
        if 0 < active.size <= TAIL:  # a few stragglers: one at a time is cheaper than a batch pass
            for i in active:
                if clock.now() > deadline:
                    break
                res = jacobian_ik(model, positions[i], None if R_desired is None else R_desired[i], method="dls",
                                  q0=q[i], gain=gain_vec, tol=tol, orientation_tol=orientation_tol,
                                  max_iterations=max(1, max_iterations - iterations[i]), max_step=max_step,
                                  restarts=restarts - attempts[i], stall_iterations=stall_iterations,
                                  timeout=max(deadline - clock.now(), 1e-9), seed=seed + 1 + int(i))
                iterations[i] += res.iterations
                attempts[i] += res.restarts
                if res.orientation_error is None:
                    res_cost = res.error ** 2
                else:
                    res_cost = res.error ** 2 + res.orientation_error ** 2
                if res_cost < best_cost[i]:
                    best_q[i], best_cost[i], best_perr[i] = res.solution, res_cost, res.error
                    best_oerr[i] = 0.0 if res.orientation_error is None else res.orientation_error
            active = active[:0]

    success = (best_perr < tol) & (best_oerr < orientation_tol)
    return BatchIKResult(solutions=best_q, errors=best_perr, success=success, iterations=iterations,
                         seconds=clock.now() - start_time,
                         extra={"timeout": float(deadline - start_time)}, timed_out=budget_spent(deadline, success),
                         orientation_errors=best_oerr if with_orientation else None, restarts=attempts)


__all__ = ["check_quaternions", "jacobian_ik_batch"]
