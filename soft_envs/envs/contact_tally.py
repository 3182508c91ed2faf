"""What an arm's contact with its obstacles did in an episode, per arm of a batch: the record every
env with obstacles keeps for its ``info`` (``collisions``, ``penetration``, ``contact_force``) and its
success rule (no collision), written once for the single envs (a batch of one) and the vector envs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.sim.contact import DIAG_NORMAL_FORCE, DIAG_PENETRATION
from soft_envs.sim.scene import ArmScene


class ContactTally:
    """``n`` arms' contacts with ``count`` obstacle slots of their scene (``count`` slots from ``first``).

    Attributes (``(n, …)``): :attr:`collisions` — touches so far this episode (an obstacle counts once
    per touch: from not touching to touching at a physics step's end); :attr:`touching` — the
    obstacles touched at the last physics step; :attr:`touched_in_period` — whether an obstacle was
    touched at any physics step of the last control period; :attr:`penetration` [m] — the deepest of the last
    control period's physics steps; :attr:`contact_force` [N] — the total normal force on the arm at
    the last physics step's end (every shape of the scene, obstacles or not).
    """

    def __init__(self, n: int, count: int, first: int = 0) -> None:
        self.count, self.first = int(count), int(first)
        self.collisions = np.zeros(n, dtype=np.int64)
        self.touching = np.zeros((n, count), dtype=bool)
        self.touched_in_period = np.zeros(n, dtype=bool)
        self.penetration = np.zeros(n)
        self.contact_force = np.zeros(n)

    def reset(self, rows: np.ndarray) -> None:
        """New episodes for ``rows``: nothing touched yet."""
        self.collisions[rows] = 0
        self.touching[rows] = False
        self.touched_in_period[rows] = False
        self.penetration[rows] = 0.0
        self.contact_force[rows] = 0.0

    def start_period(self) -> None:
        """A control period begins: the deepest penetration and the touches are of its steps only."""
        self.penetration[:] = 0.0
        self.touched_in_period[:] = False

    def record(self, scene: ArmScene, penetration: np.ndarray | None = None, rows: slice = slice(None)) -> None:
        """After a physics step: the scene's measurements at its end (``penetration`` ``(n,)`` [m]: the
        deepest, where the scene's own is not the bodies' true one, as with a moving object) of the arms
        ``rows`` (default all; a block of a compiled period records its own, in its thread)."""
        touched = scene.touched[rows, self.first:self.first + self.count]
        self.collisions[rows] += np.count_nonzero(touched & ~self.touching[rows], axis=1)
        self.touching[rows] = touched
        self.touched_in_period[rows] |= touched.any(axis=1)
        depth = scene.diagnostics[rows, DIAG_PENETRATION] if penetration is None else penetration[rows]
        np.maximum(self.penetration[rows], depth, out=self.penetration[rows])
        self.contact_force[rows] = scene.diagnostics[rows, DIAG_NORMAL_FORCE]

    def collision_term(self, weight: float) -> np.ndarray:
        """The ``collision`` reward term of every arm, ``(n,)``: ``−weight`` where an obstacle was
        touched during the last control period, else 0."""
        return -float(weight) * self.touched_in_period

    def add_info(self, rows, info: dict[str, Any]) -> None:
        """``collisions``, ``penetration`` [m] and ``contact_force`` [N] of ``rows`` into ``info``, whose
        ``is_success`` becomes false for an arm that touched an obstacle this episode."""
        info["is_success"] = info["is_success"] & (self.collisions[rows] == 0)
        info["collisions"] = self.collisions[rows].copy()
        info["penetration"] = self.penetration[rows].copy()
        info["contact_force"] = self.contact_force[rows].copy()
