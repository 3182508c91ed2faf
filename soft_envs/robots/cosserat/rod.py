"""A Kirchhoff rod: integration, the clamped rod under a dead tip load, Euler buckling.

Frames and units: see :mod:`soft_envs.robots.cosserat`. Quaternions in arguments and results
are ``(x, y, z, w)``; the integrator's scalar-first state stays inside
:mod:`~soft_envs.robots.cosserat.integrator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from soft_envs import clock
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import cross
from soft_envs.robots.cosserat.integrator import (
    IDENTITY_WXYZ,
    integrate_rods,
    rotation_matrix_wxyz,
    rotation_variation_wxyz,
    to_wxyz,
    to_xyzw,
)
from soft_envs.robots.cosserat.newton import LineSearch, damped_newton

# The clamped rod's Newton: all five step fractions in one batch, the first with a sufficient
# decrease taken; no decrease ends the attempt (the load continuation then takes a smaller step).
_CLAMPED_SEARCH = LineSearch(rounds=((1.0, 0.5, 0.25, 0.125, 0.0625),), pick="first", decrease=1e-4)
# Following the load from the unloaded rod: a predictor moves L u(0) by at most this [rad] ...
_FOLLOW_PREDICTOR = 0.5
# ... and Newton may correct it by at most this [rad] (farther means another branch).
_FOLLOW_CORRECTOR = 0.25
# ... and the tip may move by at most this fraction of L and turn by at most this [rad] per step.
_FOLLOW_TIP_MOVE, _FOLLOW_TIP_TURN = 0.15, 0.5


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
        stable: of a converged clamped solve, whether the equilibrium is stable
            (:meth:`Rod.clamped_stability`); None when not assessed.
        potential_energy: of a converged clamped solve, ``energy − F·p(L)`` [J]: the elastic energy
            plus the potential of the dead tip force (the branch with the lowest is preferred);
            None when not assessed.
        timed_out: the solve's wall-clock budget (``max_seconds``) was spent before it converged.
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
    stable: bool | None = None
    potential_energy: float | None = None
    timed_out: bool = False

    @property
    def tip_position(self) -> np.ndarray:
        """``p(L)`` ``(3,)`` [m], world frame."""
        return self.positions[-1]

    @property
    def tip_rotation(self) -> np.ndarray:
        """``R(L)`` ``(3, 3)`` (body → world)."""
        return self.rotations[-1]


class _Candidate(NamedTuple):
    """A clamped-rod shape ``x = L u(0)`` assessed under the full load."""

    x: np.ndarray
    converged: bool
    stable: bool | None
    potential_energy: float | None
    residual: float

    @property
    def key(self) -> tuple:
        """Sort key, best first: converged, then stable, then the lowest potential, then residual."""
        return (not self.converged, not self.stable, self.potential_energy or 0.0, self.residual)


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
        one = None if base_position is None else np.asarray(base_position, float)[None]
        quat = None if base_quaternion is None else np.asarray(base_quaternion, float)[None]
        return self.states(np.asarray(base_curvature, float)[None], np.asarray(force, float)[None], base_positions=one,
                           base_quaternions=quat, n_steps=n_steps, **extra)[0]

    def states(self, base_curvatures: np.ndarray, forces: np.ndarray, *, base_positions: np.ndarray | None = None,
               base_quaternions: np.ndarray | None = None, n_steps: int | None = None, **extra: Any) -> list[RodState]:
        """:meth:`state` of ``B`` rods at once (one batched integration): ``u(0)`` ``(B, 3)`` [1/m], forces
        ``(B, 3)`` [N], bases ``(B, 3)`` [m] and clamp quaternions ``(B, 4)`` ``(x, y, z, w)``."""
        u0 = np.asarray(base_curvatures, float)
        F = np.broadcast_to(np.asarray(forces, float), u0.shape)
        Y = self._integrate_wxyz(u0, F, base_position=base_positions,
                                 base_quaternion=None if base_quaternions is None else to_wxyz(base_quaternions),
                                 n_steps=n_steps, store=True)  # (B, N+1, 11)
        q = Y[..., 3:7] / np.linalg.norm(Y[..., 3:7], axis=-1, keepdims=True)
        R = rotation_matrix_wxyz(q)
        u = Y[..., 7:10]
        m = np.einsum("bkij,bkj->bki", R, u * np.array([self.EI, self.EI, self.GJ]))
        s = np.linspace(0.0, self.length, Y.shape[1])
        return [RodState(s=s.copy(), positions=Y[b, :, 0:3].copy(), rotations=R[b], quaternions=to_xyzw(q[b]),
                         curvatures=u[b].copy(), force=F[b].copy(), moments=m[b], energy=float(Y[b, -1, 10]), **extra)
                for b in range(len(u0))]

    # ------------------------------------------------------------------ clamped rod, dead tip load
    def solve_clamped(self, tip_force: Sequence[float] = (0.0, 0.0, 0.0), tip_moment: Sequence[float] = (0.0, 0.0, 0.0),
                      *, guess: np.ndarray | RodState | None = None, tol: float = 1e-12, max_iter: int = 50,
                      n_steps: int | None = None, max_seconds: float = 20.0) -> RodState:
        """Rod clamped at ``s = 0`` (origin, tangent ``e3``), dead force [N] and moment [N m] at the tip.

        Shooting on ``u(0)`` with Newton (batched finite-difference Jacobian); the load is applied
        in increments (natural continuation) when a full step fails. ``guess`` is a ``u(0)``
        [1/m] or a previous :class:`RodState`; without one the start is the linear (small
        deflection) solution, then the straight rod and the mirrored linear guess.

        Past the buckling load several equilibria exist and a start far from the solution can
        reach an unstable one (a looped rod, say). Every converged solution is therefore checked
        for stability (:meth:`clamped_stability`); when it is unstable the load is followed
        again from the unloaded straight rod in small, predicted steps, and the result is the
        stable solution of lowest ``potential_energy`` found (the unstable one only if no stable
        one is reached; ``stable`` says which).

        ``max_seconds`` [s] bounds the wall-clock time of the whole solve (:mod:`soft_envs.clock`):
        past it the best point so far is returned (``converged=False`` and ``timed_out=True`` unless
        it had converged). A tip moment that turns
        the tip by more than half a turn per RK4 step cannot be resolved and raises
        :class:`~soft_envs.exceptions.InvalidParameterError`. Non-convergence returns ``converged=False``
        with ``residual`` the shooting residual of the returned shape under the full load.
        """
        start = clock.now()
        F = np.asarray(tip_force, dtype=float).reshape(-1)
        M = np.asarray(tip_moment, dtype=float).reshape(-1)
        if F.shape != (3,) or M.shape != (3,) or not (np.all(np.isfinite(F)) and np.all(np.isfinite(M))):
            raise InvalidParameterError("tip_force and tip_moment must be finite 3-vectors [N], [N m]")
        steps = self._steps(n_steps)
        if not (np.isfinite(tol) and tol > 0):
            raise InvalidParameterError(f"tol must be finite and > 0; got {tol!r}")
        if not _is_integer(max_iter) or max_iter < 1:
            raise InvalidParameterError(f"max_iter must be an integer >= 1; got {max_iter!r}")
        if not max_seconds > 0:
            raise InvalidParameterError(f"max_seconds must be > 0; got {max_seconds!r}")
        # m(L) = M, so the tip curvature is at least |M| / max(EI, GJ): past half a turn per RK4
        # step the discretised rod cannot represent the shape at all
        turn_per_step = float(np.linalg.norm(M)) * self.length / (max(self.EI, self.GJ) * steps)
        if turn_per_step > np.pi:
            raise InvalidParameterError(
                f"tip moment {np.linalg.norm(M):g} N m bends the tip by {turn_per_step:.3g} rad per RK4 step; "
                f"n_steps >= {int(np.ceil(steps * turn_per_step / np.pi))} is needed to resolve it")
        linear = (M + cross(np.array([0.0, 0.0, self.length]), F)) / np.array([self.EI, self.EI, self.GJ])
        if isinstance(guess, RodState):
            starts = [guess.curvatures[0].copy()]
        elif guess is not None:
            starts = [np.asarray(guess, dtype=float).reshape(-1).copy()]
            if starts[0].shape != (3,) or not np.all(np.isfinite(starts[0])):
                raise InvalidParameterError("guess must be a finite base curvature u(0) (3,) [1/m] or a RodState")
        else:  # linear guess: base moment with the tip load acting at L e3
            starts = [linear]
        # Past the buckling load the continuation from one start can stall at a spurious
        # minimum of the residual; the straight rod and the mirrored linear guess lead to the
        # other branches. They are tried only when the previous start failed.
        starts += [np.zeros(3), -linear]
        deadline = start + max_seconds
        total_it = 0
        with np.errstate(all="ignore"):  # overflow from an absurd guess is a failed start, not a warning
            best = None
            for u in starts:
                x, done, it = self._continue_clamped(u * self.length, F, M, tol, max_iter, steps, deadline)
                total_it += it
                candidate = self._clamped_candidate(x, done >= 1.0, F, M, tol, steps)
                if best is None or candidate.key < best.key:
                    best = candidate
                if candidate.converged or clock.now() > deadline:
                    break
            if not (best.converged and best.stable):  # follow the load from the unloaded rod
                x, done, it = self._follow_load(linear * self.length, F, M, tol, max_iter, steps, deadline)
                total_it += it
                candidate = self._clamped_candidate(x, done >= 1.0, F, M, tol, steps)
                if candidate.key < best.key:
                    best = candidate
        c = best
        timed_out = not c.converged and clock.now() > deadline
        return self.state(c.x / self.length, F, n_steps=steps, residual=c.residual, converged=c.converged,
                          iterations=total_it, stable=c.stable, potential_energy=c.potential_energy,
                          timed_out=timed_out)

    def _clamped_candidate(self, x: np.ndarray, converged: bool, F: np.ndarray, M: np.ndarray, tol: float,
                           steps: int) -> _Candidate:
        """One candidate shape ``x = L u(0)`` of the clamped rod, assessed under the full load."""
        g, tips = self._clamped_residual(x[None], F, M, steps)
        residual = float(np.max(np.abs(g)))
        if not np.isfinite(residual):
            return _Candidate(x, False, None, None, np.inf)
        converged = bool(converged and residual < max(tol, 1e-10))
        if not converged:
            return _Candidate(x, False, None, None, residual)
        potential = float(tips[0, 10] - F @ tips[0, 0:3])
        return _Candidate(x, True, self._clamped_stable(x, F, steps), potential, residual)

    def _continue_clamped(self, x: np.ndarray, F: np.ndarray, M: np.ndarray, tol: float, max_iter: int,
                          steps: int, deadline: float) -> tuple[np.ndarray, float, int]:
        """Natural continuation of the load from 0, the first step straight to the full load
        (the step halved when Newton fails). Returns ``(x, load fraction reached, Newton steps)``."""
        total_it, done, inc = 0, 0.0, 1.0
        while done < 1.0 and clock.now() < deadline:
            target = min(1.0, done + inc)
            x_new, it, ok, _ = self._newton_clamped(x, target * F, target * M, tol, max_iter, steps, deadline)
            total_it += it
            if ok:
                x, done = x_new, target
                inc = min(1.0, inc * 2.0)
            else:
                inc *= 0.5
                if inc < 1e-4:
                    break
        return x, done, total_it

    def _follow_load(self, tangent: np.ndarray, F: np.ndarray, M: np.ndarray, tol: float, max_iter: int, steps: int,
                     deadline: float) -> tuple[np.ndarray, float, int]:
        """Path following of the load ``t (F, M)``, ``t: 0 → 1``, from the unloaded straight rod.

        Each step starts from a secant predictor (``tangent`` ``dx/dt`` at the straight rod: the
        linear solution) that moves ``x = L u(0)`` by at most ``_FOLLOW_PREDICTOR`` rad, and is
        accepted only if Newton lands within ``_FOLLOW_CORRECTOR`` of the prediction and the tip
        moves by less than ``_FOLLOW_TIP_MOVE`` L and turns by less than ``_FOLLOW_TIP_TURN`` rad
        (so the path cannot jump to another branch); a rejected step is halved. Returns ``(x,
        load fraction reached, Newton steps)``; the fraction stays below 1 at a fold of the branch.
        """
        x, t, dt, total_it = np.zeros(3), 0.0, 1.0, 0
        tip = np.zeros(11)  # tip state (integrator rows) of the unloaded straight rod
        tip[2], tip[3] = self.length, 1.0
        while t < 1.0 and clock.now() < deadline:
            rate = float(np.max(np.abs(tangent)))
            dt = min(dt, 1.0 - t, _FOLLOW_PREDICTOR / rate if rate > 0 else 1.0)
            t1 = 1.0 if dt >= 1.0 - t else t + dt
            predicted = x + (t1 - t) * tangent
            x_new, it, ok, tip_new = self._newton_clamped(predicted, t1 * F, t1 * M, tol, min(max_iter, 12), steps,
                                                          deadline)  # a good predictor needs few steps
            total_it += it
            if ok:
                turn = float(np.linalg.norm(rotation_variation_wxyz(tip_new[3:7] - tip[3:7], tip[3:7])))
                ok = np.linalg.norm(tip_new[:3] - tip[:3]) < _FOLLOW_TIP_MOVE * self.length and turn < _FOLLOW_TIP_TURN
            if ok and np.max(np.abs(x_new - predicted)) <= _FOLLOW_CORRECTOR:
                tangent = (x_new - x) / (t1 - t)
                x, t, dt, tip = x_new, t1, 2.0 * dt, tip_new
            else:
                dt *= 0.5
                if dt < 1e-6:
                    break
        return x, t, total_it

    def _clamped_residual(self, x: np.ndarray, tip_force: np.ndarray, tip_moment: np.ndarray,
                          n_steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Shooting residual ``(m(L) − M) L / EI`` ``(B, 3)`` of the clamped rod for scaled base
        curvatures ``x = L u(0)`` ``(B, 3)`` under the dead tip force [N] and moment [N m], and the
        tip states ``(B, 11)`` (integrator rows: position [m], quaternion ``(w, x, y, z)``, curvature,
        elastic energy [J])."""
        L, EI = self.length, self.EI
        steps = self._steps(n_steps)
        X = np.asarray(x, dtype=float)
        Y = integrate_rods(np.zeros((len(X), 3)), np.tile(IDENTITY_WXYZ, (len(X), 1)), X / L,
                           np.tile(tip_force, (len(X), 1)), EI=EI, GJ=self.GJ, length=L, n_steps=steps)
        R = rotation_matrix_wxyz(Y[3:7].T)
        m = np.einsum("bij,bj->bi", R, Y[7:10].T * np.array([EI, EI, self.GJ]))
        return (m - tip_moment) * (L / EI), Y.T

    def _newton_clamped(self, x: np.ndarray, F: np.ndarray, M: np.ndarray, tol: float, max_iter: int,
                        steps: int, deadline: float | None = None) -> tuple[np.ndarray, int, bool, np.ndarray]:
        """Newton on the scaled ``x = L u(0)``: steps of at most 4 (a bend of ~4 rad over the
        length), a relaxed tolerance 1e-10 when it can go no further (the round-off floor of the
        shooting residual rises with the load). Returns ``(x, steps, converged, tip state (11,))``."""
        out = damped_newton(x[None], lambda X, idx: self._clamped_residual(X, F, M, steps),
                            line_search=_CLAMPED_SEARCH, tol=tol, max_iter=max_iter, fd_step=1e-7, max_step=4.0,
                            final_tol=1e-10, singular="stop", deadline=deadline)
        return out.x[0], int(out.iterations[0]), bool(out.converged[0]), out.aux[0]

    # ------------------------------------------------------------------ stability of the clamped rod
    def clamped_stability(self, state: RodState, n_steps: int | None = None) -> bool:
        """Whether a clamped-rod equilibrium (from :meth:`solve_clamped`) is stable under its dead tip load.

        Seen as a functional of the rotations ``R(s)`` alone (``p`` follows from them), the
        potential ``∫ ½ uᵀ K u ds − F·p(L)`` is a strict local minimum iff (Jacobi) the
        rotation-variation fields ``δθ(s)`` of the base-curvature perturbations (``δn = 0``:
        the force is dead) have no conjugate point on ``(0, L]`` (``Θ(s) = ∂δθ(s)/∂u(0)`` never
        singular; crossings counted with multiplicity, so symmetric rods are not missed) and the
        tip term ``Θ(L)ᵀ ∂m(L)/∂u(0)`` is positive definite (symmetric part). A dead moment in 3D
        has no potential: for it the same test is the quasi-static one (symmetric part).
        """
        steps = self._steps(n_steps)
        return self._clamped_stable(state.curvatures[0] * self.length, np.asarray(state.force, float), steps)

    def _clamped_stable(self, x: np.ndarray, F: np.ndarray, steps: int, h: float = 1e-6) -> bool:
        """:meth:`clamped_stability` for the scaled base curvature ``x = L u(0)`` under the force ``F``."""
        L, EI, GJ = self.length, self.EI, self.GJ
        X = np.repeat(np.asarray(x, float)[None], 4, axis=0)
        X[1:] += h * np.eye(3)
        Y = integrate_rods(np.zeros((4, 3)), np.tile(IDENTITY_WXYZ, (4, 1)), X / L, np.tile(F, (4, 1)), EI=EI, GJ=GJ,
                           length=L, n_steps=steps, store=True)  # (N+1, 11, 4)
        q = Y[:, 3:7, 0] / np.linalg.norm(Y[:, 3:7, 0], axis=1, keepdims=True)
        theta = np.stack([rotation_variation_wxyz((Y[:, 3:7, c] - Y[:, 3:7, 0]) / h, q) for c in (1, 2, 3)],
                         axis=2)[1:]  # Θ(s) at stations 1..N, (N, 3, 3)
        if not np.all(np.isfinite(theta)):
            return False
        # a conjugate point between two stations turns an eigenvalue of Θ(s_k+1) Θ(s_k)⁻¹ negative
        try:
            steps_map = np.linalg.solve(np.swapaxes(theta[:-1], 1, 2), np.swapaxes(theta[1:], 1, 2))
        except np.linalg.LinAlgError:
            return False  # Θ singular at a station: a conjugate point there
        if np.any(np.linalg.eigvals(steps_map).real < 0):
            return False
        R = rotation_matrix_wxyz(Y[-1, 3:7].T)
        m_tip = np.einsum("bij,bj->bi", R, Y[-1, 7:10].T * np.array([EI, EI, GJ]))
        dm = ((m_tip[1:] - m_tip[0]) / h).T * (L / EI)  # ∂(m(L) L/EI)/∂x, (3, 3)
        H = theta[-1].T @ dm
        return bool(np.all(np.linalg.eigvalsh(0.5 * (H + H.T)) > 0))

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
