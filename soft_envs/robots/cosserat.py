"""Kirchhoff (Cosserat) rods solved by shooting, and the 6-PFS flexible hexapod built from them.

Rod model (seed 002, SPEC §6): a straight, uniform, inextensible, unshearable rod with no
distributed load. Arc length ``s ∈ [0, L]`` [m]; ``p(s)`` the centreline [m] and ``R(s)`` the
cross-section frame, both in the world frame; ``u(s)`` the curvature/twist in the body frame
[1/m]; ``n`` the internal force [N] (world frame, constant along the rod: ``n' = 0``), i.e. the
force that the material beyond ``s`` exerts on the material before it, so a dead tip load ``F``
gives ``n ≡ F``; ``m = R K u`` the internal moment [N m] (world frame).

    p' = R e3        q' = ½ q ⊗ (0, u)        u' = −K⁻¹(u × K u + e3 × Rᵀ n)

with ``K = diag(EI, EI, GJ)`` and the orientation carried by a unit quaternion. Inside the
integrator (a private detail) the state is ``q = (w, x, y, z)``, scalar first as in the seed, and
``R(q)`` uses the ``1/|q|²`` form of the seed's eq. 11, so drift of ``|q|`` never shears the frame.
Every public quaternion (arguments, :class:`RodState`, :class:`HexapodSolution`) is
``(x, y, z, w)``, PyBullet's order, converted at the boundary. The elastic energy
``E = ½ ∫ uᵀ K u ds`` [J] is integrated alongside. Integration: classical Runge–Kutta 4 with a
fixed number of steps, vectorised over any batch of rods (numpy).

``Hexapod6PFS`` — forward kinematics of the 6-PFS hexapod (seed 002 §2.2–4): 43 unknowns
(``u_i(0)``, ``n_i`` for six rods, platform position and quaternion), 43 residuals (tip
positions, zero tip curvature at the spherical joints, platform force and moment balance,
``|e| = 1``), Newton shooting with a batched finite-difference Jacobian, assembly-mode search
(stage 1: rods bent in their reference planes, buckling modes up to 3; stage 2: continuation
of the load and radial propagation of the platform pose) and stability (stiffness matrix and
elastic-energy minimum).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError
from soft_envs.geometry import quaternion_conjugate, quaternion_multiply

__all__ = ["Rod", "RodState", "Hexapod6PFS", "HexapodSolution", "quaternion_matrix", "integrate_rods"]


# --------------------------------------------------------------------------- quaternions
def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(..., 3, 3)`` of quaternions ``(..., 4)`` ``(w, x, y, z)`` (need not be unit)."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return np.stack((
        np.stack((1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)), axis=-1),
        np.stack((s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)), axis=-1),
        np.stack((s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)), axis=-1),
    ), axis=-2)


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of ``(..., 4)`` quaternions ``(w, x, y, z)``."""
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    from soft_envs.geometry import cross

    return np.concatenate((aw * bw - np.sum(av * bv, axis=-1, keepdims=True), aw * bv + bw * av + cross(av, bv)),
                          axis=-1)


def _quat_conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def _to_xyzw(q: np.ndarray) -> np.ndarray:
    """Scalar-first ``(..., 4)`` ``(w, x, y, z)`` (the integrator's state) -> ``(x, y, z, w)``."""
    return np.asarray(q)[..., [1, 2, 3, 0]]


def _to_wxyz(q: np.ndarray) -> np.ndarray:
    """``(..., 4)`` ``(x, y, z, w)`` (public order) -> scalar-first ``(w, x, y, z)``."""
    return np.asarray(q)[..., [3, 0, 1, 2]]


def _rotation_quaternion(axis_angle: np.ndarray) -> np.ndarray:
    """Quaternion ``(w, x, y, z)`` of rotation vectors ``(..., 3)`` [rad]."""
    v = np.asarray(axis_angle, dtype=float)
    th = np.linalg.norm(v, axis=-1, keepdims=True)
    k = np.where(th > 1e-12, np.sin(0.5 * th) / np.where(th > 1e-12, th, 1.0), 0.5)
    return np.concatenate((np.cos(0.5 * th), k * v), axis=-1)


def _matrix_quaternion(R: np.ndarray) -> np.ndarray:
    """Quaternion ``(w, x, y, z)``, ``w ≥ 0``, of one rotation matrix."""
    from soft_envs.geometry import matrix_to_quaternion

    x, y, z, w = matrix_to_quaternion(R)
    return np.array([w, x, y, z])


# --------------------------------------------------------------------------- integrator
def _derivative(Y: np.ndarray, n: np.ndarray, EI: float, GJ: float) -> np.ndarray:
    """``dY/ds`` for the stacked state ``Y = (p, q, u, E)`` of shape ``(11, B)``; ``n`` is ``(3, B)``.

    ``R(q)`` is the seed's eq. 11 (with ``2/|q|²``). Written as few numpy calls on rows of
    length ``B``: the cost is per call, not per rod, so batches of rods are almost free.
    """
    w, x, y, z = Y[3], Y[4], Y[5], Y[6]
    ux, uy, uz = Y[7], Y[8], Y[9]
    n1, n2, n3 = n[0], n[1], n[2]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    wx, wy, wz = w * x, w * y, w * z
    xx, xy, xz, yy, yz, zz = x * x, x * y, x * z, y * y, y * z, z * z
    dY = np.empty_like(Y)
    dY[0] = s * (xz + wy)
    dY[1] = s * (yz - wx)
    dY[2] = 1.0 - s * (xx + yy)
    dY[3] = -0.5 * (x * ux + y * uy + z * uz)
    dY[4] = 0.5 * (w * ux + y * uz - z * uy)
    dY[5] = 0.5 * (w * uy + z * ux - x * uz)
    dY[6] = 0.5 * (w * uz + x * uy - y * ux)
    v1 = n1 - s * ((yy + zz) * n1 - (xy + wz) * n2 - (xz - wy) * n3)
    v2 = n2 - s * ((xx + zz) * n2 - (xy - wz) * n1 - (yz + wx) * n3)
    dY[7] = (v2 - (GJ - EI) * uy * uz) / EI
    dY[8] = -(v1 + (EI - GJ) * ux * uz) / EI
    dY[9] = 0.0
    dY[10] = 0.5 * (EI * (ux * ux + uy * uy) + GJ * uz * uz)
    return dY


def integrate_rods(p0: np.ndarray, q0: np.ndarray, u0: np.ndarray, n: np.ndarray, *, EI: float, GJ: float,
                   length: float, n_steps: int, store: bool = False) -> np.ndarray:
    """Integrate a batch of Kirchhoff rods from ``s = 0`` to ``s = length`` with RK4.

    Args:
        p0, q0, u0, n: base positions ``(B, 3)`` [m], base quaternions ``(B, 4)`` ``(w, x, y, z)``,
            base curvatures ``(B, 3)`` [1/m] (body frame), internal forces ``(B, 3)`` [N] (world).
        EI, GJ: bending and torsional stiffness [N m²]; length [m]; n_steps RK4 steps.
        store: return every step (``(n_steps + 1, 11, B)``) instead of the tip only (``(11, B)``).

    The state rows are ``p (0:3), q (3:7), u (7:10), E (10)`` (``E`` the elastic energy [J]).
    """
    B = p0.shape[0]
    Y = np.empty((11, B))
    Y[0:3] = p0.T
    Y[3:7] = q0.T
    Y[7:10] = u0.T
    Y[10] = 0.0
    nT = np.ascontiguousarray(n.T)
    h = length / n_steps
    out = np.empty((n_steps + 1, 11, B)) if store else None
    if store:
        out[0] = Y
    for k in range(n_steps):
        k1 = _derivative(Y, nT, EI, GJ)
        k2 = _derivative(Y + (0.5 * h) * k1, nT, EI, GJ)
        k3 = _derivative(Y + (0.5 * h) * k2, nT, EI, GJ)
        k4 = _derivative(Y + h * k3, nT, EI, GJ)
        Y = Y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
        if store:
            out[k + 1] = Y
    return out if store else Y


