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
  configuration within the limits; the best iterate over all attempts is returned, with the
  number of restarts in :attr:`IKResult.restarts`;
* a wall-clock budget (``timeout``, like TRAC-IK's): 50 ms by default (2 s for the transpose
  method), so that an unreachable pose returns its best effort with ``success=False`` in bounded
  time.

Speed: one iteration is a fused pose-and-Jacobian evaluation of one configuration (the model's
``pose_and_jacobian`` of a batch of one; plain floats in :class:`BulletChain`), the orientation
error in floats, and LAPACK's Cholesky solve (``dposv``) of the 6×6 DLS system — about 30 µs for
a 7-DOF arm. :func:`soft_envs.agents.ik.jacobian_batch.jacobian_ik_batch` solves many poses at
once.

Orientation needs a model with the :class:`~soft_envs.robots.base.PoseKinematics` capability
(e.g. :class:`~soft_envs.robots.bullet_chain.BulletChain`), whose batched ``pose_and_jacobian``
then also serves position-only IK; position-only IK works on any
:class:`~soft_envs.robots.base.KinematicModel`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np
from scipy.linalg.lapack import dposv

from soft_envs import clock
from soft_envs.agents.ik.result import IKResult, budget_message, check_one_target, check_start, check_timeout, check_tol
from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError, InvalidTargetError, check_integer
from soft_envs.geometry import check_unit_quaternion, matrix_to_quaternion
from soft_envs.robots.base import KinematicModel, PoseKinematics
from soft_envs.robots.gauss_newton import has_capability

METHODS = ("pinv", "dls", "transpose")
DEFAULT_TIMEOUT = 0.05  # s: wall-clock budget of pinv and DLS (TRAC-IK's default is 5 ms)
TRANSPOSE_TIMEOUT = 2.0  # s: the transpose method converges linearly (thousands of iterations)

# evaluate(q) -> (e, J, position error [m], orientation error [rad] or 0, cost)
_Evaluator = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, float, float, float]]


def check_orientation(orientation: np.ndarray) -> np.ndarray:
    """A quaternion ``(x, y, z, w)`` ``(4,)`` or a rotation matrix ``(3, 3)`` -> unit quaternion
    ``(x, y, z, w)``; :class:`InvalidTargetError` if it is not finite, has another shape, or is not
    a unit quaternion within 1e-6 (never normalised silently: a non-unit quaternion is usually a
    typo or another order) / an orthonormal matrix with det +1."""
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
    try:
        return check_unit_quaternion(arr, what="orientation")
    except ValueError as exc:
        raise InvalidTargetError(str(exc)) from None


def orientation_error(R_desired: list[float], R: list[float]) -> tuple[float, float, float, float]:
    """:func:`soft_envs.geometry.quaternion_error` of two row-major 3×3 rotations given as 9 floats:
    ``(ε_x, ε_y, ε_z, angle [rad])`` with ``ε`` the vector part of ``Q_d ∗ Q⁻¹`` (``w ≥ 0``).

    ``E = R_d Rᵀ``; its quaternion by Shepperd's method (the largest of ``1 + tr E`` and
    ``1 + 2 E_ii − tr E`` is divided by), so it is exact near zero and near a half turn.
    """
    d00, d01, d02, d10, d11, d12, d20, d21, d22 = R_desired
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = R
    e00 = d00 * r00 + d01 * r01 + d02 * r02
    e11 = d10 * r10 + d11 * r11 + d12 * r12
    e22 = d20 * r20 + d21 * r21 + d22 * r22
    e01, e10 = d00 * r10 + d01 * r11 + d02 * r12, d10 * r00 + d11 * r01 + d12 * r02
    e02, e20 = d00 * r20 + d01 * r21 + d02 * r22, d20 * r00 + d21 * r01 + d22 * r02
    e12, e21 = d10 * r20 + d11 * r21 + d12 * r22, d20 * r10 + d21 * r11 + d22 * r12
    trace = e00 + e11 + e22
    if trace > -0.5:  # w ≥ 0.35: ε = vex(E) / 4w
        w = 0.5 * math.sqrt(1.0 + trace)
        k = 0.25 / w
        x, y, z = (e21 - e12) * k, (e02 - e20) * k, (e10 - e01) * k
    else:
        c0, c1, c2 = 1.0 + 2.0 * e00 - trace, 1.0 + 2.0 * e11 - trace, 1.0 + 2.0 * e22 - trace
        if c0 >= c1 and c0 >= c2:
            x = 0.5 * math.sqrt(c0)
            k = 0.25 / x
            y, z, w = (e01 + e10) * k, (e02 + e20) * k, (e21 - e12) * k
        elif c1 >= c2:
            y = 0.5 * math.sqrt(c1)
            k = 0.25 / y
            x, z, w = (e01 + e10) * k, (e12 + e21) * k, (e02 - e20) * k
        else:
            z = 0.5 * math.sqrt(c2)
            k = 0.25 / z
            x, y, w = (e02 + e20) * k, (e12 + e21) * k, (e10 - e01) * k
        k = math.copysign(1.0, w) / math.sqrt(x * x + y * y + z * z + w * w)
        x, y, z, w = x * k, y * k, z * k, w * k
    return x, y, z, 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), w)


