"""The soft arms' sensor: :class:`BatchedSensor`, :class:`~soft_envs.sim.realism.DelayedSensor`
for ``B`` arms at once, each with its own noise, latency and generator (what ``realism=`` drew
for it), and :func:`store_tips`, the tip readings both soft arms keep. (The actuators of ``B``
arms are the batched core's, :mod:`soft_envs.sim.actuators`.)

It reproduces the single sensor exactly (the vector envs' episodes equal the single envs',
``tests/envs/test_vector_envs.py``): the noise comes from each arm's own generator, one ``normal``
call per noisy arm and sample as the single env draws it — the only per-arm Python loop of a
step, and only under a realism with observation noise.

Rows: methods take ``rows``, an index array or ``slice(None)`` (all arms). Measured values keep
their own units.
"""

from __future__ import annotations

from typing import Any

import numpy as np


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


def store_tips(arms: Any, rows: Any, tip: np.ndarray, velocity: np.ndarray, reset: bool = False) -> None:
    """Keep the true tips of ``rows`` on ``arms`` (``tip`` [m], ``tip_velocity`` [m/s], ``(n, 3)``,
    the goals' frame) and their measurements (``measured_tip``, ``measured_velocity``: the
    ``arms.sensor``'s where ``arms.realistic``, else the true ones; ``reset``: the sensor starts over)."""
    arms.tip[rows], arms.tip_velocity[rows] = tip, velocity
    if not arms.realistic:
        arms.measured_tip[rows], arms.measured_velocity[rows] = tip, velocity
        return
    state = np.concatenate((tip, velocity), axis=1)
    measured = arms.sensor.reset(rows, state) if reset else arms.sensor.read(rows, state)
    arms.measured_tip[rows], arms.measured_velocity[rows] = measured[:, :3], measured[:, 3:]
