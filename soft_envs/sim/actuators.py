"""Pneumatic actuators of the soft arms: PETER's legs that fill at a rate, the PCC arm's pressure
regulators, and the command delay both can have.

:class:`PneumaticLegs` (PETER, seed 000 eq. 1). The paper's input is an inflation time ``t``
[s] per leg and a leg inflated for ``t`` has the length ``l(t) = l₀ + v t`` (``v = 10 mm/s``):
the leg *grows at 10 mm/s while its valve is open*. Here a command ``t_cmd`` is a target
length ``l(t_cmd)`` and every leg's rest length moves towards it at the fill rate ``v`` when
it must grow and at a venting rate when it must shorten (an assumption — the paper measured
filling only; default 10 mm/s, never slower than 5 mm/s unless asked for), so a 0 → 2 s
command takes 2 s. ``instant=True`` puts the rest lengths on the target at once.

Imperfect legs (:meth:`PneumaticLegs.set_imperfections`, the sim-to-real options): the valves
still open for the times the nominal law asks, but each leg's length changes by ``gain`` times
the nominal change, starts ``offset`` longer than ``l₀`` and, while inflated, loses length at
``leak_rate`` (a held leg drifts shorter; the open-loop valve timing does not notice). The
nominal progress (:attr:`PneumaticLegs.lengths`) is what the valve timing follows; the legs'
true rest lengths are :attr:`PneumaticLegs.actual_lengths`.

:class:`PressureRegulator` (PCC arm, seed 004 section 4). Each chamber's pressure follows its
set-point (clipped into the bounds) as a first-order lag of time constant ``time_constant``
(default 10 ms, an assumption for a piezo regulator and short tubing; 0 = ideal), after a
dead time ``delay`` (the paper's regulators: "a 100–150 ms delay"; default 0, 0.125 s is the
paper's setting).

:class:`DeadTime` delays a command by a fixed time (quantised to the caller's steps: a command
given at ``t`` acts from the first step starting at or after ``t + delay``).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_nonnegative

MIN_VENT_RATE = 5e-3  # m/s: the lowest venting rate accepted without ``allow_slow_venting``


class DeadTime:
    """A command that takes effect ``delay`` [s] after it is given (``0``: at once)."""

    def __init__(self, delay: float, initial: np.ndarray) -> None:
        check_nonnegative(delay=delay)
        self.delay = float(delay)
        self.reset(initial)

    def reset(self, value: np.ndarray) -> None:
        """Forget pending commands; ``value`` acts now."""
        self._pending: deque[tuple[float, np.ndarray]] = deque()
        self.current = np.array(value, dtype=float)

    def give(self, value: np.ndarray, now: float) -> None:
        """Command ``value`` at time ``now`` [s]."""
        value = np.array(value, dtype=float)
        if self.delay == 0.0:
            self.current = value
        else:
            self._pending.append((now + self.delay, value))

    def at(self, now: float) -> np.ndarray:
        """The command acting at time ``now`` [s]."""
        eps = 1e-9
        while self._pending and self._pending[0][0] <= now + eps:
            self.current = self._pending.popleft()[1]
        return self.current


class PneumaticLegs:
    """Rest lengths of PETER's legs driven by inflation-time commands (module docstring).

    Args:
        rest_length: leg length at zero inflation [m] (eq. 1: 42.926 mm).
        fill_rate: growth rate while filling [m/s] (eq. 1: 10 mm/s).
        vent_rate: shortening rate while venting [m/s] (assumption, default 10 mm/s).
        delay: command delay [s] (valve latency; default 0).
        instant: rest lengths jump to their targets (the ideal actuator).
        allow_slow_venting: accept ``vent_rate`` below 5 mm/s.

    State: :attr:`lengths` [m], the legs' nominal rest lengths (flat, module by module), and
    :attr:`actual_lengths`, the true ones (equal unless :meth:`set_imperfections` was called).
    """

    def __init__(self, n_legs: int, *, rest_length: float, fill_rate: float, vent_rate: float = 0.010,
                 delay: float = 0.0, instant: bool = False, allow_slow_venting: bool = False) -> None:
        for name, value in (("rest_length", rest_length), ("fill_rate", fill_rate), ("vent_rate", vent_rate)):
            if not (isinstance(value, (int, float, np.floating)) and math.isfinite(value) and value > 0):
                raise InvalidParameterError(f"{name} must be a positive number [SI]; got {value!r}")
        if vent_rate < MIN_VENT_RATE and not allow_slow_venting:
            raise InvalidParameterError(f"vent_rate below {MIN_VENT_RATE * 1e3:g} mm/s ({vent_rate!r} m/s; "
                                        "m/s expected) needs allow_slow_venting=True")
        self.rest_length, self.fill_rate, self.vent_rate = float(rest_length), float(fill_rate), float(vent_rate)
        self.instant = bool(instant)
        self.lengths = np.full(int(n_legs), self.rest_length)
        self._command = DeadTime(delay, self.lengths)
        self.gain = self.offset = self.leak_rate = None  # perfect legs
        self._extension = np.zeros(int(n_legs))  # true length above l₀ + offset [m]

    def set_imperfections(self, gain: np.ndarray, offset: np.ndarray, leak_rate: np.ndarray) -> None:
        """Per-leg fill gain [1], zero-inflation length offset [m] and leak rate [m/s] (module
        docstring); takes effect at the next :meth:`reset`. Gains of 1 and zero offsets and leaks
        are the perfect legs."""
        n = self.lengths.shape[0]
        values = [np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy() for v in (gain, offset, leak_rate)]
        if not all(np.all(np.isfinite(v)) for v in values) or np.any(values[0] <= 0) or np.any(values[2] < 0):
            raise InvalidParameterError("leg gains must be > 0, leak rates >= 0 [m/s], all finite")
        perfect = np.all(values[0] == 1.0) and not np.any(values[1]) and not np.any(values[2])
        self.gain, self.offset, self.leak_rate = (None, None, None) if perfect else values

    def set_delay(self, delay: float) -> None:
        """Command delay [s]; takes effect at the next :meth:`reset`."""
        self._command = DeadTime(delay, self.lengths)

    @property
    def actual_lengths(self) -> np.ndarray:
        """The legs' true rest lengths [m]."""
        if self.gain is None:
            return self.lengths
        return self.rest_length + self.offset + self._extension

    @property
    def delay(self) -> float:
        """Command delay [s]."""
        return self._command.delay

    def length_of(self, t: np.ndarray) -> np.ndarray:
        """Eq. 1: ``l(t) = l₀ + v t`` [m] for inflation times ``t`` [s]."""
        return self.rest_length + self.fill_rate * np.asarray(t, dtype=float)

    @property
    def inflation(self) -> np.ndarray:
        """The legs' current true state as inflation times [s] (eq. 1 inverted)."""
        return (self.actual_lengths - self.rest_length) / self.fill_rate

    def reset(self, t: np.ndarray) -> None:
        """Legs at rest at the lengths of inflation times ``t`` [s]; no pending command."""
        self.lengths = self.length_of(t)
        self._command.reset(self.lengths)
        if self.gain is not None:
            self._extension = self.gain * (self.lengths - self.rest_length)

    def command(self, t: np.ndarray, now: float) -> None:
        """Command inflation times ``t`` [s] at time ``now`` [s]."""
        self._command.give(self.length_of(t), now)

    def advance(self, dt: float, now: float) -> np.ndarray:
        """Rest lengths [m] at ``now + dt`` (the target acting at ``now``); updates :attr:`lengths`."""
        target = self._command.at(now)
        if self.instant:
            change = target - self.lengths
            self.lengths = target.copy()
        else:
            change = np.clip(target - self.lengths, -self.vent_rate * dt, self.fill_rate * dt)
            self.lengths = self.lengths + change
        if self.gain is not None:
            self._extension = np.maximum(self._extension + self.gain * change - self.leak_rate * dt, 0.0)
        return self.actual_lengths


