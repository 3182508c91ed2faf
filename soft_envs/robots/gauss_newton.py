"""Local inverse kinematics of a model: projected minimum-norm Gauss–Newton in smooth coordinates.

The robots layer's own IK step, used where a configuration near a known one is needed without
an optimiser: the fast path of :func:`soft_envs.agents.ik.sqp` and the start configurations on
a trajectory (:class:`soft_envs.trajectories.TrajectoryStarts`).

Coordinates (:class:`SolveCoordinates`). Models with singularity-free coordinates
(:class:`~soft_envs.robots.base.SmoothCoordinates`; the PCC arms: ``u = (ΔL, θ cos φ, θ sin φ)``
per segment) are solved in them, bounds by their ``project_smooth``; other models in their own
coordinates with box bounds. Configurations go back nearest a reference (``from_smooth``).

Step (:func:`gauss_newton`). ``Δu = J⁺ e`` (minimum norm, on the variables not held at a box
bound: an active set), then projection onto the bounds; near a solution it converges
quadratically. With a tip-angle target (:class:`~soft_envs.robots.base.TipAngle`, linear in
``u``) the step is the task-priority one ``Δu = J⁺e + N (J_h N)⁺ (e_h − J_h J⁺ e)``, ``N = I − J⁺J``:
the angle correction never moves the tip to first order. Positions in metres, in the model's
base frame; angles in radians.
"""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.base import KinematicModel, SmoothCoordinates, TipAngle, check_target

_CAPABILITIES: dict[tuple[type, type], bool] = {}


def has_capability(model: KinematicModel, protocol: type) -> bool:
    """``isinstance(model, protocol)`` for a capability protocol of :mod:`soft_envs.robots.base`,
    memoised per model class (capabilities are class members; a runtime protocol check costs
    10–40 µs, a tenth of a warm IK solve)."""
    key = (type(model), protocol)
    if key not in _CAPABILITIES:
        _CAPABILITIES[key] = isinstance(model, protocol)
    return _CAPABILITIES[key]


