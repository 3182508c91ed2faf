"""Closed-form references for the rod solver: the large-deflection cantilever elastica.

Used by the hexapod benchmark and the rod tests (the numbers the shooting solver is held to).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import ellipe, ellipeinc, ellipk, ellipkinc

from soft_envs.exceptions import InvalidParameterError


def cantilever_tip(load: float) -> tuple[float, float]:
    """Tip of a cantilever under a dead tip force perpendicular to its clamped tangent.

    ``load = P L² / EI`` (dimensionless, > 0). Returns the tip deflection along the force and
    along the clamped tangent, both over ``L``, from the elliptic-integral solution of the
    elastica (``k`` the modulus root of the length condition ``K(k) − F(φ₀, k) = √load``,
    ``sin φ₀ = 1 / (k √2)``).
    """
    if not (np.isfinite(load) and load > 0):
        raise InvalidParameterError(f"load must be finite and > 0; got {load!r}")

    def length_error(k: float) -> float:
        return ellipk(k * k) - ellipkinc(np.arcsin(1 / (k * np.sqrt(2))), k * k) - np.sqrt(load)

    k = brentq(length_error, 1 / np.sqrt(2) + 1e-15, 1 - 1e-15, xtol=1e-16, rtol=1e-15)
    phi0 = np.arcsin(1 / (k * np.sqrt(2)))
    across = 1 - 2 * (ellipe(k * k) - ellipeinc(phi0, k * k)) / np.sqrt(load)
    along = np.sqrt(2 * (2 * k * k - 1)) / np.sqrt(load)
    return float(across), float(along)
