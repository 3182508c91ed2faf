"""The elastic soft-arm body: reduced-coordinate dynamics of a chain of bend sections. Both soft arms
run on it: the PCC arm (:mod:`soft_envs.sim.pcc_body`, a section is a segment) and PETER
(:mod:`soft_envs.sim.peter_soft`, a section is a module).

Backends (one soft-arm core). By default (``backend="batched"``) the rigid-body terms
and the step are the batched core's with one arm (:mod:`soft_envs.sim.single_core`: the same
kernels and integrator as the vector envs and the GPU); ``backend="pybullet"`` takes ``M`` and
``C u̇ + G`` from PyBullet's ``calculateMassMatrix`` / ``calculateInverseDynamics`` as below and
is the reference the default is tested against (``tests/envs/test_single_core.py``: whole
episodes equal to 1e-6). Either way the body is built in PyBullet, which renders it.

The body and its coordinates: :mod:`soft_envs.sim.sections` (a section's rigid-link pattern,
``q_body = B c̃``, the smooth configuration ``u`` and ``c̃ = g(u)``).

Dynamics. With ``J = ∂c̃/∂u`` and PyBullet's exact rigid-link inertia ``M_b``
(``calculateMassMatrix``) and inverse dynamics ``ID`` (``calculateInverseDynamics``, gravity
included), the equations of motion in ``u`` are

    ``M(u) ü + C(u, u̇) u̇ + G(u) + K (u − u_rest) + D u̇ = τ``,
    ``M = (BJ)ᵀ M_b (BJ)``, ``C u̇ + G = (BJ)ᵀ ID(B c̃, B J u̇, B J̇ u̇)``,

with a diagonal elastic stiffness ``K`` (axial [N/m], bending [N m/rad]) about a rest
configuration ``u_rest`` (the PCC arm: straight and relaxed; PETER: the shape of the legs'
rest lengths) and Rayleigh damping ``D = α M + β K``. A payload is a mass on the chain's last
link, so it enters ``M``, ``C`` and ``G`` exactly. Links inside a section carry no spin inertia
about their own axis (their frames spin with ``φ``, the material does not; with it ``M`` would
be infinite at ``θ = 0``), and the dynamics terms are evaluated at least ``1e-4`` rad away from
a straight section (``J`` has ``1/θ`` entries; the error is of order ``1e-8`` of the terms).

Integration (:meth:`SoftArmBody.step`, :func:`soft_envs.sim.integrator.generalized_alpha_step`).
PyBullet's own integrator cannot keep the body on the section subspace, so the core integrates
itself, with the generalised-α method (Chung & Hulbert 1993, in the form of Arnold & Brüls 2007;
``ρ∞ = 0.9``, ``ρ∞ = 1`` is the trapezoidal rule): unconditionally stable for the linear part,
with a little numerical dissipation only for modes the step does not resolve (their amplitude
falls by at most 10 % per step when ``ω dt ≫ 1``). The elastic, damping, actuation and rest-shape
terms are implicit (exactly, they are linear; actuation and rest shape at the step's start and
end; the chambers' pressure-to-torque map is constant in ``u``); ``M`` and ``h = C u̇ + G`` are
taken at the step's start by a predictor and re-evaluated at its predicted end state ``(u, u̇)`` by
one corrector pass (:attr:`SoftArmBody.corrector_passes`; two solves, two ``calculateMassMatrix``
and two ``calculateInverseDynamics`` calls per step). Where a controller feedback-linearises the
arm at every step (``step(..., cancel_damping=True)``) its ``+C u̇`` of the step's start cancels
the arm's, which is held there (:mod:`soft_envs.sim.integrator`). The actuators' own dynamics are
integrated exactly and enter at the step's start and end: the chamber regulators' first-order lag
as its exponential (:class:`~soft_envs.sim.actuators.BatchedPressureRegulator`), PETER's legs at their
constant fill and vent rates (:class:`~soft_envs.sim.actuators.BatchedPneumaticLegs`). The first step after
a state is set starts from the true acceleration.

Order, measured (``soft-envs bench convergence``: the envs' tip paths at the default step and its
halves, against a run at 1/16 of the step). The scheme before (``corrector_passes=0``: ``M``,
``C u̇ + G`` at the step's start) was first order: the tip path changed by 4.9, 2.6, 1.3 % of its
span per halving of the PCC study (2 s) and by 0.066, 0.033, 0.016 % on PETER with 0.5 kg (1/240 s).
Three terms made it so: (1) the PCC env's set-point, sampled for the PD + feed-forward law one
*physics* step ahead of its tick (a time shift of ``dt``; now the end of the law's hold, the same at
the 5 ms default) — 4.9 → 1.6 % on the first halving; (2) the gravity torque ``G`` at the step's
start — PETER's first-order error (with only ``G`` corrected the changes shrink 3.8×, with only
``M`` 2.1×); (3) the velocity product ``C u̇`` at the step's start, first order with a small
constant — with ``M`` and ``G`` at the end but ``C u̇`` at the start (the previous version) the PCC
study's second halving shrank 2.3×, with ``C u̇`` at the end too 3.5×. ``M`` at the start is
negligible. Now, at the default steps, the paths are 0.10 % (PETER, 1/120 s; its changes shrink
4.0× and 4.0×), 0.23 % (PCC through the chambers, 5 ms; 7.4× then 3.5×) and 0.63 % (PCC with
``actuation="direct"``, 2.5 ms; 10.9× then 1.1×) of their span from the reference. Between 1.25
and 0.3 ms the PCC arm's changes shrink unevenly while its fast axial modes come into resolution;
below, by 4.1× (chambers) and 3.6× (direct) per halving (the bench's deep table, to 0.08 ms).
Without the PCC env's command ramp (``command_ramp_time=0``) the changes shrink 4.2× and 3.9×, and
the 5 ms path is 1.8 % from the reference (the lightly damped first mode's phase error: the law
cancels the arm's damping; 0.4 % at 2.5 ms). One corrector pass has converged the corrector: a
second moves every figure by less than 0.01 % of the span. With ``actuation="direct"`` the law's
torque, held over 5 ms with no regulator lag to smooth it, drives the arm's axial modes, which a
5 ms step does not resolve: 11 % from the reference at 5 ms (19 % without the ramp), hence that
actuation's 2.5 ms step.
Also checked in ``tests/sim``: an undamped elastic oscillation keeps its amplitude (the
four-segment arm's first mode, 10 periods at 5 ms: 100 %; one segment's 172 rad/s mode, 6 steps
per period: 99 %; the semi-implicit Euler it replaced removed 96 % within 50–100 ms at 2 ms), and
a horizontal cantilever sags as Euler–Bernoulli's ``w L⁴ / 8 E I`` (within 2 % with four
sections; one constant-curvature section gives the energy method's ``w L⁴ / 12 E I``). The state
is written into PyBullet (``resetJointStatesMultiDof``) only when a PyBullet quantity is asked
for (tip, frames, rendering).

Parameter sources (``[seed]`` a paper's number, ``[assumed]`` an assumption, ``[derived]``):

============================================  =========================================================
PETER
leg law ``l(t) = 42.926 mm + 10 mm/s · t``    [seed 000, eq. 1]; also the legs' fill rate
leg circle 45 mm, module mass 0.12 kg         [assumed, SPEC section 2]; gap 17 mm [seed 000]
leg stiffness 1300 N/m                        [assumed]: 0.5 kg sags the 2-module arm 2.5 mm
module stiffness ``3k``, ``3/2 k r²``         [derived]: :meth:`Peter.stiffness`
venting 10 mm/s, valve delay 0                [assumed]; Rayleigh ``β = 0.02 s`` [assumed]
PCC arm
17.3 g, 64.4 mm, E = 80 MPa, ν = 0.49         [seed 004 section 3.2] (E: the stiff option only)
eq. 9's α₁ = 8e-4 m², α₂ = 7.91e-7 m⁴         [seed 004 section 4; exponent signs read on the
                                              bellow geometry, :mod:`soft_envs.robots.pcc_pressure`]
pressure bound ±30 kPa                        [assumed]; stiffness calibrated on it [derived]
regulator lag 10 ms                           [assumed]; dead time 100–150 ms [seed 004], option
PD + feed-forward ``k_p = 80``, ``k_v = 3``   [seed 004]; every 5 ms [seed 004: 250 Hz loop]
Rayleigh ``β = 5e-3 s``                       [assumed]; 17.3 g spread over the ``m`` links
both
gravity 9.81 m/s²; ``ρ∞ = 0.9``               5 ms (PCC) and 1/120 s (PETER) steps [numerical choices]
============================================  =========================================================
"""

