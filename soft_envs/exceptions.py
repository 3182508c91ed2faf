"""Typed exceptions of soft_envs.

Every error that comes from bad user input derives from :class:`ValueError`, so callers that
only know the standard library can still catch it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


class SoftEnvsError(Exception):
    """Base class of every soft_envs exception."""


class InvalidConfigurationError(SoftEnvsError, ValueError):
    """A joint/actuator vector has the wrong shape, is not finite, or is out of its bounds."""


class InvalidTargetError(SoftEnvsError, ValueError):
    """An IK target has the wrong shape or is not finite."""


class InvalidActionError(SoftEnvsError, ValueError):
    """An environment action has the wrong shape or is not finite."""


class InvalidParameterError(SoftEnvsError, ValueError):
    """A model or environment parameter is out of its valid range."""


class ConvergenceError(SoftEnvsError, RuntimeError):
    """A numerical solve that must succeed for the object to be usable (e.g. a reference
    equilibrium) did not converge. Solvers that can give a best effort return it instead."""


class MissingDependencyError(SoftEnvsError, ImportError):
    """An optional dependency (an extra such as ``plot`` or ``learn``) is not installed."""


class ClosedEnvironmentError(SoftEnvsError, RuntimeError):
    """A method of an environment was called after :meth:`close`."""


def check_integer(name: str, value, *, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as an ``int`` if it is an integer (``int`` or a numpy integer; not ``bool``, not a
    float) in ``[minimum, maximum]``, else :class:`InvalidParameterError` naming ``name``."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= minimum \
        and (maximum is None or int(value) <= maximum)
    if not ok:
        bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise InvalidParameterError(f"{name} must be an integer {bound}; got {value!r}")
    return int(value)


def check_finite(name: str, value) -> float:
    """``value`` as a ``float`` if it is a finite real number (``int``, ``float`` or a numpy scalar;
    not ``bool``, not a string), else :class:`InvalidParameterError` naming ``name``."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok:
        raise InvalidParameterError(f"{name} must be a finite number; got {value!r}")
    return float(value)


def check_positive(name: str, value, maximum: float = math.inf) -> float:
    """``value`` as a ``float`` if it is a finite number in ``(0, maximum]``, else :class:`InvalidParameterError`."""
    try:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 < float(value) <= maximum \
            and math.isfinite(value)
    except TypeError:
        ok = False
    if not ok:
        bound = "" if maximum == math.inf else f" and <= {maximum:g}"
        raise InvalidParameterError(f"{name} must be a finite number > 0{bound}; got {value!r}")
    return float(value)


def check_nonnegative(**values: float) -> None:
    """Raise :class:`InvalidParameterError` unless every named value is a finite number ≥ 0."""
    for name, value in values.items():
        try:
            ok = bool(value >= 0) and value == value and abs(value) != float("inf")
        except TypeError:
            ok = False
        if not ok:
            raise InvalidParameterError(f"{name} must be a finite number >= 0; got {value!r}")


#: numpy dtype kinds that hold real numbers: bool, signed and unsigned integers, floats.
REAL_KINDS = "biuf"


def as_real_array(value, name: str, error: type[ValueError] = InvalidActionError) -> np.ndarray:
    """``value`` as a float64 array if it holds real numbers (its dtype bool, integer or float), else
    ``error`` naming ``name`` and the dtype: a complex number, a date, a string or an object would
    otherwise be cast silently (the imaginary part dropped, a string parsed)."""
    try:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged or otherwise not an array
        raise error(f"{name} must be an array of real numbers; got {value!r} ({exc})") from None
    if array.dtype.kind not in REAL_KINDS:
        raise error(f"{name} must hold real numbers; got dtype {array.dtype}")
    return array.astype(float, copy=False)