class PressureRegulator:
    """Chamber pressures [Pa] following bounded set-points through a first-order lag and a dead time.

    Args:
        n: number of chambers.
        max_pressure: set-points are clipped into ``[−max_pressure, max_pressure]`` [Pa].
        time_constant: first-order lag [s] (0: the pressure is the set-point).
        delay: dead time [s] before a set-point acts.

    State: :attr:`pressures` [Pa]; :attr:`saturated`: whether the last set-point was clipped.
    """

    def __init__(self, n: int, *, max_pressure: float, time_constant: float = 0.01, delay: float = 0.0) -> None:
        check_nonnegative(time_constant=time_constant)
        if not math.isfinite(max_pressure) or max_pressure <= 0:
            raise InvalidParameterError(f"max_pressure must be > 0 Pa; got {max_pressure!r}")
        self.max_pressure = float(max_pressure)
        self.time_constant = float(time_constant)
        self.pressures = np.zeros(int(n))
        self.saturated = False
        self._setpoint = DeadTime(delay, self.pressures)

    @property
    def delay(self) -> float:
        """Dead time [s]."""
        return self._setpoint.delay

    def reset(self, pressures: np.ndarray) -> None:
        """Pressures at ``pressures`` [Pa] (clipped), held; no pending set-point."""
        self.pressures = np.clip(np.asarray(pressures, dtype=float), -self.max_pressure, self.max_pressure)
        self._setpoint.reset(self.pressures)

    def command(self, setpoint: np.ndarray, now: float) -> None:
        """Set-point [Pa] given at ``now`` [s], clipped into the bounds."""
        setpoint = np.asarray(setpoint, dtype=float)
        clipped = np.clip(setpoint, -self.max_pressure, self.max_pressure)
        self.saturated = bool(np.any(clipped != setpoint))
        self._setpoint.give(clipped, now)

    def acting(self, now: float) -> np.ndarray:
        """Pressures [Pa] at the start of the step from ``now`` [s]: :attr:`pressures`, or with no
        lag the set-point acting at ``now`` (an ideal regulator's pressure jumps with it)."""
        return self._setpoint.at(now) if self.time_constant == 0.0 else self.pressures

    def advance(self, dt: float, now: float) -> np.ndarray:
        """Pressures [Pa] at ``now + dt`` (exact response to the set-point acting at ``now``)."""
        target = self._setpoint.at(now)
        if self.time_constant == 0.0:
            self.pressures = target.copy()
        else:
            self.pressures = target + (self.pressures - target) * math.exp(-dt / self.time_constant)
        return self.pressures
