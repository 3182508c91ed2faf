"""The kinematic-model interface shared by every robot and every IK solver.

A kinematic model maps a configuration vector ``q`` (actuator inputs or joint values, in the
model's SI units) to an end-effector position in the model's base frame [m], and gives the
analytic Jacobian ``d position / d q``. IK solvers only use this interface, so every solver
works on every model.

Optional capabilities are the documented protocols below (checked with ``isinstance``, never
by probing private methods): a solver uses one when the model offers it and says so in its
docstring.

==========================  ==============================================================
protocol                    used by
==========================  ==============================================================
:class:`ModulePoints`       ``trr`` shape control (intermediate module points)
:class:`PoseKinematics`     ``jacobian_ik`` with an orientation (full-pose IK)
:class:`SmoothCoordinates`  ``sqp`` (solves in singularity-free coordinates)
:class:`TipAngle`           ``sqp``'s tip-angle secondary task
:class:`JacobianSolve`      ``newton_raphson`` (closed-form ``J⁻¹ r``)
==========================  ==============================================================
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from soft_envs.exceptions import InvalidConfigurationError, InvalidTargetError

if TYPE_CHECKING:  # (chain.py is the robots' data; typing only)
    from soft_envs.robots.chain import Chain


class KinematicModel(ABC):
    """Base class of the robot models: bounds, forward kinematics, analytic Jacobian.

    Subclasses set :attr:`lower` and :attr:`upper` (shape ``(n_dof,)``) and implement
    :meth:`forward` and :meth:`jacobian`, both accepting a single configuration ``(n_dof,)``
    or a batch ``(B, n_dof)``.
    """

    lower: np.ndarray
    upper: np.ndarray

    @property
    def reach(self) -> float | None:
        """Size of the robot [m] (e.g. the straight arm's length), or ``None``: targets more than
        100 reaches away are rejected as a unit mistake (:func:`check_target`)."""
        return None

    @property
    def n_dof(self) -> int:
        """Number of configuration variables."""
        return int(self.lower.shape[0])

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` arrays of the configuration bounds (copies)."""
        return self.lower.copy(), self.upper.copy()

    @abstractmethod
    def forward(self, q: np.ndarray) -> np.ndarray:
        """End-effector position [m], ``(3,)`` or ``(B, 3)``, in the model's base frame."""

    @abstractmethod
    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """Analytic Jacobian of :meth:`forward`, ``(3, n_dof)`` or ``(B, 3, n_dof)``."""

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """Uniformly random configurations within the bounds, ``(n_dof,)`` or ``(size, n_dof)``."""
        shape = (self.n_dof,) if size is None else (size, self.n_dof)
        return rng.uniform(self.lower, self.upper, size=shape)

    def check_configuration(self, q: np.ndarray, *, check_bounds: bool = False) -> np.ndarray:
        """Return ``q`` as a float array of shape ``(n_dof,)`` or ``(B, n_dof)``.

        Raises :class:`InvalidConfigurationError` (a ``ValueError``) when the shape is wrong,
        a value is not finite, or (``check_bounds``) a value lies outside the bounds.
        """
        arr = np.asarray(q, dtype=float)
        if arr.ndim not in (1, 2) or arr.shape[-1] != self.n_dof:
            raise InvalidConfigurationError(
                f"{type(self).__name__} expects a configuration of shape ({self.n_dof},) or "
                f"(B, {self.n_dof}); got shape {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidConfigurationError(f"{type(self).__name__}: configuration has NaN/inf: {arr}")
        if check_bounds:
            tol = 1e-12
            if np.any(arr < self.lower - tol) or np.any(arr > self.upper + tol):
                raise InvalidConfigurationError(
                    f"{type(self).__name__}: configuration outside the bounds "
                    f"[{self.lower}, {self.upper}]: {arr}"
                )
        return arr


def check_target(target: np.ndarray, dim: int = 3, reach: float | None = None) -> np.ndarray:
    """Return ``target`` as a float array ``(dim,)`` or ``(B, dim)`` [m]; ``ValueError`` otherwise.

    With ``reach`` [m] (the robot's size), a target more than 100 reaches away is taken for a
    unit mistake (millimetres for metres) and rejected rather than silently "best-efforted".
    """
    arr = np.asarray(target, dtype=float)
    if arr.ndim not in (1, 2) or arr.shape[-1] != dim:
        raise InvalidTargetError(f"target must have shape ({dim},) or (B, {dim}) [m]; got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidTargetError(f"target has NaN/inf: {arr}")
    if reach is not None:
        far = float(np.max(np.linalg.norm(arr, axis=-1)))
        if far > 100.0 * reach:
            raise InvalidTargetError(
                f"target is {far:.3g} m from the base but the robot reaches about {reach:.3g} m: "
                "targets are in metres (millimetres given?)")
    return arr


# ---------------------------------------------------------------------------------------------
# Optional capabilities (structural protocols)
# ---------------------------------------------------------------------------------------------
@runtime_checkable
class ModulePoints(Protocol):
    """A model with intermediate points along its body (PETER: the top of every module)."""

    n_modules: int

    def module_points_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points ``(N, 3)`` [m] and their Jacobians ``(N, 3, n_dof)``, the last point the tip."""


@runtime_checkable
class PoseKinematics(Protocol):
    """A model whose end effector has an orientation (rigid chains)."""

    def forward_pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position ``(3,)`` [m] and quaternion ``(x, y, z, w)`` of the end effector."""

    def pose_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Geometric Jacobian ``(6, n_dof)``: linear then angular velocity, base frame."""

    def pose_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For a batch ``(B, n_dof)``: positions ``(B, 3)``, rotations ``(B, 3, 3)``, Jacobians ``(B, 6, n_dof)``."""


@runtime_checkable
class SmoothCoordinates(Protocol):
    """A model with singularity-free coordinates ``u`` (PCC arms: ``(ΔL, θ cos φ, θ sin φ)``)."""

    smooth_lower: np.ndarray
    smooth_upper: np.ndarray

    def to_smooth(self, q: np.ndarray) -> np.ndarray:
        """Configuration -> smooth coordinates."""

    def from_smooth(self, u: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """Smooth coordinates -> configuration (the one nearest ``reference``)."""

    def smooth_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tip ``(3,)`` [m] and its Jacobian ``(3, n_dof)`` with respect to ``u``."""

    def project_smooth(self, u: np.ndarray) -> np.ndarray:
        """The nearest ``u`` within the bounds."""

    def smooth_constraint(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inequality constraints ``g(u) >= 0`` and their Jacobian (SLSQP form)."""


@runtime_checkable
class BodyBackbone(Protocol):
    """A model whose body has a collision envelope: capsules of ``body_radius`` [m] on the segments
    between consecutive backbone points (the soft arms: ``Chain.backbone_links``)."""

    @property
    def body_radius(self) -> float:
        """Radius [m] of the body's capsules."""

    def backbone(self, q: np.ndarray) -> np.ndarray:
        """Backbone points ``(P, 3)`` [m, base frame] of one configuration, the base origin first."""

    def backbone_kinematics(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Backbone points ``(P, 3)`` [m] and ``∂points/∂q`` ``(P, 3, n_dof)``."""


class ChainBody:
    """The body's collision envelope of a model whose body is its :meth:`chain` (PETER, the PCC arms):
    the chain made once, and its capsules' radius."""

    def chain(self) -> Chain:  # pragma: no cover - the models define it
        raise NotImplementedError

    def _body_chain(self) -> Chain:
        """:meth:`chain` (no payload), made once: the backbone's links and radius."""
        chain = self.__dict__.get("_backbone_chain")
        if chain is None:
            chain = self.__dict__["_backbone_chain"] = self.chain()
        return chain

    @property
    def body_radius(self) -> float:
        """Radius [m] of the capsules of the body's collision envelope (:attr:`Chain.body_radius`)."""
        return self._body_chain().body_radius


@runtime_checkable
class TipAngle(Protocol):
    """A model with a scalar tip angle [rad] and its gradient (the planar PCC arm: ``Σ θ_i``)."""

    def tip_angle(self, q: np.ndarray) -> np.ndarray:
        """Tip angle [rad]."""

    def tip_angle_gradient(self, q: np.ndarray | None = None) -> np.ndarray:
        """``d tip_angle / d q`` ``(n_dof,)``."""


@runtime_checkable
class JacobianSolve(Protocol):
    """A square model with a closed-form Newton step (the quadruped leg)."""

    def jacobian_solve(self, q: np.ndarray, residual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J(q)⁻¹ residual, det J(q))``, batched over leading axes."""
