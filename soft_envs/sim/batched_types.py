"""The batched soft-arm core's data (:mod:`soft_envs.sim.batched_arm`): the arms' shared
:class:`ArmTopology` (the chain and section map as the kernels read them), their per-arm
:class:`ArmParams` and :class:`ArmState`, and the row index every batched class takes."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.chain import Chain
from soft_envs.sim import batched_kernels as kernels
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


