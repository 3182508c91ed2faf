"""Per-sub-env state of the vector envs that the single envs keep in small objects: the command
dead time, PETER's legs and the delayed, noisy sensor — for ``B`` arms at once, each with its own
parameters (what ``realism=`` drew for it).

Each class is the batched twin of a single-env part and reproduces it exactly (the vector envs'
episodes equal the single envs', ``tests/envs/test_vector_envs.py``):

* :class:`BatchedDeadTime` — :class:`~soft_envs.sim.actuators.DeadTime` with one delay per arm,
  for commands given once per control period (a ring of pending commands per arm);
* :class:`BatchedLegs` — :class:`~soft_envs.sim.actuators.PneumaticLegs` with per-leg gains,
  offsets and leaks and a per-arm delay;
* :class:`BatchedSensor` — :class:`~soft_envs.sim.realism.DelayedSensor` with per-arm noise and
  latency; the noise comes from each arm's own generator (one ``normal`` call per noisy arm and
  sample, as the single env draws it), the only per-arm Python loop of a step, and only under a
  realism with observation noise.

Rows: methods that touch some arms take ``rows``, an index array or ``slice(None)`` (all arms).
Units are the single parts': times [s], lengths [m], measured values in their own units.
"""

from __future__ import annotations

import math

import numpy as np

EPS_TIME = 1e-9  # s: a command due at most this much after `now` acts now (as DeadTime)


class BatchedDeadTime:
    """Commands ``(B, width)`` that act ``delay`` [s] (one per arm) after they are given.

    Args:
        n_arms, width: batch size and command size.
        max_delay: the longest delay any arm may get [s].
        period: the interval between commands [s] (sizes the ring of pending commands).
    """

    def __init__(self, n_arms: int, width: int, max_delay: float, period: float) -> None:
        self.slots = int(math.floor(max_delay / period + 1e-9)) + 2
        self.delay = np.zeros(n_arms)
        self.current = np.zeros((n_arms, width))
        self._due = np.full((n_arms, self.slots), np.inf)
        self._values = np.zeros((n_arms, self.slots, width))
        self._count = np.zeros(n_arms, dtype=np.int64)

    def reset(self, rows, value: np.ndarray, delay: np.ndarray) -> None:
        """Forget the pending commands of ``rows``; ``value`` acts now; new delays [s]."""
        self.delay[rows] = delay
        self.current[rows] = value
        self._due[rows] = np.inf
        self._count[rows] = 0

    def give(self, value: np.ndarray, now: np.ndarray) -> None:
        """Every arm commands its row of ``value`` at its time ``now`` ``(B,)`` [s]."""
        immediate = self.delay == 0.0
        self.current[immediate] = value[immediate]
        rows = np.flatnonzero(~immediate)
        if rows.size:
            slot = self._count[rows] % self.slots
            if np.isfinite(self._due[rows, slot]).any():
                raise RuntimeError("BatchedDeadTime: more pending commands than its ring holds")
            self._due[rows, slot] = now[rows] + self.delay[rows]
            self._values[rows, slot] = value[rows]
            self._count[rows] += 1

    def at(self, now: np.ndarray) -> np.ndarray:
        """The commands acting at each arm's time ``now`` ``(B,)`` [s] (the latest one due)."""
        due = self._due <= (now + EPS_TIME)[:, None]
        rows = np.flatnonzero(due.any(axis=1))
        if rows.size:
            latest = np.argmax(np.where(due[rows], self._due[rows], -np.inf), axis=1)
            self.current[rows] = self._values[rows, latest]
            self._due[due] = np.inf
        return self.current


