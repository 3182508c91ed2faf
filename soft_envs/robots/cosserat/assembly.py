"""Assembly-mode search of the 6-PFS hexapod (seed 002 §3): stage 1, stage 2, and the search.

Stage 1 finds the symmetric equilibria at zero input (platform centred and level, every rod a
planar elastica in the same buckling mode); stage 2 combines per-rod solutions into
mixed-mode configurations, releases the load that holds each, continues them to the requested
inputs and looks for more by radial propagation of the platform pose. Functions of a
:class:`~soft_envs.robots.cosserat.hexapod.Hexapod6PFS`, exposed as its methods.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from soft_envs import clock
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import cross, quaternion_from_rotation_vector, quaternion_multiply
from soft_envs.robots.cosserat.equations import (
    FK_FREE,
    FK_ROWS,
    LOAD,
    POSE_FIXED_FREE,
    POSE_FIXED_ROWS,
    E,
    HexapodEquations,
    HexapodSolution,
    N,
    P,
    U,
)
from soft_envs.robots.cosserat.integrator import IDENTITY_WXYZ, rotation_matrix_wxyz, to_wxyz, to_xyzw
from soft_envs.robots.cosserat.newton import LineSearch, damped_newton

#: The hexapod these functions work on: a :class:`~soft_envs.robots.cosserat.hexapod.Hexapod6PFS`, which
#: calls them (annotated loosely, so that this module does not import the module that imports it).
Hexapod = Any

# Rods pinned to points: sequential halving (six fractions), a non-monotone full step, a plain
# decrease otherwise; no decrease gives the rod up.
_POINTS_SEARCH = LineSearch(rounds=((1.0,), (0.5,), (0.25,), (0.125,), (0.0625,), (0.03125,)),
                            full_step_factor=4.0, decrease=0.0)
_EZ = np.array([0.0, 0.0, 1.0])
# A solution of the search is kept only with its scaled residual below this (every Newton of
# the search stops at 1e-9 or below; the margin covers the quaternion renormalisation).
_ACCEPT = 1e-8


@dataclass
class AssemblySearch:
    """Outcome of :func:`search`.

    Attributes:
        solutions: the distinct converged equilibria, sorted by energy.
        stage1_symmetric: symmetric stage-1 solutions found.
        stage1_configurations: mixed-mode starting configurations built from them.
        after_load_release: distinct equilibria after releasing their holding loads (ρ = 0).
        after_radial: distinct equilibria at the requested inputs, radial propagation included.
        seconds: wall-clock time of the whole search [s].
    """

    solutions: list[HexapodSolution]
    stage1_symmetric: int
    stage1_configurations: int
    after_load_release: int
    after_radial: int
    seconds: float


def solve_rods_to_points(eq: HexapodEquations, X: np.ndarray, base: np.ndarray, q0: np.ndarray, target: np.ndarray,
                         tol: float = 1e-11, max_iter: int = 39,
                         max_step: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Independent rods (batched): find scaled ``(u(0)·L, n·L²/EI)`` ``(B, 6)`` so that each tip
    reaches ``target`` ``(B, 3)`` [m] with zero tip curvature (a pinned tip), from bases ``base``
    ``(B, 3)`` [m] with clamp frames ``q0`` ``(B, 4)`` (scalar first). Damped Newton per rod with a
    finite-difference Jacobian. Returns ``(X, converged)``."""
    def residual(V: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, None]:
        Y = eq.integrate(V, base[idx], q0[idx]).T
        return np.concatenate(((Y[:, 0:3] - target[idx]) / eq.L, Y[:, 7:10] * eq.L), axis=1), None

    out = damped_newton(X, residual, line_search=_POINTS_SEARCH, tol=tol, max_iter=max_iter, fd_step=1e-7,
                        max_step=max_step, step_weights=np.concatenate((np.ones(3), np.full(3, 0.05))))
    return out.x, out.converged


