"""The batched soft-arm core's operations on its data (:mod:`soft_envs.sim.batched_types`): the
configuration ``c̃`` of ``u``, the terms ``M``, ``C u̇ + G``, ``G``, the generalised-α step in blocks of arms
across threads (and its numpy reference), the tip, gravity in a tilted base and the section map — pure
functions of arrays; :class:`~soft_envs.sim.batched_arm.BatchedSoftArm` holds the state they advance."""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import check_unit_quaternion, quaternion_to_matrix
from soft_envs.sim import batched_integrator, contact, threads
from soft_envs.sim import batched_kernels as kernels
from soft_envs.sim.batched_types import ArmParams, ArmState, ArmTopology
from soft_envs.sim.integrator import (
    DEFAULT_CORRECTOR_PASSES,
    AlphaParameters,
    generalized_alpha_step,
)
from soft_envs.sim.scene import ArmScene


def configuration(topology: ArmTopology, u: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """``c̃`` ``(B, 3N)`` of ``u`` ``(B, n)``: per section ``(θ, φ)`` or ``(−θ, φ ± π)``, the one nearest
    ``reference`` (NaN rows: none, ``θ ≥ 0``), as :meth:`SectionMap.configuration`."""
    u = np.ascontiguousarray(u, dtype=float)
    out = np.empty((u.shape[0], 3 * topology.reference_lengths.shape[0]))
    if reference is None:
        ref, has = out, np.zeros(u.shape[0], dtype=np.bool_)
    else:
        ref = np.ascontiguousarray(reference, dtype=float)
        has = ~np.isnan(ref).any(axis=1)
    kernels.batch_configuration(topology.sections, topology.reference_lengths, u, ref, has, out)
    return out


def terms(topology: ArmTopology, params: ArmParams, state: ArmState, *, with_mass: bool = True,
          u: np.ndarray | None = None, w: np.ndarray | None = None, c: np.ndarray | None = None,
          active: np.ndarray | None = None, num_threads: int = 1):
    """``(M, C u̇ + G, G)`` of every arm, ``(B, n, n)``, ``(B, n)``, ``(B, n)`` (``M`` zeros without
    ``with_mass``; zeros for arms not ``active``), at the state or at given ``u``, ``w`` (default
    zero) and ``c̃`` (default: ``u``'s, θ's sign nearest the state's); blocks of arms in
    ``num_threads`` threads (:mod:`soft_envs.sim.threads`, the same numbers)."""
    u = state.u if u is None else np.ascontiguousarray(u, dtype=float)
    w = (state.w if u is state.u else np.zeros_like(u)) if w is None else np.ascontiguousarray(w, dtype=float)
    B, n = u.shape
    derive_c = c is None and u is not state.u  # u's c̃, θ's sign nearest the state's (in the blocks)
    if derive_c:
        c = np.empty_like(state.c)
        ref = np.ascontiguousarray(state.c, dtype=float)
        has = ~np.isnan(ref).any(axis=1)
    elif c is None:
        c = state.c
    M = np.zeros((B, n, n))
    h, g = np.zeros((B, n)), np.zeros((B, n))
    act = np.ones(B, dtype=np.bool_) if active is None else np.ascontiguousarray(active, dtype=np.bool_)
    per_arm = (params.mass, params.inertia, params.gravity, u, w, c)

    def block_terms(rows: slice) -> None:
        whole = rows.stop - rows.start == B  # one block: the arrays themselves, no views
        if derive_c:
            kernels.batch_configuration(topology.sections, topology.reference_lengths,
                                        *((u, ref, has, c) if whole else (u[rows], ref[rows], has[rows], c[rows])))
        kernels.batch_terms(*topology.arrays, *(per_arm if whole else [x[rows] for x in per_arm]), with_mass,
                            *((act, M, h, g) if whole else (act[rows], M[rows], h[rows], g[rows])))

    threads.run_blocks(block_terms, B, num_threads)
    return M, h, g


def step(topology: ArmTopology, params: ArmParams, state: ArmState, dt: float, torque: np.ndarray, *,
         torque_end: np.ndarray | None = None, rest_end: np.ndarray | None = None,
         cancel_damping: bool | np.ndarray = False, active: np.ndarray | None = None,
         parameters: AlphaParameters | None = None, corrector_passes: int = DEFAULT_CORRECTOR_PASSES,
         start_terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
         num_threads: int | None = None, scene: ArmScene | None = None) -> ArmState:
    """The state after one step of ``dt`` [s] (pure: ``state`` is not changed), by the single core's
    scheme (:func:`~soft_envs.sim.integrator.generalized_alpha_step`, as :meth:`SoftArmBody.step`),
    in one compiled call for the batch (:func:`soft_envs.sim.batched_integrator.batch_step`).

    ``torque`` ``(B, n)`` is the generalised actuation at the step's start (``torque_end`` at its
    end), ``rest_end`` the rest configuration at its end, ``active`` ``(B,)`` the arms that move
    (the others keep their state exactly). ``start_terms`` = ``(M, C u̇ + G, G)`` at ``state``
    if already known (:func:`terms`), else computed. ``num_threads`` threads step blocks of arms
    (:mod:`soft_envs.sim.threads`; default: the cores this process may use), with results identical
    to one thread. With a ``scene`` that has shapes, the arms step with its contact
    (:func:`soft_envs.sim.contact.batch_step_contact`; its measurements are written into it).
    """
    B, n = state.u.shape
    act = np.ones(B, dtype=np.bool_) if active is None else _per_arm_flags(active, B)
    am, af, gamma, beta = AlphaParameters.from_spectral_radius() if parameters is None else parameters
    if not (isinstance(corrector_passes, (int, np.integer)) and corrector_passes >= 0):
        raise InvalidParameterError(f"corrector_passes must be a whole number >= 0; got {corrector_passes!r}")
    tau_s = _per_arm_rows(torque, B, n)
    tau_e = tau_s if torque_end is None else _per_arm_rows(torque_end, B, n)
    rest_e = state.rest if rest_end is None else _per_arm_rows(rest_end, B, n)
    if start_terms is None:
        M, h, G = np.empty((B, n, n)), np.empty((B, n)), np.empty((B, n))
    else:
        M, h, G = (np.ascontiguousarray(x, dtype=float) for x in start_terms)
    out = ArmState(np.empty((B, n)), np.empty((B, n)), np.empty((B, n)), np.empty_like(state.c), state.rest,
                   np.where(act, state.time + dt, state.time), state.fresh & ~act)
    per_arm = (params.mass, params.inertia, params.gravity, params.stiffness, params.rayleigh, state.u, state.w,
               state.a, state.c, state.rest, rest_e, tau_s, tau_e, _per_arm_flags(cancel_damping, B),
               state.fresh & (corrector_passes > 0), act)
    results = (M, h, G, out.u, out.w, out.a, out.c)
    coefficients = (float(dt), am, af, gamma, beta, int(corrector_passes))
    if scene is not None and scene.has_shapes():
        scene_in = (scene.shapes, scene.velocity, scene.cp)
        records = (scene.diagnostics, scene.touched, scene.wrench)

        def step_block(rows: slice) -> None:
            whole = rows.stop - rows.start == B  # one block: the arrays themselves, no views
            parts = [per_arm, scene_in, results, records]
            arm_in, shapes_in, terms_out, record_out = parts if whole else [[x[rows] for x in part] for part in parts]
            contact.batch_step_contact(*topology.arrays, *arm_in, *coefficients, *shapes_in, scene.radius,
                                       scene.points, *terms_out, *record_out, scene.max_substeps)
    else:
        if scene is not None:
            scene.clear_measurements()

        def step_block(rows: slice) -> None:
            whole = rows.stop - rows.start == B  # one block: the arrays themselves, no views
            batched_integrator.batch_step(*topology.arrays, *(per_arm if whole else [x[rows] for x in per_arm]),
                                          *coefficients, start_terms is not None,
                                          *(results if whole else [x[rows] for x in results]))

    threads.run_blocks(step_block, B, threads.check_threads(num_threads))
    if rest_end is not None:
        out.rest = np.where(act[:, None], rest_e, state.rest)
    return out


def _per_arm_flags(flags, B: int) -> np.ndarray:
    """A bool or ``(B,)`` flags as a contiguous ``(B,)`` bool array."""
    if isinstance(flags, (bool, np.bool_)):
        return np.full(B, bool(flags))
    return np.ascontiguousarray(np.broadcast_to(np.asarray(flags, dtype=np.bool_), (B,)))


def _per_arm_rows(x, B: int, n: int) -> np.ndarray:
    """A number, ``(n,)`` or ``(B, n)`` as a contiguous float ``(B, n)`` array."""
    if isinstance(x, np.ndarray) and x.shape == (B, n) and x.dtype == float and x.flags.c_contiguous:
        return x
    if isinstance(x, (int, float)):
        return np.full((B, n), float(x))
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), (B, n)))


