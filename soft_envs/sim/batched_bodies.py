"""PETER and the PCC arm on the batched soft-arm core: :class:`SoftPeterBody` and :class:`PCCBody`
for ``B`` arms, each with its own parameters (what ``realism=`` draws).

:class:`BatchedSoftPeter` — per arm: leg radius, module mass and leg stiffness (a
:class:`~soft_envs.robots.Peter` per arm, :meth:`~BatchedSoftPeter.set_model`), payload, base
tilt. The legs-to-arc map depends on the radius, so it is kept per arm.
:class:`BatchedPCCBody` — per arm: segment mass, payload, stiffness; :meth:`~BatchedPCCBody.model_violation`
is ``PCCTrackEnv.model_violation`` for every arm (a reason code, :data:`VIOLATIONS`).

Both are checked step for step against the single PyBullet bodies in ``tests/sim/test_batched_arm.py``.
"""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import STANDARD_GRAVITY
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.robots.peter import Peter
from soft_envs.sim.batched_arm import BatchedSoftArm
from soft_envs.sim.batched_kernels import pcc_validity
from soft_envs.sim.batched_types import _rows
from soft_envs.sim.damping import PCC_RAYLEIGH_STIFFNESS, PETER_RAYLEIGH_STIFFNESS
from soft_envs.sim.sections import SectionMap

#: ``BatchedPCCBody.model_violation`` codes (0: valid) and the reasons ``PCCTrackEnv`` gives.
MAX_PCC_RATE = 1e4  # [m/s, rad/s]: beyond it the arm is driven beyond its model
VIOLATIONS = (None, "the state is not finite", "a segment bent by more than 180°: beyond the PCC model",
              "a segment stretched by more than half its length: beyond the PCC model",
              "a rate above 1e4 /s: the arm is driven beyond its model")


