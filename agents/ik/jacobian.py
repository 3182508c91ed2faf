"""Jacobian IK: pseudo-inverse, damped least squares and transpose (SPEC section 5, seed 003).

The iteration of the lecture notes, ``q_{k+1} = q_k + J†(q_k) K e_k``, with

* ``e = [e_p; e_o]``: ``e_p = o_d − o(q_k)`` [m]; ``e_o = ε``, the vector part of the quaternion
  ``Q_d ∗ Q(q_k)^{-1}`` with the sign that makes its scalar part positive (position-only IK uses
  ``e_p`` alone and the three position rows of the Jacobian);
* ``J`` the geometric Jacobian (linear and angular velocity of the end effector in the base frame);
* ``J†`` one of ``"pinv"`` (Moore–Penrose, by SVD), ``"dls"`` (``Jᵀ(JJᵀ + λ²I)⁻¹``) or
  ``"transpose"`` (``α Jᵀ`` with Buss's step ``α = ⟨e, JJᵀe⟩ / ‖JJᵀe‖²``);
* ``K = diag(k_p I, k_o I)``, default ``k_p = 1``, ``k_o = 2``: near the goal ``ε ≈ θ n / 2``
  (``θ`` the angle of the error rotation about ``n``), so ``k_o = 2`` makes the step a full
  Gauss–Newton step in orientation as ``k_p = 1`` does in position.

Around it, what makes it a solver rather than a lecture example:

* joint limits: every iterate is clipped into the bounds, and a joint resting on a bound whose
  step points outwards is removed from the step (its Jacobian column zeroed) before the step is
  recomputed, so the other joints still make progress;
* step clamping: the step is scaled so that no joint moves more than ``max_step`` per iteration;
* damping: a fixed ``λ`` (``damping=0.05`` say) or ``damping="adaptive"`` (default): Levenberg–
  Marquardt with ``λ² = μ ‖e‖²`` (Sugihara's error-dependent damping, so the last iterations are
  undamped and converge quadratically) and ``μ`` raised ×10 after a step that does not reduce
  the error (the step is then rejected) and lowered after one that does;
* stopping at ``‖e_p‖ < tol`` [m] and ``angle < orientation_tol`` [rad], or ``max_iterations``;
* restarts: when an attempt stalls (its best error has not halved in ``stall_iterations``
  iterations — a local minimum on the limits), the solve restarts from a seeded uniformly random
  configuration within the limits; the best iterate over all attempts is returned.

Orientation needs a model with the :class:`~soft_envs.robots.base.PoseKinematics` capability
(e.g. :class:`~soft_envs.robots.bullet_chain.BulletChain`), whose batched ``pose_and_jacobian``
then also serves position-only IK; position-only IK works on any
:class:`~soft_envs.robots.base.KinematicModel`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from soft_envs.agents.ik.result import IKResult, check_one_target, check_start, check_tol, is_success
from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError, InvalidTargetError
from soft_envs.geometry import matrix_to_quaternion, quaternion_error, quaternion_to_matrix
from soft_envs.robots.base import KinematicModel, PoseKinematics

METHODS = ("pinv", "dls", "transpose")

# evaluate(q) -> (e, J, position error [m], orientation error [rad] or 0, cost)
_Evaluator = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, float, float, float]]


def check_orientation(orientation: np.ndarray) -> np.ndarray:
    """Quaternion xyzw ``(4,)`` (or rotation matrix ``(3, 3)``) -> unit quaternion xyzw; ``ValueError``
    if it is not finite, has the wrong shape or is not (close to) unit norm / orthonormal."""
    arr = np.asarray(orientation, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise InvalidTargetError(f"orientation has NaN/inf: {arr}")
    if arr.shape == (3, 3):
        if np.abs(arr @ arr.T - np.eye(3)).max() > 1e-6 or np.linalg.det(arr) < 0:
            raise InvalidTargetError("orientation matrix is not a rotation (orthonormal, det +1)")
        return matrix_to_quaternion(arr)
    if arr.shape != (4,):
        raise InvalidTargetError(f"orientation must be a quaternion (x, y, z, w) of shape (4,) or a "
                                 f"(3, 3) rotation matrix; got shape {arr.shape}")
    norm = float(np.linalg.norm(arr))
    if abs(norm - 1.0) > 1e-3:
        raise InvalidTargetError(f"orientation quaternion must have unit norm; got norm {norm:.6g}")
    return arr / norm


def _evaluator(model: KinematicModel, position: np.ndarray, quat: np.ndarray | None,
               gain: np.ndarray) -> _Evaluator:
    """The error, Jacobian and the cost ``‖e_p‖² + angle²`` at ``q``, for this model and target."""
    has_pose = isinstance(model, PoseKinematics)
    if quat is None:
        if has_pose:
            def evaluate(q: np.ndarray):
                p, _, J = model.pose_and_jacobian(q[None])
                ep = position - p[0]
                err = math.sqrt(float(ep @ ep))
                return gain * ep, J[0, :3], err, 0.0, err * err
        else:
            def evaluate(q: np.ndarray):
                ep = position - model.forward(q)
                err = math.sqrt(float(ep @ ep))
                return gain * ep, model.jacobian(q), err, 0.0, err * err
        return evaluate

    if not has_pose:
        raise InvalidParameterError(f"{type(model).__name__} has no end-effector orientation (PoseKinematics): "
                                    "it supports position-only IK (orientation=None)")
    R_desired = quaternion_to_matrix(quat)

    def evaluate_pose(q: np.ndarray):
        p, R, J = model.pose_and_jacobian(q[None])
        p, R, J = p[0], R[0], J[0]
        ep = position - p
        eo, angle = quaternion_error(R_desired, R)
        err = math.sqrt(float(ep @ ep))
        return gain * np.concatenate((ep, eo)), J, err, angle, err * err + angle * angle

    return evaluate_pose


def _step(J: np.ndarray, ke: np.ndarray, method: str, lam2: float) -> np.ndarray:
    """Raw step ``J† K e`` for one method (``lam2`` = λ² for DLS)."""
    if method == "dls":
        A = J @ J.T
        A.flat[:: A.shape[0] + 1] += lam2
        return J.T @ np.linalg.solve(A, ke)
    if method == "pinv":
        return np.linalg.pinv(J, rcond=1e-15) @ ke
    jjte = J @ (J.T @ ke)
    denom = float(jjte @ jjte)
    alpha = float(ke @ jjte) / denom if denom > 0 else 0.0
    return alpha * (J.T @ ke)


def _gain_vector(gain: float | np.ndarray | None, rows: int) -> np.ndarray:
    if gain is None:
        return np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0][:rows])
    g = np.broadcast_to(np.asarray(gain, dtype=float), (rows,)) if np.ndim(gain) == 0 else np.asarray(gain, float)
    if g.shape != (rows,) or not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise InvalidParameterError(f"gain must be a positive scalar or ({rows},) vector; got {gain!r}")
    return g.copy()


def ik_step(
    model: KinematicModel,
    q: np.ndarray,
    position: np.ndarray,
    orientation: np.ndarray | None = None,
    *,
    method: str = "dls",
    damping: float = 0.05,
    gain: float | np.ndarray | None = None,
) -> np.ndarray:
    """One raw iteration step ``Δq = J†(q) K e`` (no clamping, no limits) — for analysis, e.g. of
    the behaviour at singularities. ``damping`` is the fixed λ of ``"dls"``."""
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}; got {method!r}")
    position = check_one_target(model, position, "ik_step")
    quat = None if orientation is None else check_orientation(orientation)
    q = model.check_configuration(q)
    if q.ndim != 1:
        raise InvalidConfigurationError(f"q must have shape ({model.n_dof},)")
    ke, J, *_ = _evaluator(model, position, quat, _gain_vector(gain, 3 if quat is None else 6))(q)
    return _step(J, ke, method, float(damping) ** 2)


def jacobian_ik(
    model: KinematicModel,
    position: np.ndarray,
    orientation: np.ndarray | None = None,
    *,
    method: str = "dls",
    q0: np.ndarray | None = None,
    gain: float | np.ndarray | None = None,
    damping: float | str = "adaptive",
    tol: float = 1e-6,
    orientation_tol: float = 1e-6,
    max_iterations: int | None = None,
    max_step: float = 0.5,
    restarts: int = 100,
    stall_iterations: int | None = None,
    timeout: float | None = None,
    seed: int = 0,
) -> IKResult:
    """Solve ``position`` (and ``orientation``) of the end effector with a Jacobian iteration.

    Args:
        model: a kinematic model; with ``orientation`` it needs
            :class:`~soft_envs.robots.base.PoseKinematics`.
        position: desired end-effector position ``(3,)`` [m] in the model's base frame.
        orientation: desired orientation, quaternion xyzw ``(4,)`` or rotation matrix ``(3, 3)``
            in the base frame; ``None`` for position-only IK.
        method: ``"pinv"``, ``"dls"`` or ``"transpose"``.
        q0: first start ``(n_dof,)`` (clipped into the limits); default the middle of the limits.
        gain: ``K`` as a scalar or a ``(3,)``/``(6,)`` vector; default ``(1, 1, 1, 2, 2, 2)``.
        damping: ``"dls"`` only: ``"adaptive"`` or a fixed λ ≥ 0 [m].
        tol: success threshold on the position error [m].
        orientation_tol: success threshold on the orientation error angle [rad].
        max_iterations: cap on iterations over all attempts (default 2000; 20 000 for transpose).
        max_step: largest change of any joint per iteration [rad or m].
        restarts: most random restarts after stalled attempts.
        stall_iterations: an attempt whose best cost has not halved in this many iterations is
            abandoned (default 10; 300 for transpose).
        timeout: optional wall-time cap [s].
        seed: seed of the random restarts.

    Returns:
        :class:`IKResult` (``error`` [m], ``orientation_error`` [rad] or ``None``); the solution is
        always within the joint limits.
    """
    start_time = time.perf_counter()
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}; got {method!r}")
    position = check_one_target(model, position, "jacobian_ik")
    quat = None if orientation is None else check_orientation(orientation)
    adaptive = method == "dls" and isinstance(damping, str)
    if isinstance(damping, str):
        if damping != "adaptive":
            raise InvalidParameterError(f"damping must be 'adaptive' or a number >= 0; got {damping!r}")
        lam2_fixed = 0.0
    else:
        if not np.isfinite(damping) or damping < 0:
            raise InvalidParameterError(f"damping must be 'adaptive' or a number >= 0; got {damping!r}")
        lam2_fixed = float(damping) ** 2
    if max_iterations is None:
        max_iterations = 20000 if method == "transpose" else 2000
    if stall_iterations is None:
        stall_iterations = 300 if method == "transpose" else 10
    tol = check_tol(tol)
    orientation_tol = check_tol(orientation_tol, "orientation_tol")
    if not (np.isfinite(max_step) and max_step > 0):
        raise InvalidParameterError(f"max_step must be a positive number; got {max_step!r}")
    if int(max_iterations) < 1 or int(restarts) < 0 or int(stall_iterations) < 1:
        raise InvalidParameterError("max_iterations >= 1, restarts >= 0 and stall_iterations >= 1 required")
    lower, upper = model.lower, model.upper
    q0 = check_start(model, q0, 0.5 * (lower + upper))
    gain_vec = _gain_vector(gain, 3 if quat is None else 6)
    evaluate = _evaluator(model, position, quat, gain_vec)
    with_orientation = quat is not None
    rng = np.random.default_rng(seed)
    deadline = None if timeout is None else start_time + float(timeout)

    def converged(perr: float, oerr: float) -> bool:
        return is_success(perr, tol) and (not with_orientation or oerr < orientation_tol)

    best = (np.inf, np.clip(q0, lower, upper), np.inf, np.inf)  # cost, q, position err, orientation err
    iterations, attempts, done = 0, 0, False
    q = np.clip(q0, lower, upper)
    while not done:
        ke, J, perr, oerr, cost = evaluate(q)
        if cost < best[0]:
            best = (cost, q, perr, oerr)
        mu = 1.0
        checkpoint_cost, checkpoint_iter = cost, iterations
        while True:
            if converged(perr, oerr):
                done = True
                break
            if iterations >= max_iterations or (deadline is not None and time.perf_counter() > deadline):
                done = True
                break
            lam2 = mu * cost if adaptive else lam2_fixed
            step = _step(J, ke, method, lam2)
            pinned = ((q <= lower) & (step < 0)) | ((q >= upper) & (step > 0))
            if pinned.any():
                step = _step(J * ~pinned, ke, method, lam2)
                step[pinned] = 0.0
            largest = float(np.abs(step).max())
            if largest > max_step:
                step *= max_step / largest
            q_new = np.clip(q + step, lower, upper)
            ke_new, J_new, perr_new, oerr_new, cost_new = evaluate(q_new)
            iterations += 1
            if adaptive and not cost_new < cost:
                mu *= 10.0
                if mu > 1e12:  # no descent even with a tiny step: stalled
                    break
            else:
                if adaptive:
                    mu = max(0.3 * mu, 1e-6)
                q, ke, J, perr, oerr, cost = q_new, ke_new, J_new, perr_new, oerr_new, cost_new
                if cost < best[0]:
                    best = (cost, q, perr, oerr)
            if cost < 0.5 * checkpoint_cost:
                checkpoint_cost, checkpoint_iter = cost, iterations
            elif iterations - checkpoint_iter >= stall_iterations:
                break
        if done or attempts >= restarts:
            break
        attempts += 1
        q = rng.uniform(lower, upper)

    _, q_best, perr_best, oerr_best = best
    success = converged(perr_best, oerr_best)
    message = (f"converged after {iterations} iterations, {attempts} restarts" if success
               else f"not converged: {iterations} iterations, {attempts} restarts")
    return IKResult(solution=q_best.copy(), error=float(perr_best), success=bool(success),
                    iterations=int(iterations), seconds=time.perf_counter() - start_time,
                    orientation_error=float(oerr_best) if with_orientation else None, message=message)
