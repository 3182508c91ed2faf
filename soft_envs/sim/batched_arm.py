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
from dataclasses import fields

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_integer
from soft_envs.robots.chain import Chain
from soft_envs.sim import threads
from soft_envs.sim.backbone_kernels import batch_backbone
from soft_envs.sim.batched_ops import (  # noqa: F401  (the core's functions, where they were first imported)
    configuration,
    gravity_in_base,
    point_state,
    reference_step,
    section_map,
    step,
    terms,
)
from soft_envs.sim.batched_types import ArmParams, ArmState, ArmTopology, _rows  # noqa: F401  (as above)
from soft_envs.sim.integrator import (
    DEFAULT_CORRECTOR_PASSES,
    DEFAULT_SPECTRAL_RADIUS,
    MAX_CORRECTOR_PASSES,
    AlphaParameters,
)
from soft_envs.sim.scene import ArmScene, ContactParameters
from soft_envs.sim.sections import SectionMap

#: The most arms one batch takes (the GPU env's bound too; each arm's state is a few kB).
MAX_ARMS = 1 << 24


class BatchedSoftArm:
    """``B`` soft arms of one topology (module docstring): :class:`SoftArmBody` batched.

    Args:
        chain: the arms' rigid-link body (the nominal masses; change them per arm with
            :meth:`set_link_dynamics`).
        sections: the section map.
        stiffness: ``K``'s diagonal, ``(n,)`` or ``(B, n)`` (axial [N/m], bending [N m/rad]).
        n_arms: ``B``, 1 to :data:`MAX_ARMS` (2**24).
        gravity: standard gravity [m/s²] along the world's −z.
        rayleigh_mass, rayleigh_stiffness: ``α`` [1/s], ``β`` [s] (numbers or ``(B,)``).
        base_orientation: quaternion ``(x, y, z, w)``, ``(4,)`` or ``(B, 4)`` (default upright).
        spectral_radius, corrector_passes: the integrator's ``ρ∞`` and corrector passes (0 to
            :data:`~soft_envs.sim.integrator.MAX_CORRECTOR_PASSES`)
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
        check_integer("n_arms", n_arms, minimum=1, maximum=MAX_ARMS)
        self.alpha_parameters = AlphaParameters.from_spectral_radius(spectral_radius)
        self.corrector_passes = check_integer("corrector_passes", corrector_passes, minimum=0,
                                              maximum=MAX_CORRECTOR_PASSES)
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
        #: The shapes the arms touch (:meth:`add_scene`); ``None``: free space.
        self.scene: ArmScene | None = None
        self._chain = chain
        #: ``(M, C u̇ + G, G)`` at :attr:`state` (``_terms_of``) once asked for: the next step starts from them.
        self._terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._terms_of: ArmState | None = None

    @property
    def n_dof(self) -> int:
        """Smooth coordinates per arm."""
        return self.sections.n

    def add_scene(self, slots: int, parameters: ContactParameters | None = None) -> ArmScene:
        """Give the arms a scene of ``slots`` shapes each (:class:`~soft_envs.sim.scene.ArmScene`,
        empty: set its shapes), stepped with contact from then on; returns it."""
        self.scene = ArmScene(self._chain, self.n_arms, slots, parameters)
        return self.scene

    def backbone(self) -> tuple[np.ndarray, np.ndarray]:
        """The arms' backbone points ``(B, p + 1, 3)`` [m, base frame] and their Jacobians in ``u``
        ``(B, p + 1, 3, n)`` (:func:`soft_envs.sim.backbone_kernels.backbone`)."""
        points = np.array(self._chain.backbone_links(), dtype=np.int64)
        s = self.state
        P = np.empty((self.n_arms, points.size + 1, 3))
        PJ = np.empty((self.n_arms, points.size + 1, 3, self.n_dof))
        batch_backbone(*self.topology.arrays, s.u, s.w, s.c, points, P, PJ)
        return P, PJ

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
        ``index``, of those arms only, at their current states (``(k, n)``; not with ``u``)."""
        if index is not None and u is not None:
            raise InvalidParameterError("gravity_torque takes configurations u or an index of arms, not both")
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
                          start_terms=start, num_threads=self.num_threads, scene=self.scene)

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Tip position [m] and linear velocity [m/s] (the last link's centre of mass), base frame, ``(B, 3)``."""
        return point_state(self.topology, self.state)
