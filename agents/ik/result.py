"""The result records every IK solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class IKResult:
    """Outcome of one IK solve.

    Attributes:
        solution: configuration found (the model's units, within its bounds).
        error: Euclidean position error ``‖x_d − x(solution)‖`` [m].
        success: ``error`` (and ``orientation_error`` when solved) within the tolerance.
        iterations: solver iterations (or function evaluations where the solver only counts those).
        seconds: wall time of the solve [s].
        orientation_error: angle of the orientation error [rad], ``None`` for position-only IK.
        message: the solver's own words on how it stopped.
    """

    solution: np.ndarray
    error: float
    success: bool
    iterations: int
    seconds: float
    orientation_error: float | None = None
    message: str = ""


@dataclass
class BatchIKResult:
    """Outcome of a batched solve of ``B`` targets.

    Attributes:
        solutions: ``(B, n_dof)`` configurations.
        errors: ``(B,)`` position errors [m].
        success: ``(B,)`` booleans.
        iterations: ``(B,)`` iterations spent on each target.
        seconds: wall time of the whole batch [s].
    """

    solutions: np.ndarray
    errors: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    seconds: float
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.errors.shape[0])