def _inflections(Y: np.ndarray, normal: np.ndarray) -> tuple[int, float]:
    """Interior inflection points and base-curvature sign of one stored rod ``(N+1, 11)``."""
    R = rotation_matrix_wxyz(Y[:, 3:7])
    kappa = np.einsum("kij,kj->ki", R, Y[:, 7:10]) @ normal
    interior = kappa[1:-1]
    big = np.abs(interior) > 1e-6 * max(float(np.max(np.abs(interior))), 1e-300)
    sgn = np.sign(interior[big])
    return int(np.sum(sgn[1:] != sgn[:-1])), float(np.sign(kappa[0])) or 1.0


def _plane_normals(model: Hexapod) -> np.ndarray:
    """Normal ``(6, 3)`` of each rod's reference plane (its guide and its joint at ρ = 0)."""
    offs = model.platform_points - model.base_points
    offs[:, 2] = 0.0
    return cross(_EZ, offs / np.linalg.norm(offs, axis=1, keepdims=True))


def stage1(model: Hexapod, max_mode: int = 3, n_force: int = 241, n_curvature: int = 161,
           max_force: float = 150.0, max_curvature: float = 30.0) -> list[HexapodSolution]:
    """Stage 1 (seed §3): symmetric assembly modes at ``ρ = 0`` — the platform centred and level,
    every rod bent in its reference plane (the plane of its guide and its joint), in the
    same buckling mode.

    By symmetry each rod then carries only a horizontal in-plane force ``H`` (the vertical
    forces must cancel and are equal), so each is a planar elastica clamped on its carriage
    with a dead lateral tip load and a free (moment-less) tip. For a grid of ``H`` [N] (up to
    ``max_force``) the base curvatures ``κ₀`` [1/m] (up to ``max_curvature``) with zero tip
    curvature are bracketed on a grid and bisected (all in one batch); every root whose lateral
    tip offset is near the joint's offset seeds the full 43-unknown Newton (platform free, zero
    load). Solutions are labelled by their buckling mode (interior inflection points of a rod,
    0 = the reference branch) and kept up to ``max_mode``. Exact for vertical guides
    (``guide_tilt = 0``).
    """
    eq = model.equations
    ref = model.reference_solution()
    L = model.L
    A0 = model.base_points[0]
    offset = model.platform_points[0] - A0
    offset[2] = 0.0
    d = float(np.linalg.norm(offset))
    h0 = offset / d
    nu = cross(_EZ, h0)
    Hs = np.linspace(-max_force, max_force, n_force)
    ks = np.linspace(-max_curvature, max_curvature, n_curvature)
    HH, KK = np.meshgrid(Hs, ks, indexing="ij")

    def shoot(H: np.ndarray, k: np.ndarray) -> np.ndarray:
        V = np.concatenate((k[:, None] * nu, H[:, None] * h0), axis=1)
        return eq.integrate(V, np.broadcast_to(A0, (len(V), 3)), np.broadcast_to(IDENTITY_WXYZ, (len(V), 4))).T

    Y = shoot(HH.ravel(), KK.ravel())
    kL = (Y[:, 7:10] @ nu).reshape(n_force, n_curvature)  # tip curvature in the plane
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
    height = (tips[:, 0:3] - A0) @ _EZ
    near = ok & (np.abs(delta - d) < 0.08 * L) & (height > -0.5 * L)
    offs = model.platform_points - model.base_points
    offs[:, 2] = 0.0
    hi_ = offs / np.linalg.norm(offs, axis=1, keepdims=True)
    ni = cross(_EZ, hi_)
    guesses = []
    for Hk, kk, hk in zip(H[near], k0[near], height[near]):
        z = ref.z.copy()
        z[U] = (kk * ni).reshape(18)
        z[N] = (Hk * hi_).reshape(18)
        z[P] = np.array([0.0, 0.0, hk]) / L
        z[E] = IDENTITY_WXYZ
        z[LOAD] = 0.0
        guesses.append(z)
    if not guesses:
        return [ref]
    out = eq.newton(np.array(guesses), np.zeros(6), FK_FREE, FK_ROWS, max_iter=30)
    Zs = deduplicate(np.concatenate((ref.z[None], out.x[out.converged])))
    sols = []
    for z in Zs:
        s = eq.solution(z, np.zeros(6), 0.0, True)
        Yr = eq.integrate(np.concatenate((z[U][:3], z[N][:3]))[None], A0[None], IDENTITY_WXYZ[None],
                          store=True)[:, :, 0]
        mode, _ = _inflections(Yr, nu)
        if mode <= max_mode:
            s.modes = (mode,) * 6
            sols.append(s)
    sols.sort(key=lambda s: (s.modes[0], s.energy))
    return sols