def reference_step(topology: ArmTopology, params: ArmParams, state: ArmState, dt: float, torque: np.ndarray, *,
         torque_end: np.ndarray | None = None, rest_end: np.ndarray | None = None,
         cancel_damping: bool | np.ndarray = False, active: np.ndarray | None = None,
         parameters: AlphaParameters | None = None, corrector_passes: int = DEFAULT_CORRECTOR_PASSES) -> ArmState:
    """:func:`step` through the numpy :func:`~soft_envs.sim.integrator.generalized_alpha_step` (the
    single bodies' code) and the batched terms: the reference the compiled step is tested against."""
    B, n = state.u.shape
    act = np.ones(B, dtype=bool) if active is None else np.asarray(active, dtype=bool)
    M, h, G = terms(topology, params, state, active=act)
    if not act.all():  # keep the solves regular for arms that do not move
        M[~act] = np.eye(n)

    def end_terms(u_end: np.ndarray, w_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        M_e, h_e, G_e = terms(topology, params, state, u=u_end, w=w_end, active=act)
        if not act.all():
            M_e[~act] = np.eye(n)
        return M_e, h_e, G_e

    out = generalized_alpha_step(
        state.u, state.w, state.a, dt, params.stiffness, end_terms, start_terms=(M, h, G),
        torque_start=np.broadcast_to(np.asarray(torque, dtype=float), (B, n)),
        torque_end=None if torque_end is None else np.broadcast_to(np.asarray(torque_end, dtype=float), (B, n)),
        rest_start=state.rest, rest_end=rest_end, rayleigh_mass=params.rayleigh[:, 0],
        rayleigh_stiffness=params.rayleigh[:, 1], cancel_damping=cancel_damping, parameters=parameters,
        corrector_passes=corrector_passes, consistent_start=state.fresh & (corrector_passes > 0))
    moved = act[:, None]
    u = np.where(moved, out.u, state.u)
    rest = state.rest if rest_end is None else np.where(moved, np.broadcast_to(rest_end, (B, n)), state.rest)
    c = np.where(moved, configuration(topology, u, state.c), state.c)
    return ArmState(u, np.where(moved, out.w, state.w), np.where(moved, out.a, state.a), c, rest,
                    np.where(act, state.time + dt, state.time), state.fresh & ~act)


def point_state(topology: ArmTopology, state: ArmState) -> tuple[np.ndarray, np.ndarray]:
    """Position [m] and linear velocity [m/s] of the last link's centre of mass, base frame, ``(B, 3)`` each."""
    out = np.empty((state.u.shape[0], 6))
    kernels.batch_point_state(*topology.arrays, state.u, state.w, state.c, out)
    return out[:, :3], out[:, 3:]


def gravity_in_base(base_orientation: np.ndarray, gravity: float) -> np.ndarray:
    """Gravity vectors ``(B, 3)`` [m/s²] in the arms' base frames: the world's ``(0, 0, −g)`` turned
    by quaternions ``(B, 4)`` ``(x, y, z, w)``."""
    q = np.atleast_2d(np.asarray(base_orientation, dtype=float))
    for row in q:
        check_unit_quaternion(row)
    R = quaternion_to_matrix(q)
    return np.einsum("bji,j->bi", R, np.array([0.0, 0.0, -float(gravity)]))




def section_map(topology: ArmTopology, u: np.ndarray, w: np.ndarray, c: np.ndarray):
    """The section map of every arm as the core evaluates it: the evaluation point ``u_e`` ``(B, n)``
    (bends at least ``1e-4`` rad), its ``c̃`` ``(B, 3N)``, ``J = ∂c̃/∂u`` ``(B, 3N, n)`` and ``J̇ w``
    ``(B, 3N)`` (:meth:`SectionMap.evaluation_point`, :meth:`SectionMap.jacobian`; ``c`` the arms'
    current ``c̃``, the θ sign reference)."""
    u, w, c = (np.ascontiguousarray(x, dtype=float) for x in (u, w, c))
    B, n = u.shape
    N = topology.reference_lengths.shape[0]
    ue, ce, acc = np.empty((B, n)), np.empty((B, 3 * N)), np.empty((B, 3 * N))
    blocks = np.zeros((B, N, 3, 3))
    kernels.batch_section_map(topology.sections, topology.reference_lengths, u, w, c, ue, ce, blocks, acc)
    per = n // N
    J = np.zeros((B, 3 * N, n))
    for i in range(N):  # block-diagonal assembly (N sections, not a loop over arms)
        J[:, 3 * i:3 * i + 3, per * i:per * (i + 1)] = blocks[:, i, :, :per]
    return ue, ce, J, acc
