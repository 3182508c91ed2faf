"""Stability of a hexapod equilibrium (seed 002 §4): platform stiffness and the energy minimum.

Functions of a :class:`~soft_envs.robots.cosserat.hexapod.Hexapod6PFS` and one of its
solutions; the model exposes them as methods of the same names.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from soft_envs.exceptions import ConvergenceError, InvalidParameterError
from soft_envs.geometry import cross, quaternion_conjugate, quaternion_multiply, skew
from soft_envs.robots.cosserat.equations import FK_FREE, E, HexapodSolution, N
from soft_envs.robots.cosserat.integrator import (
    IDENTITY_WXYZ,
    integrate_rods,
    rotation_matrix_wxyz,
    rotation_variation_wxyz,
)

#: The hexapod these functions work on: a :class:`~soft_envs.robots.cosserat.hexapod.Hexapod6PFS`, which
#: calls them (annotated loosely, so that this module does not import the module that imports it).
Hexapod = Any


def stiffness(model: Hexapod, sol: HexapodSolution, method: str = "linear", *, force_step: float = 1e-4,
              moment_step: float = 1e-5) -> np.ndarray:
    """Platform stiffness ``K`` ``(6, 6)``: ``δ(F, M) = K δ(p_P, θ_P)`` at ``sol`` (SI, world
    frame, moment about ``p_P``).

    ``method="linear"``: the compliance ``∂(p, θ)/∂(F, M)`` from the implicit-function theorem
    on the Newton Jacobian. ``method="resolve"``: the paper's procedure — apply small
    loads ``±force_step`` [N] / ``±moment_step`` [N m] one component at a time, re-solve,
    and difference the displacements (:class:`~soft_envs.exceptions.ConvergenceError` when a
    re-solve fails).
    """
    eq = model.equations
    if method == "linear":
        _, J, _, _ = eq.jacobian(sol.z[None], sol.inputs[None], np.arange(49))
        J = J[0]
        dz = -np.linalg.solve(J[:, :43], J[:, 43:49])  # per scaled load
        C = eq.pose_rows(sol.z) @ dz
        C = C * np.concatenate((np.full(3, model.L**2 / model.EI), np.full(3, model.L / model.EI)))[None, :]
    elif method == "resolve":
        C = np.zeros((6, 6))
        steps = np.concatenate((np.full(3, force_step), np.full(3, moment_step)))
        for k in range(6):
            poses = []
            for sgn in (1.0, -1.0):
                load = np.asarray(sol.load, float).copy()
                load[k] += sgn * steps[k]
                s = model.solve(sol.inputs, sol, load=load, tol=1e-12)
                if not s.converged:
                    raise ConvergenceError("re-solving under a small load failed")
                dq = quaternion_multiply(s.quaternion, quaternion_conjugate(sol.quaternion))  # (x, y, z, w)
                dq = dq if dq[3] >= 0 else -dq
                poses.append(np.concatenate((s.position - sol.position, 2.0 * dq[:3])))
            C[:, k] = (poses[0] - poses[1]) / (2.0 * steps[k])
    else:
        raise InvalidParameterError("method must be 'linear' or 'resolve'")
    return np.linalg.inv(C)


def energy_hessian(model: Hexapod, sol: HexapodSolution, h: float = 1e-6) -> dict[str, np.ndarray]:
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
    eq = model.equations
    z, rho = sol.z, sol.inputs
    g, J, tips, ex = eq.jacobian(z[None], rho[None], np.arange(49), h=h, store=True)
    J = J[0]
    L, EI = model.L, model.EI
    e = z[E]
    R = rotation_matrix_wxyz(e)
    n = z[N].reshape(6, 3) * (EI / L**2)
    Rr = model.platform_points @ R.T
    A = np.zeros((24, 43))
    Bm = np.zeros((24, 43))
    for i in range(6):
        A[0:3, 18 + 3 * i:21 + 3 * i] = np.eye(3) * (EI / L**2)
        A[3:6, 18 + 3 * i:21 + 3 * i] = skew(Rr[i]) * (EI / L**2)
    for k in range(4):  # ∂R/∂e_k by central differences of the (exactly smooth) map
        de = np.zeros(4)
        de[k] = 1e-6
        dR = (rotation_matrix_wxyz(e + de) - rotation_matrix_wxyz(e - de)) / 2e-6
        A[3:6, 39 + k] = np.sum(cross(model.platform_points @ dR.T, n), axis=0)
    q_tip = tips[0, :, 3:7] / np.linalg.norm(tips[0, :, 3:7], axis=1, keepdims=True)
    R_tip = rotation_matrix_wxyz(q_tip)
    for i in range(6):  # δm_i = R_tip K δu_tip (u_tip = 0 at the solution)
        du = J[18 + 3 * i:21 + 3 * i, :43] / L
        A[6 + 3 * i:9 + 3 * i] = R_tip[i] @ (eq.kdiag[:, None] * du)
    Bm[0:6] = eq.pose_rows(z)
    # tip rotations from the perturbed rods (columns 0..35 are the rod columns, in order)
    tp = ex["tips_perturbed"][0]  # (36, 11)
    for c in range(36):
        i = ex["rod_of"][c]
        dq = (tp[c, 3:7] - tips[0, i, 3:7]) / h
        Bm[6 + 3 * i:9 + 3 * i, c] = rotation_variation_wxyz(dq, q_tip[i])
    Jc = J[np.r_[0:18, 42], :43]
    _, sv, Vt = np.linalg.svd(Jc)
    T = Vt[19:].T  # (43, 24) orthonormal basis of the tangent space
    H = (Bm @ T).T @ (A @ T)
    # conjugate points of each rod (both ends clamped): sign changes of the determinant from
    # s = L/8 on (before it the finite differences are below round-off), the sign at L/8
    # compared with the unloaded straight rod's (which has none)
    traj = ex["trajectory"]  # (N+1, 11, 6 + 36) for the one problem
    first = max(1, int(np.ceil(traj.shape[0] / 8)))
    dets = np.stack([_conjugate_determinants(traj[:, :, i], traj[:, :, 6:][:, :, ex["rod_of"] == i], h, L)
                     for i in range(6)])
    ref = _reference_sign(L, EI, model.GJ, model.n_steps, first, h)
    signs = np.sign(dets[:, first - 1:])
    conjugate = (signs[:, 0] != ref).astype(int) + np.sum(signs[:, 1:] != signs[:, :-1], axis=1)
    return {"hessian": H, "tangent": T, "conjugate_points": conjugate, "determinants": dets,
            "gradient_residual": float(np.max(np.abs(g[0])))}


def _conjugate_determinants(nominal: np.ndarray, perturbed: np.ndarray, h: float, length: float) -> np.ndarray:
    """``det [δp/L; δθ](s)`` (rows normalised) at stations 1..N for one rod: ``nominal`` ``(N+1, 11)``,
    ``perturbed`` ``(N+1, 11, 6)`` (u(0) then n perturbations), integrator states."""
    dp = (perturbed[:, 0:3] - nominal[:, 0:3, None]) / h
    dq = (perturbed[:, 3:7] - nominal[:, 3:7, None]) / h
    qn = nominal[:, 3:7] / np.linalg.norm(nominal[:, 3:7], axis=1, keepdims=True)
    dth = np.stack([rotation_variation_wxyz(dq[:, :, c], qn) for c in range(6)], axis=2)
    M = np.concatenate((dp / length, dth), axis=1)[1:]
    M = M / np.linalg.norm(M, axis=2, keepdims=True)
    return np.linalg.det(M)


@lru_cache(maxsize=64)
def _reference_sign(length: float, EI: float, GJ: float, n_steps: int, station: int, h: float) -> float:
    """Sign of the conjugate-point determinant at ``station`` of an unloaded, slightly bent rod
    (a straight inextensible rod is degenerate: its axial displacement is of second order)."""
    Z = np.zeros((7, 6))
    Z[:, 0] = 0.5
    Z[1:, :] += h * np.eye(6)
    Y = integrate_rods(np.zeros((7, 3)), np.tile(IDENTITY_WXYZ, (7, 1)), Z[:, :3] / length, Z[:, 3:] * (EI / length**2),
                       EI=EI, GJ=GJ, length=length, n_steps=n_steps, store=True)
    d = _conjugate_determinants(Y[:, :, 0], Y[:, :, 1:], h, length)
    return float(np.sign(d[station - 1]))


def adjacent_energies(model: Hexapod, sol: HexapodSolution, directions: np.ndarray, step: float = 1e-3,
                      iterations: int = 4) -> np.ndarray:
    """Energies [J] of admissible configurations next to ``sol`` minus its own energy.

    Each direction ``(k, 43)`` (scaled variables) is stepped by ``±step`` and projected back
    onto the constraints (tip positions on the joints, ``|e| = 1``) by Gauss–Newton in the
    normal space. Returns ``(k, 2)``: ``E(+) − E*`` and ``E(−) − E*`` — the paper's "energy
    compared with the adjacent configurations".
    """
    eq = model.equations
    z, rho = sol.z, sol.inputs
    rows = np.r_[0:18, 42]
    _, J, tips, _ = eq.jacobian(z[None], rho[None], FK_FREE)
    Jc = J[0][rows]
    E0 = float(tips[0, :, 10].sum())
    D = np.asarray(directions, float).reshape(-1, 43)
    Z = np.repeat(z[None], 2 * len(D), axis=0)
    Z[:, :43] += np.concatenate((step * D, -step * D))
    pinv = Jc.T @ np.linalg.inv(Jc @ Jc.T)
    for _ in range(iterations):
        g, tips = eq.residual(Z, np.broadcast_to(rho, (len(Z), 6)))
        Z[:, :43] -= g[:, rows] @ pinv.T
    g, tips = eq.residual(Z, np.broadcast_to(rho, (len(Z), 6)))
    dE = tips[:, :, 10].sum(axis=1) - E0
    return np.stack((dE[:len(D)], dE[len(D):]), axis=1)


def stability(model: Hexapod, sol: HexapodSolution, *, energy_step: float = 1e-3) -> dict[str, Any]:
    """Both stability criteria of the seed (§4), stored in ``sol.stability`` and ``sol.stable``.

    * stiffness: ``K`` from :func:`stiffness` — stable if every diagonal term is positive
      and ``det K > 0`` (the paper's test); ``K_positive_definite`` also reports whether the
      symmetric part is positive definite (the sharper test).
    * energy: the energy is a strict local minimum over the admissible configurations —
      :func:`energy_hessian` positive definite, no rod with a conjugate point, and every
      adjacent configuration (``±energy_step`` along each Hessian eigenvector, projected
      back onto the constraints) has a higher energy.

    ``stable`` is the conjunction, as in the paper.
    """
    K = stiffness(model, sol)
    scale = np.concatenate((np.full(3, 1.0), np.full(3, 1.0 / model.L)))  # N/m vs N m/rad → same units
    Ks = K * scale[:, None] * scale[None, :]
    sym = 0.5 * (Ks + Ks.T)
    stiff_ok = bool(np.all(np.diag(K) > 0) and np.linalg.det(Ks) > 0)
    K_pd = bool(np.all(np.linalg.eigvalsh(sym) > 0))
    eh = energy_hessian(model, sol)
    H = eh["hessian"]
    Hs = 0.5 * (H + H.T)
    lam, V = np.linalg.eigh(Hs)
    dE = adjacent_energies(model, sol, (eh["tangent"] @ V).T, step=energy_step)
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