def stage1_configurations(model: Hexapod, max_mode: int = 3, *, symmetric: list[HexapodSolution] | None = None,
                          max_combinations: int | None = None, seed: int = 0) -> tuple[np.ndarray, list]:
    """Mixed-mode starting configurations: at the platform pose of each symmetric stage-1
    solution, every rod is solved alone with its tip pinned on its joint, from the rod
    shapes of every symmetric solution (so each rod gets the buckling modes that fit at that
    pose), and the distinct per-rod solutions (modes ``≤ max_mode``) are combined in every
    way (``max_combinations`` caps the count per pose by a seeded random sample).
    Returns scaled variables ``(C, 49)`` with the external load that holds each
    configuration (an equilibrium under that load) and the mode tuples.
    """
    eq = model.equations
    if symmetric is None:
        symmetric = stage1(model, max_mode)
    A = model.base_positions(np.zeros(6))
    normals = _plane_normals(model)
    shapes = np.stack([np.concatenate((s.z[U].reshape(6, 3), s.z[N].reshape(6, 3)), axis=1) for s in symmetric])
    rng = np.random.default_rng(seed)
    all_Z, all_modes = [], []
    for pose_sol in symmetric:
        Bp = pose_sol.position + model.platform_points @ pose_sol.rotation.T
        starts = shapes.reshape(-1, 6)  # (S*6, 6): shape of rod i in solution s, for rod i
        idx = np.tile(np.arange(6), len(symmetric))
        X, conv = solve_rods_to_points(eq, starts, A[idx], eq.base_q[idx], Bp[idx])
        options: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(6)]
        for v, ok, i in zip(X, conv, idx):
            if not ok or any(np.max(np.abs(v - w)) < 1e-6 for _, w in options[i]):
                continue
            Yr = eq.integrate(v[None], A[i][None], eq.base_q[i][None], store=True)[:, :, 0]
            mode, _ = _inflections(Yr, normals[i])
            if mode <= max_mode:
                options[i].append((mode, v))
        combos = list(itertools.product(*[range(len(o)) for o in options]))
        if max_combinations is not None and len(combos) > max_combinations:
            pick = rng.choice(len(combos), size=max_combinations, replace=False)
            combos = [combos[j] for j in sorted(pick)]
        Z = np.repeat(pose_sol.z[None], len(combos), axis=0)
        for c, combo in enumerate(combos):
            v = np.stack([options[i][j][1] for i, j in enumerate(combo)])
            Z[c, U] = v[:, :3].reshape(18)
            Z[c, N] = v[:, 3:].reshape(18)
            all_modes.append(tuple(options[i][j][0] for i, j in enumerate(combo)))
        all_Z.append(Z)
    Z = np.concatenate(all_Z)
    Z[:, LOAD] = 0.0
    g, _ = eq.residual(Z, np.zeros((len(Z), 6)))
    Z[:, 43:46] = g[:, 36:39]  # the load that holds the platform: the balance residual at zero load
    Z[:, 46:49] = g[:, 39:42] - cross(Z[:, P], Z[:, 43:46])
    return Z, all_modes