class BatchedSoftPeter(BatchedSoftArm):
    """``B`` PETER arms with compliant legs (:class:`~soft_envs.sim.peter_soft.SoftPeterBody` batched).

    Args:
        model: the nominal arm (its PCC realisation is simulated).
        n_arms: ``B``.
        payload: tip mass [kg] of every arm (per arm: :meth:`set_model`).
        gravity, rayleigh_mass, rayleigh_stiffness, base_orientation, num_threads: as :class:`BatchedSoftArm`.
    """

    def __init__(self, model: Peter, n_arms: int, *, payload: float = 0.0, gravity: float = STANDARD_GRAVITY,
                 rayleigh_mass: float = 0.0, rayleigh_stiffness: float = PETER_RAYLEIGH_STIFFNESS,
                 base_orientation: np.ndarray = (0.0, 0.0, 0.0, 1.0), num_threads: int | None = None) -> None:
        self.model = model.with_kinematics("pcc")
        self.reference_length = self.model.leg_length_at_rest
        n = self.model.n_modules
        sections = SectionMap(self.model.links_per_module, np.full(n, self.reference_length), chord=True)
        super().__init__(self.model.chain(payload), sections, self.model.stiffness().ravel(), n_arms,
                         gravity=gravity, rayleigh_mass=rayleigh_mass, rayleigh_stiffness=rayleigh_stiffness,
                         base_orientation=base_orientation, num_threads=num_threads)
        self.payload = np.full(self.n_arms, float(payload))
        #: Per-arm ``(L, a, b) = Q l`` of each module's legs, ``(B, 3, 3)`` (depends on the radius).
        self.legs_to_arc = np.tile(self.model._q_from_l, (self.n_arms, 1, 1))
        self.radius = np.full(self.n_arms, self.model.radius)

    def set_model(self, index, models: Peter | list[Peter], payload: float | np.ndarray = 0.0) -> None:
        """Simulate ``models`` (one, or one per arm of ``index``) with ``payload`` [kg]: the same arm
        with another leg radius, module mass or leg stiffness (:meth:`SoftPeterBody.set_model`)."""
        rows = _rows(index, self.n_arms)
        models = [models] * rows.size if isinstance(models, Peter) else list(models)
        if len(models) != rows.size:
            raise InvalidParameterError(f"one model, or one per arm of the index ({rows.size}); got {len(models)}")
        payloads = np.broadcast_to(np.asarray(payload, dtype=float), (rows.size,))
        mine = self.model
        chains = []
        for row, model, load in zip(rows.tolist(), models, payloads.tolist(), strict=False):
            model = model.with_kinematics("pcc")
            if (model.n_modules, model.links_per_module, model.leg_length_at_rest, model.gap) != \
                    (mine.n_modules, mine.links_per_module, mine.leg_length_at_rest, mine.gap):
                raise InvalidParameterError("set_model takes the same arm with other radius, mass or stiffness")
            self.params.stiffness[row] = model.stiffness().ravel()
            self.legs_to_arc[row] = model._q_from_l
            self.radius[row] = model.radius
            self.payload[row] = load
            chains.append(model.chain(load))
        self.set_link_dynamics(rows, chains)

    def arc_of_legs(self, legs: np.ndarray, index=None) -> np.ndarray:
        """Smooth coordinates ``u`` ``(k, n)`` of leg lengths ``(k, 3N)`` [m] of the arms ``index``."""
        to_arc = self.legs_to_arc if index is None else self.legs_to_arc[_rows(index, self.n_arms)]
        legs = np.asarray(legs, dtype=float).reshape(to_arc.shape[0], self.model.n_modules, 3)
        arc = np.empty_like(legs)
        for r in range(3):  # (the sum in the legs' order, as the GPU kernel; a few times faster than einsum)
            arc[:, :, r] = to_arc[:, r, 0, None] * legs[:, :, 0] + to_arc[:, r, 1, None] * legs[:, :, 1] \
                + to_arc[:, r, 2, None] * legs[:, :, 2]
        arc[:, :, 0] -= self.reference_length
        return arc.reshape(to_arc.shape[0], -1)

    def legs_of_arc(self, u: np.ndarray, index=None) -> np.ndarray:
        """Leg lengths ``(k, 3N)`` [m] of smooth coordinates ``u`` ``(k, n)`` of the arms ``index``."""
        rows = _rows(index, self.n_arms)
        arc = np.array(u, dtype=float).reshape(rows.size, self.model.n_modules, 3)
        arc[:, :, 0] += self.reference_length
        angles = self.model.leg_angles
        r = self.radius[rows][:, None, None]
        return (arc[..., :1] - r * (arc[..., 1:2] * np.cos(angles) + arc[..., 2:3] * np.sin(angles))).reshape(
            rows.size, -1)

    rest_of_legs = arc_of_legs

    def reset_inflation(self, index, t: np.ndarray) -> None:
        """The arms ``index`` at rest with every leg at its rest length for inflation times ``t``
        ``(3N,)`` or ``(k, 3N)`` [s] (:meth:`SoftPeterBody.reset`)."""
        rows = _rows(index, self.n_arms)
        t = np.broadcast_to(np.asarray(t, dtype=float), (rows.size, self.n_dof))
        for row in t:
            self.model.check_configuration(row)
        legs = (self.model.leg_length_at_rest + self.model.leg_rate * t).reshape(rows.size, self.model.n_modules, 3)
        # per arm with the single body's own product (Peter.arc_from_legs), to the last bit: at equal
        # leg lengths the bend (a, b) is a rounding residue whose direction sets the evaluation point
        # of a straight module (MIN_BEND along it), and so the terms at O(1e-7)
        u = np.stack([legs[i] @ self.legs_to_arc[row].T for i, row in enumerate(rows.tolist())]).reshape(rows.size, -1)
        u[:, 0::3] -= self.reference_length
        self.reset(rows, u, reference=np.zeros(3 * self.model.n_modules), rest=u)

    def leg_lengths(self) -> np.ndarray:
        """Current (deflected) leg lengths ``(B, 3N)`` [m]."""
        return self.legs_of_arc(self.state.u)