class SolveCoordinates:
    """The coordinates a local solve runs in: the model's smooth ones, or its own (see the module docstring).

    Attributes:
        model: the kinematic model.
        smooth: whether the model's smooth coordinates are used.
        lower, upper: box bounds of the solve coordinates.
    """

    def __init__(self, model: KinematicModel) -> None:
        self.model = model
        self.smooth = has_capability(model, SmoothCoordinates)
        if self.smooth:
            self.lower, self.upper = model.smooth_lower, model.smooth_upper
        else:
            self.lower, self.upper = model.lower, model.upper

    def to_u(self, q: np.ndarray) -> np.ndarray:
        """Configuration -> solve coordinates."""
        return self.model.to_smooth(q) if self.smooth else np.array(q, dtype=float)

    def to_q(self, u: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
        """Solve coordinates -> configuration (nearest ``reference``), clipped into the bounds."""
        if not self.smooth:
            return np.clip(u, self.model.lower, self.model.upper)
        return np.clip(self.model.from_smooth(u, reference=reference), self.model.lower, self.model.upper)

    def kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tip ``(3,)`` [m] and its Jacobian ``(3, n)`` with respect to ``u``."""
        if self.smooth:
            return self.model.smooth_kinematics(u)
        return self.model.forward(u), self.model.jacobian(u)

    def project(self, u: np.ndarray) -> np.ndarray:
        """The nearest ``u`` within the bounds."""
        return self.model.project_smooth(u) if self.smooth else np.clip(u, self.lower, self.upper)


def gauss_newton(coords: SolveCoordinates, target: np.ndarray, u0: np.ndarray, *, precision: float,
                 max_steps: int, angle_target: float | None = None,
                 angle_grad: np.ndarray | None = None) -> tuple[np.ndarray, float, int]:
    """Projected minimum-norm Gauss–Newton from ``u0`` towards the tip position ``target`` [m].

    Stops once the position error is below ``precision`` [m] (and the tip angle
    ``angle_grad · u`` [rad] is on ``angle_target``, if given), after ``max_steps``
    kinematics evaluations, or when the error stalls (three steps without a 0.1 % decrease).
    Returns the best ``u``, its position error [m] and the number of kinematics evaluations.
    """
    u = u0.copy()
    best_u, best_err, stall = u.copy(), np.inf, 0
    n = u.shape[0]
    evaluations = 0
    for _ in range(max_steps):
        x, J = coords.kinematics(u)
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
        eh = None if angle_target is None else angle_target - float(angle_grad @ u)
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
            out = free & ((trial < coords.lower) | (trial > coords.upper))
            if not out.any():
                break
            free &= ~out
            fixed_move[out] = np.clip(trial[out], coords.lower[out], coords.upper[out]) - u[out]
        if step is None or not np.all(np.isfinite(step)):
            break
        u = coords.project(u + fixed_move + step)
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


def tip_angle_gradient(model: KinematicModel, tip_angle: float | None) -> np.ndarray | None:
    """``d tip_angle / d q`` of a :class:`~soft_envs.robots.base.TipAngle` model (``None`` without a
    ``tip_angle`` target); :class:`InvalidParameterError` for a non-finite target or a model
    without a linear tip angle."""
    if tip_angle is None:
        return None
    if not np.isfinite(tip_angle):
        raise InvalidParameterError(f"tip_angle must be finite [rad]; got {tip_angle!r}")
    if not has_capability(model, TipAngle):
        raise InvalidParameterError(f"{type(model).__name__} has no linear tip angle; use a planar arm")
    return np.asarray(model.tip_angle_gradient(), dtype=float)


def clipped_start(model: KinematicModel, q0: np.ndarray | None) -> np.ndarray:
    """A solve's start ``q0`` checked (shape ``(n_dof,)``, finite) and clipped into the bounds;
    ``None`` is all zeros clipped into the bounds (the straight, relaxed PCC arm)."""
    if q0 is None:
        q0 = np.clip(np.zeros(model.n_dof), model.lower, model.upper)
    q0 = model.check_configuration(q0)
    if q0.ndim != 1:
        raise InvalidParameterError(f"q0 must have shape ({model.n_dof},)")
    return np.clip(q0, model.lower, model.upper)


def nearest_configuration(
    model: KinematicModel,
    target: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    tip_angle: float | None = None,
    precision: float = 1e-11,
    max_steps: int = 12,
) -> tuple[np.ndarray, float]:
    """A configuration near ``q0`` whose tip is at ``target`` [m] (:func:`gauss_newton` from ``q0``).

    Args:
        model: any :class:`~soft_envs.robots.base.KinematicModel`.
        target: tip position ``(3,)`` [m] in the model's base frame.
        q0: the start, clipped into the bounds (default: zeros, the straight PCC arm); the
            answer's representation (PCC: ``(θ, φ)`` or ``(−θ, φ ± π)``) is the one nearest it.
        tip_angle: secondary-task tip angle [rad] (:class:`~soft_envs.robots.base.TipAngle` models).
        precision: stop once the position error is below this [m].
        max_steps: kinematics-evaluation cap.

    Returns:
        ``(configuration, error)``: within the bounds, and its tip distance to ``target`` [m]
        (best effort: check the error; a far or unreachable target may stall on a bound).
    """
    target = check_target(target, reach=model.reach)
    if target.ndim != 1:
        raise InvalidParameterError("nearest_configuration solves one target (3,)")
    if not (precision > 0 and max_steps >= 1):
        raise InvalidParameterError(f"precision must be > 0 and max_steps >= 1; got {precision!r}, {max_steps!r}")
    angle_grad = tip_angle_gradient(model, tip_angle)
    q0 = clipped_start(model, q0)
    coords = SolveCoordinates(model)
    u, _, _ = gauss_newton(coords, target, coords.project(coords.to_u(q0)), precision=precision,
                           max_steps=max_steps, angle_target=None if tip_angle is None else float(tip_angle),
                           angle_grad=angle_grad)
    configuration = coords.to_q(u, reference=q0)
    return configuration, float(np.linalg.norm(model.forward(configuration) - target))