def load_homotopy(eq: HexapodEquations, Z: np.ndarray, rho: np.ndarray, n_steps: int = 8, max_iter: int = 12,
                  chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Stage 2 (load continuation): each configuration ``Z`` ``(C, 49)`` is an equilibrium under
    its own load ``W``; release it as ``λ W``, ``λ = 1 → 0`` in ``n_steps``, platform free.
    Returns ``(Z, converged)``."""
    Z = Z.copy()
    ok_all = np.ones(len(Z), bool)
    W = Z[:, LOAD].copy()
    for lo in range(0, len(Z), chunk):
        idx = np.arange(lo, min(lo + chunk, len(Z)))
        for lam in np.linspace(1.0, 0.0, n_steps + 1)[1:]:
            live = idx[ok_all[idx]]
            if len(live) == 0:
                break
            Zl = Z[live]
            Zl[:, LOAD] = lam * W[live]
            out = eq.newton(Zl, rho, FK_FREE, FK_ROWS, tol=1e-9 if lam > 0 else 1e-10, max_iter=max_iter)
            Z[live] = out.x
            ok_all[live] = out.converged
    return Z, ok_all


def radial_propagation(eq: HexapodEquations, Z: np.ndarray, rho: np.ndarray, radius_position: float = 0.04,
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
    start_p = cur[:, P].copy()
    start_e = to_xyzw(cur[:, E])
    ray = np.tile(rays, (S, 1))
    alive = np.ones(len(cur), bool)
    history = np.full((n_steps + 1, len(cur)), np.nan)
    states = np.zeros((n_steps + 1, len(cur), 49))
    history[0] = 0.0
    states[0] = cur
    for k in range(1, n_steps + 1):
        t = k / n_steps
        cur[:, P] = start_p + t * ray[:, :3] / eq.L
        cur[:, E] = to_wxyz(quaternion_multiply(quaternion_from_rotation_vector(t * ray[:, 3:]), start_e))
        live = np.flatnonzero(alive)
        if len(live) == 0:
            break
        out = eq.newton(cur[live], rho, POSE_FIXED_FREE, POSE_FIXED_ROWS, tol=1e-9, max_iter=max_iter)
        cur[live] = out.x
        alive[live] = out.converged
        history[k, live[out.converged]] = np.linalg.norm(out.x[out.converged][:, LOAD], axis=1)
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
    Zc, ok = load_homotopy(eq, np.array(candidates), rho, n_steps=4)
    return Zc[ok]


def rod_modes(model: Hexapod, Z: np.ndarray, rho: np.ndarray) -> list[tuple]:
    """Buckling mode (interior inflection points) of every rod of every solution ``(S, 49)``."""
    eq = model.equations
    S = len(Z)
    A = model.base_positions(np.broadcast_to(rho, (S, 6))).reshape(S * 6, 3)
    Y = eq.integrate(eq.rod_vars(Z).reshape(S * 6, 6), A, np.broadcast_to(eq.base_q, (S, 6, 4)).reshape(S * 6, 4),
                     store=True)
    R = rotation_matrix_wxyz(np.moveaxis(Y[:, 3:7], 1, 2))  # (N+1, S*6, 3, 3)
    u_world = np.einsum("kbij,kbj->kbi", R, np.moveaxis(Y[:, 7:10], 1, 2))
    # in-plane curvature: the component along the plane normal of each rod's reference plane
    normals = np.tile(_plane_normals(model), (S, 1))
    kappa = np.einsum("kbi,bi->kb", u_world, normals)[1:-1]  # (N-1, S*6)
    out = []
    for b in range(S * 6):
        col = kappa[:, b]
        big = np.abs(col) > 1e-6 * max(float(np.max(np.abs(col))), 1e-300)
        sgn = np.sign(col[big])
        out.append(int(np.sum(sgn[1:] != sgn[:-1])))
    return [tuple(out[6 * s:6 * s + 6]) for s in range(S)]


def deduplicate(Z: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """Distinct solutions of ``Z`` ``(S, 49)`` (quaternion sign normalised; max-norm distance of
    the 43 scaled unknowns below ``tol``)."""
    keep: list[np.ndarray] = []
    for z in Z:
        z = z.copy()
        z[E] /= np.linalg.norm(z[E])
        if z[39] < 0:
            z[E] = -z[E]
        if not any(np.max(np.abs(z[:43] - k[:43])) < tol for k in keep):
            keep.append(z)
    return np.array(keep) if keep else np.zeros((0, 49))


def search(model: Hexapod, rho: Any = None, *, max_mode: int = 3, max_combinations: int | None = 200,
           radial: bool | str = "symmetric", stability: bool = True, input_steps: int = 8, seed: int = 0,
           progress: bool = False) -> AssemblySearch:
    """All assembly modes found for inputs ``rho`` [m] (default zero), with zero external load.

    Stage 1 (:func:`stage1`) at ``ρ = 0``: symmetric solutions, rods bent in their reference
    planes, buckling modes up to ``max_mode``. Stage 2: mixed-mode configurations
    (:func:`stage1_configurations`: at each stage-1 pose every combination of the rod
    solutions that fit there, at most ``max_combinations`` per pose) are released from the
    load that holds them (continuation ``λ W → 0`` with the platform free); for ``ρ ≠ 0``
    every zero-input solution is then continued in the inputs (``input_steps`` steps); with
    ``radial``, radial propagation of the platform pose (:func:`radial_propagation`) looks
    for more — from the symmetric stage-1 solutions (``"symmetric"``, the default, as the
    paper's Fig. 5) or from every solution found (``"all"``, slower), none with ``False``.
    Distinct converged solutions are returned, sorted by energy, each with the model's
    ``stability`` (both criteria) when ``stability``, with the count of each stage. The method
    is numerical, not certified: it finds many solutions, not provably all.
    """
    start = clock.now()
    eq = model.equations
    rho = np.zeros(6) if rho is None else model.check_inputs(rho)
    if not (isinstance(input_steps, (int, np.integer)) and input_steps >= 1):
        raise InvalidParameterError(f"input_steps must be an integer >= 1; got {input_steps!r}")
    if not (isinstance(max_mode, (int, np.integer)) and max_mode >= 0):
        raise InvalidParameterError(f"max_mode must be an integer >= 0; got {max_mode!r}")
    if max_combinations is not None and not (isinstance(max_combinations, (int, np.integer)) and max_combinations >= 1):
        raise InvalidParameterError(f"max_combinations must be None or an integer >= 1; got {max_combinations!r}")
    if radial not in (False, True, "symmetric", "all"):
        raise InvalidParameterError(f"radial must be False, True, 'symmetric' or 'all'; got {radial!r}")
    symmetric = stage1(model, max_mode)
    Z1, _ = stage1_configurations(model, max_mode, symmetric=symmetric, max_combinations=max_combinations, seed=seed)
    Z2, ok = load_homotopy(eq, Z1, np.zeros(6))
    Zs = deduplicate(np.concatenate([s.z[None] for s in symmetric] + [Z2[ok]]))
    after_release = len(Zs)
    is_symmetric = np.array([any(np.max(np.abs(z[:43] - s.z[:43])) < 1e-6 for s in symmetric) for z in Zs])
    if np.any(rho != 0) and len(Zs):
        cur = Zs.copy()
        alive = np.ones(len(cur), bool)
        for t in np.linspace(0.0, 1.0, input_steps + 1)[1:]:
            live = np.flatnonzero(alive)
            out = eq.newton(cur[live], t * rho, FK_FREE, FK_ROWS, max_iter=15)
            cur[live] = out.x
            alive[live] = out.converged
        Zs, is_symmetric = cur[alive], is_symmetric[alive]
    if radial and len(Zs):
        seeds = Zs[is_symmetric] if radial == "symmetric" else Zs
        Zs = deduplicate(Zs)
        more = radial_propagation(eq, seeds, rho) if len(seeds) else np.zeros((0, 49))
        Zs = deduplicate(np.concatenate((Zs, more)))
    Zs = deduplicate(Zs)
    if len(Zs):  # only equilibria at the requested inputs: never a start relabelled
        g, tips = eq.residual(Zs, np.broadcast_to(rho, (len(Zs), 6)))
        good = np.max(np.abs(g), axis=1) < _ACCEPT
        Zs, g, tips = Zs[good], g[good], tips[good]
    final_modes = rod_modes(model, Zs, rho) if len(Zs) else []
    sols = []
    iterator: Any = range(len(Zs))
    if progress:
        from soft_envs.console import progress as progress_bar

        iterator = progress_bar(iterator, desc="stability", leave=False)
    for j in iterator:
        s = eq.solution(Zs[j], rho, float(np.max(np.abs(g[j]))), True, 0, 0.0, final_modes[j],
                        float(tips[j, :, 10].sum()))
        if stability:
            model.stability(s)
        model.rod_states(s)
        sols.append(s)
    sols.sort(key=lambda s: s.energy)
    seconds = clock.now() - start
    for s in sols:
        s.seconds = seconds
    return AssemblySearch(solutions=sols, stage1_symmetric=len(symmetric), stage1_configurations=len(Z1),
                          after_load_release=after_release, after_radial=len(Zs), seconds=seconds)