from __future__ import annotations

import itertools

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative
from soft_envs.geometry import check_unit_quaternion, quaternion_to_matrix
from soft_envs.robots.chain import Chain
from soft_envs.sim.batched_integrator import single_correct, single_predict
from soft_envs.sim.batched_kernels import arm_section_map
from soft_envs.sim.bullet import STANDARD_GRAVITY, connect, disconnect, pybullet
from soft_envs.sim.integrator import (
    DEFAULT_CORRECTOR_PASSES,
    DEFAULT_SPECTRAL_RADIUS,
    MAX_CORRECTOR_PASSES,
    AlphaParameters,
)
from soft_envs.sim.sections import SectionMap, spinless_sections
from soft_envs.sim.single_core import BACKENDS, SingleArmCore
from soft_envs.sim.urdf import load_chain


class SoftArmBody:
    """A chain of elastic bend sections in a PyBullet ``client`` (see the module docstring).

    Args:
        client: a ``BulletClient`` owned by the caller.
        chain: the arm's rigid-link body (the sections' links in order, ``2m + 3`` per section).
        sections: the map from the smooth coordinates to the body's joints.
        stiffness: the diagonal of ``K``, ``(n,)``: axial [N/m], bending [N m/rad].
        gravity: standard gravity [m/s²] along the world's −z (set on the client, in the arm's base
            frame: PyBullet's inverse dynamics uses it so; one arm per client).
        rayleigh_mass, rayleigh_stiffness: ``α`` [1/s] and ``β`` [s] of ``D = α M + β K``.
        base_position: where the arm's foot is in the world [m].
        base_orientation: the arm's base frame in the world, a quaternion ``(x, y, z, w)``
            (default upright: the arm's ``z`` along the world's ``z``, against gravity).
        backend: where ``M`` and ``C u̇ + G`` come from and what steps: ``"batched"`` (default; the
            batched core with one arm, :mod:`soft_envs.sim.single_core`) or ``"pybullet"``
            (``calculateMassMatrix`` / ``calculateInverseDynamics``, the reference).

    Measurements (:meth:`tip_state`, :meth:`link_frames`) are in the arm's base frame.
    State: :attr:`u` (smooth configuration), :attr:`w` (its rate), :attr:`rest` (``u_rest``),
    :attr:`time` [s].
    """

    def __init__(self, client, chain: Chain, sections: SectionMap, stiffness: np.ndarray, *,
                 gravity: float = STANDARD_GRAVITY, rayleigh_mass: float = 0.0, rayleigh_stiffness: float = 0.0,
                 base_position: tuple[float, float, float] = (0.0, 0.0, 0.0),
                 base_orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0),
                 spectral_radius: float = DEFAULT_SPECTRAL_RADIUS,
                 corrector_passes: int = DEFAULT_CORRECTOR_PASSES, backend: str = "batched") -> None:
        if backend not in BACKENDS:
            raise InvalidParameterError(f"backend must be one of {BACKENDS}; got {backend!r}")
        self.backend = backend
        self.alpha_parameters = AlphaParameters.from_spectral_radius(spectral_radius)
        self.corrector_passes = check_integer("corrector_passes", corrector_passes, minimum=0,
                                              maximum=MAX_CORRECTOR_PASSES)
        check_nonnegative(gravity=gravity, rayleigh_mass=rayleigh_mass, rayleigh_stiffness=rayleigh_stiffness)
        stiffness = np.asarray(stiffness, dtype=float)
        if stiffness.shape != (sections.n,) or not np.all(np.isfinite(stiffness)) or np.any(stiffness <= 0):
            raise InvalidParameterError(f"stiffness must be {sections.n} positive numbers; got {stiffness!r}")
        if len(chain.links) != sections.n_sections * sections.joints_per_section:
            raise InvalidParameterError("the chain does not match the section map")
        self.client = client
        self.sections = sections
        self.gravity = float(gravity)
        self.alpha, self.beta = float(rayleigh_mass), float(rayleigh_stiffness)
        self.base_position = np.asarray(base_position, dtype=float)
        self.base_rotation = quaternion_to_matrix(check_unit_quaternion(np.asarray(base_orientation, dtype=float)))
        self.stiffness = stiffness
        # PyBullet's inverse dynamics of a fixed-base body takes the gravity vector in the base
        # frame: the world's −z gravity, turned into it.
        client.setGravity(*(self.base_rotation.T @ np.array([0.0, 0.0, -self.gravity])).tolist())
        self.chain = spinless_sections(chain, sections.joints_per_section)
        self.body = load_chain(client, self.chain, basePosition=list(base_position),
                               baseOrientation=[float(x) for x in base_orientation], useFixedBase=True,
                               flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        self.n_joints = client.getNumJoints(self.body)
        self.joints = list(range(self.n_joints))
        self.tip_link = self.n_joints - 1
        client.setJointMotorControlArray(self.body, self.joints, pybullet.VELOCITY_CONTROL,
                                         forces=[0.0] * self.n_joints)
        self.B = sections.B
        # Where M and C u̇ + G come from: this body, until set_link_dynamics gives the links other
        # inertias (then a body of its own client; see there).
        self._dynamics_client = None
        self._use_dynamics_of(client, self.body)
        #: The batched core that computes the terms and steps (``backend="batched"``), else None.
        self._core = SingleArmCore(chain, sections, stiffness, self._gravity_in_base(), (self.alpha, self.beta)) \
            if backend == "batched" else None
        n = sections.n
        self.u, self.w, self.rest = np.zeros(n), np.zeros(n), np.zeros(n)
        self.a = np.zeros(n)  # the integrator's acceleration state
        self._diagonal = np.diag_indices(n)
        self.spectral_radius = float(spectral_radius)
        self.c = sections.configuration(self.u)
        self.time = 0.0
        self._zeros = [0.0] * self.n_joints
        self._scratch, self._vec = np.empty((n, n)), np.empty((12, n))  # the compiled step's scratch
        self._section_flags = np.array([sections.planar, sections.chord, sections.links], dtype=np.int64)
        self._blocks, self._no_rate = np.empty((sections.n_sections, 3, 3)), np.zeros(n)
        self._cache: dict[str, np.ndarray] = {}
        self._bullet_stale = True
        self._update()

    @property
    def n_dof(self) -> int:
        """Number of smooth coordinates."""
        return self.sections.n

    # ------------------------------------------------------------------ state

    def set_state(self, u: np.ndarray, w: np.ndarray | None = None, *, reference: np.ndarray | None = None,
                  reset_time: bool = True) -> None:
        """Put the arm at smooth configuration ``u`` with rate ``w`` (default at rest); the body's
        ``(θ, φ)`` representation nearest ``reference`` (a ``c̃``; default ``θ ≥ 0``)."""
        u = np.array(u, dtype=float)
        if u.shape != (self.n_dof,) or not np.all(np.isfinite(u)):
            raise InvalidParameterError(f"u must be {self.n_dof} finite numbers; got {u!r}")
        self.u = u
        self.w = np.zeros(self.n_dof) if w is None else np.array(w, dtype=float)
        self.a = np.zeros(self.n_dof)
        if reset_time:
            self.time = 0.0
        self.c = self.sections.configuration(self.u, reference)
        self._update()

    def _kinematics(self, u: np.ndarray, w: np.ndarray | None, reference: np.ndarray) -> dict:
        """The maps at ``(u, w)``: ``ce`` (``c̃`` at the evaluation point), ``J``, ``BJ``, ``acc``
        (``J̇ w``; zeros without ``w``) and the body's joint values ``qb`` (list); ``θ``'s sign
        nearest ``reference``. The compiled section map of the batched core
        (:func:`~soft_envs.sim.batched_kernels.arm_section_map`; :class:`SectionMap`'s arithmetic,
        ~15 µs less per call than its Python loops)."""
        n, rows = self.sections.n, 3 * self.sections.n_sections
        c, ue, ce, acc, J = np.empty(rows), np.empty(n), np.empty(rows), np.empty(rows), np.empty((rows, n))
        arm_section_map(self._section_flags, self.sections.reference_lengths, np.ascontiguousarray(u, dtype=float),
                        self._no_rate if w is None else np.ascontiguousarray(w, dtype=float),
                        np.ascontiguousarray(reference, dtype=float), c, ue, ce, J, acc, self._blocks)
        return {"c": c, "ce": ce, "J": J, "BJ": self.B @ J, "acc": acc, "qb": (self.B @ ce).tolist()}

    def _update(self, state_set: bool = True, c: np.ndarray | None = None) -> None:
        """A new state: ``c̃`` nearest the previous one (or ``c``, the batched step's), the terms
        forgotten. ``state_set``: set from outside, so the next step starts from the true acceleration."""
        self._state_set = state_set
        if c is None:
            self._cache = self._kinematics(self.u, self.w, self.c)
            self.c = self._cache["c"]
        else:
            self.c, self._cache = c, {}
        self._bullet_stale = True

    def _kin(self) -> dict:
        """The section maps at the current state (:meth:`_kinematics`), computed once per state."""
        if "BJ" not in self._cache:
            self._cache.update(self._kinematics(self.u, self.w, self.c))
        return self._cache

    def _gravity_in_base(self) -> np.ndarray:
        return self.base_rotation.T @ np.array([0.0, 0.0, -self.gravity])

    def _core_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(M, C u̇ + G, G)`` of the current state from the batched core, kept until the state changes."""
        if "M" not in self._cache or "h" not in self._cache or "G" not in self._cache:
            assert self._core is not None
            self._core.params.rayleigh[0] = (self.alpha, self.beta)
            self._cache["M"], self._cache["h"], self._cache["G"] = self._core.terms(self.u, self.w, self.c,
                                                                                    self.stiffness, own=True)
        return self._cache["M"], self._cache["h"], self._cache["G"]

    def _mass_of(self, kin: dict) -> np.ndarray:
        BJ, n = kin["BJ"], self.n_joints
        Mb = np.fromiter(itertools.chain.from_iterable(self._mass_matrix_of(self._dynamics_body, kin["qb"])),
                         float, n * n).reshape(n, n)
        return BJ.T @ Mb @ BJ

    def _bias_of(self, kin: dict, w: np.ndarray) -> np.ndarray:
        BJ = kin["BJ"]
        tau = self._inverse_dynamics(self._dynamics_body, kin["qb"], (BJ @ w).tolist(), (self.B @ kin["acc"]).tolist())
        return BJ.T @ np.asarray(tau)

    def sync_bullet(self) -> None:
        """Write the state into PyBullet (done lazily before any query of the PyBullet body)."""
        if not self._bullet_stale:
            return
        qb, vb = self.B @ self.c, self._kin()["BJ"] @ self.w
        self.client.resetJointStatesMultiDof(self.body, self.joints, [[float(x)] for x in qb],
                                             targetVelocities=[[float(x)] for x in vb])
        self._bullet_stale = False

    def _use_dynamics_of(self, client, body: int) -> None:
        """Take M and C u̇ + G from ``body`` of ``client`` (gravity set in the arm's base frame)."""
        client.setGravity(*(self.base_rotation.T @ np.array([0.0, 0.0, -self.gravity])).tolist())
        # BulletClient builds a new partial on every attribute access: keep the two hot ones.
        self._mass_matrix_of = client.calculateMassMatrix
        self._inverse_dynamics = client.calculateInverseDynamics
        self._dynamics_body = body

    def set_link_dynamics(self, chain: Chain) -> None:
        """Give the simulated links the masses and inertias of ``chain``: the chain the body was
        built from with other masses (a payload, a mass error) — its joints, offsets and centres
        of mass must be the body's.

        PyBullet builds the inverse-dynamics tree of a body (``calculateMassMatrix`` /
        ``calculateInverseDynamics``) at their first call and never rebuilds it:
        ``changeDynamics`` afterwards moves the body's own masses but not the tree's. So the
        dynamics of changed inertias come from a body loaded with them into a private DIRECT
        client of this arm, replaced at every change (a fresh client frees all of it; loading
        bodies into one client grows PyBullet's memory by ~80 kB a body). The shown body (``body``,
        for rendering and the link frames) gets the masses by ``changeDynamics``.
        """
        spinless = spinless_sections(chain, self.sections.joints_per_section)
        if len(spinless.links) != len(self.chain.links) or any(
                a.joint != b.joint or a.offset != b.offset or a.body.com != b.body.com
                for a, b in zip(spinless.links, self.chain.links, strict=True)):
            raise InvalidParameterError("set_link_dynamics takes the body's own chain with other masses")
        changed = False
        for k, (old, new) in enumerate(zip(self.chain.links, spinless.links, strict=True)):
            if old.body.mass != new.body.mass or old.body.inertia != new.body.inertia:
                self.client.changeDynamics(self.body, k, mass=new.body.mass,
                                           localInertiaDiagonal=list(new.body.inertia))
                changed = True
        self.chain = spinless
        if self._core is not None:
            self._core.set_link_dynamics(chain)
        elif changed:
            self._close_dynamics_client()
            self._dynamics_client = connect(gui=False)
            body = load_chain(self._dynamics_client, self.chain, useFixedBase=True,
                              flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
            self._use_dynamics_of(self._dynamics_client, body)
        self._update()

    def _close_dynamics_client(self) -> None:
        disconnect(self._dynamics_client)
        self._dynamics_client = None

    def close(self) -> None:
        """Free the private dynamics client (if any); the shown body's client is the caller's."""
        self._close_dynamics_client()

    def set_base_orientation(self, base_orientation: tuple[float, float, float, float]) -> None:
        """Turn the arm's base in the world: a quaternion ``(x, y, z, w)`` (gravity follows)."""
        quaternion = check_unit_quaternion(np.asarray(base_orientation, dtype=float))
        self.base_rotation = quaternion_to_matrix(quaternion)
        self.client.resetBasePositionAndOrientation(self.body, self.base_position.tolist(), quaternion.tolist())
        self.client.setGravity(*(self.base_rotation.T @ np.array([0.0, 0.0, -self.gravity])).tolist())
        if self._dynamics_client is not None:
            self._dynamics_client.setGravity(*(self.base_rotation.T @ np.array([0.0, 0.0, -self.gravity])).tolist())
        if self._core is not None:
            self._core.set_gravity(self._gravity_in_base())
        self._update()

    def snapshot(self) -> tuple:
        """The state, to :meth:`restore` later (references: the state arrays are replaced, never mutated)."""
        return self.u, self.w, self.a, self.c, self.rest, self.time

    def restore(self, snapshot: tuple, *, at_rest: bool = False) -> None:
        """Go back to a :meth:`snapshot` (with zero rate and acceleration if ``at_rest``)."""
        self.u, self.w, self.a, self.c, self.rest, self.time = snapshot
        if at_rest:
            self.w, self.a = np.zeros(self.n_dof), np.zeros(self.n_dof)
        self._update()

    def is_finite(self) -> bool:
        """Whether the state is finite."""
        return bool(np.all(np.isfinite(self.u)) and np.all(np.isfinite(self.w)))

    # ------------------------------------------------------------------ dynamics terms (in u)

    def configuration_terms(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``M(u)`` and ``G(u)`` at the smooth configuration ``u`` (the corrector where ``C u̇`` is held)."""
        if self._core is not None:
            M, _, G = self._core.terms(np.asarray(u, dtype=float), None, self.c, self.stiffness)
            return M, G
        kin = self._kinematics(u, None, self.c)
        tau = self._inverse_dynamics(self._dynamics_body, kin["qb"], self._zeros, self._zeros)
        return self._mass_of(kin), kin["BJ"].T @ np.asarray(tau)

    def state_terms(self, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``M(u)`` and ``C(u, u̇) u̇ + G(u)`` at the state ``(u, u̇ = w)`` (the integrator's corrector;
        ``θ``'s sign nearest the current state's)."""
        if self._core is not None:
            M, h, _ = self._core.terms(np.asarray(u, dtype=float), np.asarray(w, dtype=float), self.c, self.stiffness)
            return M, h
        kin = self._kinematics(u, w, self.c)
        return self._mass_of(kin), self._bias_of(kin, w)

    def mass_matrix(self) -> np.ndarray:
        """``M(u)`` at the current state."""
        if self._core is not None:
            return self._core_terms()[0]
        M = self._cache.get("M")
        if M is None:
            M = self._cache["M"] = self._mass_of(self._kin())
        return M

    def bias(self) -> np.ndarray:
        """``C(u, u̇) u̇ + G(u)`` at the current state."""
        if self._core is not None:
            return self._core_terms()[1]
        h = self._cache.get("h")
        if h is None:
            h = self._cache["h"] = self._bias_of(self._kin(), self.w)
        return h

    def gravity_torque(self, u: np.ndarray | None = None) -> np.ndarray:
        """``G(u)``: the current state's, or that of the smooth configuration ``u``."""
        if self._core is not None:
            if u is None:
                return self._core_terms()[2]
            return self._core.terms(np.asarray(u, dtype=float), None, self.c, self.stiffness, with_mass=False)[2]
        if u is None:
            G = self._cache.get("G")
            if G is None:
                kin = self._kin()
                tau = self._inverse_dynamics(self._dynamics_body, kin["qb"], self._zeros, self._zeros)
                G = self._cache["G"] = kin["BJ"].T @ np.asarray(tau)
            return G
        kin = self._kinematics(np.asarray(u, dtype=float), None, self.c)
        tau = self._inverse_dynamics(self._dynamics_body, kin["qb"], self._zeros, self._zeros)
        return kin["BJ"].T @ np.asarray(tau)

    def coriolis(self) -> np.ndarray:
        """``C(u, u̇) u̇`` at the current state."""
        return self.bias() - self.gravity_torque()

    def elastic_torque(self, u: np.ndarray | None = None) -> np.ndarray:
        """``K (u − u_rest)``: axial force [N] and bending moments [N m] (current state or ``u``)."""
        return self.stiffness * ((self.u if u is None else np.asarray(u, dtype=float)) - self.rest)

    def damping_matrix(self) -> np.ndarray:
        """Rayleigh ``D = α M + β K`` at the current state."""
        D = self._cache.get("D")
        if D is None:
            D = self.alpha * self.mass_matrix() if self.alpha else np.zeros((self.n_dof, self.n_dof))
            D[np.diag_indices(self.n_dof)] += self.beta * self.stiffness
            self._cache["D"] = D
        return D

    def energy(self) -> float:
        """Kinetic plus elastic energy [J] (gravity excluded)."""
        return float(0.5 * self.w @ self.mass_matrix() @ self.w
                     + 0.5 * np.sum(self.stiffness * (self.u - self.rest) ** 2))

    # ------------------------------------------------------------------ integration

    def step(self, dt: float, torque: np.ndarray, *, torque_end: np.ndarray | None = None,
             rest_end: np.ndarray | None = None, cancel_damping: bool = False) -> None:
        """Advance by ``dt`` [s] with the generalised-α method
        (:func:`~soft_envs.sim.integrator.generalized_alpha_step`, :attr:`corrector_passes`; its
        compiled transcription, :func:`~soft_envs.sim.batched_integrator.single_predict` and
        ``single_correct``, the batched core's arithmetic, on PyBullet's terms).

        ``torque`` is the generalised actuation in ``u`` at the step's start (and ``torque_end``
        at its end, default the same); ``rest_end`` the rest configuration at the step's end
        (default unchanged). ``cancel_damping``: a controller feedback-linearises the arm at this
        step (its ``+D u̇`` applied at the same, implicit, velocity: the damping force is dropped;
        its ``+C u̇`` of the step's start: the arm's velocity product is held there,
        :mod:`~soft_envs.sim.integrator`).
        """
        n = self.n_dof
        tau_s = np.array(torque, dtype=float)
        tau_e = tau_s if torque_end is None else np.array(torque_end, dtype=float)
        rest_e = self.rest if rest_end is None else np.array(rest_end, dtype=float)
        if tau_s.shape != (n,) or tau_e.shape != (n,) or rest_e.shape != (n,):
            raise InvalidParameterError(f"torques and rest configurations must have {n} entries")
        if self._core is not None:  # the batched core, one arm: terms, predictor, corrector in one call
            self._core.params.rayleigh[0] = (self.alpha, self.beta)
            start = self._core_terms() if "M" in self._cache else None
            self.u, self.w, self.a, c = self._core.step(
                (self.u, self.w, self.a, self.c, self.rest, self._state_set), self.stiffness, float(dt), tau_s, tau_e,
                rest_e, bool(cancel_damping), self.alpha_parameters, self.corrector_passes, start)
            if rest_end is not None:
                self.rest = rest_e
            self.time += dt
            self._update(state_set=False, c=c)
            return
        M_s = self.mass_matrix()
        held = self.coriolis() if cancel_damping and self.corrector_passes else None  # C u̇ held at the start
        u, w, a = np.empty(n), np.empty(n), np.empty(n)
        coefficients = (float(dt), *self.alpha_parameters)
        single_predict(self.u, self.w, self.a, self.stiffness, np.array([self.alpha, self.beta]), self.rest, rest_e,
                       tau_s, tau_e, bool(cancel_damping), self._state_set and self.corrector_passes > 0,
                       coefficients, self.corrector_passes, M_s, self.bias(), self._scratch, self._vec, u, w, a)
        for _ in range(self.corrector_passes):
            if held is None:
                M_e, h_e = self.state_terms(u.copy(), w.copy())
            else:
                M_e, G_e = self.configuration_terms(u.copy())
                h_e = G_e + held
            single_correct(self.stiffness, rest_e, tau_e, coefficients, M_e, h_e, M_s, self._scratch, self._vec,
                           u, w, a)
        self.u, self.w, self.a = u, w, a
        if rest_end is not None:
            self.rest = rest_e
        self.time += dt
        self._update(state_set=False)

    # ------------------------------------------------------------------ measurements

    def tip_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Tip position [m] and linear velocity [m/s] (the last link's centre of mass), base frame."""
        if self._core is not None:
            return self._core.tip_state(self.u, self.w, self.c)
        self.sync_bullet()
        state = self.client.getLinkState(self.body, self.tip_link, computeLinkVelocity=1,
                                         computeForwardKinematics=1)
        R = self.base_rotation
        return R.T @ (np.asarray(state[0]) - self.base_position), R.T @ np.asarray(state[6])

    def link_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Simulated centre-of-mass positions ``(K, 3)`` [m] (base frame) and link rotations ``(K, 3, 3)``."""
        self.sync_bullet()
        states = self.client.getLinkStates(self.body, self.joints, computeForwardKinematics=1)
        R = self.base_rotation
        pos = (np.array([s[0] for s in states]) - self.base_position) @ R
        rot = R.T @ quaternion_to_matrix(np.array([s[1] for s in states]))
        return pos, rot

