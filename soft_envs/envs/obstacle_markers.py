"""The pictures' obstacles: a visual sphere (no collision shape) per obstacle of the shown arm, in a
drawing client, tinted while the arm touches it."""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.sim.bullet import pybullet

#: Obstacle spheres: purple, yellow while the arm touches them (colours apart from the arms' palette,
#: :data:`~soft_envs.robots.chain.SECTION_COLOURS`, and the red goal marker).
OBSTACLE_RGBA = (0.55, 0.2, 0.8, 1.0)
TOUCHED_RGBA = (1.0, 0.95, 0.1, 1.0)


class ObstacleMarkers:
    """The spheres of one picture's obstacles: made again when the radii change (a reset), moved at
    every picture, tinted while touched."""

    def __init__(self) -> None:
        #: ``(obstacle index, body id)`` of each sphere in the drawing client.
        self.bodies: list[tuple[int, int]] = []
        self._radii: np.ndarray | None = None
        self._touched: np.ndarray | None = None

    def draw(self, client: Any, obstacles: np.ndarray, touching: np.ndarray) -> None:
        """Put the spheres of ``obstacles`` ``(M, 4)`` — centre [m] in the picture's world frame and
        radius [m], none for radius 0 — into ``client``, tinted where ``touching`` ``(M,)``."""
        radii = obstacles[:, 3]
        if self._radii is None or not np.array_equal(radii, self._radii):
            for _, body in self.bodies:
                client.removeBody(body)
            self.bodies = []
            for k, radius in enumerate(radii):
                if radius > 0.0:
                    shape = client.createVisualShape(pybullet.GEOM_SPHERE, radius=float(radius),
                                                      rgbaColor=list(OBSTACLE_RGBA))
                    self.bodies.append((k, client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=shape,
                                                                  basePosition=[0.0, 0.0, -1.0])))
            self._radii = radii.copy()
            self._touched = np.zeros(len(radii), dtype=bool)
        assert self._touched is not None
        for k, body in self.bodies:
            client.resetBasePositionAndOrientation(body, obstacles[k, :3].tolist(), [0, 0, 0, 1])
            if bool(touching[k]) != self._touched[k]:
                client.changeVisualShape(body, -1, rgbaColor=list(TOUCHED_RGBA if touching[k] else OBSTACLE_RGBA))
        self._touched = np.asarray(touching, dtype=bool).copy()
