"""The batched soft-arm core: B arms of one topology advanced by one compiled call per physics step.

What it is. :class:`BatchedSoftArm` is :class:`~soft_envs.sim.soft_arm.SoftArmBody` for ``B``
arms at once — the same smooth coordinates ``u``, section map (θ sign continuity, evaluation
point at least ``1e-4`` rad from straight), stiffness and Rayleigh damping, generalised-α
step and tip measurement — with its own rigid-body terms instead of PyBullet's: a
composite-rigid-body mass matrix and recursive Newton–Euler bias over the generated chain,
evaluated straight in the sections' ``c̃`` (:mod:`soft_envs.sim.batched_kernels`). Every arm
has its own parameters: link masses and inertias (payload, mass and radius errors), gravity
in its base frame (base tilt), stiffness, damping. PETER and the PCC arm are
:class:`~soft_envs.sim.batched_bodies.BatchedSoftPeter` and
:class:`~soft_envs.sim.batched_bodies.BatchedPCCBody`; their actuators and the PD law are in
:mod:`soft_envs.sim.actuators`. The single bodies keep PyBullet and stay the reference:
``tests/sim/test_batched_arm.py`` checks the terms against ``calculateMassMatrix`` /
``calculateInverseDynamics`` and the stepping against ``SoftPeterBody`` / ``PCCBody``.

Layout (as MJX and Brax lay out a batched model): :class:`ArmTopology` is static (joint
kinds, offsets, the section map; numpy, never batched), :class:`ArmParams` holds the per-arm
parameters as ``(B, …)`` arrays, :class:`ArmState` the per-arm state as ``(B, n)`` arrays
(``u``, ``w``, the integrator's ``a``, ``c̃``, ``u_rest``, time). :func:`step` is a pure
function ``(topology, params, state, dt, torque, …) → state``; :class:`BatchedSoftArm` wraps
the three for in-place use (reset and parameters by index or mask, as IsaacLab's
``_reset_idx``).

Choice of implementation — measured (``soft-envs bench batched``; one process, CPU time of the
thread, best of 3 rounds, on a shared 2-core AMD EPYC at load ~11; µs per arm):

=======================================  =====  ======  ========
rigid-body terms of one arm              B = 1  B = 64  B = 1024
=======================================  =====  ======  ========
PETER 2 modules, numba kernel (M, h, G)  4.0    1.04    0.97
PETER 2 modules, numpy over joints (h)   3400   60      12.8
PCC 2 segments, numba kernel             4.6    1.44    1.39
PCC 2 segments, numpy over joints (h)    5500   98      23
=======================================  =====  ======  ========

Numpy over joints with B vectorised (``soft_envs.bench.batched.numpy_bias``: ~25 numpy calls
per joint, for the bias alone, half the kernel's work) is 10× slower than the kernel even at
B = 1024: each call's fixed cost (~1 µs) and its temporaries dominate below B ≈ 10⁴. The numba
kernel (per arm, scalar loops over joints, helpers inlined, the batch loop compiled; distinct
joint angles' sines computed once per section; the mass matrix summed straight into ``c̃``)
is flat in B from B ≈ 64 and takes ~1.3 µs per PETER arm (~70 ns per joint, ~3 flops per
cycle). Not pursued: a closed form in the section coordinates (specific to one link pattern,
and the kernel is already at a few thousand flops per arm), SIMD across arms (lane-interleaved
layout: a rewrite of the kernel), JAX (no GPU here; compile and dispatch cost on CPU).
A whole physics step is one compiled call for the batch
(:func:`soft_envs.sim.batched_integrator.batch_step`: the terms at the start, the predictor, the
terms ``M``, ``C u̇ + G`` at the predicted end, the corrector, the new ``c̃``): 2.8 µs per PETER arm at
B = 1024 (3.7 µs PCC; 2.3 and 2.9 µs while the end terms were ``M`` and ``G`` only — ``C u̇`` at the
end needs the velocity recursion; 3.9 and 5.1 µs with the numpy integrator and reference-counted
loops), 16× (22×) the single PyBullet core's 46 µs (80 µs) in the same run — the single core runs
the same compiled step and section map around PyBullet's terms (147 and 156 µs before both). The
kernels compile in ~27 s of CPU once per checkout (``cache=True``; then ~1.5 s to load).

GPU and threads. The per-arm functions of :mod:`~soft_envs.sim.batched_kernels` and
:mod:`~soft_envs.sim.batched_integrator` use scalar arithmetic and small arrays only, so
:mod:`soft_envs.sim.batched_cuda` compiles the very same functions for CUDA (one thread an arm,
scratch in ``cuda.local.array``): on one H100, 15.4 ns per PETER arm and physics step at
B = 262,144 (H200: 12.7 ns) against 3.8–6.3 µs for one CPU thread of the same machines, equal to
the CPU core to ~1e-13 (``soft-envs bench batched --device cuda``). On the CPU, :func:`step` splits the batch
into blocks of arms stepped in parallel threads (:mod:`soft_envs.sim.threads`, ``num_threads``),
with results identical to one thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_integer
from soft_envs.geometry import check_unit_quaternion, quaternion_to_matrix
from soft_envs.robots.chain import Chain
from soft_envs.sim import batched_integrator, threads
from soft_envs.sim import batched_kernels as kernels
from soft_envs.sim.integrator import (
    DEFAULT_CORRECTOR_PASSES,
    DEFAULT_SPECTRAL_RADIUS,
    AlphaParameters,
    generalized_alpha_step,
)
from soft_envs.sim.sections import SectionMap, spinless_sections

_KINDS = {"revolute_z": kernels.REVOLUTE_Z, "revolute_y": kernels.REVOLUTE_Y, "prismatic_z": kernels.PRISMATIC_Z}


@dataclass(frozen=True)
class ArmTopology:
    """What every arm of a batch shares: the chain's joints and the section map.

    Built by :meth:`from_chain`. Per joint: ``ints`` ``(K, 3)`` = (kind, slot, trig index) and
    ``table`` ``(K, 5)`` = (offset [m], β, com [m] (3)) with ``q_j = β_j c̃[slot_j]``; ``trig``
    ``(T, 3)`` = (slot, β, h) of the distinct revolute angles (a joint's angle is ``±`` one of them;
    ``h`` the index of the angle half as large, or −1); ``sections`` = (planar, chord, links);
    ``reference_lengths`` ``(N,)`` [m].
    """

    ints: np.ndarray
    table: np.ndarray
    trig: np.ndarray
    sections: np.ndarray
    reference_lengths: np.ndarray
    section_map: SectionMap

    @classmethod
    def from_chain(cls, chain: Chain, section_map: SectionMap) -> ArmTopology:
        """The topology of ``chain`` (the body's chain, before :func:`spinless_sections`) on ``section_map``."""
        if len(chain.links) != section_map.n_sections * section_map.joints_per_section:
            raise InvalidParameterError("the chain does not match the section map")
        B = section_map.B
        if np.any(np.count_nonzero(B, axis=1) > 1):
            raise InvalidParameterError("every joint must follow one entry of the section configuration")
        slots = np.argmax(np.abs(B), axis=1)
        coefs = B[np.arange(B.shape[0]), slots]
        kinds = np.array([_KINDS[k] for k in chain.kinds], dtype=np.int64)
        angles: dict[tuple[int, float], int] = {}
        trig_index = np.zeros(len(kinds), dtype=np.int64)
        for j, (kind, slot, coef) in enumerate(zip(kinds, slots, coefs, strict=False)):
            if kind != kernels.PRISMATIC_Z:
                key = (int(slot), abs(float(coef)))
                trig_index[j] = angles.setdefault(key, len(angles))
        pairs = list(angles)
        # an angle twice an earlier one (a section's full bends θ/m and half bends θ/2m): its cosine
        # and sine follow from the earlier one's (double-angle formulas)
        trig = np.array([[slot, coef, next((h for h, (s, c) in enumerate(pairs[:t]) if s == slot and 2.0 * c == coef),
                                           -1)] for t, (slot, coef) in enumerate(pairs)], dtype=float).reshape(-1, 3)
        table = np.zeros((len(chain.links), 5))
        table[:, 0] = chain.offsets
        table[:, 1] = coefs
        table[:, 2:5] = [link.body.com for link in chain.links]
        ints = np.stack((kinds, slots.astype(np.int64), trig_index), axis=1)
        flags = np.array([section_map.planar, section_map.chord, section_map.links], dtype=np.int64)
        return cls(ints, table, trig, flags, section_map.reference_lengths.astype(float).copy(), section_map)

    @property
    def kinds(self) -> np.ndarray:
        return self.ints[:, 0]

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays every kernel takes first: ``(ints, table, trig, sections, reference_lengths)``."""
        return self.ints, self.table, self.trig, self.sections, self.reference_lengths

    @property
    def n_dof(self) -> int:
        """Smooth coordinates per arm."""
        return self.section_map.n

    @property
    def n_joints(self) -> int:
        return int(self.kinds.shape[0])

    def link_dynamics(self, chain: Chain) -> tuple[np.ndarray, np.ndarray]:
        """Masses ``(K,)`` [kg] and diagonal inertias ``(K, 3)`` [kg m²] of ``chain`` as the core
        simulates them (no spin inertia inside a section, :func:`spinless_sections`); the chain
        must be this topology's with other masses."""
        spinless = spinless_sections(chain, self.section_map.joints_per_section)
        if len(spinless.links) != self.n_joints or any(
                _KINDS[link.joint] != kind or link.offset != off or tuple(link.body.com) != tuple(com)
                for link, kind, off, com in zip(spinless.links, self.kinds, self.table[:, 0], self.table[:, 2:5],
                                                strict=False)):
            raise InvalidParameterError("the chain must be the topology's with other masses")
        return spinless.masses, np.array([link.body.inertia for link in spinless.links], dtype=float)


@dataclass
class ArmParams:
    """Per-arm parameters, ``(B, …)`` arrays: link ``mass`` ``(B, K)`` [kg], ``inertia`` ``(B, K, 3)``
    [kg m²], ``gravity`` ``(B, 3)`` [m/s²] (the gravity vector in each arm's base frame),
    ``stiffness`` ``(B, n)`` (axial [N/m], bending [N m/rad]), ``rayleigh`` ``(B, 2)`` (``α`` [1/s],
    ``β`` [s] of ``D = α M + β K``)."""

    mass: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    stiffness: np.ndarray
    rayleigh: np.ndarray

    def take(self, index) -> ArmParams:
        """The parameters of the arms ``index``."""
        return ArmParams(*(getattr(self, f.name)[index] for f in fields(self)))


@dataclass
class ArmState:
    """Per-arm state, ``(B, n)`` arrays unless said: smooth configuration ``u``, rate ``w``, the
    integrator's acceleration ``a``, ``c`` the sections' ``c̃`` ``(B, 3N)`` (θ sign history),
    ``rest`` ``u_rest``, ``time`` ``(B,)`` [s], ``fresh`` ``(B,)``: the state was set since the
    arm's last step (its next step starts from the true acceleration, as ``SoftArmBody``)."""

    u: np.ndarray
    w: np.ndarray
    a: np.ndarray
    c: np.ndarray
    rest: np.ndarray
    time: np.ndarray
    fresh: np.ndarray

    def copy(self) -> ArmState:
        return ArmState(self.u.copy(), self.w.copy(), self.a.copy(), self.c.copy(), self.rest.copy(),
                        self.time.copy(), self.fresh.copy())

    def where(self, mask: np.ndarray, other: ArmState) -> ArmState:
        """``other``'s arms where ``mask``, this state's elsewhere (MJX ``Data.where``)."""
        mask = np.asarray(mask, dtype=bool)
        return ArmState(*(np.where(mask.reshape((-1,) + (1,) * (getattr(self, f.name).ndim - 1)),
                                   getattr(other, f.name), getattr(self, f.name)) for f in fields(self)))


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
         num_threads: int | None = None) -> ArmState:
    """The state after one step of ``dt`` [s] (pure: ``state`` is not changed), by the single core's
    scheme (:func:`~soft_envs.sim.integrator.generalized_alpha_step`, as :meth:`SoftArmBody.step`),
    in one compiled call for the batch (:func:`soft_envs.sim.batched_integrator.batch_step`).

    ``torque`` ``(B, n)`` is the generalised actuation at the step's start (``torque_end`` at its
    end), ``rest_end`` the rest configuration at its end, ``active`` ``(B,)`` the arms that move
    (the others keep their state exactly). ``start_terms`` = ``(M, C u̇ + G, G)`` at ``state``
    if already known (:func:`terms`), else computed. ``num_threads`` threads step blocks of arms
    (:mod:`soft_envs.sim.threads`; default: the cores this process may use), with results identical
    to one thread.
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

    def step_block(rows: slice) -> None:
        whole = rows.stop - rows.start == B  # one block: the arrays themselves, no views
        batched_integrator.batch_step(*topology.arrays, *(per_arm if whole else [x[rows] for x in per_arm]),
                                      float(dt), am, af, gamma, beta, int(corrector_passes), start_terms is not None,
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


def _rows(index, B: int) -> np.ndarray:
    """``index`` (ints, a boolean mask of ``B``, a slice or ``None`` = every arm) as an int array."""
    if index is None:
        return np.arange(B)
    if isinstance(index, slice):
        return np.arange(B)[index]
    index = np.asarray(index)
    if index.dtype == bool:
        if index.shape != (B,):
            raise InvalidParameterError(f"a mask must have shape ({B},); got {index.shape}")
        return np.flatnonzero(index)
    index = np.atleast_1d(index).astype(np.int64)
    if index.size and (index.min() < -B or index.max() >= B):
        raise InvalidParameterError(f"arm index out of range for {B} arms: {index.tolist()}")
    return index % B if index.size else index


class BatchedSoftArm:
    """``B`` soft arms of one topology (module docstring): :class:`SoftArmBody` batched.

    Args:
        chain: the arms' rigid-link body (the nominal masses; change them per arm with
            :meth:`set_link_dynamics`).
        sections: the section map.
        stiffness: ``K``'s diagonal, ``(n,)`` or ``(B, n)`` (axial [N/m], bending [N m/rad]).
        n_arms: ``B``.
        gravity: standard gravity [m/s²] along the world's −z.
        rayleigh_mass, rayleigh_stiffness: ``α`` [1/s], ``β`` [s] (numbers or ``(B,)``).
        base_orientation: quaternion ``(x, y, z, w)``, ``(4,)`` or ``(B, 4)`` (default upright).
        spectral_radius, corrector_passes: the integrator's ``ρ∞`` and corrector passes
            (:func:`~soft_envs.sim.integrator.generalized_alpha_step`, as ``SoftArmBody``).
        num_threads: threads that step the batch (default: the cores this process may use;
            results are identical for any number).

    State (:attr:`state`, an :class:`ArmState` of ``(B, …)`` arrays) starts straight at rest;
    per-arm parameters are :attr:`params`. Methods taking ``index`` accept arm indices, a boolean
    mask of ``B`` or ``None`` (every arm). Measurements are in each arm's base frame.
    """

    def __init__(self, chain: Chain, sections: SectionMap, stiffness: np.ndarray, n_arms: int, *,
                 gravity: float = 9.81, rayleigh_mass: float | np.ndarray = 0.0,
                 rayleigh_stiffness: float | np.ndarray = 0.0,
                 base_orientation: np.ndarray = (0.0, 0.0, 0.0, 1.0),
                 spectral_radius: float = DEFAULT_SPECTRAL_RADIUS,
                 corrector_passes: int = DEFAULT_CORRECTOR_PASSES, num_threads: int | None = None) -> None:
        if int(n_arms) != n_arms or n_arms < 1:
            raise InvalidParameterError(f"n_arms must be a positive integer; got {n_arms!r}")
        self.alpha_parameters = AlphaParameters.from_spectral_radius(spectral_radius)
        self.corrector_passes = check_integer("corrector_passes", corrector_passes, minimum=0, maximum=10)
        #: Threads that step the batch (:func:`step`; default: the cores this process may use).
        self.num_threads = threads.check_threads(num_threads)
        if not (math.isfinite(gravity) and gravity >= 0):
            raise InvalidParameterError(f"gravity must be >= 0 m/s²; got {gravity!r}")
        B = self.n_arms = int(n_arms)
        self.topology = ArmTopology.from_chain(chain, sections)
        self.sections = sections
        n = sections.n
        mass, inertia = self.topology.link_dynamics(chain)
        self.gravity = float(gravity)
        self.base_orientation = np.tile(np.asarray(base_orientation, dtype=float), (B, 1)) \
            if np.ndim(base_orientation) == 1 else np.array(base_orientation, dtype=float)
        rayleigh = np.stack(np.broadcast_arrays(np.asarray(rayleigh_mass, dtype=float),
                                                np.asarray(rayleigh_stiffness, dtype=float)), axis=-1)
        self.params = ArmParams(np.tile(mass, (B, 1)), np.tile(inertia, (B, 1, 1)),
                                gravity_in_base(self.base_orientation, self.gravity),
                                np.zeros((B, n)), np.ascontiguousarray(np.broadcast_to(rayleigh, (B, 2))))
        if np.any(self.params.rayleigh < 0) or not np.all(np.isfinite(self.params.rayleigh)):
            raise InvalidParameterError("Rayleigh coefficients must be finite and >= 0")
        self.set_stiffness(None, stiffness)
        zeros = np.zeros((B, n))
        self.state = ArmState(zeros.copy(), zeros.copy(), zeros.copy(), configuration(self.topology, zeros),
                              zeros.copy(), np.zeros(B), np.ones(B, dtype=bool))
        #: ``(M, C u̇ + G, G)`` at :attr:`state` (``_terms_of``) once asked for: the next step starts from them.
        self._terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._terms_of: ArmState | None = None

    @property
    def n_dof(self) -> int:
        """Smooth coordinates per arm."""
        return self.sections.n

    # ------------------------------------------------------------------ parameters (by index)

    def set_stiffness(self, index, stiffness: np.ndarray) -> None:
        """``K``'s diagonal of the arms ``index`` (``(n,)`` or one row per arm)."""
        rows = _rows(index, self.n_arms)
        k = np.broadcast_to(np.asarray(stiffness, dtype=float), (rows.size, self.n_dof))
        if not np.all(np.isfinite(k)) or np.any(k <= 0):
            raise InvalidParameterError(f"stiffness must be {self.n_dof} positive numbers per arm")
        self.params.stiffness[rows] = k
        self._terms = None

    def set_link_dynamics(self, index, chain: Chain | list[Chain]) -> None:
        """Masses and inertias of ``chain`` (one, or one per arm of ``index``) for the arms ``index``:
        the topology's chain with other masses (a payload, a mass error)."""
        rows = _rows(index, self.n_arms)
        chains = [chain] * rows.size if isinstance(chain, Chain) else list(chain)
        if len(chains) != rows.size:
            raise InvalidParameterError("one chain, or one per arm of the index")
        for row, one in zip(rows.tolist(), chains, strict=False):
            self.params.mass[row], self.params.inertia[row] = self.topology.link_dynamics(one)
        self.state.fresh[rows] = True  # as SoftArmBody (its state counts as set after new masses)
        self._terms = None

    def set_base_orientation(self, index, base_orientation: np.ndarray) -> None:
        """Turn the arms' bases in the world: quaternions ``(x, y, z, w)`` (gravity follows)."""
        rows = _rows(index, self.n_arms)
        q = np.broadcast_to(np.asarray(base_orientation, dtype=float), (rows.size, 4))
        self.params.gravity[rows] = gravity_in_base(q, self.gravity)
        self.base_orientation[rows] = q
        self.state.fresh[rows] = True
        self._terms = None

    # ------------------------------------------------------------------ state

    def reset(self, index, u: np.ndarray, w: np.ndarray | None = None, *, reference: np.ndarray | None = None,
              rest: np.ndarray | None = None) -> None:
        """Put the arms ``index`` at ``u`` with rate ``w`` (default rest), zero integrator acceleration
        and time; ``(θ, φ)`` nearest ``reference`` (``c̃`` rows; default ``θ ≥ 0``); ``rest`` the new
        ``u_rest`` (default kept). As :meth:`SoftArmBody.set_state`."""
        rows = _rows(index, self.n_arms)
        shape = (rows.size, self.n_dof)
        u = np.broadcast_to(np.asarray(u, dtype=float), shape)
        if not np.all(np.isfinite(u)):
            raise InvalidParameterError("u must be finite")
        s = self.state
        s.u[rows] = u
        s.w[rows] = 0.0 if w is None else np.broadcast_to(np.asarray(w, dtype=float), shape)
        s.a[rows] = 0.0
        s.time[rows] = 0.0
        s.fresh[rows] = True
        if rest is not None:
            s.rest[rows] = np.broadcast_to(np.asarray(rest, dtype=float), shape)
        ref = None if reference is None else \
            np.broadcast_to(np.asarray(reference, dtype=float), (rows.size, s.c.shape[1]))
        s.c[rows] = configuration(self.topology, s.u[rows], ref)
        self._terms = None

    def set_rest(self, index, rest: np.ndarray) -> None:
        """``u_rest`` of the arms ``index``."""
        rows = _rows(index, self.n_arms)
        self.state.rest[rows] = np.broadcast_to(np.asarray(rest, dtype=float), (rows.size, self.n_dof))

    def snapshot(self) -> ArmState:
        """A copy of the state (to :meth:`restore`)."""
        return self.state.copy()

    def restore(self, index, snapshot: ArmState, *, at_rest: bool = False) -> None:
        """The arms ``index`` back to ``snapshot`` (zero rate and acceleration if ``at_rest``)."""
        rows = _rows(index, self.n_arms)
        for name in ("u", "w", "a", "c", "rest", "time"):
            getattr(self.state, name)[rows] = getattr(snapshot, name)[rows]
        self.state.fresh[rows] = True
        if at_rest:
            self.state.w[rows] = 0.0
            self.state.a[rows] = 0.0
        self._terms = None

    def is_finite(self) -> np.ndarray:
        """``(B,)``: whether each arm's state is finite."""
        return np.isfinite(self.state.u).all(axis=1) & np.isfinite(self.state.w).all(axis=1)

    # ------------------------------------------------------------------ dynamics terms

    def _current_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._terms is None or self._terms_of is not self.state:
            self._terms = terms(self.topology, self.params, self.state, num_threads=self.num_threads)
            self._terms_of = self.state
        return self._terms

    def mass_matrix(self) -> np.ndarray:
        """``M(u)`` ``(B, n, n)`` at the current states."""
        return self._current_terms()[0]

    def bias(self) -> np.ndarray:
        """``C(u, u̇) u̇ + G(u)`` ``(B, n)``."""
        return self._current_terms()[1]

    def gravity_torque(self, u: np.ndarray | None = None, index=None) -> np.ndarray:
        """``G`` ``(B, n)`` at the current states or at smooth configurations ``u`` ``(B, n)``; with
        ``index``, of those arms only, at their current states (``(k, n)``)."""
        if index is not None:
            rows = _rows(index, self.n_arms)
            part = ArmState(*(getattr(self.state, f.name)[rows] for f in fields(self.state)))
            return terms(self.topology, self.params.take(rows), part, with_mass=False, num_threads=self.num_threads)[2]
        if u is None:
            return self._current_terms()[2]
        return terms(self.topology, self.params, self.state, with_mass=False, u=u, num_threads=self.num_threads)[2]

    def coriolis(self) -> np.ndarray:
        """``C(u, u̇) u̇`` ``(B, n)``."""
        _, h, g = self._current_terms()
        return h - g

    def elastic_torque(self, u: np.ndarray | None = None) -> np.ndarray:
        """``K (u − u_rest)`` ``(B, n)`` (current states or ``u``)."""
        return self.params.stiffness * ((self.state.u if u is None else u) - self.state.rest)

    def damping_torque(self) -> np.ndarray:
        """``D u̇`` ``(B, n)`` with Rayleigh ``D = α M + β K``."""
        alpha, beta = self.params.rayleigh[:, :1], self.params.rayleigh[:, 1:]
        out = beta * self.params.stiffness * self.state.w
        if np.any(alpha):
            out = out + alpha * np.einsum("bij,bj->bi", self.mass_matrix(), self.state.w)
        return out

    # ------------------------------------------------------------------ integration and measurements

    def step(self, dt: float, torque: np.ndarray, *, torque_end: np.ndarray | None = None,
             rest_end: np.ndarray | None = None, cancel_damping: bool = False,
             active: np.ndarray | None = None) -> None:
        """Advance every ``active`` arm (default all) by ``dt`` [s] (:func:`step`)."""
        start = self._terms if self._terms is not None and self._terms_of is self.state else None
        self._terms = None
        self.state = step(self.topology, self.params, self.state, dt, torque, torque_end=torque_end,
                          rest_end=rest_end, cancel_damping=cancel_damping, active=active,
                          parameters=self.alpha_parameters, corrector_passes=self.corrector_passes,
                          start_terms=start, num_threads=self.num_threads)

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Tip position [m] and linear velocity [m/s] (the last link's centre of mass), base frame, ``(B, 3)``."""
        return point_state(self.topology, self.state)


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