# --------------------------------------------------------------------------- one rod
@dataclass
class RodState:
    """One equilibrium of a rod, sampled at ``N + 1`` stations (see the module docstring for frames).

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
        converged, iterations: Newton outcome.
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
        return self.positions[-1]

    @property
    def tip_rotation(self) -> np.ndarray:
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
        if int(n_steps) != n_steps or n_steps < 2:
            raise InvalidParameterError(f"n_steps must be an integer >= 2; got {n_steps!r}")
        self.length = float(length)
        self.radius = float(radius)
        self.youngs_modulus = float(youngs_modulus)
        self.shear_modulus = float(shear_modulus)
        self.n_steps = int(n_steps)
        self.area_moment = np.pi * self.radius**4 / 4.0
        self.EI = self.youngs_modulus * self.area_moment
        self.GJ = self.shear_modulus * 2.0 * self.area_moment

    def __repr__(self) -> str:
        return (f"Rod(length={self.length}, radius={self.radius}, youngs_modulus={self.youngs_modulus:g}, "
                f"shear_modulus={self.shear_modulus:g}, n_steps={self.n_steps})")

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
                                 base_quaternion=None if base_quaternion is None else _to_wxyz(base_quaternion),
                                 n_steps=n_steps, store=store)
        Y[..., 3:7] = _to_xyzw(Y[..., 3:7])
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
        q0 = (np.tile([1.0, 0.0, 0.0, 0.0], (B, 1)) if base_quaternion is None
              else np.broadcast_to(base_quaternion, (*lead, 4)).reshape(-1, 4))
        steps = self.n_steps if n_steps is None else int(n_steps)
        Y = integrate_rods(p0, q0, u0f, nf, EI=self.EI, GJ=self.GJ, length=self.length, n_steps=steps, store=store)
        if store:
            return np.moveaxis(Y, 2, 0).reshape(*lead, steps + 1, 11)
        return Y.T.reshape(*lead, 11)

    def state(self, base_curvature: np.ndarray, force: np.ndarray, *, base_position: np.ndarray | None = None,
              base_quaternion: np.ndarray | None = None, n_steps: int | None = None, **extra: Any) -> RodState:
        """The :class:`RodState` of one rod integrated from ``u(0)`` with force ``n`` (``base_quaternion``
        ``(x, y, z, w)``, default the identity)."""
        if base_quaternion is not None:
            base_quaternion = _to_wxyz(np.asarray(base_quaternion, float))
        Y = self._integrate_wxyz(np.asarray(base_curvature, float)[None], np.asarray(force, float)[None],
                           base_position=None if base_position is None else np.asarray(base_position, float)[None],
                           base_quaternion=None if base_quaternion is None else np.asarray(base_quaternion,
                                                                                          float)[None],
                           n_steps=n_steps, store=True)[0]
        q = Y[:, 3:7] / np.linalg.norm(Y[:, 3:7], axis=1, keepdims=True)
        R = quaternion_matrix(q)
        u = Y[:, 7:10]
        m = np.einsum("kij,kj->ki", R, u * np.array([self.EI, self.EI, self.GJ]))
        s = np.linspace(0.0, self.length, Y.shape[0])
        return RodState(s=s, positions=Y[:, 0:3].copy(), rotations=R, quaternions=_to_xyzw(q), curvatures=u.copy(),
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
        linear = (M + np.cross([0.0, 0.0, self.length], F)) / np.array([self.EI, self.EI, self.GJ])
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
        steps = self.n_steps if n_steps is None else int(n_steps)
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

    def _newton_clamped(self, x: np.ndarray, F: np.ndarray, M: np.ndarray, tol: float, max_iter: int,
                        steps: int) -> tuple[np.ndarray, float, int, bool]:
        """Newton on the scaled ``x = L u(0)``; residual ``(m(L) − M) L / EI``."""
        L, EI = self.length, self.EI
        kdiag = np.array([EI, EI, self.GJ])
        h = 1e-7

        def residual(X: np.ndarray) -> np.ndarray:  # X (B, 3)
            Y = integrate_rods(np.zeros((len(X), 3)), np.tile([1.0, 0, 0, 0], (len(X), 1)), X / L,
                               np.tile(F, (len(X), 1)), EI=EI, GJ=self.GJ, length=L, n_steps=steps)
            R = quaternion_matrix(Y[3:7].T)
            m = np.einsum("bij,bj->bi", R, Y[7:10].T * kdiag)
            return (m - M) * (L / EI)

        g0 = residual(x[None])[0]
        r = float(np.max(np.abs(g0)))
        for it in range(1, max_iter + 1):
            if r < tol:
                return x, r, it, True
            g = residual(x + h * np.eye(3))
            J = (g - g0).T / h
            try:
                dx = np.linalg.solve(J, -g0)
            except np.linalg.LinAlgError:
                return x, r, it, False
            step = np.max(np.abs(dx))
            if step > 4.0:  # at most a bend of ~4 rad over the length per iteration
                dx *= 4.0 / step
            # backtracking on the residual norm (all trial steps in one batch)
            alphas = np.array([1.0, 0.5, 0.25, 0.125, 0.0625])
            trials = residual(x + alphas[:, None] * dx)
            norms = np.max(np.abs(trials), axis=1)
            k = int(np.argmax(norms < (1.0 - 1e-4 * alphas) * r)) if np.any(norms < (1.0 - 1e-4 * alphas) * r) else -1
            if k < 0 or not np.isfinite(norms[k]):
                return x, r, it, False
            x, g0, r = x + alphas[k] * dx, trials[k], float(norms[k])
        return x, r, max_iter, r < max(tol, 1e-10)

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
        steps = self.n_steps if n_steps is None else int(n_steps)
        h = 1e-6

        def indicator(P: float) -> float:
            n = np.array([[0.0, 0.0, -P], [0.0, 0.0, -P]])
            if boundary == "clamped-free":
                Y = self._integrate_wxyz(np.array([[0.0, 0.0, 0.0], [h / L, 0.0, 0.0]]), n, n_steps=steps)
                R = quaternion_matrix(Y[:, 3:7])
                m = np.einsum("bij,bj->bi", R, Y[:, 7:10] * np.array([EI, EI, self.GJ]))
                return float((m[1, 0] - m[0, 0]) / (h * EI / L) * 1.0)
            quat = np.array([[1.0, 0.0, 0.0, 0.0], [np.cos(h / 2), 0.0, np.sin(h / 2), 0.0]])
            Y = self._integrate_wxyz(np.zeros((2, 3)), n, base_quaternion=quat, n_steps=steps)
            return float((Y[1, 0] - Y[0, 0]) / (h * L))

        # bracket: the k-th root lies near ((2k-1)π/2)² (clamped-free) or (kπ)² (pinned-pinned) EI/L²
        centre = ((2 * mode - 1) * np.pi / 2) ** 2 if boundary == "clamped-free" else (mode * np.pi) ** 2
        lo, hi = 0.8 * centre * EI / L**2, 1.2 * centre * EI / L**2
        return float(brentq(indicator, lo, hi, xtol=1e-14 * hi, rtol=1e-13))


# --------------------------------------------------------------------------- hexapod
# Layout of the scaled variable vector z (49): u_i(0)·L (18) | n_i·L²/EI (18) | p_P/L (3) | e (4)
# | F_ext·L²/EI (3) | M_ext·L/EI (3). The first 43 are the forward-kinematics unknowns.
_U, _N, _P, _E, _F, _M = slice(0, 18), slice(18, 36), slice(36, 39), slice(39, 43), slice(43, 46), slice(46, 49)
_FK_FREE = np.arange(43)
_FK_ROWS = np.arange(43)
_POSE_FIXED_FREE = np.concatenate((np.arange(36), np.arange(43, 49)))  # rods + external load
_POSE_FIXED_ROWS = np.arange(42)  # the |e| = 1 row is dropped (e is given)
# weights of the step-length limit: forces (the stiff, inextensible direction) may move further
_REFERENCE_CACHE: dict[tuple, tuple] = {}  # parameters -> (z, residual, energy, Jacobian) of ρ = 0
_STEP_WEIGHT = np.concatenate((np.ones(18), np.full(18, 0.05), np.ones(7), np.full(6, 0.05)))


@dataclass
class HexapodSolution:
    """One equilibrium (assembly mode) of the 6-PFS hexapod.

    Attributes:
        inputs: guide inputs ``ρ`` ``(6,)`` [m].
        position: platform reference point ``p_P`` ``(3,)`` [m], world frame.
        quaternion: platform orientation ``e`` ``(4,)`` ``(x, y, z, w)``, unit, ``w ≥ 0``.
        base_curvatures: ``u_i(0)`` ``(6, 3)`` [1/m] (rod body frames).
        forces: ``n_i`` ``(6, 3)`` [N], world frame: the force the platform exerts on rod ``i``
            (the rod pushes the platform with ``−n_i``).
        load: external force [N] and moment about ``p_P`` [N m] on the platform, ``(6,)``.
        energy: elastic energy of the six rods [J].
        residual: max-norm of the scaled residual; converged, iterations, seconds: Newton outcome.
        stable: ``None`` until :meth:`Hexapod6PFS.stability` has run, then both criteria's verdict.
        stability: the details of :meth:`Hexapod6PFS.stability`.
        modes: stage-1 buckling mode of each rod it was found from (``-1`` when unknown).
    """

    inputs: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    base_curvatures: np.ndarray
    forces: np.ndarray
    load: np.ndarray
    energy: float
    residual: float
    converged: bool
    iterations: int = 0
    seconds: float = 0.0
    stable: bool | None = None
    stability: dict = field(default_factory=dict)
    modes: tuple = (-1, -1, -1, -1, -1, -1)
    z: np.ndarray = field(default=None, repr=False)  # scaled variables (internal, for warm starts)
    rods: list = field(default=None, repr=False)  # RodState per rod, filled by Hexapod6PFS.rod_states

    @property
    def rotation(self) -> np.ndarray:
        """Platform rotation matrix (platform → world)."""
        return quaternion_matrix(_to_wxyz(self.quaternion))

    @property
    def pose(self) -> np.ndarray:
        """``(px, py, pz, qx, qy, qz, qw)``: position [m] and unit quaternion ``(x, y, z, w)``."""
        return np.concatenate((self.position, self.quaternion))


class Hexapod6PFS:
    """The 6-PFS flexible hexapod: six Kirchhoff rods on linear guides, spherical joints on top.

    Frames (world, SI): ``z`` up, the base plane at ``z = 0``. Rod ``i`` is clamped to a carriage
    that its guide moves along the unit direction ``g_i`` (vertical by default), with its
    tangent along ``g_i``: its lower end is ``A_i = a_i + ρ_i g_i``,
    ``a_i = R_b (cos α_i, sin α_i, 0)``. Its upper end ``B_i`` is the centre of a spherical joint
    at ``r_i = R_p (cos β_i, sin β_i, 0)`` in the platform frame, whose origin ``P`` is the centre
    of the platform joint circle. Rods are numbered anticlockwise in pairs ``k = 0, 1, 2``
    (``i = 2k, 2k+1``): ``α_i = 120° k ∓ base_half_angle`` and ``β_i = 120° k ∓ platform_half_angle``,
    so the two rods of a pair lean in opposite tangential directions (a Gough–Stewart-like
    layout): every rod is bent at ``ρ = 0`` and the problem is regular there (straight vertical
    inextensible rods would make it singular).

    Documented parameter set (the paper gives none): spring-steel rods of 1.3 mm diameter,
    ``E = 207 GPa``, ``ν = 0.305`` (``G = E / 2(1+ν) = 79.3 GPa``), 0.25 m long, on vertical
    guides; 87 mm radius base and platform circles; half-angles 15° (base) and 50° (platform),
    so each rod's ends are 52 mm apart horizontally and the platform rests 0.243 m above the
    base at ``ρ = 0`` with each rod pushing it with 0.31 N; guide inputs within ``±0.02 m``
    (the branch of the zero-input solution is followed without folds over that whole box).
    ``guide_tilt`` leans the guides (and clamps) by that angle toward the side the rod leans to.

    Args:
        rod_length, rod_radius, youngs_modulus, poisson_ratio: the rods (SI).
        base_radius, platform_radius: joint circles [m].
        base_half_angle, platform_half_angle, guide_tilt: [rad].
        input_limit: guide inputs in ``[−input_limit, input_limit]`` [m].
        n_steps: RK4 steps per rod (see ``soft-envs bench hexapod`` for the accuracy it gives).
    """

    n_rods = 6

    def __init__(self, *, rod_length: float = 0.25, rod_radius: float = 0.00065, youngs_modulus: float = 207e9,
                 poisson_ratio: float = 0.305, base_radius: float = 0.087, platform_radius: float = 0.087,
                 base_half_angle: float = np.deg2rad(15.0), platform_half_angle: float = np.deg2rad(50.0),
                 guide_tilt: float = 0.0, input_limit: float = 0.02, n_steps: int = 32) -> None:
        self.rod = Rod(rod_length, rod_radius, youngs_modulus, poisson_ratio=poisson_ratio, n_steps=n_steps)
        for name, value in (("base_radius", base_radius), ("platform_radius", platform_radius),
                            ("input_limit", input_limit)):
            if not (np.isfinite(value) and value > 0):
                raise InvalidParameterError(f"{name} must be finite and > 0; got {value!r}")
        self.base_radius, self.platform_radius = float(base_radius), float(platform_radius)
        self.base_half_angle, self.platform_half_angle = float(base_half_angle), float(platform_half_angle)
        self.input_limit = float(input_limit)
        self.n_steps = int(n_steps)
        k = np.repeat(np.arange(3), 2)
        sign = np.tile([-1.0, 1.0], 3)
        self.base_angles = 2 * np.pi / 3 * k + sign * self.base_half_angle
        self.platform_angles = 2 * np.pi / 3 * k + sign * self.platform_half_angle
        self.base_points = self.base_radius * np.stack(
            (np.cos(self.base_angles), np.sin(self.base_angles), np.zeros(6)), axis=1)
        self.platform_points = self.platform_radius * np.stack(
            (np.cos(self.platform_angles), np.sin(self.platform_angles), np.zeros(6)), axis=1)
        # guide (and clamp tangent) of rod i: tilted by guide_tilt from +z toward the side its joint leans to
        tangent = np.stack((-np.sin(self.base_angles), np.cos(self.base_angles), np.zeros(6)), axis=1) * sign[:, None]
        self.guide_tilt = float(guide_tilt)
        self.guide_directions = np.cos(guide_tilt) * np.array([0.0, 0.0, 1.0]) + np.sin(guide_tilt) * tangent
        axis = np.cross([0.0, 0.0, 1.0], tangent)  # rotation e3 -> guide direction
        self._base_q = _rotation_quaternion(self.guide_tilt * axis)  # (w, x, y, z), the integrator's order
        self.base_quaternions = _to_xyzw(self._base_q)  # clamp frames (x, y, z, w)
        self.L, self.EI, self.GJ = self.rod.length, self.rod.EI, self.rod.GJ
        self._kdiag = np.array([self.EI, self.EI, self.GJ])
        self._reference: HexapodSolution | None = None

    def __repr__(self) -> str:
        return (f"Hexapod6PFS(rod={self.rod!r}, base_radius={self.base_radius}, platform_radius="
                f"{self.platform_radius}, input_limit={self.input_limit}, n_steps={self.n_steps})")

    # ------------------------------------------------------------------ bounds and checks
    @property
    def lower(self) -> np.ndarray:
        return np.full(6, -self.input_limit)

    @property
    def upper(self) -> np.ndarray:
        return np.full(6, self.input_limit)

    def check_inputs(self, rho: Any) -> np.ndarray:
        """``ρ`` as a ``(6,)`` float array; ``ValueError`` if not finite or of the wrong shape."""
        arr = np.asarray(rho, dtype=float)
        if arr.shape != (6,):
            raise InvalidConfigurationError(f"guide inputs must have shape (6,); got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise InvalidConfigurationError(f"guide inputs must be finite; got {arr}")
        return arr

    def _check_load(self, load: Any) -> np.ndarray:
        arr = np.zeros(6) if load is None else np.asarray(load, dtype=float).reshape(-1)
        if arr.shape != (6,) or not np.all(np.isfinite(arr)):
            raise InvalidParameterError("load must be a finite (6,) vector: force [N] then moment [N m]")
        return arr

    def base_positions(self, rho: np.ndarray) -> np.ndarray:
        """Lower rod ends ``A_i`` ``(..., 6, 3)`` [m] for inputs ``(..., 6)``."""
        return self.base_points + np.asarray(rho, dtype=float)[..., None] * self.guide_directions

    # ------------------------------------------------------------------ scaling
    def _scale_load(self, load: np.ndarray) -> np.ndarray:
        L, EI = self.L, self.EI
        return np.concatenate((load[..., :3] * L * L / EI, load[..., 3:] * L / EI), axis=-1)

    def _unscale_load(self, zl: np.ndarray) -> np.ndarray:
        L, EI = self.L, self.EI
        return np.concatenate((zl[..., :3] * EI / (L * L), zl[..., 3:] * EI / L), axis=-1)

    # ------------------------------------------------------------------ residual machinery
    def _integrate(self, Zrods: np.ndarray, base: np.ndarray, q0: np.ndarray, store: bool = False) -> np.ndarray:
        """Integrate rods: ``Zrods`` ``(B, 6)`` scaled ``(u0·L, n·L²/EI)``, ``base`` ``(B, 3)``, ``q0`` ``(B, 4)``."""
        return integrate_rods(base, q0, Zrods[:, :3] / self.L, Zrods[:, 3:] * (self.EI / self.L**2),
                              EI=self.EI, GJ=self.GJ, length=self.L, n_steps=self.n_steps, store=store)

    def _rod_vars(self, Z: np.ndarray) -> np.ndarray:
        """``(P, 6, 6)``: per rod ``(u0·L, n·L²/EI)``."""
        P = len(Z)
        return np.concatenate((Z[:, _U].reshape(P, 6, 3), Z[:, _N].reshape(P, 6, 3)), axis=2)

    def _assemble(self, Z: np.ndarray, tips: np.ndarray) -> np.ndarray:
        """Scaled residuals ``(Q, 43)`` from variables ``(Q, 49)`` and rod tip states ``(Q, 6, 11)``."""
        from soft_envs.geometry import cross

        L, EI = self.L, self.EI
        Q = len(Z)
        p_tip, q_tip, u_tip = tips[..., 0:3], tips[..., 3:7], tips[..., 7:10]
        n = Z[:, _N].reshape(Q, 6, 3) * (EI / L**2)
        p = Z[:, _P] * L
        e = Z[:, _E]
        R = quaternion_matrix(e)
        B_pred = p[:, None, :] + np.einsum("qij,kj->qki", R, self.platform_points)
        g = np.empty((Q, 43))
        g[:, 0:18] = ((p_tip - B_pred) / L).reshape(Q, 18)
        g[:, 18:36] = (u_tip * L).reshape(Q, 18)
        F = Z[:, _F] * (EI / L**2)
        M = Z[:, _M] * (EI / L)
        R_tip = quaternion_matrix(q_tip)
        m_tip = np.einsum("qkij,qkj->qki", R_tip, u_tip * self._kdiag)
        g[:, 36:39] = (n.sum(axis=1) - F) * (L * L / EI)
        g[:, 39:42] = ((cross(p_tip, n) + m_tip).sum(axis=1) - cross(p, F) - M) * (L / EI)
        g[:, 42] = np.sum(e * e, axis=1) - 1.0
        return g

    def _residual(self, Z: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(g (P, 43), tips (P, 6, 11))`` for variables ``Z (P, 49)`` and inputs ``rho (P, 6)``."""
        P = len(Z)
        Y = self._integrate(self._rod_vars(Z).reshape(P * 6, 6), self.base_positions(rho).reshape(P * 6, 3),
                            np.broadcast_to(self._base_q, (P, 6, 4)).reshape(P * 6, 4))
        tips = Y.T.reshape(P, 6, 11)
        return self._assemble(Z, tips), tips

    def _jacobian(self, Z: np.ndarray, rho: np.ndarray, free: np.ndarray, h: float = 1e-7,
                  store: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
        """Residual, Jacobian ``(P, 43, len(free))`` (one batched integration), tips, and extras.

        Rod columns are finite differences (only the perturbed rod is re-integrated); pose and
        load columns are finite differences of the algebraic assembly.
        """
        P = len(Z)
        free = np.asarray(free)
        rod_cols = free[free < 36]
        other_cols = free[free >= 36]
        nc = len(rod_cols)
        rod_of = np.where(rod_cols < 18, rod_cols // 3, (rod_cols - 18) // 3)
        comp = np.where(rod_cols < 18, rod_cols % 3, 3 + (rod_cols - 18) % 3)
        rv = self._rod_vars(Z)  # (P, 6, 6)
        base = self.base_positions(rho)  # (P, 6, 3)
        pert = rv[:, rod_of, :].copy()  # (P, nc, 6)
        pert[:, np.arange(nc), comp] += h
        allv = np.concatenate((rv, pert), axis=1).reshape(P * (6 + nc), 6)
        allb = np.concatenate((base, base[:, rod_of, :]), axis=1).reshape(P * (6 + nc), 3)
        allq = np.concatenate((np.broadcast_to(self._base_q, (P, 6, 4)),
                               np.broadcast_to(self._base_q[rod_of], (P, nc, 4))), axis=1).reshape(-1, 4)
        Y = self._integrate(allv, allb, allq, store=store)
        Yt = (Y[-1] if store else Y).T.reshape(P, 6 + nc, 11)
        tips, tips_p = Yt[:, :6], Yt[:, 6:]
        ncol = 1 + nc + len(other_cols)
        T = np.broadcast_to(tips[:, None], (P, ncol, 6, 11)).copy()
        T[:, 1 + np.arange(nc), rod_of] = tips_p
        Zs = np.broadcast_to(Z[:, None], (P, ncol, 49)).copy()
        Zs[:, 1 + np.arange(nc), rod_cols] += h
        Zs[:, 1 + nc + np.arange(len(other_cols)), other_cols] += h
        g = self._assemble(Zs.reshape(P * ncol, 49), T.reshape(P * ncol, 6, 11)).reshape(P, ncol, 43)
        J = np.empty((P, 43, len(free)))
        J_cols = (g[:, 1:] - g[:, :1]) / h  # (P, ncol-1, 43) in order rod_cols, other_cols
        order = np.concatenate((np.flatnonzero(free < 36), np.flatnonzero(free >= 36)))
        J[:, :, order] = np.transpose(J_cols, (0, 2, 1))
        extras = {"tips_perturbed": tips_p, "rod_of": rod_of, "comp": comp, "rod_cols": rod_cols, "h": h}
        if store:
            extras["trajectory"] = Y  # (N+1, 11, P*(6+nc))
        return g[:, 0], J, tips, extras

    def _newton(self, Z: np.ndarray, rho: np.ndarray, free: np.ndarray, rows: np.ndarray, *, tol: float = 1e-10,
                max_iter: int = 25, max_step: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Batched damped Newton. Returns ``(Z, residual max-norm, converged, iterations)``, each per problem.

        Every iteration evaluates the residual and Jacobian of all active problems in one
        integration; a step that does not lower the residual is halved (up to 4 times, the
        trial residuals of all problems in one batch), and every step is clipped to
        ``max_step`` in the scaled variables (curvatures in 1/L, forces in EI/L², lengths in L).
        """
        Z = np.array(Z, dtype=float, copy=True)
        rho = np.broadcast_to(rho, (len(Z), 6))
        P = len(Z)
        res = np.full(P, np.inf)
        conv = np.zeros(P, bool)
        iters = np.zeros(P, int)
        active = np.arange(P)
        for it in range(max_iter + 1):
            if len(active) == 0:
                break
            g, J, _, _ = self._jacobian(Z[active], rho[active], free)
            r = np.max(np.abs(g[:, rows]), axis=1)
            res[active] = r
            iters[active] = it
            done = r < tol
            conv[active[done]] = True
            bad = ~np.isfinite(r)
            keep = ~(done | bad)
            if it == max_iter:
                break
            active, g, J, r = active[keep], g[keep], J[keep], r[keep]
            if len(active) == 0:
                break
            A = J[:, rows, :]
            try:
                dx = np.linalg.solve(A, -g[:, rows, None])[..., 0]
            except np.linalg.LinAlgError:
                dx = np.stack([np.linalg.lstsq(a, -b, rcond=None)[0] for a, b in zip(A, g[:, rows])])
            big = np.max(np.abs(dx) * _STEP_WEIGHT[free], axis=1)
            dx *= np.minimum(1.0, max_step / np.maximum(big, 1e-300))[:, None]
            alpha = np.ones(len(active))
            pending = np.arange(len(active))
            for _ in range(5):
                trial = Z[active[pending]].copy()
                trial[:, free] += alpha[pending, None] * dx[pending]
                gt, _ = self._residual(trial, rho[active[pending]])
                rt = np.max(np.abs(gt[:, rows]), axis=1)
                ok = rt < r[pending] * np.where(alpha[pending] == 1.0, 4.0, 1.0 - 1e-4 * alpha[pending])
                pending = pending[~ok]
                if len(pending) == 0:
                    break
                alpha[pending] *= 0.5
            Z[active[:, None], free[None, :]] += alpha[:, None] * dx
        return Z, res, conv, iters

    # ------------------------------------------------------------------ packing
    def _pack(self, rho: np.ndarray, base_curvatures: np.ndarray, forces: np.ndarray, position: np.ndarray,
              quaternion: np.ndarray, load: np.ndarray) -> np.ndarray:
        z = np.empty(49)
        z[_U] = np.asarray(base_curvatures, float).reshape(18) * self.L
        z[_N] = np.asarray(forces, float).reshape(18) * (self.L**2 / self.EI)
        z[_P] = np.asarray(position, float) / self.L
        z[_E] = quaternion
        z[43:49] = self._scale_load(np.asarray(load, float))
        return z

    def _solution(self, z: np.ndarray, rho: np.ndarray, residual: float, converged: bool, iterations: int = 0,
                  seconds: float = 0.0, modes: tuple = (-1,) * 6, energy: float | None = None) -> HexapodSolution:
        e = z[_E] / np.linalg.norm(z[_E])
        if e[0] < 0:
            e = -e
        z = z.copy()
        z[_E] = e
        if energy is None:
            _, tips = self._residual(z[None], rho[None])
            energy = float(tips[0, :, 10].sum())
        return HexapodSolution(
            inputs=np.array(rho, float), position=z[_P] * self.L, quaternion=_to_xyzw(e),
            base_curvatures=z[_U].reshape(6, 3) / self.L, forces=z[_N].reshape(6, 3) * (self.EI / self.L**2),
            load=self._unscale_load(z[43:49]), energy=energy, residual=float(residual), converged=bool(converged),
            iterations=int(iterations), seconds=float(seconds), modes=tuple(int(m) for m in modes), z=z)

    # ------------------------------------------------------------------ the reference (zero-input) solution
    def centered_pose_guess(self, height: float | None = None) -> np.ndarray:
        """Scaled variables of a first guess: platform centred and level at ``height`` [m], every rod
        bent like a linear cantilever toward its joint (stage-1 mode 0)."""
        d = self.guide_directions
        straight = self.base_points + self.L * d
        if height is None:
            offsets = self.platform_points[:, :2] - self.base_points[:, :2]
            height = float(np.mean(np.sqrt(np.maximum(self.L**2 - np.sum(offsets**2, axis=1), 0.25 * self.L**2))))
        delta = self.platform_points + [0.0, 0.0, height] - straight
        delta -= np.sum(delta * d, axis=1, keepdims=True) * d  # lateral part
        H = 3.0 * self.EI * delta / self.L**3  # lateral force of a linear cantilever [N]
        m0 = np.cross(self.L * d, H)
        R0 = quaternion_matrix(self._base_q)
        u0 = np.einsum("kji,kj->ki", R0, m0) / self.EI
        return self._pack(np.zeros(6), u0, H, [0.0, 0.0, height], [1.0, 0.0, 0.0, 0.0], np.zeros(6))

    def _cache_key(self) -> tuple:
        return (self.L, self.rod.radius, self.rod.youngs_modulus, self.rod.shear_modulus, self.base_radius,
                self.platform_radius, self.base_half_angle, self.platform_half_angle, self.guide_tilt, self.n_steps)

    def reference_solution(self) -> HexapodSolution:
        """The primary assembly mode at ``ρ = 0`` (cached per parameter set, process-wide): every rod
        in bending mode 0, no load."""
        cached = _REFERENCE_CACHE.get(self._cache_key())
        if self._reference is None and cached is not None:
            self._reference = self._solution(cached[0], np.zeros(6), cached[1], True, 0, 0.0, (0,) * 6, cached[2])
            self._reference._jacobian = cached[3]
        if self._reference is None:
            start = time.perf_counter()
            z = self.centered_pose_guess()
            rho = np.zeros(6)
            # rods at a fixed, level platform first (the load that holds it there is unknown) ...
            Z, res, conv, it1 = self._newton(z[None], rho, _POSE_FIXED_FREE, _POSE_FIXED_ROWS)
            z = Z[0]
            z[43:49] = 0.0
            # ... then release the platform (load zero)
            Z, res, conv, it2 = self._newton(z[None], rho, _FK_FREE, _FK_ROWS)
            if not conv[0]:
                raise RuntimeError("the reference configuration did not converge; check the parameters")
            self._reference = self._solution(Z[0], rho, res[0], True, it1[0] + it2[0],
                                             time.perf_counter() - start, modes=(0,) * 6)
            self._reference._jacobian = self._jacobian(Z[:1], rho[None], _FK_FREE)[1][0]
            r = self._reference
            _REFERENCE_CACHE[self._cache_key()] = (r.z.copy(), r.residual, r.energy, r._jacobian.copy())
        return self._reference

    # ------------------------------------------------------------------ one warm-started solve
    def _input_derivative(self, z: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """``∂g/∂ρ`` ``(43, 6)`` (analytic: a guide translates its whole rod along the guide)."""
        from soft_envs.geometry import skew

        L, EI = self.L, self.EI
        G = np.zeros((43, 6))
        n = z[_N].reshape(6, 3) * (EI / L**2)
        for i in range(6):
            d = self.guide_directions[i]
            G[3 * i:3 * i + 3, i] = d / L
            G[39:42, i] = -skew(n[i]) @ d * (L / EI)  # ∂(p_tip × n)/∂ρ = d × n
        return G

    def _load_derivative(self, z: np.ndarray) -> np.ndarray:
        """``∂g/∂(scaled load)`` ``(43, 6)``."""
        from soft_envs.geometry import skew

        G = np.zeros((43, 6))
        G[36:39, 0:3] = -np.eye(3)
        G[39:42, 0:3] = -skew(z[_P])  # −p × F, both scaled by L
        G[39:42, 3:6] = -np.eye(3)
        return G

    def _newton_single(self, z: np.ndarray, rho: np.ndarray, free: np.ndarray, rows: np.ndarray, tol: float,
                       max_iter: int, max_step: float = 0.5) -> tuple[np.ndarray, float, bool, int, np.ndarray]:
        """Newton for one problem with one integration per iteration (residual and Jacobian
        together; a step that does not lower the residual is halved with residual-only batches).
        Returns ``(z, residual, converged, iterations, Jacobian at z)``."""
        g, J, tips, _ = self._jacobian(z[None], rho[None], free)
        g, J = g[0][rows], J[0][rows]
        r = float(np.max(np.abs(g)))
        self._last_energy = float(tips[0, :, 10].sum())
        for it in range(max_iter):
            if r < tol:
                return z, r, True, it, J
            try:
                dx = np.linalg.solve(J, -g)
            except np.linalg.LinAlgError:
                dx = np.linalg.lstsq(J, -g, rcond=None)[0]
            big = float(np.max(np.abs(dx) * _STEP_WEIGHT[free]))
            if big > max_step:
                dx *= max_step / big
            trial = z.copy()
            trial[free] += dx
            g1, J1, tips, _ = self._jacobian(trial[None], rho[None], free)
            r1 = float(np.max(np.abs(g1[0][rows])))
            if not r1 < 4.0 * r:  # non-monotone: a full Newton step may raise the residual a little
                alphas = 0.5 ** np.arange(1, 7)
                trials = np.repeat(z[None], len(alphas), axis=0)
                trials[:, free] += alphas[:, None] * dx
                gt, _ = self._residual(trials, np.broadcast_to(rho, (len(alphas), 6)))
                rt = np.max(np.abs(gt[:, rows]), axis=1)
                k = int(np.argmin(rt))
                if not rt[k] < r:
                    return z, r, False, it + 1, J
                trial = trials[k]
                g1, J1, tips, _ = self._jacobian(trial[None], rho[None], free)
                r1 = float(np.max(np.abs(g1[0][rows])))
            z, g, J, r = trial, g1[0][rows], J1[0][rows], r1
            self._last_energy = float(tips[0, :, 10].sum())
            if not np.isfinite(r):
                return z, r, False, it + 1, J
        return z, r, r < tol, max_iter, J

    def solve(self, rho: Any, guess: HexapodSolution | None = None, *, load: Any = None, tol: float = 1e-10,
              max_iter: int = 15, max_input_step: float = 0.01) -> HexapodSolution:
        """Forward kinematics from one start: the equilibrium reached by continuation from ``guess``.

        Args:
            rho: guide inputs ``(6,)`` [m].
            guess: a previous :class:`HexapodSolution` (the branch to stay on); default the
                reference (ρ = 0) solution. The inputs (and load) move from the guess's to the
                requested ones in steps of at most ``max_input_step`` [m] (halved on failure),
                each step started from a first-order predictor (implicit-function tangent).
            load: external force [N] and moment about ``p_P`` [N m] on the platform, ``(6,)``.
            tol: on the max-norm of the scaled residual (positions in units of the rod length).

        Returns the solution with ``converged=False`` (the last converged point of the path, at
        its own inputs) when the path cannot be followed, e.g. past a fold where the branch ends.
        """
        start = time.perf_counter()
        rho = self.check_inputs(rho)
        load = self._check_load(load)
        if guess is None:
            guess = self.reference_solution()
        z = guess.z.copy()
        rho0 = np.asarray(guess.inputs, float)
        load0 = np.asarray(guess.load, float)
        J = getattr(guess, "_jacobian", None)
        total_it = 0
        t, dt = 0.0, 1.0
        span = max(float(np.max(np.abs(rho - rho0))) / max_input_step, 1e-300)
        dt = min(1.0, 1.0 / span)
        if np.array_equal(rho, rho0) and np.array_equal(load, load0) and J is not None:
            guess_copy = self._solution(z, rho, guess.residual, guess.converged, 0, time.perf_counter() - start,
                                        guess.modes, guess.energy)
            guess_copy._jacobian = J
            return guess_copy
        res, energy = np.inf, guess.energy
        while t < 1.0:
            t1 = min(1.0, t + dt)
            r_t = rho0 + t1 * (rho - rho0)
            l_t = load0 + t1 * (load - load0)
            z_try = z.copy()
            z_try[43:49] = self._scale_load(l_t)
            if J is not None:  # tangent predictor dz = −J⁻¹ (∂g/∂ρ dρ + ∂g/∂w dw)
                rhs = self._input_derivative(z, r_t) @ (r_t - (rho0 + t * (rho - rho0))) + \
                    self._load_derivative(z) @ (z_try[43:49] - z[43:49])
                try:
                    z_try[:43] -= np.linalg.solve(J, rhs)
                except np.linalg.LinAlgError:
                    pass
            z_new, res_new, ok, it, J_new = self._newton_single(z_try, r_t, _FK_FREE, _FK_ROWS, tol, max_iter)
            total_it += it
            if ok:
                z, J, t, res, energy = z_new, J_new, t1, res_new, self._last_energy
                dt = min(1.0, dt * 2.0)
            else:
                dt *= 0.5
                if dt < 1e-3:
                    break
        done = t >= 1.0
        rho_done = rho0 + t * (rho - rho0)
        sol = self._solution(z, rho_done, res, done, total_it, time.perf_counter() - start, guess.modes, energy)
        sol._jacobian = J
        return sol

    # ------------------------------------------------------------------ rods of a solution
    def rod_states(self, sol: HexapodSolution, n_steps: int | None = None) -> list[RodState]:
        """The six rods of ``sol`` as :class:`RodState` (world frame), cached on the solution."""
        steps = self.n_steps if n_steps is None else int(n_steps)
        if sol.rods is not None and len(sol.rods[0].s) == steps + 1:
            return sol.rods
        A = self.base_positions(sol.inputs)
        sol.rods = [self.rod.state(sol.base_curvatures[i], sol.forces[i], base_position=A[i],
                                   base_quaternion=self.base_quaternions[i],
                                   n_steps=steps) for i in range(6)]
        return sol.rods

    def tip_forces(self, sol: HexapodSolution) -> np.ndarray:
        """Force each rod exerts on the platform ``(6, 3)`` [N], world frame (``−n_i``)."""
        return -np.asarray(sol.forces)

    # ------------------------------------------------------------------ input Jacobian
    def input_jacobian(self, sol: HexapodSolution) -> np.ndarray:
        """``∂(p_P, θ_P)/∂ρ`` ``(6, 6)`` at a solution: platform position [m/m] and rotation
        vector [rad/m] (world frame) per guide input, by the implicit-function theorem on the
        43 residuals (the quasi-static tangent of the branch)."""
        _, J, _, _ = self._jacobian(sol.z[None], sol.inputs[None], _FK_FREE)
        dz = -np.linalg.solve(J[0], self._input_derivative(sol.z, sol.inputs))
        return self._pose_rows(sol.z) @ dz

    def _pose_rows(self, z: np.ndarray) -> np.ndarray:
        """``(6, 43)``: the map from a scaled variation of z to ``(δp_P [m], δθ_P [rad])``."""
        e = z[_E] / np.linalg.norm(z[_E])
        w, x, y, zq = e
        out = np.zeros((6, 43))
        out[0:3, 36:39] = self.L * np.eye(3)
        # δθ = 2 vec(δe ⊗ e*)
        out[3:6, 39:43] = 2.0 * np.array([[-x, w, -zq, y], [-y, zq, w, -x], [-zq, -y, x, w]])
        return out

    # ------------------------------------------------------------------ stability
    def stiffness(self, sol: HexapodSolution, method: str = "linear", *, force_step: float = 1e-4,
                  moment_step: float = 1e-5) -> np.ndarray:
        """Platform stiffness ``K`` ``(6, 6)``: ``δ(F, M) = K δ(p_P, θ_P)`` at ``sol`` (SI, world
        frame, moment about ``p_P``).

        ``method="linear"``: the compliance ``∂(p, θ)/∂(F, M)`` from the implicit-function theorem
        on the Newton Jacobian. ``method="resolve"``: the paper's procedure — apply small
        loads ``±force_step`` [N] / ``±moment_step`` [N m] one component at a time, re-solve,
        and difference the displacements.
        """
        if method == "linear":
            _, J, _, _ = self._jacobian(sol.z[None], sol.inputs[None], np.arange(49))
            J = J[0]
            dz = -np.linalg.solve(J[:, :43], J[:, 43:49])  # per scaled load
            C = self._pose_rows(sol.z) @ dz
            C = C * np.concatenate((np.full(3, self.L**2 / self.EI), np.full(3, self.L / self.EI)))[None, :]
        elif method == "resolve":
            C = np.zeros((6, 6))
            steps = np.concatenate((np.full(3, force_step), np.full(3, moment_step)))
            for k in range(6):
                poses = []
                for sgn in (1.0, -1.0):
                    load = np.asarray(sol.load, float).copy()
                    load[k] += sgn * steps[k]
                    s = self.solve(sol.inputs, sol, load=load, tol=1e-12)
                    if not s.converged:
                        raise RuntimeError("re-solving under a small load failed")
                    dq = quaternion_multiply(s.quaternion, quaternion_conjugate(sol.quaternion))  # (x, y, z, w)
                    dq = dq if dq[3] >= 0 else -dq
                    poses.append(np.concatenate((s.position - sol.position, 2.0 * dq[:3])))
                C[:, k] = (poses[0] - poses[1]) / (2.0 * steps[k])
        else:
            raise InvalidParameterError("method must be 'linear' or 'resolve'")
        return np.linalg.inv(C)

    def energy_hessian(self, sol: HexapodSolution, h: float = 1e-6) -> dict[str, np.ndarray]:
        """Second variation of the elastic energy over the admissible configurations near ``sol``.

        Admissible: every rod an equilibrium under some end force and moment (the shooting
        family ``u_i(0), n_i``), clamped at its carriage, its tip on its platform joint
        (positions and ``|e| = 1`` hold). On that 24-dimensional family the energy gradient is
        ``Σ n_i·δB_i + m_i(L)·δθ_i(L)``, zero at an equilibrium, and its Hessian is
        ``H = (∂ displacements)ᵀ (∂ loads)`` in an orthonormal basis ``T`` of the tangent space
        (scaled variables). Also returns, per rod, the number of conjugate points of the rod
        clamped at both ends (sign changes of ``det ∂(p(s), θ(s))/∂(u(0), n)`` along ``s``): a rod
        with one is unstable even with both ends held, which the family alone cannot see.
        """
        from soft_envs.geometry import skew

        z, rho = sol.z, sol.inputs
        g, J, tips, ex = self._jacobian(z[None], rho[None], np.arange(49), h=h, store=True)
        J = J[0]
        L, EI = self.L, self.EI
        e = z[_E]
        R = quaternion_matrix(e)
        n = z[_N].reshape(6, 3) * (EI / L**2)
        Rr = self.platform_points @ R.T
        A = np.zeros((24, 43))
        Bm = np.zeros((24, 43))
        for i in range(6):
            A[0:3, 18 + 3 * i:21 + 3 * i] = np.eye(3) * (EI / L**2)
            A[3:6, 18 + 3 * i:21 + 3 * i] = skew(Rr[i]) * (EI / L**2)
        for k in range(4):  # ∂R/∂e_k by central differences of the (exactly smooth) map
            de = np.zeros(4)
            de[k] = 1e-6
            dR = (quaternion_matrix(e + de) - quaternion_matrix(e - de)) / 2e-6
            A[3:6, 39 + k] = np.sum(np.cross(self.platform_points @ dR.T, n), axis=0)
        q_tip = tips[0, :, 3:7] / np.linalg.norm(tips[0, :, 3:7], axis=1, keepdims=True)
        R_tip = quaternion_matrix(q_tip)
        for i in range(6):  # δm_i = R_tip K δu_tip (u_tip = 0 at the solution)
            du = J[18 + 3 * i:21 + 3 * i, :43] / L
            A[6 + 3 * i:9 + 3 * i] = R_tip[i] @ (self._kdiag[:, None] * du)
        Bm[0:6] = self._pose_rows(z)
        # tip rotations from the perturbed rods (columns 0..35 are the rod columns, in order)
        tp = ex["tips_perturbed"][0]  # (36, 11)
        for c in range(36):
            i = ex["rod_of"][c]
            dq = (tp[c, 3:7] - tips[0, i, 3:7]) / h
            Bm[6 + 3 * i:9 + 3 * i, c] = 2.0 * _quat_mul(dq, _quat_conj(q_tip[i]))[1:]
        Jc = J[np.r_[0:18, 42], :43]
        _, sv, Vt = np.linalg.svd(Jc)
        T = Vt[19:].T  # (43, 24) orthonormal basis of the tangent space
        H = (Bm @ T).T @ (A @ T)
        # conjugate points of each rod (both ends clamped): sign changes of the determinant from
        # s = L/8 on (before it the finite differences are below round-off), the sign at L/8
        # compared with the unloaded straight rod's (which has none)
        traj = ex["trajectory"]  # (N+1, 11, 6 + 36) for the one problem
        first = max(1, int(np.ceil(traj.shape[0] / 8)))
        dets = np.stack([self._conjugate_determinants(traj[:, :, i], traj[:, :, 6:][:, :, ex["rod_of"] == i], h)
                         for i in range(6)])
        if getattr(self, "_ref_sign", None) is None:
            self._ref_sign = self._reference_sign(first, h)
        ref = self._ref_sign
        signs = np.sign(dets[:, first - 1:])
        conjugate = (signs[:, 0] != ref).astype(int) + np.sum(signs[:, 1:] != signs[:, :-1], axis=1)
        return {"hessian": H, "tangent": T, "conjugate_points": conjugate, "determinants": dets,
                "gradient_residual": float(np.max(np.abs(g[0])))}

    def _conjugate_determinants(self, nominal: np.ndarray, perturbed: np.ndarray, h: float) -> np.ndarray:
        """``det [δp/L; δθ](s)`` (rows normalised) at stations 1..N for one rod: ``nominal`` ``(N+1, 11)``,
        ``perturbed`` ``(N+1, 11, 6)`` (u(0) then n perturbations)."""
        dp = (perturbed[:, 0:3] - nominal[:, 0:3, None]) / h
        dq = (perturbed[:, 3:7] - nominal[:, 3:7, None]) / h
        qn = nominal[:, 3:7] / np.linalg.norm(nominal[:, 3:7], axis=1, keepdims=True)
        dth = np.stack([2.0 * _quat_mul(dq[:, :, c], _quat_conj(qn))[:, 1:] for c in range(6)], axis=2)
        M = np.concatenate((dp / self.L, dth), axis=1)[1:]
        M = M / np.linalg.norm(M, axis=2, keepdims=True)
        return np.linalg.det(M)

    def _reference_sign(self, station: int, h: float) -> float:
        """Sign of the conjugate-point determinant at ``station`` of an unloaded, slightly bent rod
        (a straight inextensible rod is degenerate: its axial displacement is of second order)."""
        Z = np.zeros((7, 6))
        Z[:, 0] = 0.5
        Z[1:, :] += h * np.eye(6)
        Y = self._integrate(Z, np.zeros((7, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (7, 1)), store=True)
        d = self._conjugate_determinants(Y[:, :, 0], Y[:, :, 1:], h)
        return float(np.sign(d[station - 1]))

    def adjacent_energies(self, sol: HexapodSolution, directions: np.ndarray, step: float = 1e-3,
                          iterations: int = 4) -> np.ndarray:
        """Energies [J] of admissible configurations next to ``sol`` minus its own energy.

        Each direction ``(k, 43)`` (scaled variables) is stepped by ``±step`` and projected back
        onto the constraints (tip positions on the joints, ``|e| = 1``) by Gauss–Newton in the
        normal space. Returns ``(k, 2)``: ``E(+) − E*`` and ``E(−) − E*`` — the paper's "energy
        compared with the adjacent configurations".
        """
        z, rho = sol.z, sol.inputs
        rows = np.r_[0:18, 42]
        _, J, tips, _ = self._jacobian(z[None], rho[None], _FK_FREE)
        Jc = J[0][rows]
        E0 = float(tips[0, :, 10].sum())
        D = np.asarray(directions, float).reshape(-1, 43)
        Z = np.repeat(z[None], 2 * len(D), axis=0)
        Z[:, :43] += np.concatenate((step * D, -step * D))
        pinv = Jc.T @ np.linalg.inv(Jc @ Jc.T)
        for _ in range(iterations):
            g, tips = self._residual(Z, np.broadcast_to(rho, (len(Z), 6)))
            Z[:, :43] -= g[:, rows] @ pinv.T
        g, tips = self._residual(Z, np.broadcast_to(rho, (len(Z), 6)))
        dE = tips[:, :, 10].sum(axis=1) - E0
        return np.stack((dE[:len(D)], dE[len(D):]), axis=1)

    def stability(self, sol: HexapodSolution, *, energy_step: float = 1e-3) -> dict[str, Any]:
        """Both stability criteria of the seed (§4), stored in ``sol.stability`` and ``sol.stable``.

        * stiffness: ``K`` from :meth:`stiffness` — stable if every diagonal term is positive
          and ``det K > 0`` (the paper's test); ``K_positive_definite`` also reports whether the
          symmetric part is positive definite (the sharper test).
        * energy: the energy is a strict local minimum over the admissible configurations —
          :meth:`energy_hessian` positive definite, no rod with a conjugate point, and every
          adjacent configuration (``±energy_step`` along each Hessian eigenvector, projected
          back onto the constraints) has a higher energy.

        ``stable`` is the conjunction, as in the paper.
        """
        K = self.stiffness(sol)
        scale = np.concatenate((np.full(3, 1.0), np.full(3, 1.0 / self.L)))  # N/m vs N m/rad → same units
        Ks = K * scale[:, None] * scale[None, :]
        sym = 0.5 * (Ks + Ks.T)
        stiff_ok = bool(np.all(np.diag(K) > 0) and np.linalg.det(Ks) > 0)
        K_pd = bool(np.all(np.linalg.eigvalsh(sym) > 0))
        eh = self.energy_hessian(sol)
        H = eh["hessian"]
        Hs = 0.5 * (H + H.T)
        lam, V = np.linalg.eigh(Hs)
        dE = self.adjacent_energies(sol, (eh["tangent"] @ V).T, step=energy_step)
        energy_ok = bool(np.all(lam > 0) and np.all(eh["conjugate_points"] == 0) and np.all(dE > 0))
        info = {
            "stiffness": K, "stiffness_criterion": stiff_ok, "K_positive_definite": K_pd,
            "energy_hessian_eigenvalues": lam, "hessian_asymmetry": float(np.max(np.abs(H - H.T)) /
                                                                         max(np.max(np.abs(H)), 1e-300)),
            "conjugate_points": eh["conjugate_points"], "adjacent_energy_changes": dE,
            "energy_criterion": energy_ok, "stable": stiff_ok and energy_ok,
        }
        sol.stability = info
        sol.stable = info["stable"]
        return info

    # ------------------------------------------------------------------ assembly modes
    # roots of tan β = β: clamped–pinned column buckling, P_k = β_k² EI / L²
    _CLAMPED_PINNED = np.array([4.493409457909064, 7.725251836937707, 10.904121659428899])

    def _solve_rods_to_points(self, X: np.ndarray, base: np.ndarray, q0: np.ndarray, target: np.ndarray,
                              tol: float = 1e-11, max_iter: int = 40, max_step: float = 0.5
                              ) -> tuple[np.ndarray, np.ndarray]:
        """Independent rods (batched): find scaled ``(u(0)·L, n·L²/EI)`` ``(B, 6)`` so that each tip
        reaches ``target`` ``(B, 3)`` [m] with zero tip curvature (a pinned tip). Damped Newton
        per rod with a finite-difference Jacobian. Returns ``(X, converged)``."""
        X = np.array(X, float, copy=True)
        B = len(X)
        h = 1e-7

        def resid(V, idx):
            Y = self._integrate(V, base[idx], q0[idx]).T
            return np.concatenate(((Y[:, 0:3] - target[idx]) / self.L, Y[:, 7:10] * self.L), axis=1)

        conv = np.zeros(B, bool)
        active = np.arange(B)
        r = resid(X, active)
        rn = np.max(np.abs(r), axis=1)
        w = np.concatenate((np.ones(3), np.full(3, 0.05)))
        for _ in range(max_iter):
            done = rn < tol
            conv[active[done]] = True
            keep = ~done & np.isfinite(rn)
            active, r, rn = active[keep], r[keep], rn[keep]
            if len(active) == 0:
                break
            V = np.repeat(X[active], 6, axis=0) + h * np.tile(np.eye(6), (len(active), 1))
            rp = resid(V, np.repeat(active, 6)).reshape(len(active), 6, 6)
            J = np.transpose((rp - r[:, None, :]) / h, (0, 2, 1))
            try:
                dx = np.linalg.solve(J, -r[..., None])[..., 0]
            except np.linalg.LinAlgError:
                dx = np.stack([np.linalg.lstsq(a, -b, rcond=None)[0] for a, b in zip(J, r)])
            big = np.max(np.abs(dx) * w, axis=1)
            dx *= np.minimum(1.0, max_step / np.maximum(big, 1e-300))[:, None]
            alpha = np.ones(len(active))
            new_r, new_rn = r.copy(), rn.copy()
            pending = np.arange(len(active))
            for _ in range(6):
                rt = resid(X[active[pending]] + alpha[pending, None] * dx[pending], active[pending])
                rtn = np.max(np.abs(rt), axis=1)
                ok = rtn < np.where(alpha[pending] == 1.0, 4.0, 1.0) * rn[pending]
                new_r[pending[ok]], new_rn[pending[ok]] = rt[ok], rtn[ok]
                pending = pending[~ok]
                if len(pending) == 0:
                    break
                alpha[pending] *= 0.5
            alpha[pending] = 0.0  # no decrease: give up on these
            X[active] += alpha[:, None] * dx
            r, rn = new_r, np.where(alpha > 0, new_rn, np.inf)
        return X, conv

    def _inflections(self, Y: np.ndarray, normal: np.ndarray) -> tuple[int, float]:
        """Interior inflection points and base-curvature sign of one stored rod ``(N+1, 11)``."""
        R = quaternion_matrix(Y[:, 3:7])
        kappa = np.einsum("kij,kj->ki", R, Y[:, 7:10]) @ normal
        interior = kappa[1:-1]
        big = np.abs(interior) > 1e-6 * max(float(np.max(np.abs(interior))), 1e-300)
        sgn = np.sign(interior[big])
        return int(np.sum(sgn[1:] != sgn[:-1])), float(np.sign(kappa[0])) or 1.0

    def stage1(self, max_mode: int = 3, n_force: int = 241, n_curvature: int = 161,
               max_force: float = 150.0, max_curvature: float = 30.0) -> list[HexapodSolution]:
        """Stage 1 (seed §3): symmetric assembly modes at ``ρ = 0`` — the platform centred and level,
        every rod bent in its reference plane (the plane of its guide and its joint), in the
        same buckling mode.

        By symmetry each rod then carries only a horizontal in-plane force ``H`` (the vertical
        forces must cancel and are equal), so each is a planar elastica clamped on its carriage
        with a dead lateral tip load and a free (moment-less) tip. For a grid of ``H`` the base
        curvatures ``κ₀`` with zero tip curvature are bracketed on a grid and bisected (all in
        one batch); every root whose lateral tip offset is near the joint's offset seeds the
        full 43-unknown Newton (platform free, zero load). Solutions are labelled by their
        buckling mode (interior inflection points of a rod, 0 = the reference branch) and
        kept up to ``max_mode``. Exact for vertical guides (``guide_tilt = 0``).
        """
        ref = self.reference_solution()
        L = self.L
        A0 = self.base_points[0]
        offset = self.platform_points[0] - A0
        offset[2] = 0.0
        d = float(np.linalg.norm(offset))
        h0 = offset / d
        ez = np.array([0.0, 0.0, 1.0])
        nu = np.cross(ez, h0)
        Hs = np.linspace(-max_force, max_force, n_force)
        ks = np.linspace(-max_curvature, max_curvature, n_curvature)
        HH, KK = np.meshgrid(Hs, ks, indexing="ij")
        q_id = np.array([1.0, 0.0, 0.0, 0.0])

        def shoot(H: np.ndarray, k: np.ndarray) -> np.ndarray:
            V = np.concatenate((k[:, None] * nu, H[:, None] * h0), axis=1)
            return self._integrate(V, np.broadcast_to(A0, (len(V), 3)), np.broadcast_to(q_id, (len(V), 4))).T

        Y = shoot(HH.ravel(), KK.ravel())
        kL = (Y[:, 7:10] @ nu).reshape(n_force, n_curvature)  # tip curvature (planar; R(L)ν·u = u·(R ν)...)
        ia, ja = np.nonzero(np.sign(kL[:, 1:]) != np.sign(kL[:, :-1]))
        lo, hi = ks[ja].copy(), ks[ja + 1].copy()
        H = Hs[ia]
        flo = kL[ia, ja]
        for _ in range(45):  # bisection on κ₀ for every bracket at once
            mid = 0.5 * (lo + hi)
            fm = shoot(H, mid)[:, 7:10] @ nu
            left = np.sign(fm) == np.sign(flo)
            lo, flo = np.where(left, mid, lo), np.where(left, fm, flo)
            hi = np.where(left, hi, mid)
        k0 = 0.5 * (lo + hi)
        tips = shoot(H, k0)
        ok = np.abs(tips[:, 7:10] @ nu) * L < 1e-8
        delta = (tips[:, 0:3] - A0) @ h0
        height = (tips[:, 0:3] - A0) @ ez
        near = ok & (np.abs(delta - d) < 0.08 * L) & (height > -0.5 * L)
        guesses = []
        for Hk, kk, hk in zip(H[near], k0[near], height[near]):
            z = ref.z.copy()
            offs = self.platform_points - self.base_points
            offs[:, 2] = 0.0
            hi_ = offs / np.linalg.norm(offs, axis=1, keepdims=True)
            ni = np.cross(ez, hi_)
            z[_U] = (kk * ni).reshape(18)
            z[_N] = (Hk * hi_).reshape(18)
            z[_P] = np.array([0.0, 0.0, hk]) / L
            z[_E] = [1.0, 0.0, 0.0, 0.0]
            z[43:49] = 0.0
            guesses.append(z)
        if not guesses:
            return [ref]
        Z, res, conv, _ = self._newton(np.array(guesses), np.zeros(6), _FK_FREE, _FK_ROWS, max_iter=30)
        Zs = self._deduplicate(np.concatenate((ref.z[None], Z[conv])))
        sols = []
        for z in Zs:
            s = self._solution(z, np.zeros(6), 0.0, True)
            Yr = self._integrate(np.concatenate((z[_U][:3], z[_N][:3]))[None], A0[None], q_id[None], store=True)[:, :, 0]
            mode, _ = self._inflections(Yr, nu)
            if mode <= max_mode:
                s.modes = (mode,) * 6
                sols.append(s)
        sols.sort(key=lambda s: (s.modes[0], s.energy))
        return sols

    def stage1_configurations(self, max_mode: int = 3, *, symmetric: list[HexapodSolution] | None = None,
                              max_combinations: int | None = None, seed: int = 0) -> tuple[np.ndarray, list]:
        """Mixed-mode starting configurations: at the platform pose of each symmetric stage-1
        solution, every rod is solved alone with its tip pinned on its joint, from the rod
        shapes of every symmetric solution (so each rod gets the buckling modes that fit at that
        pose), and the distinct per-rod solutions (modes ``≤ max_mode``) are combined in every
        way (``max_combinations`` caps the count per pose by a seeded random sample).
        Returns scaled variables ``(C, 49)`` with the external load that holds each
        configuration (an equilibrium under that load) and the mode tuples.
        """
        if symmetric is None:
            symmetric = self.stage1(max_mode)
        A = self.base_positions(np.zeros(6))
        ez = np.array([0.0, 0.0, 1.0])
        offs = self.platform_points - self.base_points
        offs[:, 2] = 0.0
        normals = np.cross(ez, offs / np.linalg.norm(offs, axis=1, keepdims=True))
        shapes = np.stack([np.concatenate((s.z[_U].reshape(6, 3), s.z[_N].reshape(6, 3)), axis=1) for s in symmetric])
        rng = np.random.default_rng(seed)
        all_Z, all_modes = [], []
        for pose_sol in symmetric:
            Bp = pose_sol.position + self.platform_points @ pose_sol.rotation.T
            starts = shapes.reshape(-1, 6)  # (S*6, 6): shape of rod i in solution s, for rod i
            idx = np.tile(np.arange(6), len(symmetric))
            X, conv = self._solve_rods_to_points(starts, A[idx], self._base_q[idx], Bp[idx])
            options: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(6)]
            for v, ok, i in zip(X, conv, idx):
                if not ok or any(np.max(np.abs(v - w)) < 1e-6 for _, w in options[i]):
                    continue
                Yr = self._integrate(v[None], A[i][None], self._base_q[i][None], store=True)[:, :, 0]
                mode, _ = self._inflections(Yr, normals[i])
                if mode <= max_mode:
                    options[i].append((mode, v))
            combos = list(itertools.product(*[range(len(o)) for o in options]))
            if max_combinations is not None and len(combos) > max_combinations:
                pick = rng.choice(len(combos), size=max_combinations, replace=False)
                combos = [combos[j] for j in sorted(pick)]
            Z = np.repeat(pose_sol.z[None], len(combos), axis=0)
            for c, combo in enumerate(combos):
                v = np.stack([options[i][j][1] for i, j in enumerate(combo)])
                Z[c, _U] = v[:, :3].reshape(18)
                Z[c, _N] = v[:, 3:].reshape(18)
                all_modes.append(tuple(options[i][j][0] for i, j in enumerate(combo)))
            all_Z.append(Z)
        Z = np.concatenate(all_Z)
        Z[:, 43:49] = 0.0
        g, _ = self._residual(Z, np.zeros((len(Z), 6)))
        Z[:, 43:46] = g[:, 36:39]  # the load that holds the platform: the balance residual at zero load
        Z[:, 46:49] = g[:, 39:42] - np.cross(Z[:, _P], Z[:, 43:46])
        return Z, all_modes

    def _load_homotopy(self, Z: np.ndarray, rho: np.ndarray, n_steps: int = 8, max_iter: int = 12,
                       chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """Stage 2 (load continuation): each configuration is an equilibrium under its own load
        ``W``; release it as ``λ W``, ``λ = 1 → 0``, platform free. Returns ``(Z, converged)``."""
        Z = Z.copy()
        ok_all = np.ones(len(Z), bool)
        W = Z[:, 43:49].copy()
        for lo in range(0, len(Z), chunk):
            idx = np.arange(lo, min(lo + chunk, len(Z)))
            for lam in np.linspace(1.0, 0.0, n_steps + 1)[1:]:
                live = idx[ok_all[idx]]
                if len(live) == 0:
                    break
                Zl = Z[live]
                Zl[:, 43:49] = lam * W[live]
                Zl, res, conv, _ = self._newton(Zl, rho, _FK_FREE, _FK_ROWS, tol=1e-9 if lam > 0 else 1e-10,
                                                max_iter=max_iter)
                Z[live] = Zl
                ok_all[live] = conv
        return Z, ok_all

    def _radial_propagation(self, Z: np.ndarray, rho: np.ndarray, radius_position: float = 0.04,
                            radius_angle: float = 0.6, n_steps: int = 8, max_iter: int = 10) -> np.ndarray:
        """Stage 2 (radial propagation): from each solution move the platform along 12 rays
        (±x, ±y, ±z up to ``radius_position`` [m]; ±rotations about x, y, z up to
        ``radius_angle`` [rad]) with the inputs fixed, solving the rods and the load that holds the
        platform; where the load norm has a local minimum along a ray the configuration is
        refined into a free equilibrium (load released by continuation). Returns the refined
        scaled variables of the candidates that converged."""
        rays = np.zeros((12, 6))
        for k in range(6):
            rays[2 * k, k], rays[2 * k + 1, k] = 1.0, -1.0
        rays[:, :3] *= radius_position
        rays[:, 3:] *= radius_angle
        S = len(Z)
        cur = np.repeat(Z, 12, axis=0)
        start_p = cur[:, _P].copy()
        start_e = cur[:, _E].copy()
        ray = np.tile(rays, (S, 1))
        alive = np.ones(len(cur), bool)
        history = np.full((n_steps + 1, len(cur)), np.nan)
        states = np.zeros((n_steps + 1, len(cur), 49))
        history[0] = 0.0
        states[0] = cur
        for k in range(1, n_steps + 1):
            t = k / n_steps
            cur[:, _P] = start_p + t * ray[:, :3] / self.L
            cur[:, _E] = _quat_mul(_rotation_quaternion(t * ray[:, 3:]), start_e)
            live = np.flatnonzero(alive)
            if len(live) == 0:
                break
            Zl, res, conv, _ = self._newton(cur[live], rho, _POSE_FIXED_FREE, _POSE_FIXED_ROWS, tol=1e-9,
                                            max_iter=max_iter)
            cur[live] = Zl
            alive[live] = conv
            history[k, live[conv]] = np.linalg.norm(Zl[conv, 43:49], axis=1)
            states[k] = cur
        candidates = []
        for j in range(len(cur)):
            hj = history[:, j]
            for k in range(1, n_steps):
                if np.isfinite(hj[k - 1:k + 2]).all() and hj[k] < hj[k - 1] and hj[k] <= hj[k + 1]:
                    candidates.append(states[k, j])
            if np.isfinite(hj[n_steps]) and hj[n_steps] < hj[n_steps - 1]:
                candidates.append(states[n_steps, j])
        if not candidates:
            return np.zeros((0, 49))
        Zc, ok = self._load_homotopy(np.array(candidates), rho, n_steps=4)
        return Zc[ok]

    def _rod_modes(self, Z: np.ndarray, rho: np.ndarray) -> list[tuple]:
        """Buckling mode (interior inflection points) of every rod of every solution ``(S, 49)``."""
        S = len(Z)
        A = self.base_positions(np.broadcast_to(rho, (S, 6))).reshape(S * 6, 3)
        Y = self._integrate(self._rod_vars(Z).reshape(S * 6, 6), A,
                            np.broadcast_to(self._base_q, (S, 6, 4)).reshape(S * 6, 4), store=True)
        R = quaternion_matrix(np.moveaxis(Y[:, 3:7], 1, 2))  # (N+1, S*6, 3, 3)
        u_world = np.einsum("kbij,kbj->kbi", R, np.moveaxis(Y[:, 7:10], 1, 2))
        # in-plane curvature: the component along the plane normal of each rod's reference plane
        ez = np.array([0.0, 0.0, 1.0])
        offs = self.platform_points - self.base_points
        offs[:, 2] = 0.0
        normals = np.tile(np.cross(ez, offs / np.linalg.norm(offs, axis=1, keepdims=True)), (S, 1))
        kappa = np.einsum("kbi,bi->kb", u_world, normals)[1:-1]  # (N-1, S*6)
        out = []
        for b in range(S * 6):
            col = kappa[:, b]
            big = np.abs(col) > 1e-6 * max(float(np.max(np.abs(col))), 1e-300)
            sgn = np.sign(col[big])
            out.append(int(np.sum(sgn[1:] != sgn[:-1])))
        return [tuple(out[6 * s:6 * s + 6]) for s in range(S)]

    def _deduplicate(self, Z: np.ndarray, tol: float = 1e-6) -> np.ndarray:
        """Distinct solutions (quaternion sign normalised; max-norm distance of the scaled variables)."""
        keep: list[np.ndarray] = []
        for z in Z:
            z = z.copy()
            z[_E] /= np.linalg.norm(z[_E])
            if z[39] < 0:
                z[_E] = -z[_E]
            if not any(np.max(np.abs(z[:43] - k[:43])) < tol for k in keep):
                keep.append(z)
        return np.array(keep) if keep else np.zeros((0, 49))

    def forward_kinematics(self, rho: Any = None, *, max_mode: int = 3, max_combinations: int | None = 200,
                           radial: bool | str = "symmetric", stability: bool = True, input_steps: int = 8,
                           seed: int = 0, progress: bool = False) -> list[HexapodSolution]:
        """All assembly modes found for inputs ``rho`` (default zero), with zero external load.

        Stage 1 (:meth:`stage1`) at ``ρ = 0``: symmetric solutions, rods bent in their reference
        planes, buckling modes up to ``max_mode``. Stage 2: mixed-mode configurations
        (:meth:`stage1_configurations`: at each stage-1 pose every combination of the rod
        solutions that fit there, at most ``max_combinations`` per pose) are released from the
        load that holds them (continuation ``λ W → 0`` with the platform free); for ``ρ ≠ 0``
        every zero-input solution is then continued in the inputs (``input_steps`` steps); with
        ``radial``, radial propagation of the platform pose (:meth:`_radial_propagation`) looks
        for more — from the symmetric stage-1 solutions (``"symmetric"``, the default, as the
        paper's Fig. 5) or from every solution found (``"all"``, slower), none with ``False``. Distinct converged solutions are returned,
        sorted by energy, each with :meth:`stability` (both criteria) when ``stability``. The
        method is numerical, not certified: it finds many solutions, not provably all.
        """
        start = time.perf_counter()
        rho = np.zeros(6) if rho is None else self.check_inputs(rho)
        symmetric = self.stage1(max_mode)
        Z1, modes = self.stage1_configurations(max_mode, symmetric=symmetric, max_combinations=max_combinations,
                                               seed=seed)
        Z2, ok = self._load_homotopy(Z1, np.zeros(6))
        mode_of: dict = {}
        for s in symmetric:
            mode_of[tuple(np.round(s.z[:43], 5))] = s.modes
        for z, m, good in zip(Z2, modes, ok):
            if good:
                mode_of.setdefault(tuple(np.round(z[:43], 5)), m)
        Zs = self._deduplicate(np.concatenate([s.z[None] for s in symmetric] + [Z2[ok]]))
        self._last_counts = {"stage1_symmetric": len(symmetric), "stage1_configurations": len(Z1),
                             "after_load_release": len(Zs)}
        is_symmetric = np.array([any(np.max(np.abs(z[:43] - s.z[:43])) < 1e-6 for s in symmetric) for z in Zs])
        if np.any(rho != 0) and len(Zs):
            cur = Zs.copy()
            alive = np.ones(len(cur), bool)
            for t in np.linspace(0.0, 1.0, input_steps + 1)[1:]:
                live = np.flatnonzero(alive)
                Zl, _, conv, _ = self._newton(cur[live], t * rho, _FK_FREE, _FK_ROWS, max_iter=15)
                cur[live] = Zl
                alive[live] = conv
            Zs, is_symmetric = cur[alive], is_symmetric[alive]
        if radial and len(Zs):
            seeds = Zs[is_symmetric] if radial == "symmetric" else Zs
            Zs = self._deduplicate(Zs)
            more = self._radial_propagation(seeds, rho) if len(seeds) else np.zeros((0, 49))
            Zs = self._deduplicate(np.concatenate((Zs, more)))
        Zs = self._deduplicate(Zs)
        self._last_counts["after_radial"] = len(Zs)
        g, tips = self._residual(Zs, np.broadcast_to(rho, (len(Zs), 6))) if len(Zs) else (None, None)
        final_modes = self._rod_modes(Zs, rho) if len(Zs) else []
        sols = []
        iterator = range(len(Zs))
        if progress:
            from tqdm.auto import tqdm

            iterator = tqdm(iterator, desc="stability", leave=False)
        for j in iterator:
            m = final_modes[j]
            s = self._solution(Zs[j], rho, float(np.max(np.abs(g[j]))), True, 0, 0.0, m, float(tips[j, :, 10].sum()))
            if stability:
                self.stability(s)
            self.rod_states(s)
            sols.append(s)
        sols.sort(key=lambda s: s.energy)
        for s in sols:
            s.seconds = time.perf_counter() - start
        return sols
