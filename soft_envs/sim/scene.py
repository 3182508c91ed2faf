"""The soft arms' scene: the shapes each arm of a batch can touch and the contact's parameters, one
object that the single envs (a batch of one), the native vector envs and the GPU env share.

:class:`ArmScene` holds, per arm, ``S`` slots of packed shape rows (:mod:`soft_envs.collision`:
planes, spheres, capsules, boxes; ``EMPTY`` where a slot is unused) in the arm's base frame, the
shapes' velocities (a free object's surface moves), each slot's contact parameters and what the last
step measured (contacts, the deepest penetration, the total normal force on the arm, which shapes
were touched and the wrench on each). :class:`~soft_envs.sim.batched_arm.BatchedSoftArm` steps its
arms through :func:`soft_envs.sim.contact.batch_step_contact` while its scene has a shape.

Parameters (:class:`ContactParameters`), and where they come from:

* ``stiffness`` 10⁵ N/m per contact — an assumption sized by the penetration the tasks allow
  (1 mm): a PETER leg is a spring of ``K_axial / 3`` = 1.3 kN/m (``Peter.stiffness``), whose
  fill over its whole 20 mm stroke against an obstacle pushes with ~26 N, which this stiffness holds
  to 0.26 mm; the arm's own tip stiffness (~4·10² N/m: 1.7 N for the 4 mm of ``soft-envs bench
  contact``'s statics check) is far below it, so an obstacle is rigid to the arm. (Drake's default
  point-contact stiffness, 10⁶ N/m, is sized the same way for a robot's weight on a 1 mm allowance.)
* ``damping_ratio`` 1 (critical) with respect to the mass of one backbone segment (the arm's mass
  over its segments): ``c = 2 ζ √(k m)`` (MuJoCo's ``solref`` default damping ratio).
* ``friction`` μ = 0.6 — silicone rubber on a smooth hard surface, dry: 0.5–0.8 is the range quoted
  in tables of elastomer friction (an assumption within it; users set theirs).
* ``stiction_speed`` v_s = 0.1 mm/s: friction's regularisation (Drake's default); a held tangential
  load ``F_t < μ F_n`` creeps at ``v_s F_t / (μ F_n)`` at most. Its slope ``μ f_n / v_s`` is in the
  step's matrix, so a small ``v_s`` costs no stability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from soft_envs.collision import EMPTY, SHAPE_WIDTH
from soft_envs.exceptions import InvalidParameterError, check_integer, check_positive
from soft_envs.robots.chain import Chain
from soft_envs.sim.batched_types import _rows
from soft_envs.sim.contact import MAX_SHAPES, MAX_SUBSTEPS


@dataclass(frozen=True)
class ContactParameters:
    """Contact between an arm's capsules and a shape (module docstring for the defaults' sources):
    ``stiffness`` [N/m], ``damping_ratio``, Coulomb ``friction`` μ, ``stiction_speed`` [m/s]."""

    stiffness: float = 1.0e5
    damping_ratio: float = 1.0
    friction: float = 0.6
    stiction_speed: float = 1.0e-4

    def __post_init__(self) -> None:
        check_positive("stiffness [N/m]", self.stiffness)
        check_positive("stiction_speed [m/s]", self.stiction_speed)
        for name in ("damping_ratio", "friction"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InvalidParameterError(f"{name} must be a finite number >= 0; got {value!r}")

    def row(self, segment_mass: float) -> np.ndarray:
        """``(k [N/m], c [N s/m], μ, v_s [m/s])`` for a segment of ``segment_mass`` [kg]."""
        damping = 2.0 * self.damping_ratio * math.sqrt(self.stiffness * segment_mass)
        return np.array([self.stiffness, damping, self.friction, self.stiction_speed])


class ArmScene:
    """Shapes for ``n_arms`` arms of one chain, ``slots`` per arm (module docstring).

    Args:
        chain: the arms' body (its :meth:`~soft_envs.robots.chain.Chain.backbone_links` and
            ``body_radius`` make the capsules).
        n_arms: ``B``.
        slots: shapes per arm (at most :data:`MAX_SHAPES`).
        parameters: the contact's parameters, every slot's (per arm and slot: :meth:`set_parameters`).
    """

    def __init__(self, chain: Chain, n_arms: int, slots: int,
                 parameters: ContactParameters | None = None) -> None:
        B = check_integer("n_arms", n_arms, minimum=1)
        S = check_integer("slots", slots, minimum=1, maximum=MAX_SHAPES)
        if chain.body_radius <= 0:
            raise InvalidParameterError(f"the chain {chain.name!r} has no collision envelope (body_radius 0)")
        self.radius = float(chain.body_radius)
        #: Link indices of the backbone's points after the base origin.
        self.points = np.array(chain.backbone_links(), dtype=np.int64)
        self.segment_mass = float(chain.masses.sum()) / self.points.size
        self.shapes = np.zeros((B, S, SHAPE_WIDTH))
        self.velocity = np.zeros((B, S, 6))
        #: ``(B, S, 4)``: each arm's and slot's ``(k [N/m], c [N s/m], μ, v_s [m/s])``
        #: (:meth:`ContactParameters.row`).
        self.cp = np.tile((parameters or ContactParameters()).row(self.segment_mass), (B, S, 1))
        #: What the last step measured at its end state, per arm: contacts, deepest penetration [m],
        #: total normal force on the arm [N], the contact springs' energy [J]
        #: (:data:`soft_envs.sim.contact.DIAG_CONTACTS`, ...).
        self.diagnostics = np.zeros((B, 4))
        #: ``(B, S)``: whether the arm touched each shape at the last step's end state.
        self.touched = np.zeros((B, S), dtype=np.bool_)
        #: ``(B, S, 6)``: the force [N] on each shape and its moment [N m] about the shape's origin.
        self.wrench = np.zeros((B, S, 6))
        self._max_substeps = MAX_SUBSTEPS

    @property
    def max_substeps(self) -> int:
        """The most sub-steps a contact step of these arms is split into where a fast body meets a shape
        (:func:`soft_envs.sim.contact.arm_step_contact`; default :data:`~soft_envs.sim.contact.MAX_SUBSTEPS`);
        1: whole steps (a coupling that steps an object once per arm step,
        :class:`~soft_envs.sim.arm_objects.ArmBoxCoupling`, sets it)."""
        return self._max_substeps

    @max_substeps.setter
    def max_substeps(self, value: int) -> None:
        self._max_substeps = check_integer("max_substeps", value, minimum=1, maximum=1024)

    @property
    def n_arms(self) -> int:
        return int(self.shapes.shape[0])

    @property
    def slots(self) -> int:
        return int(self.shapes.shape[1])

    def has_shapes(self) -> bool:
        """Whether any arm has a shape (else the arms step in free space, without the contact kernel)."""
        return bool(np.any(self.shapes[:, :, 0] != EMPTY))

    def set_shapes(self, index, rows: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """The shapes of the arms ``index``: ``rows`` ``(S', 16)`` for all of them or ``(k, S', 16)``
        one set per arm (``S' ≤ slots``; the remaining slots EMPTY), in each arm's base frame;
        ``velocity`` ``(…, S', 6)`` their linear [m/s] and angular [rad/s] velocities (default at rest)."""
        index = _rows(index, self.n_arms)
        rows = np.asarray(rows, dtype=float)
        if rows.ndim not in (2, 3) or rows.shape[-1] != SHAPE_WIDTH or rows.shape[-2] > self.slots:
            raise InvalidParameterError(f"shape rows must be (S, {SHAPE_WIDTH}) or (arms, S, {SHAPE_WIDTH}) with "
                                        f"S <= {self.slots}; got {rows.shape}")
        if not np.all(np.isfinite(rows)):
            raise InvalidParameterError("shape rows must be finite")
        count = rows.shape[-2]
        self.shapes[index] = 0.0
        self.shapes[index, :count] = rows if rows.ndim == 3 else rows[None]
        self.velocity[index] = 0.0
        if velocity is not None:
            self.velocity[index, :count] = np.broadcast_to(np.asarray(velocity, dtype=float),
                                                           (index.size, count, 6))

    def set_velocity(self, index, velocity: np.ndarray) -> None:
        """The velocities ``(k, S, 6)`` of the arms' shapes (a moving object's, every step)."""
        index = _rows(index, self.n_arms)
        self.velocity[index] = np.broadcast_to(np.asarray(velocity, dtype=float), (index.size, self.slots, 6))

    def set_parameters(self, index, parameters: ContactParameters, slot: int | None = None) -> None:
        """The contact's parameters of the arms ``index`` with the shape in ``slot`` (default: every slot)."""
        rows = _rows(index, self.n_arms)
        if slot is None:
            self.cp[rows] = parameters.row(self.segment_mass)
        else:
            self.cp[rows, check_integer("slot", slot, minimum=0, maximum=self.slots - 1)] = \
                parameters.row(self.segment_mass)

    def clear(self, index=None) -> None:
        """No shapes and no measurements for the arms ``index`` (default all)."""
        index = _rows(index, self.n_arms)
        self.shapes[index] = 0.0
        self.velocity[index] = 0.0
        self.clear_measurements(index)

    def clear_measurements(self, index=None) -> None:
        """Zero the last step's measurements of the arms ``index`` (default all)."""
        index = _rows(index, self.n_arms)
        self.diagnostics[index] = 0.0
        self.touched[index] = False
        self.wrench[index] = 0.0
