"""Named tip trajectories of Keyvanara et al. (Sensors 2023; SPEC section 3), in SI units.

Each :class:`Trajectory` maps time ``t`` [s] to a tip position [m] in the arm's base frame
(``z`` along the unbent arm). Paper formulas (their units) and what we changed:

=================  ==========  ============================================================
name               segments    paper formula → here
=================  ==========  ============================================================
``circle``         1 (3-D)     ``X = 20 cos 6t, Y = 20 sin 6t, Z = 60`` mm (experiment 1) — as is
``spiral``         2 (3-D)     ``X = .05 cos .4t, Y = .05 sin .4t, Z = .11 − .0005 t`` m — as is
``saddle``         2 (3-D)     hyperbolic paraboloid, ``Z = .11 − .05 sin .4t cos .4t`` m —
                               scaled by 0.95 about the base: its highest points lie 0.144 m
                               from the base, beyond the default two-segment arm (2 × 65 mm,
                               +10 %: 0.143 m)
``planar_circle``  4 (2-D)     ``X = 175 + 50 cos t, Y = 100 + 50 sin t`` mm, tip angle 30° to
                               the horizon. The paper's ``X`` is the arm's axis (our ``z``),
                               ``Y`` the bending direction (our ``x``); the tip-angle task is
                               ``Σ θ_i = 30°`` from the arm's axis.
=================  ==========  ============================================================

The paper gives no formula for its three-segment trajectory (its Fig. 4) nor for the
four-sided flower (Fig. 3): the benchmark runs the 3-D trajectories on three segments as well.
``time_scale`` slows a trajectory down (``t → t / time_scale``), e.g. for physics tracking.

:class:`TrajectoryStarts` gives an arm's configuration at any point of a trajectory (an
episode's start) deterministically, by Gauss–Newton continuation along the trajectory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.base import KinematicModel
from soft_envs.robots.gauss_newton import nearest_configuration


@dataclass(frozen=True)
class Trajectory:
    """A tip trajectory: ``position(t)`` [m] for ``t`` in ``[0, duration]`` [s].

    Attributes:
        name: registry name.
        n_segments: segments of the arm the paper used it on.
        planar: a 2-D trajectory (``y = 0``) for :class:`~soft_envs.robots.PlanarPCCArm`.
        duration: one period (or the paper's run) [s] at ``time_scale = 1``.
        tip_angle: secondary-task tip angle [rad] (planar), or ``None``.
        scale: factor applied about the base to fit the default arm's workspace (1 = as in the paper).
        time_scale: ``> 1`` slows the trajectory down.
        paper: the paper's formula, for reports.
    """

    name: str
    n_segments: int
    planar: bool
    duration: float
    _fn: Callable[[np.ndarray], np.ndarray]
    tip_angle: float | None = None
    scale: float = 1.0
    time_scale: float = 1.0
    paper: str = ""

    @property
    def period(self) -> float:
        """Duration [s] including ``time_scale``."""
        return self.duration * self.time_scale

    def position(self, t: np.ndarray | float) -> np.ndarray:
        """Tip position(s) [m], ``(3,)`` or ``(T, 3)`` for ``t`` [s]."""
        t_arr = np.asarray(t, dtype=float)
        if not np.all(np.isfinite(t_arr)):
            raise InvalidParameterError("trajectory time must be finite [s]")
        return self.scale * self._fn(t_arr / self.time_scale)

    def velocity(self, t: np.ndarray | float, dt: float = 1e-5) -> np.ndarray:
        """Tip velocity [m/s] by central differences."""
        t_arr = np.asarray(t, dtype=float)
        return (self.position(t_arr + dt) - self.position(t_arr - dt)) / (2 * dt)

    def sample(self, n_points: int) -> tuple[np.ndarray, np.ndarray]:
        """``n_points`` times [s] evenly over one period (end excluded) and their positions ``(T, 3)`` [m]."""
        if int(n_points) != n_points or n_points < 1:
            raise InvalidParameterError(f"n_points must be a positive integer; got {n_points!r}")
        times = np.linspace(0.0, self.period, int(n_points), endpoint=False)
        return times, self.position(times)

    def slowed(self, time_scale: float) -> Trajectory:
        """The same path run ``time_scale`` times slower."""
        if not np.isfinite(time_scale) or time_scale <= 0:
            raise InvalidParameterError(f"time_scale must be > 0; got {time_scale!r}")
        return Trajectory(self.name, self.n_segments, self.planar, self.duration, self._fn, self.tip_angle,
                          self.scale, float(time_scale), self.paper)

    def rescaled(self, scale: float) -> Trajectory:
        """The same trajectory scaled by ``scale`` about the base (replacing the default scale)."""
        if not np.isfinite(scale) or scale <= 0:
            raise InvalidParameterError(f"scale must be > 0; got {scale!r}")
        return Trajectory(self.name, self.n_segments, self.planar, self.duration, self._fn, self.tip_angle,
                          float(scale), self.time_scale, self.paper)


def _stack(x, y, z) -> np.ndarray:
    x, y, z = np.broadcast_arrays(x, y, z)
    return np.stack((x, y, z), axis=-1)


def _circle(t):
    return _stack(0.020 * np.cos(6 * t), 0.020 * np.sin(6 * t), 0.060)


def _spiral(t):
    return _stack(0.05 * np.cos(0.4 * t), 0.05 * np.sin(0.4 * t), 0.11 - 0.0005 * t)


def _saddle(t):
    return _stack(0.05 * np.cos(0.4 * t), 0.05 * np.sin(0.4 * t), 0.11 - 0.05 * np.sin(0.4 * t) * np.cos(0.4 * t))


def _planar_circle(t):
    return _stack(0.100 + 0.050 * np.sin(t), 0.0, 0.175 + 0.050 * np.cos(t))


TRAJECTORIES: dict[str, Trajectory] = {
    "circle": Trajectory("circle", 1, False, 2 * np.pi / 6, _circle,
                         paper="X = 20 cos 6t, Y = 20 sin 6t, Z = 60 (mm)"),
    "spiral": Trajectory("spiral", 2, False, 2 * np.pi / 0.4, _spiral,
                         paper="X = 0.05 cos 0.4t, Y = 0.05 sin 0.4t, Z = 0.11 − 0.0005t (m)"),
    "saddle": Trajectory("saddle", 2, False, 2 * np.pi / 0.4, _saddle, scale=0.95,
                         paper="X = 0.05 cos 0.4t, Y = 0.05 sin 0.4t, Z = 0.11 − 0.05 sin 0.4t cos 0.4t (m)"),
    "planar_circle": Trajectory("planar_circle", 4, True, 2 * np.pi, _planar_circle, tip_angle=np.deg2rad(30.0),
                                paper="X = 175 + 50 cos t, Y = 100 + 50 sin t (mm), tip angle 30°"),
}


def get_trajectory(name: str, *, time_scale: float = 1.0, scale: float | None = None) -> Trajectory:
    """The named trajectory (see the module docstring), optionally slowed down or rescaled."""
    if name not in TRAJECTORIES:
        raise InvalidParameterError(f"unknown trajectory {name!r}; choose from {sorted(TRAJECTORIES)}")
    traj = TRAJECTORIES[name]
    if scale is not None:
        traj = traj.rescaled(scale)
    return traj.slowed(time_scale) if time_scale != 1.0 else traj


class TrajectoryStarts:
    """Configurations of ``model`` with the tip on ``trajectory`` at any time, without an optimiser.

    A ring of ``ring`` points evenly over one period (from ``t = 0``) is solved once, on first
    use, by continuation from the straight arm: each point by Gauss–Newton
    (:func:`~soft_envs.robots.gauss_newton.nearest_configuration`) from the previous point's
    configuration. :meth:`configuration` at time ``t`` runs Gauss–Newton from the ring point
    nearest in time. A solve that misses ``tol`` (a stall on a bound) is retried from
    ``restarts`` random configurations of a fresh ``numpy`` generator seeded with ``seed`` and
    the best is kept, so the answer depends only on the arguments. The trajectory's tip angle
    (planar trajectories) is held as the secondary task.

    Args:
        model: the arm (a planar trajectory needs a :class:`~soft_envs.robots.PlanarPCCArm`).
        trajectory: the tip trajectory.
        ring: continuation points per period.
        restarts: random restarts of a solve that misses ``tol``.
        seed: seed of the restarts.
        tol: tip error [m] that counts as on the trajectory.
    """

    def __init__(self, model: KinematicModel, trajectory: Trajectory, *, ring: int = 16, restarts: int = 32,
                 seed: int = 0, tol: float = 1e-10) -> None:
        if int(ring) != ring or ring < 1 or int(restarts) != restarts or restarts < 0:
            raise InvalidParameterError(f"ring must be >= 1 and restarts >= 0 (integers); got {ring!r}, {restarts!r}")
        if not np.isfinite(tol) or tol <= 0:
            raise InvalidParameterError(f"tol must be > 0 [m]; got {tol!r}")
        self.model = model
        self.trajectory = trajectory
        self.ring, self.restarts, self.seed, self.tol = int(ring), int(restarts), int(seed), float(tol)
        self._times: np.ndarray | None = None
        self._configurations: list[np.ndarray] = []

    def _solve(self, t: float, q0: np.ndarray | None) -> tuple[np.ndarray, float]:
        target, angle = self.trajectory.position(t), self.trajectory.tip_angle
        best = nearest_configuration(self.model, target, q0, tip_angle=angle)
        rng = np.random.default_rng(self.seed)
        for _ in range(self.restarts):
            if best[1] < self.tol:
                break
            found = nearest_configuration(self.model, target, self.model.sample(rng), tip_angle=angle)
            if found[1] < best[1]:
                best = found
        return best

    def ring_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The ring: times ``(ring,)`` [s] and configurations ``(ring, n_dof)``."""
        if self._times is None:
            times = np.linspace(0.0, self.trajectory.period, self.ring, endpoint=False)
            previous = None
            for t in times:
                previous = self._solve(float(t), previous)[0]
                self._configurations.append(previous)
            self._times = times
        return self._times.copy(), np.array(self._configurations)

    def configuration(self, t: float) -> tuple[np.ndarray, float]:
        """The configuration at time ``t`` [s] and its tip distance to the trajectory point [m]."""
        if not np.isfinite(t):
            raise InvalidParameterError(f"t must be finite [s]; got {t!r}")
        times, configurations = self.ring_points()
        k = int(np.argmin(np.abs(times - t)))
        return self._solve(float(t), configurations[k])