class BatchedPCCBody(BatchedSoftArm):
    """``B`` PCC arms (:class:`~soft_envs.sim.pcc_body.PCCBody` batched).

    Args:
        model: the arm (3-D or planar).
        n_arms: ``B``.
        payload: tip mass [kg] of every arm (per arm: :meth:`set_model`).
        gravity, rayleigh_mass, rayleigh_stiffness, base_orientation, num_threads: as :class:`BatchedSoftArm`.
    """

    def __init__(self, model: PCCArm, n_arms: int, *, gravity: float = STANDARD_GRAVITY, rayleigh_mass: float = 0.0,
                 rayleigh_stiffness: float = PCC_RAYLEIGH_STIFFNESS, payload: float = 0.0,
                 base_orientation: np.ndarray = (0.0, 0.0, 0.0, 1.0), num_threads: int | None = None) -> None:
        self.model = model
        sections = SectionMap(model.links_per_segment, model.segment_lengths, planar=model.planar)
        super().__init__(model.chain(payload), sections, self.stiffness_of(model), n_arms, gravity=gravity,
                         rayleigh_mass=rayleigh_mass, rayleigh_stiffness=rayleigh_stiffness,
                         base_orientation=base_orientation, num_threads=num_threads)
        self.payload = np.full(self.n_arms, float(payload))

    @staticmethod
    def stiffness_of(model: PCCArm) -> np.ndarray:
        """``K``'s diagonal of ``model`` in the smooth coordinates (as :class:`PCCBody`)."""
        k = model.stiffness()
        return k[:, :2].ravel() if model.planar else np.stack((k[:, 0], k[:, 1], k[:, 1]), axis=-1).ravel()

    def set_model(self, index, models: PCCArm | list[PCCArm], payload: float | np.ndarray = 0.0) -> None:
        """Simulate ``models`` (one, or one per arm of ``index``) with ``payload`` [kg]: the same arm with
        another segment mass (:meth:`PCCBody.set_model`; the stiffness is kept)."""
        rows = _rows(index, self.n_arms)
        models = [models] * rows.size if isinstance(models, PCCArm) else list(models)
        if len(models) != rows.size:
            raise InvalidParameterError(f"one model, or one per arm of the index ({rows.size}); got {len(models)}")
        payloads = np.broadcast_to(np.asarray(payload, dtype=float), (rows.size,))
        mine = self.model
        for model in models:
            if (model.n_segments, model.links_per_segment, model.planar) != \
                    (mine.n_segments, mine.links_per_segment, mine.planar) or \
                    not np.array_equal(model.segment_lengths, mine.segment_lengths):
                raise InvalidParameterError("set_model takes the same arm with another mass")
        self.payload[rows] = payloads
        chains = [model.chain(load) for model, load in zip(models, payloads.tolist(), strict=True)]
        self.set_link_dynamics(rows, chains)

    def reset_configuration(self, index, c: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """The arms ``index`` in configurations ``c`` (``(ΔL, θ, φ)`` per segment, the given ``(θ, φ)``
        kept) at rest or with smooth-coordinate rates ``velocity`` (:meth:`PCCBody.reset`)."""
        rows = _rows(index, self.n_arms)
        c = np.broadcast_to(np.asarray(c, dtype=float), (rows.size, self.n_dof))
        c = self.model.check_configuration(np.array(c))
        u = self.model.to_smooth(c)
        reference = None if self.model.planar else c
        self.reset(rows, u, velocity, reference=reference)

    @property
    def configuration(self) -> np.ndarray:
        """``(ΔL, θ, φ)`` per segment ``(B, n)`` (``φ`` wrapped into ``[−π, π]``; planar ``(ΔL, θ)``)."""
        if self.model.planar:
            return self.state.u.copy()
        c = self.state.c.copy()
        c[:, 2::3] = np.angle(np.exp(1j * c[:, 2::3]))
        return c

    @property
    def pcc_state(self) -> np.ndarray:
        """The paper's state ``(ε, κx, κy)`` per segment ``(B, n)`` (planar ``(ε, κ)``)."""
        return self.model.pcc_state(self.configuration)

    def model_violation(self, u: np.ndarray | None = None, w: np.ndarray | None = None) -> np.ndarray:
        """Per arm, the first reason the state is outside the PCC model's validity as an index of
        :data:`VIOLATIONS` (0: valid; :func:`pcc_violations`)."""
        return pcc_violations(self.model, self.state.u if u is None else u, self.state.w if w is None else w)

    def violation_reason(self, code: int, u: np.ndarray) -> str | None:
        """The ``termination_reason`` text of ``code`` for one arm's ``u`` ``(n,)``."""
        return pcc_violation_reason(self.model, code, u)


def pcc_violations(model: PCCArm, u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per PCC arm of the states ``u``, ``w`` ``(B, n)``, the first reason the state is outside the
    model's validity as an index of :data:`VIOLATIONS` (0: valid). Valid: finite, every segment bent
    by at most π (beyond it the arc folds through itself) and stretched by at most half its relaxed
    length, rates below 1e4 per second; per segment the bend test comes before the stretch test."""
    return pcc_validity(np.ascontiguousarray(u, dtype=float), np.ascontiguousarray(w, dtype=float),
                        model.per_segment, 0.5 * model.segment_lengths, MAX_PCC_RATE)


def pcc_violation_reason(model: PCCArm, code: int, u: np.ndarray) -> str | None:
    """The ``termination_reason`` text of a :func:`pcc_violations` ``code`` for one arm's ``u`` ``(n,)``."""
    if code != 2:
        return VIOLATIONS[code]
    per = model.per_segment
    s = np.asarray(u, dtype=float).reshape(model.n_segments, per)
    bend = np.abs(s[:, 1]) if per == 2 else np.hypot(s[:, 1], s[:, 2])
    first = float(bend[np.argmax(bend > np.pi)])
    return f"a segment bent by {np.degrees(first):.0f}° > 180°: beyond the PCC model"