class BatchedLegs:
    """Rest lengths of ``B`` PETER arms' legs (:class:`~soft_envs.sim.actuators.PneumaticLegs`).

    Args:
        n_arms, n_legs: batch size and legs per arm.
        rest_length, fill_rate, vent_rate, instant: as :class:`PneumaticLegs` [m, m/s].
        max_delay: the longest command delay of any arm [s]; period: the command period [s].
    """

    def __init__(self, n_arms: int, n_legs: int, *, rest_length: float, fill_rate: float, vent_rate: float,
                 instant: bool, max_delay: float, period: float) -> None:
        self.rest_length, self.fill_rate, self.vent_rate = float(rest_length), float(fill_rate), float(vent_rate)
        self.instant = bool(instant)
        self.lengths = np.full((n_arms, n_legs), self.rest_length)
        self.gain = np.ones((n_arms, n_legs))
        self.offset = np.zeros((n_arms, n_legs))
        self.leak_rate = np.zeros((n_arms, n_legs))
        self.perfect = np.ones(n_arms, dtype=bool)
        self._extension = np.zeros((n_arms, n_legs))
        self._command = BatchedDeadTime(n_arms, n_legs, max_delay, period)

    def reset(self, rows, t: np.ndarray, gain: np.ndarray, offset: np.ndarray, leak_rate: np.ndarray,
              delay: np.ndarray) -> None:
        """Legs of ``rows`` at rest at inflation times ``t`` [s], with their imperfections
        (``PneumaticLegs.set_imperfections``) and command delay [s]; nothing pending."""
        self.gain[rows], self.offset[rows], self.leak_rate[rows] = gain, offset, leak_rate
        self.perfect[rows] = np.all(self.gain[rows] == 1.0, axis=1) & ~np.any(self.offset[rows], axis=1) \
            & ~np.any(self.leak_rate[rows], axis=1)
        self.lengths[rows] = self.length_of(t)
        self._command.reset(rows, self.lengths[rows], delay)
        self._extension[rows] = self.gain[rows] * (self.lengths[rows] - self.rest_length)

    def length_of(self, t: np.ndarray) -> np.ndarray:
        """Eq. 1: ``l(t) = l₀ + v t`` [m] for inflation times ``t`` [s]."""
        return self.rest_length + self.fill_rate * np.asarray(t, dtype=float)

    def command(self, t: np.ndarray, now: np.ndarray) -> None:
        """Every arm commands inflation times ``t`` ``(B, n_legs)`` [s] at its time ``now`` [s]."""
        self._command.give(self.length_of(t), now)

    def advance(self, dt: float, now: np.ndarray) -> np.ndarray:
        """Every arm's true rest lengths [m] at ``now + dt`` (the target acting at ``now``)."""
        target = self._command.at(now)
        if self.instant:
            change = target - self.lengths
            self.lengths = target.copy()
        else:
            change = np.clip(target - self.lengths, -self.vent_rate * dt, self.fill_rate * dt)
            self.lengths = self.lengths + change
        self._extension = np.maximum(self._extension + self.gain * change - self.leak_rate * dt, 0.0)
        return self.actual_lengths

    @property
    def actual_lengths(self) -> np.ndarray:
        """The legs' true rest lengths [m] ``(B, n_legs)``."""
        imperfect = self.rest_length + self.offset + self._extension
        return np.where(self.perfect[:, None], self.lengths, imperfect)

    @property
    def inflation(self) -> np.ndarray:
        """The legs' true state as inflation times [s] (eq. 1 inverted)."""
        return (self.actual_lengths - self.rest_length) / self.fill_rate


class BatchedSensor:
    """A measurement ``(B, width)`` with per-arm Gaussian noise and a latency of whole samples.

    Args:
        n_arms, width: batch size and measured size.
        max_latency: the longest latency of any arm [samples].
    """

    def __init__(self, n_arms: int, width: int, max_latency: int) -> None:
        self.noise_std = np.zeros((n_arms, width))
        self.latency = np.zeros(n_arms, dtype=np.int64)
        self.rngs: list[np.random.Generator | None] = [None] * n_arms
        self._noisy = np.zeros(n_arms, dtype=bool)
        self._history = np.zeros((n_arms, max_latency + 1, width))
        self._count = np.zeros(n_arms, dtype=np.int64)

    def configure(self, rows: np.ndarray, noise_std: np.ndarray, latency: np.ndarray,
                  rngs: list[np.random.Generator | None]) -> None:
        """Noise standard deviations ``(len(rows), width)``, latencies [samples] and generators of ``rows``."""
        if np.any(latency > self._history.shape[1] - 1):
            raise RuntimeError("BatchedSensor: a latency longer than its history")
        self.noise_std[rows], self.latency[rows] = noise_std, latency
        for i, rng in zip(rows.tolist(), rngs, strict=True):
            self.rngs[i] = rng
        self._noisy[rows] = np.any(self.noise_std[rows] != 0.0, axis=1) & np.array([r is not None for r in rngs])

    def reset(self, rows: np.ndarray, value: np.ndarray) -> np.ndarray:
        """``rows`` start with ``value`` held for the whole latency; returns its measurement."""
        self._history[rows] = value[:, None, :]
        self._count[rows] = 0
        return self._measure(rows, np.array(value, dtype=float))

    def read(self, rows, value: np.ndarray) -> np.ndarray:
        """Measure the true ``value`` of this sample for ``rows``."""
        count = self._count[rows] + 1
        self._count[rows] = count
        ids = np.arange(self._count.shape[0])[rows]
        size = self._history.shape[1]
        self._history[ids, count % size] = value
        return self._measure(ids, self._history[ids, (count - self.latency[ids]) % size])

    def _measure(self, ids: np.ndarray, value: np.ndarray) -> np.ndarray:
        noisy = np.flatnonzero(self._noisy[ids])
        if noisy.size:  # each arm's draw from its own generator, as DelayedSensor draws it
            arms = ids[noisy]
            width, rngs = value.shape[1], self.rngs
            z = np.array([rngs[i].normal(0.0, 1.0, size=width) for i in arms.tolist()])
            value[noisy] = value[noisy] + z * self.noise_std[arms]
        return value
