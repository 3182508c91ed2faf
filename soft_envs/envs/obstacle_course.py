"""Obstacles for the reaching arms: spheres drawn at every reset near the straight path from the
start's tip to the goal, clear of the arm's body at the start and at the goal's configuration.

A draw (:meth:`ObstacleCourse.draw`, from the task's random generator, so a sub-env of a vector env
draws what the single env draws): per obstacle a radius uniform in ``radius_range`` [m], a point
of the straight tip path at a fraction uniform in ``(0.25, 0.75)`` of it, and a centre at a random
direction perpendicular to the path, at a distance from it of the arm's body radius plus the
obstacle's radius plus a gap uniform in ``gap_range`` [m] (negative gaps: the sphere cuts into the
volume the body sweeps if it moved straight). A draw is kept only if the body (capsules of the
chain's ``body_radius`` on its backbone, :meth:`~soft_envs.robots.chain.Chain.backbone_links`) at
the start configuration and at the goal's configuration is at least ``clearance`` from it, so
every goal is reachable without a collision; up to :data:`MAX_TRIES` draws an obstacle, after which
it is left out (its radius 0: an empty slot) — the tests count how rarely.

The task vector the env passes around is the inflation times followed by ``(x, y, z, radius)`` of
each obstacle (goals' frame [m]); :func:`split_task` parts it.
"""

from __future__ import annotations

import numpy as np

from soft_envs.collision import SHAPE_WIDTH, SPHERE
from soft_envs.exceptions import InvalidParameterError, check_integer
from soft_envs.robots.peter import Peter

MAX_OBSTACLES = 8
MAX_TRIES = 50
DEFAULT_RADIUS_RANGE = (0.008, 0.015)  # [m]: spheres of 16-30 mm across, an assumption (PETER's body is 63 mm across)
DEFAULT_GAP_RANGE = (-0.015, 0.010)  # [m]: from cutting 15 mm into the straight sweep to 10 mm beside it
DEFAULT_CLEARANCE = 0.003  # [m]: the start and the goal's configuration keep at least this from every obstacle


def split_task(tasks: np.ndarray | list, n_dof: int) -> tuple[np.ndarray, np.ndarray]:
    """``(inflation times (k, n_dof), obstacles (k, M, 4))`` of task vectors ``(k, n_dof + 4M)``."""
    tasks = np.atleast_2d(np.asarray(tasks, dtype=float))
    return tasks[:, :n_dof], tasks[:, n_dof:].reshape(tasks.shape[0], -1, 4)


def sphere_rows(obstacles: np.ndarray, rotation: np.ndarray | None = None) -> np.ndarray:
    """Packed shape rows ``(k, M, 16)`` (:mod:`soft_envs.collision`) of obstacles ``(k, M, 4)``
    (radius 0: EMPTY) in the arms' base frames: ``rotation`` ``(k, 3, 3)`` turns each base frame into
    the goals' frame, so the centres are turned back by its transpose."""
    k, M = obstacles.shape[:2]
    rows = np.zeros((k, M, SHAPE_WIDTH))
    centres = obstacles[..., :3] if rotation is None else np.einsum("bji,bmj->bmi", rotation, obstacles[..., :3])
    present = obstacles[..., 3] > 0
    rows[..., 0] = np.where(present, SPHERE, 0.0)
    rows[..., 1:4] = centres
    rows[..., 4:13] = np.eye(3).ravel()
    rows[..., 13] = obstacles[..., 3]
    return rows * present[..., None]


def body_clearance(points: np.ndarray, radius: float, centre: np.ndarray, sphere_radius: float) -> float:
    """Distance [m] between a body of capsules (``radius`` on the polyline ``points`` ``(p, 3)``) and a sphere."""
    a, b = points[:-1], points[1:]
    d = b - a
    s = np.clip(np.einsum("ij,ij->i", centre - a, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-300), 0.0, 1.0)
    closest = a + s[:, None] * d
    return float(np.min(np.linalg.norm(centre - closest, axis=1))) - radius - sphere_radius


class ObstacleCourse:
    """Draws ``count`` sphere obstacles for reaches of ``model`` (module docstring).

    Args:
        model: the arm (its body's chain gives the capsules).
        count: obstacles per episode (0 to :data:`MAX_OBSTACLES`).
        radius_range, gap_range: the draws' ranges [m] (module docstring).
        clearance: the start's and the goal's configuration keep at least this [m] from every obstacle.
    """

    def __init__(self, model: Peter, count: int, radius_range: tuple[float, float] = DEFAULT_RADIUS_RANGE,
                 gap_range: tuple[float, float] = DEFAULT_GAP_RANGE, clearance: float = DEFAULT_CLEARANCE) -> None:
        self.count = check_integer("obstacles", count, minimum=0, maximum=MAX_OBSTACLES)
        lo, hi = (float(x) for x in radius_range)
        if not (0.0 < lo <= hi < 0.2):
            raise InvalidParameterError(f"obstacle radius_range must be 0 < low <= high < 0.2 m; got {radius_range!r}")
        self.model, self.radius_range = model, (lo, hi)
        self.gap_range = (float(gap_range[0]), float(gap_range[1]))
        self.clearance = float(clearance)
        self.body_radius = model.body_radius
        self._start = model.backbone(np.zeros(model.n_dof))

    def draw(self, rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
        """Obstacles ``(count, 4)`` (centre [m], radius [m]; radius 0: none) for the goal of inflation
        times ``t`` [s], from ``rng``."""
        out = np.zeros((self.count, 4))
        goal_body = self.model.backbone(t)
        start, goal = self._start[-1], goal_body[-1]
        path = goal - start
        length = float(np.linalg.norm(path))
        axis = path / length if length > 1e-9 else np.array([0.0, 0.0, 1.0])
        for m in range(self.count):
            for _ in range(MAX_TRIES):
                radius = rng.uniform(*self.radius_range)
                along = start + rng.uniform(0.25, 0.75) * path
                side = rng.normal(size=3)
                side -= side.dot(axis) * axis
                norm = float(np.linalg.norm(side))
                if norm < 1e-9:
                    continue
                centre = along + side / norm * (self.body_radius + radius + rng.uniform(*self.gap_range))
                if min(body_clearance(body, self.body_radius, centre, radius) for body in (self._start, goal_body)) \
                        >= self.clearance:
                    out[m] = (*centre, radius)
                    break
        return out
