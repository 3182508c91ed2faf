"""The equilibrium equations of the 6-PFS hexapod in scaled variables, and their Newton solve.

Scaled variables ``z`` ``(49,)`` (dimensionless, so one tolerance fits all):

=========  ==================================================================
slice      content
=========  ==================================================================
``U``      ``u_i(0) · L`` ``(6 × 3)``: base curvature of each rod (body frame)
``N``      ``n_i · L² / EI`` ``(6 × 3)``: force of the platform on each rod (world)
``P``      ``p_P / L``: platform reference point (world)
``E``      ``e``: platform quaternion, **scalar first** ``(w, x, y, z)`` like the integrator's
           state (a private detail: :class:`HexapodSolution` gives ``(x, y, z, w)``)
``F, M``   external force ``· L² / EI`` and moment about ``p_P`` ``· L / EI`` on the platform
=========  ==================================================================

The first 43 are the forward-kinematics unknowns; the 43 residuals ``g`` are the rod tips on
their joints (18, over ``L``), zero tip curvature at the spherical joints (18, ``· L``), the
platform force and moment balance (6) and ``|e|² − 1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import soft_envs.robots.cosserat.compiled as compiled
from soft_envs.geometry import cross
from soft_envs.robots.cosserat.integrator import integrate_rods, rotation_matrix_wxyz, to_wxyz, to_xyzw
from soft_envs.robots.cosserat.newton import LineSearch, NewtonResult, damped_newton
from soft_envs.robots.cosserat.rod import RodState

U, N, P, E, F, M = slice(0, 18), slice(18, 36), slice(36, 39), slice(39, 43), slice(43, 46), slice(46, 49)
LOAD = slice(43, 49)
#: Forward kinematics: the 43 unknowns and the 43 residuals.
FK_FREE = np.arange(43)
FK_ROWS = np.arange(43)
#: Platform pose given: rods and the external load that holds the platform are unknown, the
#: ``|e| = 1`` row is dropped.
POSE_FIXED_FREE = np.concatenate((np.arange(36), np.arange(43, 49)))
POSE_FIXED_ROWS = np.arange(42)
#: Weights of the step-length limit: forces (the stiff, inextensible direction) may move further.
#: The rod of each rod column of :data:`FK_FREE` (``u_i(0)`` columns, then ``n_i`` columns).
_FK_ROD_OF = np.concatenate((np.repeat(np.arange(6), 3), np.repeat(np.arange(6), 3)))
# Rows and columns of ∂g/∂ρ's tip-position block: rod i's three rows, column i.
_TIP_ROWS, _TIP_RODS = np.arange(18), np.repeat(np.arange(6), 3)
STEP_WEIGHT = np.concatenate((np.ones(18), np.full(18, 0.05), np.ones(7), np.full(6, 0.05)))

#: Many starts at once: sequential halving, a non-monotone full step, and after five halvings a
#: last 1/32 step taken unchecked.
BATCH_SEARCH = LineSearch(rounds=((1.0,), (0.5,), (0.25,), (0.125,), (0.0625,)), full_step_factor=4.0,
                          decrease=1e-4, fallback_step=0.03125)
#: One warm-started solve: the full step evaluated with its Jacobian (one integration per
#: iteration when it is accepted), else the best of six shorter steps; no decrease stops.
SINGLE_SEARCH = LineSearch(rounds=((1.0,), (0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625)), pick="best",
                           full_step_factor=4.0, decrease=0.0, jacobian_with_full_step=True)


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
        z: the scaled variables ``(49,)`` (see :mod:`~soft_envs.robots.cosserat.equations`), for
            warm starts.
        jacobian: ``∂g/∂z[:43]`` ``(43, 43)`` of the scaled residuals at ``z`` when the solver
            computed it (the tangent predictor of the next warm-started solve), else None.
        rods: the six :class:`RodState` (world frame), filled by :meth:`Hexapod6PFS.rod_states`.
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
    z: np.ndarray = field(default=None, repr=False)
    jacobian: np.ndarray | None = field(default=None, repr=False)
    rods: list[RodState] | None = field(default=None, repr=False)

    @property
    def rotation(self) -> np.ndarray:
        """Platform rotation matrix (platform → world)."""
        return rotation_matrix_wxyz(to_wxyz(self.quaternion))

    @property
    def pose(self) -> np.ndarray:
        """``(px, py, pz, qx, qy, qz, qw)``: position [m] and unit quaternion ``(x, y, z, w)``."""
        return np.concatenate((self.position, self.quaternion))


class HexapodEquations:
    """The scaled equilibrium equations of one hexapod geometry (see the module docstring).

    Args:
        length, EI, GJ: rod length [m] and stiffnesses [N m²]; n_steps: RK4 steps per rod.
        base_points, platform_points: ``a_i`` (world) and ``r_i`` (platform frame) ``(6, 3)`` [m].
        guide_directions: unit guide directions ``g_i`` ``(6, 3)``.
        base_quaternions: clamp frames ``(6, 4)`` ``(x, y, z, w)``.
    """

    def __init__(self, *, length: float, EI: float, GJ: float, n_steps: int, base_points: np.ndarray,
                 platform_points: np.ndarray, guide_directions: np.ndarray, base_quaternions: np.ndarray) -> None:
        self.L, self.EI, self.GJ, self.n_steps = float(length), float(EI), float(GJ), int(n_steps)
        self.kdiag = np.array([self.EI, self.EI, self.GJ])
        self.base_points = np.asarray(base_points, float)
        self.platform_points = np.asarray(platform_points, float)
        self.guide_directions = np.asarray(guide_directions, float)
        self.base_q = to_wxyz(base_quaternions)  # (w, x, y, z), the integrator's order
        self._geometry = compiled.arrays(self.base_points, self.guide_directions, self.base_q, self.platform_points)

    # ------------------------------------------------------------------ scaling and packing
    def scale_load(self, load: np.ndarray) -> np.ndarray:
        """External load ``(..., 6)`` [N, N m] -> scaled."""
        L, EI = self.L, self.EI
        return np.concatenate((load[..., :3] * L * L / EI, load[..., 3:] * L / EI), axis=-1)

    def unscale_load(self, zl: np.ndarray) -> np.ndarray:
        """Scaled external load ``(..., 6)`` -> [N, N m]."""
        L, EI = self.L, self.EI
        return np.concatenate((zl[..., :3] * EI / (L * L), zl[..., 3:] * EI / L), axis=-1)

    def pack(self, base_curvatures: np.ndarray, forces: np.ndarray, position: np.ndarray,
             quaternion_wxyz: np.ndarray, load: np.ndarray) -> np.ndarray:
        """Scaled variables ``(49,)`` from SI values (the quaternion scalar first)."""
        z = np.empty(49)
        z[U] = np.asarray(base_curvatures, float).reshape(18) * self.L
        z[N] = np.asarray(forces, float).reshape(18) * (self.L**2 / self.EI)
        z[P] = np.asarray(position, float) / self.L
        z[E] = quaternion_wxyz
        z[LOAD] = self.scale_load(np.asarray(load, float))
        return z

    def solution(self, z: np.ndarray, rho: np.ndarray, residual: float, converged: bool, iterations: int = 0,
                 seconds: float = 0.0, modes: tuple = (-1,) * 6, energy: float | None = None,
                 jacobian: np.ndarray | None = None) -> HexapodSolution:
        """The :class:`HexapodSolution` of scaled variables ``z`` at inputs ``rho`` [m] (the
        quaternion normalised with ``w ≥ 0``; the energy integrated when not given)."""
        e = z[E] / np.linalg.norm(z[E])
        if e[0] < 0:
            e = -e
        z = z.copy()
        z[E] = e
        if energy is None:
            _, tips = self.residual(z[None], rho[None])
            energy = float(tips[0, :, 10].sum())
        return HexapodSolution(
            inputs=np.array(rho, float), position=z[P] * self.L, quaternion=to_xyzw(e),
            base_curvatures=z[U].reshape(6, 3) / self.L, forces=z[N].reshape(6, 3) * (self.EI / self.L**2),
            load=self.unscale_load(z[LOAD]), energy=energy, residual=float(residual), converged=bool(converged),
            iterations=int(iterations), seconds=float(seconds), modes=tuple(int(m) for m in modes), z=z,
            jacobian=jacobian)

    # ------------------------------------------------------------------ residual and Jacobian
    def base_positions(self, rho: np.ndarray) -> np.ndarray:
        """Lower rod ends ``A_i`` ``(..., 6, 3)`` [m] for inputs ``(..., 6)``."""
        return self.base_points + np.asarray(rho, dtype=float)[..., None] * self.guide_directions

    def integrate(self, Zrods: np.ndarray, base: np.ndarray, q0: np.ndarray, store: bool = False) -> np.ndarray:
        """Integrate rods: ``Zrods`` ``(B, 6)`` scaled ``(u0·L, n·L²/EI)``, ``base`` ``(B, 3)`` [m],
        ``q0`` ``(B, 4)`` scalar first; the integrator's state rows (see ``integrate_rods``)."""
        return integrate_rods(base, q0, Zrods[:, :3] / self.L, Zrods[:, 3:] * (self.EI / self.L**2),
                              EI=self.EI, GJ=self.GJ, length=self.L, n_steps=self.n_steps, store=store)

    def rod_vars(self, Z: np.ndarray) -> np.ndarray:
        """``(P, 6, 6)``: per rod ``(u0·L, n·L²/EI)``."""
        count = len(Z)
        return np.concatenate((Z[:, U].reshape(count, 6, 3), Z[:, N].reshape(count, 6, 3)), axis=2)

    def assemble(self, Z: np.ndarray, tips: np.ndarray) -> np.ndarray:
        """Scaled residuals ``(Q, 43)`` from variables ``(Q, 49)`` and rod tip states ``(Q, 6, 11)``."""
        L, EI = self.L, self.EI
        Q = len(Z)
        p_tip, q_tip, u_tip = tips[..., 0:3], tips[..., 3:7], tips[..., 7:10]
        n = Z[:, N].reshape(Q, 6, 3) * (EI / L**2)
        p = Z[:, P] * L
        e = Z[:, E]
        R = rotation_matrix_wxyz(e)
        B_pred = p[:, None, :] + np.einsum("qij,kj->qki", R, self.platform_points)
        g = np.empty((Q, 43))
        g[:, 0:18] = ((p_tip - B_pred) / L).reshape(Q, 18)
        g[:, 18:36] = (u_tip * L).reshape(Q, 18)
        force = Z[:, F] * (EI / L**2)
        moment = Z[:, M] * (EI / L)
        R_tip = rotation_matrix_wxyz(q_tip)
        m_tip = np.einsum("qkij,qkj->qki", R_tip, u_tip * self.kdiag)
        g[:, 36:39] = (n.sum(axis=1) - force) * (L * L / EI)
        g[:, 39:42] = ((cross(p_tip, n) + m_tip).sum(axis=1) - cross(p, force) - moment) * (L / EI)
        g[:, 42] = np.sum(e * e, axis=1) - 1.0
        return g

    def _kernel_args(self, Z: np.ndarray, rho: np.ndarray) -> tuple:
        """Arguments of the compiled kernels for variables ``Z (P, 49)`` at inputs ``rho (P, 6)``."""
        Z, rho = compiled.arrays(Z, np.broadcast_to(rho, (len(Z), 6)))
        return (Z, rho, *self._geometry, self.L, self.EI, self.GJ, self.n_steps)

    def residual(self, Z: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(g (P, 43), tips (P, 6, 11))`` for variables ``Z (P, 49)`` and inputs ``rho (P, 6)`` [m]."""
        if compiled.enabled():
            return compiled.fk_residuals(*self._kernel_args(Z, rho))
        count = len(Z)
        Y = self.integrate(self.rod_vars(Z).reshape(count * 6, 6), self.base_positions(rho).reshape(count * 6, 3),
                           np.broadcast_to(self.base_q, (count, 6, 4)).reshape(count * 6, 4))
        tips = Y.T.reshape(count, 6, 11)
        return self.assemble(Z, tips), tips

    def jacobian(self, Z: np.ndarray, rho: np.ndarray, free: np.ndarray, h: float = 1e-7,
                 store: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Residual ``(P, 43)``, Jacobian ``(P, 43, len(free))`` (one batched integration), tips
        ``(P, 6, 11)`` and extras: ``tips_perturbed`` ``(P, nc, 11)`` and ``rod_of`` ``(nc,)`` of the
        ``nc`` perturbed rod columns, with ``store`` the ``trajectory`` ``(N+1, 11, P·(6+nc))``.

        Rod columns are finite differences (only the perturbed rod is re-integrated); pose and
        load columns are finite differences of the algebraic assembly. For the forward-kinematics
        unknowns (``free`` = :data:`FK_FREE`) without ``store`` one compiled call does it all.
        """
        count = len(Z)
        free = np.asarray(free)
        if not store and compiled.enabled() and np.array_equal(free, FK_FREE):
            g, J, tips, tips_p = compiled.fk_jacobians(*self._kernel_args(Z, rho), float(h))
            return g, J, tips, {"tips_perturbed": tips_p, "rod_of": _FK_ROD_OF}
        rod_cols = free[free < 36]
        other_cols = free[free >= 36]
        nc = len(rod_cols)
        rod_of = np.where(rod_cols < 18, rod_cols // 3, (rod_cols - 18) // 3)
        comp = np.where(rod_cols < 18, rod_cols % 3, 3 + (rod_cols - 18) % 3)
        rv = self.rod_vars(Z)  # (P, 6, 6)
        base = self.base_positions(rho)  # (P, 6, 3)
        pert = rv[:, rod_of, :].copy()  # (P, nc, 6)
        pert[:, np.arange(nc), comp] += h
        allv = np.concatenate((rv, pert), axis=1).reshape(count * (6 + nc), 6)
        allb = np.concatenate((base, base[:, rod_of, :]), axis=1).reshape(count * (6 + nc), 3)
        allq = np.concatenate((np.broadcast_to(self.base_q, (count, 6, 4)),
                               np.broadcast_to(self.base_q[rod_of], (count, nc, 4))), axis=1).reshape(-1, 4)
        Y = self.integrate(allv, allb, allq, store=store)
        Yt = (Y[-1] if store else Y).T.reshape(count, 6 + nc, 11)
        tips, tips_p = Yt[:, :6], Yt[:, 6:]
        ncol = 1 + nc + len(other_cols)
        T = np.broadcast_to(tips[:, None], (count, ncol, 6, 11)).copy()
        T[:, 1 + np.arange(nc), rod_of] = tips_p
        Zs = np.broadcast_to(Z[:, None], (count, ncol, 49)).copy()
        Zs[:, 1 + np.arange(nc), rod_cols] += h
        Zs[:, 1 + nc + np.arange(len(other_cols)), other_cols] += h
        g = self.assemble(Zs.reshape(count * ncol, 49), T.reshape(count * ncol, 6, 11)).reshape(count, ncol, 43)
        J = np.empty((count, 43, len(free)))
        J_cols = (g[:, 1:] - g[:, :1]) / h  # (P, ncol-1, 43) in order rod_cols, other_cols
        order = np.concatenate((np.flatnonzero(free < 36), np.flatnonzero(free >= 36)))
        J[:, :, order] = np.transpose(J_cols, (0, 2, 1))
        extras = {"tips_perturbed": tips_p, "rod_of": rod_of}
        if store:
            extras["trajectory"] = Y  # (N+1, 11, P*(6+nc))
        return g[:, 0], J, tips, extras

    def input_derivative(self, z: np.ndarray) -> np.ndarray:
        """``∂g/∂ρ`` ``(43, 6)`` at ``z`` (analytic: a guide translates its whole rod along the guide)."""
        L, EI = self.L, self.EI
        G = np.zeros((43, 6))
        n = z[N].reshape(6, 3) * (EI / L**2)
        G[_TIP_ROWS, _TIP_RODS] = (self.guide_directions / L).reshape(18)
        G[39:42] = (-cross(n, self.guide_directions) * (L / EI)).T  # ∂(p_tip × n)/∂ρ = d × n
        return G

    @staticmethod
    def load_derivative(z: np.ndarray) -> np.ndarray:
        """``∂g/∂(scaled load)`` ``(43, 6)`` at ``z``."""
        G = np.zeros((43, 6))
        G[36:39, 0:3] = -np.eye(3)
        x, y, w = z[P]
        G[39:42, 0:3] = -np.array([[0.0, -w, y], [w, 0.0, -x], [-y, x, 0.0]])  # −[p]× F, both scaled by L
        G[39:42, 3:6] = -np.eye(3)
        return G

    def pose_rows(self, z: np.ndarray) -> np.ndarray:
        """``(6, 43)``: the map from a scaled variation of ``z`` to ``(δp_P [m], δθ_P [rad])`` (world)."""
        e = z[E] / np.linalg.norm(z[E])
        w, x, y, zq = e
        out = np.zeros((6, 43))
        out[0:3, 36:39] = self.L * np.eye(3)
        # δθ = 2 vec(δe ⊗ e*)
        out[3:6, 39:43] = 2.0 * np.array([[-x, w, -zq, y], [-y, zq, w, -x], [-zq, -y, x, w]])
        return out

    # ------------------------------------------------------------------ Newton
    def newton(self, Z: np.ndarray, rho: np.ndarray, free: np.ndarray, rows: np.ndarray, *, tol: float = 1e-10,
               max_iter: int = 25, max_step: float = 0.5, search: LineSearch = BATCH_SEARCH,
               keep_jacobian: bool = False, deadline: float | None = None) -> NewtonResult:
        """:func:`~soft_envs.robots.cosserat.newton.damped_newton` on the equations ``rows`` in the
        unknowns ``free`` for starts ``Z`` ``(P, 49)`` (the other variables fixed) at inputs ``rho``.

        Every iteration evaluates the residual and Jacobian of all active problems in one
        integration; steps are clipped to ``max_step`` in the weighted scaled variables
        (curvatures in 1/L, forces in EI/L², lengths in L). Returns the result with ``x`` the full
        variables ``(P, 49)`` and ``aux`` the elastic energy [J] at each.
        """
        Z = np.array(Z, dtype=float, copy=True)
        rho = np.broadcast_to(rho, (len(Z), 6))
        free = np.asarray(free)

        def full(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
            Zt = Z[idx].copy()
            Zt[:, free] = X
            return Zt

        def residual(X: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            g, tips = self.residual(full(X, idx), rho[idx])
            return g[:, rows], tips[:, :, 10].sum(axis=1)

        def jacobian(X: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            g, J, tips, _ = self.jacobian(full(X, idx), rho[idx], free)
            return g[:, rows], J[:, rows, :], tips[:, :, 10].sum(axis=1)

        out = damped_newton(Z[:, free], residual, jacobian=jacobian, line_search=search, tol=tol, max_iter=max_iter,
                            max_step=max_step, step_weights=STEP_WEIGHT[free], keep_jacobian=keep_jacobian,
                            deadline=deadline)
        Z[:, free] = out.x
        out.x = Z
        return out
