"""A Kirchhoff rod: integration, the clamped rod under a dead tip load, Euler buckling.

Frames and units: see :mod:`soft_envs.robots.cosserat`. Quaternions in arguments and results
are ``(x, y, z, w)``; the integrator's scalar-first state stays inside
:mod:`~soft_envs.robots.cosserat.integrator`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import cross
from soft_envs.robots.cosserat.integrator import IDENTITY_WXYZ, integrate_rods, rotation_matrix_wxyz, to_wxyz, to_xyzw
from soft_envs.robots.cosserat.newton import LineSearch, damped_newton

# The clamped rod's Newton: all five step fractions in one batch, the first with a sufficient
# decrease taken; no decrease ends the attempt (the load continuation then takes a smaller step).
_CLAMPED_SEARCH = LineSearch(rounds=((1.0, 0.5, 0.25, 0.125, 0.0625),), pick="first", decrease=1e-4)


def _is_integer(value: Any) -> bool:
    try:
        return int(value) == value
    except (TypeError, ValueError, OverflowError):
        return False


@dataclass
class RodState:
    """One equilibrium of a rod, sampled at ``N + 1`` stations (see the package docstring for frames).

    Attributes:
        s: arc length of the stations ``(N+1,)`` [m].
        positions: centreline ``(N+1, 3)`` [m], world frame.
        rotations: cross-section frames ``(N+1, 3, 3)`` (body → world).
        quaternions: the same as unit quaternions ``(N+1, 4)`` ``(x, y, z, w)``.
        curvatures: ``u`` ``(N+1, 3)`` [1/m], body frame.
        force: internal force ``n`` ``(3,)`` [N], world frame (constant along the rod).
        moments: internal moment ``m = R K u`` ``(N+1, 3)`` [N m], world frame.
        energy: elastic energy [J].
        residual: shooting residual at convergence (dimensionless, ``m`` scaled by ``L/EI``).
        converged: whether the shooting residual reached the tolerance.
        iterations: Newton steps over the whole solve (load continuation and restarts included).
    """

    s: np.ndarray
    positions: np.ndarray
    rotations: np.ndarray
    quaternions: np.ndarray
    curvatures: np.ndarray
    force: np.ndarray
    moments: np.ndarray
    energy: float
    residual: float = 0.0
    converged: bool = True
    iterations: int = 0

    @property
    def tip_position(self) -> np.ndarray:
        """``p(L)`` ``(3,)`` [m], world frame."""
        return self.positions[-1]

    @property
    def tip_rotation(self) -> np.ndarray:
        """``R(L)`` ``(3, 3)`` (body → world)."""
        return self.rotations[-1]


class Rod:
    """A straight, uniform, circular Kirchhoff rod (inextensible, unshearable).

    Args:
        length: ``L`` [m].
        radius: cross-section radius [m] (``I = π r⁴ / 4``, ``J = 2 I``).
        youngs_modulus: ``E`` [Pa].
        shear_modulus: ``G`` [Pa]; default ``E / (2 (1 + poisson_ratio))``.
        poisson_ratio: used only when ``shear_modulus`` is not given.
        n_steps: RK4 steps over the length (accuracy ``O(n_steps⁻⁴)``).
    """

    def __init__(self, length: float, radius: float, youngs_modulus: float, shear_modulus: float | None = None,
                 *, poisson_ratio: float = 0.305, n_steps: int = 200) -> None:
        for name, value in (("length", length), ("radius", radius), ("youngs_modulus", youngs_modulus)):
            if not (np.isfinite(value) and value > 0):
                raise InvalidParameterError(f"{name} must be finite and > 0; got {value!r}")
        if shear_modulus is None:
            if not (-1.0 < poisson_ratio < 0.5):
                raise InvalidParameterError(f"poisson_ratio must be in (-1, 0.5); got {poisson_ratio!r}")
            shear_modulus = youngs_modulus / (2.0 * (1.0 + poisson_ratio))
        if not (np.isfinite(shear_modulus) and shear_modulus > 0):
            raise InvalidParameterError(f"shear_modulus must be finite and > 0; got {shear_modulus!r}")
        self.length = float(length)
        self.radius = float(radius)
        self.youngs_modulus = float(youngs_modulus)
        self.shear_modulus = float(shear_modulus)
        if not _is_integer(n_steps) or n_steps < 2:
            raise InvalidParameterError(f"n_steps must be an integer >= 2; got {n_steps!r}")
        self.n_steps = int(n_steps)
        self.area_moment = np.pi * self.radius**4 / 4.0
        self.EI = self.youngs_modulus * self.area_moment
        self.GJ = self.shear_modulus * 2.0 * self.area_moment

    def __repr__(self) -> str:
        return (f"Rod(length={self.length}, radius={self.radius}, youngs_modulus={self.youngs_modulus:g}, "
                f"shear_modulus={self.shear_modulus:g}, n_steps={self.n_steps})")

    def _steps(self, n_steps: Any) -> int:
        """RK4 steps of one call: the rod's ``n_steps`` when None, else an integer >= 1."""
        if n_steps is None:
            return self.n_steps
        if not _is_integer(n_steps) or n_steps < 1:
            raise InvalidParameterError(f"n_steps must be an integer >= 1; got {n_steps!r}")
        return int(n_steps)

    @property
    def stiffness(self) -> np.ndarray:
        """``K = diag(EI, EI, GJ)`` [N m²]."""
        return np.diag([self.EI, self.EI, self.GJ])

    # ------------------------------------------------------------------ integration
    def integrate(self, base_curvature: np.ndarray, force: np.ndarray, *, base_position: np.ndarray | None = None,
                  base_quaternion: np.ndarray | None = None, n_steps: int | None = None,
                  store: bool = False) -> np.ndarray:
        """Integrate rods with given ``u(0)`` ``(..., 3)`` [1/m] and force ``n`` ``(..., 3)`` [N] from
        ``base_position`` [m] (default the origin) and ``base_quaternion`` ``(x, y, z, w)`` (default
        the identity: tangent ``e3``).

        Returns the state rows ``p (0:3)`` [m], ``q (3:7)`` ``(x, y, z, w)`` (not renormalised),
        ``u (7:10)`` [1/m], ``E (10)`` [J] at the tip, shape ``(..., 11)``, or with ``store`` every
        station ``(..., N+1, 11)``.
        """
        Y = self._integrate_wxyz(base_curvature, force, base_position=base_position,
                                 base_quaternion=None if base_quaternion is None else to_wxyz(base_quaternion),
                                 n_steps=n_steps, store=store)
        Y[..., 3:7] = to_xyzw(Y[..., 3:7])
        return Y

    def _integrate_wxyz(self, base_curvature: np.ndarray, force: np.ndarray, *, base_position: np.ndarray | None = None,
                        base_quaternion: np.ndarray | None = None, n_steps: int | None = None,
                        store: bool = False) -> np.ndarray:
        """:meth:`integrate` with the integrator's scalar-first quaternions ``(w, x, y, z)`` in and out."""
        u0 = np.asarray(base_curvature, dtype=float)
        n = np.broadcast_to(np.asarray(force, dtype=float), u0.shape)
        lead = u0.shape[:-1]
        u0f, nf = u0.reshape(-1, 3), n.reshape(-1, 3)
        B = u0f.shape[0]
        p0 = np.zeros((B, 3)) if base_position is None else np.broadcast_to(base_position, (*lead, 3)).reshape(-1, 3)
        q0 = (np.tile(IDENTITY_WXYZ, (B, 1)) if base_quaternion is None
              else np.broadcast_to(base_quaternion, (*lead, 4)).reshape(-1, 4))
        steps = self._steps(n_steps)
        Y = integrate_rods(p0, q0, u0f, nf, EI=self.EI, GJ=self.GJ, length=self.length, n_steps=steps, store=store)
        if store:
            return np.moveaxis(Y, 2, 0).reshape(*lead, steps + 1, 11)
        return Y.T.reshape(*lead, 11)

    def state(self, base_curvature: np.ndarray, force: np.ndarray, *, base_position: np.ndarray | None = None,
              base_quaternion: np.ndarray | None = None, n_steps: int | None = None, **extra: Any) -> RodState:
        """The :class:`RodState` of one rod integrated from ``u(0)`` with force ``n`` (``base_quaternion``
        ``(x, y, z, w)``, default the identity); ``extra`` fills the outcome fields."""
        if base_quaternion is not None:
            base_quaternion = to_wxyz(np.asarray(base_quaternion, float))
        Y = self._integrate_wxyz(np.asarray(base_curvature, float)[None], np.asarray(force, float)[None],
                                 base_position=None if base_position is None else np.asarray(base_position, float)[None],
                                 base_quaternion=None if base_quaternion is None else base_quaternion[None],
                                 n_steps=n_steps, store=True)[0]
        q = Y[:, 3:7] / np.linalg.norm(Y[:, 3:7], axis=1, keepdims=True)
        R = rotation_matrix_wxyz(q)
        u = Y[:, 7:10]
        m = np.einsum("kij,kj->ki", R, u * np.array([self.EI, self.EI, self.GJ]))
        s = np.linspace(0.0, self.length, Y.shape[0])
        return RodState(s=s, positions=Y[:, 0:3].copy(), rotations=R, quaternions=to_xyzw(q), curvatures=u.copy(),
                        force=np.asarray(force, float).copy(), moments=m, energy=float(Y[-1, 10]), **extra)

    # ------------------------------------------------------------------ clamped rod, dead tip load
    def solve_clamped(self, tip_force: Sequence[float] = (0.0, 0.0, 0.0), tip_moment: Sequence[float] = (0.0, 0.0, 0.0),
                      *, guess: np.ndarray | RodState | None = None, tol: float = 1e-12, max_iter: int = 50,
                      n_steps: int | None = None) -> RodState:
        """Rod clamped at ``s = 0`` (origin, tangent ``e3``), dead force [N] and moment [N m] at the tip.

        Shooting on ``u(0)`` with Newton (batched finite-difference Jacobian); the load is applied
        in increments (natural continuation) when a full step fails. ``guess`` is a ``u(0)``
        [1/m] or a previous :class:`RodState`. Non-convergence returns ``converged=False``.
        """
        F = np.asarray(tip_force, dtype=float).reshape(-1)
        M = np.asarray(tip_moment, dtype=float).reshape(-1)
        if F.shape != (3,) or M.shape != (3,) or not (np.all(np.isfinite(F)) and np.all(np.isfinite(M))):
            raise InvalidParameterError("tip_force and tip_moment must be finite 3-vectors [N], [N m]")
        steps = self._steps(n_steps)
        linear = (M + cross(np.array([0.0, 0.0, self.length]), F)) / np.array([self.EI, self.EI, self.GJ])
        if isinstance(guess, RodState):
            starts = [guess.curvatures[0].copy()]
        elif guess is not None:
            starts = [np.asarray(guess, dtype=float).reshape(3).copy()]
        else:  # linear guess: base moment with the tip load acting at L e3
            starts = [linear]
        # Past the buckling load the continuation from one start can stall at a spurious
        # minimum of the residual; the straight rod and the mirrored linear guess lead to the
        # other branches. They are tried only when the previous start failed.
        starts += [np.zeros(3), -linear]
        total_it = 0
        best = None
        for u in starts:
            x, res, done, it = self._continue_clamped(u * self.length, F, M, tol, max_iter, steps)
            total_it += it
            if best is None or res < best[1]:
                best = (x, res, done)
            if done >= 1.0:
                break
        x, res, done = best
        return self.state(x / self.length, F, n_steps=steps, residual=float(res), converged=done >= 1.0,
                          iterations=total_it)

    def _continue_clamped(self, x: np.ndarray, F: np.ndarray, M: np.ndarray, tol: float, max_iter: int,
                          steps: int) -> tuple[np.ndarray, float, float, int]:
        """Natural continuation of the load from 0 (step halved when Newton fails).

        Returns ``(x, residual, load fraction reached, Newton iterations)``.
        """
        total_it, done, inc, res = 0, 0.0, 1.0, np.inf
        while done < 1.0:
            target = min(1.0, done + inc)
            x_new, res, it, ok = self._newton_clamped(x, target * F, target * M, tol, max_iter, steps)
            total_it += it
            if ok:
                x, done = x_new, target
                inc = min(1.0, inc * 2.0)
            else:
                inc *= 0.5
                if inc < 1e-4:
                    break
        return x, res, done, total_it

    def _clamped_residual(self, x: np.ndarray, tip_force: np.ndarray, tip_moment: np.ndarray,
                         n_steps: int | None = None) -> np.ndarray:
        """Shooting residual ``(m(L) − M) L / EI`` ``(B, 3)`` of the clamped rod for scaled base
        curvatures ``x = L u(0)`` ``(B, 3)`` under the dead tip force [N] and moment [N m]."""
        L, EI = self.length, self.EI
        steps = self._steps(n_steps)
        X = np.asarray(x, dtype=float)
        Y = integrate_rods(np.zeros((len(X), 3)), np.tile(IDENTITY_WXYZ, (len(X), 1)), X / L,
                           np.tile(tip_force, (len(X), 1)), EI=EI, GJ=self.GJ, length=L, n_steps=steps)
        R = rotation_matrix_wxyz(Y[3:7].T)
        m = np.einsum("bij,bj->bi", R, Y[7:10].T * np.array([EI, EI, self.GJ]))
        return (m - tip_moment) * (L / EI)

    def _newton_clamped(self, x: np.ndarray, F: np.ndarray, M: np.ndarray, tol: float, max_iter: int,
                        steps: int) -> tuple[np.ndarray, float, int, bool]:
        """Newton on the scaled ``x = L u(0)``: steps of at most 4 (a bend of ~4 rad over the
        length), a relaxed tolerance 1e-10 after the last step. Returns ``(x, r, steps, converged)``."""
        out = damped_newton(x[None], lambda X, idx: (self._clamped_residual(X, F, M, steps), None),
                            line_search=_CLAMPED_SEARCH, tol=tol, max_iter=max_iter, fd_step=1e-7, max_step=4.0,
                            final_tol=1e-10, singular="stop")
        return out.x[0], float(out.residual[0]), int(out.iterations[0]), bool(out.converged[0])

    # ------------------------------------------------------------------ buckling
    def buckling_load(self, boundary: str = "clamped-free", mode: int = 1, n_steps: int | None = None) -> float:
        """Euler buckling load [N] found with the shooting solver (not the formula).

        The straight rod under an axial dead load ``P`` is linearised by finite differences of
        the shooting map and ``P`` is the root (Brent) of the quantity that vanishes at a
        bifurcation: for ``"clamped-free"`` the tip moment per unit ``u(0)``; for
        ``"pinned-pinned"`` the tip's lateral offset per unit base tilt (``u(0) = 0``).
        ``mode`` counts the roots from the lowest.
        """
        from scipy.optimize import brentq

        if boundary not in ("clamped-free", "pinned-pinned"):
            raise InvalidParameterError("boundary must be 'clamped-free' or 'pinned-pinned'")
        if int(mode) != mode or mode < 1:
            raise InvalidParameterError("mode must be a positive integer")
        L, EI = self.length, self.EI
        steps = self._steps(n_steps)
        h = 1e-6

        def indicator(P: float) -> float:
            n = np.array([[0.0, 0.0, -P], [0.0, 0.0, -P]])
            if boundary == "clamped-free":
                Y = self._integrate_wxyz(np.array([[0.0, 0.0, 0.0], [h / L, 0.0, 0.0]]), n, n_steps=steps)
                R = rotation_matrix_wxyz(Y[:, 3:7])
                m = np.einsum("bij,bj->bi", R, Y[:, 7:10] * np.array([EI, EI, self.GJ]))
                return float((m[1, 0] - m[0, 0]) / (h * EI / L) * 1.0)
            quat = np.array([IDENTITY_WXYZ, [np.cos(h / 2), 0.0, np.sin(h / 2), 0.0]])  # (w, x, y, z)
            Y = self._integrate_wxyz(np.zeros((2, 3)), n, base_quaternion=quat, n_steps=steps)
            return float((Y[1, 0] - Y[0, 0]) / (h * L))

        # bracket: the k-th root lies near ((2k-1)π/2)² (clamped-free) or (kπ)² (pinned-pinned) EI/L²
        centre = ((2 * mode - 1) * np.pi / 2) ** 2 if boundary == "clamped-free" else (mode * np.pi) ** 2
        lo, hi = 0.8 * centre * EI / L**2, 1.2 * centre * EI / L**2
        return float(brentq(indicator, lo, hi, xtol=1e-14 * hi, rtol=1e-13))