def _evaluator(model: KinematicModel, position: np.ndarray, quat: np.ndarray | None,
               gain: np.ndarray) -> _Evaluator:
    """The error, Jacobian and the cost ``‖e_p‖² + angle²`` at ``q``, for this model and target."""
    has_pose = has_capability(model, PoseKinematics)
    posed = cast(PoseKinematics, model)  # used only where has_pose
    px, py, pz = position.tolist()
    if quat is None:
        if has_pose:
            def evaluate(q: np.ndarray):
                p, _, J = posed.pose_and_jacobian(q[None])
                x, y, z = p[0].tolist()
                ex, ey, ez = px - x, py - y, pz - z
                err2 = ex * ex + ey * ey + ez * ez
                return gain * np.array((ex, ey, ez)), J[0, :3], math.sqrt(err2), 0.0, err2
        else:
            def evaluate(q: np.ndarray):
                ep = position - model.forward(q)
                err = math.sqrt(float(ep @ ep))
                return gain * ep, model.jacobian(q), err, 0.0, err * err
        return evaluate

    if not has_pose:
        raise InvalidParameterError(f"{type(model).__name__} has no end-effector orientation (PoseKinematics): "
                                    "it supports position-only IK (orientation=None)")
    x, y, z, w = quat.tolist()
    R_desired = [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
                 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
                 2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)]  # row-major

    def evaluate_pose(q: np.ndarray):
        p, R, J = posed.pose_and_jacobian(q[None])
        x, y, z = p[0].tolist()
        ex, ey, ez = px - x, py - y, pz - z
        ox, oy, oz, angle = orientation_error(R_desired, R[0].ravel().tolist())
        err2 = ex * ex + ey * ey + ez * ez
        return gain * np.array((ex, ey, ez, ox, oy, oz)), J[0], math.sqrt(err2), angle, err2 + angle * angle

    return evaluate_pose


