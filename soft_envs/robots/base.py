"""The kinematic-model interface shared by every robot and every IK solver.

A kinematic model maps a configuration vector ``q`` (actuator inputs or joint values, in the
model's SI units) to an end-effector position in the model's base frame [m], and gives the
analytic Jacobian ``d position / d q``. IK solvers only use this interface (plus optional
extras such as ``intermediate_points``), so every solver works on every model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from soft_envs.exceptions import InvalidConfigurationError, InvalidTargetError


class KinematicModel(ABC):
    """Base class of the robot models: bounds, forward kinematics, analytic Jacobian.

    Subclasses set :attr:`lower` and :attr:`upper` (shape ``(n_dof,)``) and implement
    :meth:`forward` and :meth:`jacobian`, both accepting a single configuration ``(n_dof,)``
    or a batch ``(B, n_dof)``.
    """

    lower: np.ndarray
    upper: np.ndarray

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