def _step(J: np.ndarray, ke: np.ndarray, method: str, lam2: float) -> np.ndarray:
    """Raw step ``J† K e`` for one method (``lam2`` = λ² for DLS)."""
    if method == "dls":
        A = J @ J.T
        A.flat[:: A.shape[0] + 1] += lam2
        if lam2 > 0:
            _, x, info = dposv(A, ke)  # Cholesky: JJᵀ + λ²I is positive definite
            if info == 0:
                return J.T @ x
        return J.T @ np.linalg.lstsq(A, ke, rcond=None)[0]
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
    the behaviour at singularities. ``position`` [m]; ``orientation`` a unit quaternion
    ``(x, y, z, w)`` or a rotation matrix, or ``None``; ``damping`` is the fixed λ of ``"dls"``."""
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
        orientation: desired orientation, a unit quaternion ``(x, y, z, w)`` ``(4,)`` (norm within
            1e-6, else ``ValueError``) or a rotation matrix ``(3, 3)``, in the base frame; ``None``
            for position-only IK.
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
        timeout: wall-clock budget [s] (default :data:`DEFAULT_TIMEOUT`, 50 ms; 2 s for
            transpose; ``math.inf``: none).
        seed: seed of the random restarts.

    Returns:
        :class:`IKResult` (``error`` [m], ``orientation_error`` [rad] or ``None``, ``restarts``);
        the solution is always within the joint limits.
    """
    start_time = clock.now()
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}; got {method!r}")
    position = check_one_target(model, position, "jacobian_ik")
    quat = None if orientation is None else check_orientation(orientation)
    adaptive, lam2_fixed = _damping(method, damping)
    transpose = method == "transpose"
    if max_iterations is None:
        max_iterations = 20000 if transpose else 2000
    if stall_iterations is None:
        stall_iterations = 300 if transpose else 10
    max_iterations = check_integer("max_iterations", max_iterations, minimum=1)
    stall_iterations = check_integer("stall_iterations", stall_iterations, minimum=1)
    restarts = check_integer("restarts", restarts, minimum=0)
    tol = check_tol(tol)
    orientation_tol = check_tol(orientation_tol, "orientation_tol")
    if timeout is None:
        timeout = TRANSPOSE_TIMEOUT if transpose else DEFAULT_TIMEOUT
    deadline = start_time + check_timeout(timeout)
    if not (np.isfinite(max_step) and max_step > 0):
        raise InvalidParameterError(f"max_step must be a positive number; got {max_step!r}")
    lower, upper = model.lower, model.upper
    q0 = check_start(model, q0, 0.5 * (lower + upper))
    gain_vec = _gain_vector(gain, 3 if quat is None else 6)
    evaluate = _evaluator(model, position, quat, gain_vec)
    with_orientation = quat is not None
    rng = None  # made at the first restart

    def converged(perr: float, oerr: float) -> bool:
        return perr < tol and (not with_orientation or oerr < orientation_tol)

    best = (np.inf, np.clip(q0, lower, upper), np.inf, np.inf)  # cost, q, position err, orientation err
    iterations, attempts, done, timed_out = 0, 0, False, False
    q = np.clip(q0, lower, upper)
    while not done:
        ke, J, perr, oerr, cost = evaluate(q)
        if cost < best[0]:
            best = (cost, q, perr, oerr)
        mu = 1.0
        checkpoint_cost, checkpoint_iter = cost, iterations
        while True:
            if converged(perr, oerr) or iterations >= max_iterations:
                done = True
                break
            if clock.now() > deadline:
                done = timed_out = True
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
            q_new = np.minimum(np.maximum(q + step, lower), upper)
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
        rng = np.random.default_rng(seed) if rng is None else rng
        q = rng.uniform(lower, upper)

    _, q_best, perr_best, oerr_best = best
    success = converged(perr_best, oerr_best)
    how = f"{iterations} iterations, {attempts} restarts"
    message = (f"converged after {how}" if success else
               f"not converged: {how}" + (f", {budget_message(timeout)}" if timed_out else ""))
    return IKResult(solution=q_best.copy(), error=float(perr_best), success=bool(success),
                    iterations=int(iterations), seconds=clock.now() - start_time,
                    orientation_error=float(oerr_best) if with_orientation else None, message=message,
                    restarts=attempts, timed_out=timed_out and not success)


def _damping(method: str, damping: float | str) -> tuple[bool, float]:
    """``(adaptive, fixed λ²)`` from the ``damping`` option (``ValueError`` if it is neither)."""
    if isinstance(damping, str):
        if damping != "adaptive":
            raise InvalidParameterError(f"damping must be 'adaptive' or a number >= 0; got {damping!r}")
        return method == "dls", 0.0
    if not np.isfinite(damping) or damping < 0:
        raise InvalidParameterError(f"damping must be 'adaptive' or a number >= 0; got {damping!r}")
    return False, float(damping) ** 2
