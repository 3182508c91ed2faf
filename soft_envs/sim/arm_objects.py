"""Free boxes pushed by the soft arms: :class:`~soft_envs.sim.rigid_object.BatchedBoxes` coupled to
the arms' contact (:mod:`soft_envs.sim.contact`), box ``b`` in one slot of arm ``b``'s scene.

Frames and units (SI). The boxes live in the world (z up, table plane ``z = table_height``). Arm
``b``'s base sits at ``base_position[b]`` [m], turned by its ``base_orientation`` quaternion
``(x, y, z, w)``: a base-frame point ``x_b`` is ``x_w = R_b x_b + base_position`` in the world (a
hanging arm: turned 180° about x, its z down; gravity follows the turn). The scene's rows,
velocities (linear of the box's centre, angular about it) and wrench (force on the box, moment
about its centre) are in the base frame; what this module returns is in the world.

The scheme: staggered (partitioned), per physics step ``h`` the arm's step then the boxes', each
implicit in its own unknowns, with the other body's response in its matrix — a Robin interface, as
partitioned fluid–structure solvers pass an interface impedance. Order, in one physics step:

1. :meth:`ArmBoxCoupling.sync` (at construction and at the end of every :meth:`~ArmBoxCoupling.step`)
   writes each box into its arm's slot at its *free step*: its pose and velocity a step ahead at
   its last acceleration less the part the arm's law models (what gravity, the table and the arm's
   unmodelled force did). It sets the arm's contact law to the contact in series with the box's
   yield over the step: stiffness and damping ``s k``, ``s c`` with
   ``s = 1 / (1 + N (k h/2 + c) g)`` and the friction's regularisation ``v_s' = v_s + μ f_n g_t``
   (``G = h J A⁻¹ Jᵀ`` the velocity compliance of the box at the arm's closest point, ``A`` the
   box's step matrix — mass, inertia, its table contact's stiffness, damping and friction tangent —,
   ``J = [I, −[l]×]``; ``g = nᵀ G n − μ φ nᵀ G t`` its normal yield per newton, less what sliding
   friction along ``t`` (the arm's slip) turns back, ``φ`` the friction law's saturation there,
   ``g ≥ nᵀ G n / 10``; ``g_t = tᵀ G t``; ``N`` the touching segments, at least 1; ``f_n`` the last
   step's normal force, at a first touch the one that stops the approach within the step).
   Against a box held at its free step with the plain ``k``, the arm would meet a box of mass
   ``m + k h²/2`` (1.25 kg more at 5 ms, 25 times a 50 g box); held at its start pose, it would
   also find a moving box ``h v`` behind (``k h v`` = 25 N at 5 cm/s). Measured while this was
   built: that plain scheme (the box at its start pose moving on at its velocity, plain ``k``, the
   box's step implicit in ``k n nᵀ``) pushed 28 % off Coulomb's force in the steady slide below
   and its free-box impacts gained up to 5 times the swing's energy.
2. ``arm.step(h, torque + coupling.reaction)`` (:meth:`~ArmBoxCoupling.advance` does 2 and 3): the
   scene's wrench is the force ``W`` on the box and its moment ``M``, at the arm's end state.
3. :meth:`ArmBoxCoupling.step` steps the boxes with ``F(x, ẋ) = W − K (Δx − Δx̂) − C (Δẋ − Δẋ̂)``
   at the contact point (the witnesses weighted by normal force) plus the couple ``M − l × W``:
   ``Δx̂``, ``Δẋ̂`` the point's move the arm's law assumed (the free step's plus the yield ``D W``,
   ``D = n (g_n n + g_nt t)ᵀ + g_t (I − n nᵀ)``), so ``F = W`` wherever the box yields as the law
   assumed. ``K = r Σ k n_i n_iᵀ`` and ``C = r Σ (c n_i n_iᵀ + T_i)`` over the pushing segments ``i``
   (``n_i`` the box's normal at the witness, :func:`soft_envs.collision.segment_shape_distance`;
   ``T_i`` the tangent of the arm's friction law) are the contact in series with the *arm's* yield
   over the step, ``r = 1 / (1 + (k h/2 + c) g_a)``, ``g_a = h aᵀ A_a⁻¹ a`` (``a = Jᵀ n`` at the
   witnesses, ``A_a = M + h D + h²/2 K`` the arm's mass, Rayleigh damping and stiffness): the
   mirror of step 1, so neither body takes the other for an anchor (with ``r = 1`` a pressed box
   that rocks on its table chattered at 5 ms). The box's step is implicit in them. Where that force
   would pull (the box left faster than assumed) the box takes ``W`` itself. The excess ``F − W``
   the box took is handed back to the arm over its next step as the generalised force
   :attr:`~ArmBoxCoupling.reaction` ``= −Jᵀ (F − W)``: the momentum the box gains is the momentum
   the arm gives away, one step late. Then it syncs.

Parameters: ``k``, ``c``, μ, ``v_s`` are the arm scene's box slot's
(:class:`~soft_envs.sim.scene.ContactParameters`, sources there; read at construction into
:attr:`ArmBoxCoupling.cp`: from then on that slot's rows carry each step's law, and the scene's other
shapes — a table, obstacles — keep their own, unsoftened: they do not yield), the box's mass, inertia
and table contact its :class:`~soft_envs.sim.rigid_object.BoxParameters`. Of its own: the floor
``g ≥ nᵀ G n / 10`` (the friction's cross term, a linearisation, never cancels the normal yield).

Measured (``soft-envs bench contact``, ``tests/sim/test_arm_objects.py``; a 3 × 64.4 mm PCC arm
hanging over a table, a 4 cm box, μ_box 0.4, k = 1e5 N/m, 5 ms): in a steady slide (17.7 mm/s,
its spread 1.4 %) the arm's push is ``μ (m g − F_z)`` to 0.02 %; a free box hit by the arm gains
the momentum the box's steps applied and the arm gave away, to rounding (within the steps alone
they differ by 4 %); that swing's energy never rises; penetration ≤ 0.21 mm; a pressed 100 g box
the arm cannot move creeps at < 0.5 mm/s; halving the step moves the steady slide's speed by 0.6 %
and the arm's push by 0.9 %.

Not met. Halving the step moves the push's tip and box paths by 5.2 % and 5.3 % of their spans
(the arm alone: 0.36 %): the box breaks loose 47 ms later at 5 ms than at 2.5 ms, and the
stick–slip that follows is sensitive. (Before it breaks loose, the arm's vertical friction on the
box's face, which unloads its table, is 8 % lower at 5 ms: the friction's widened regularisation
depends on the step, ``g_t`` ∝ ``h``.) Of 60 free-box impacts (heights, bends, 20 and 100 g, 5
and 2.5 ms) the energy rose between two steps by more than 1e-3 of the swing's in 31, by more than
1e-2 in 17 (up to 19 %): the law models the box's yield with two numbers per arm, while an impact
near a box's edge spins it within a step.

Limits. ``n``, ``t``, ``N`` of the closest point stand for all touching segments. ``K``, ``C`` act at
one point (the contact's rotational stiffness about it is explicit). The scheme is first order in
time through contact changes. (While the scene held one law per arm, the box's softened the arm's
contact with every shape while the box was within 2 cm: the hanging arm's tip pressed on the table
beside its box bounced on the table every other step, its rates flipping sign each step, the table's
contact at 1-6 % of its stiffness and a tenth to a quarter of its damping ratio.) Cost (one thread):
~280 µs a step beside the arm's 43 µs for one arm (B = 1), 19 µs per arm beside the arm's 20 µs at
B = 64 (the kernels are :mod:`soft_envs.sim.arm_box_kernels`).
"""

from __future__ import annotations

import numpy as np

from soft_envs.collision import SHAPE_WIDTH
from soft_envs.exceptions import InvalidParameterError, check_integer, check_positive
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.sim.arm_box_kernels import (
    CL_WIDTH,
    box_load,
    box_response,
    box_rows,
    contact_pairs,
    exchange,
    free_steps,
    interface,
)
from soft_envs.sim.batched_arm import BatchedSoftArm
from soft_envs.sim.batched_types import _rows
from soft_envs.sim.rigid_object import BatchedBoxes

__all__ = ["ArmBoxCoupling"]

#: The prediction horizon before the first :meth:`ArmBoxCoupling.step` [s]: the PCC env's physics step.
DEFAULT_HORIZON = 5e-3


class ArmBoxCoupling:
    """One free box per arm, in scene slot ``slot`` of its arm (module docstring: frames, scheme, limits).

    Args:
        arm: the arms (its scene is added with ``slot + 1`` slots if it has none).
        boxes: ``arm.n_arms`` boxes (world frame).
        slot: the scene slot the boxes take.
        base_position: each arm's base in the world, ``(3,)`` or ``(B, 3)`` [m] (default the origin).
        horizon: the time step [s] the first :meth:`sync` predicts over (then :meth:`step`'s ``dt``).

    Per physics step: :meth:`advance` ``(dt, torque)``, or ``arm.step(dt, torque + coupling.reaction)``
    then :meth:`step` ``(dt)``. After :meth:`step`, :attr:`force` ``(B, 3)`` [N] and :attr:`torque`
    ``(B, 3)`` [N m, about the box's centre] are the arm's wrench on each box that the box's step
    applied (its end value), world frame.
    """

    def __init__(self, arm: BatchedSoftArm, boxes: BatchedBoxes, slot: int = 0, base_position=None, *,
                 horizon: float = DEFAULT_HORIZON) -> None:
        if not isinstance(boxes, BatchedBoxes) or boxes.n != arm.n_arms:
            raise InvalidParameterError(f"one box per arm: {arm.n_arms} boxes; got {getattr(boxes, 'n', boxes)!r}")
        self.slot = check_integer("slot", slot, minimum=0)
        scene = arm.scene if arm.scene is not None else arm.add_scene(self.slot + 1)
        if self.slot >= scene.slots:
            raise InvalidParameterError(f"slot {self.slot} is beyond the scene's {scene.slots} slots")
        self.arm, self.boxes, self.scene = arm, boxes, scene
        # whole arm steps: the box slot's law models the box's yield over one arm step (step 1 of the
        # module docstring), which the contact's sub-steps would take for each of theirs
        scene.max_substeps = 1
        B = arm.n_arms
        self.base_position = np.zeros((B, 3))
        if base_position is not None:
            self.set_base_position(None, base_position)
        self.horizon = check_positive("horizon [s]", horizon)
        #: The arms' contact parameters with their boxes ``(B, 4)``: ``(k [N/m], c [N s/m], μ, v_s [m/s])``
        #: (the scene's box slot's at construction; set them here: that slot's rows carry each step's law
        #: ``(s k, s c, μ, v_s')``; the scene's other slots keep their own).
        self.cp = scene.cp[:, self.slot].copy()
        self.force = np.zeros((B, 3))
        self.torque = np.zeros((B, 3))
        #: The generalised force ``(B, n)`` that gives each arm, over its next step, the impulse its box
        #: took beyond the arm's at the last step (module docstring; :meth:`advance` adds it).
        self.reaction = np.zeros((B, arm.n_dof))
        #: The boxes' last acceleration less the yield the arms' law modelled, ``(B, 6)`` (linear [m/s²],
        #: angular [rad/s²], world): what :attr:`free` extrapolates.
        self.acceleration = np.zeros((B, 6))
        #: The boxes' free steps (module docstring): each box's state a step ahead at :attr:`acceleration`
        #: ``(B, 13)`` (:attr:`BatchedBoxes.state`'s layout).
        self.free = boxes.state.copy()
        # of the coming step: the free steps' box matrices A and rotations; the normal n, the closest
        # point's compliance G [m/(N s)] and the yield D the arms' law models; the arms' last force W
        self._A, self._rotation = np.zeros((B, 6, 6)), np.zeros((B, 3, 3))
        self._normal, self._G, self._yield = np.zeros((B, 3)), np.zeros((B, 3, 3)), np.zeros((B, 3, 3))
        self._arm_force = np.zeros((B, 3))
        self.sync()

    # ------------------------------------------------------------------ frames

    def base_rotation(self) -> np.ndarray:
        """``R_b`` ``(B, 3, 3)``: base-frame vectors into the world."""
        return quaternion_to_matrix(self.arm.base_orientation)

    def set_base_position(self, index, position) -> None:
        """The bases of the arms ``index`` at ``position`` ``(3,)`` or ``(k, 3)`` [m, world]."""
        rows = _rows(index, self.arm.n_arms)
        position = np.broadcast_to(np.asarray(position, dtype=float), (rows.size, 3))
        if not np.all(np.isfinite(position)):
            raise InvalidParameterError("base_position must be finite")
        self.base_position[rows] = position

    @property
    def law(self) -> np.ndarray:
        """The arms' contact law with their boxes of the coming step ``(B, 4)``: ``(s k, s c, μ, v_s')`` (the
        scene's box slot's rows)."""
        return self.scene.cp[:, self.slot]

    def _box_rows(self, state: np.ndarray, Rb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The boxes in the states ``state`` ``(B, 13)``: shape rows ``(B, 16)`` and velocities ``(B, 6)``
        in the base frames (``Rb`` the bases' rotations), and the world rotations ``(B, 3, 3)``."""
        B = self.arm.n_arms
        shape, velocity, rotation = np.empty((B, SHAPE_WIDTH)), np.empty((B, 6)), np.empty((B, 3, 3))
        box_rows(state, self.boxes.parameters, Rb, self.base_position, shape, velocity, rotation)
        return shape, velocity, rotation

    def _pairs(self, shape: np.ndarray, velocity: np.ndarray, law: np.ndarray):
        """:func:`~soft_envs.sim.arm_box_kernels.contact_pairs` of the arms' current states against the
        box rows ``shape``, ``velocity`` (base frame) under the law ``law``: force, point, K, C, energy,
        depth, closest, jac."""
        B = self.arm.n_arms
        P, PJ = self.arm.backbone()
        out = (np.empty((B, 3)), np.empty((B, 3)), np.empty((B, 3, 3)), np.empty((B, 3, 3)), np.empty(B),
               np.empty(B), np.empty((B, CL_WIDTH)), np.empty((B, 3, self.arm.n_dof)))
        contact_pairs(P, PJ, self.arm.state.w, np.ascontiguousarray(shape), np.ascontiguousarray(velocity),
                      self.scene.radius, self.cp, np.ascontiguousarray(law), *out)
        return out

    # ------------------------------------------------------------------ the scheme

    def sync(self, rows=None) -> None:
        """Write the boxes of the arms ``rows`` (default all) into the scene's slot at their free steps
        over :attr:`horizon` (base frame), and set those arms' contact law to the contact in series
        with the boxes' yield (module docstring, step 1)."""
        rows = _rows(rows, self.arm.n_arms)
        h, slot, bx = self.horizon, self.slot, self.boxes
        Rb = self.base_rotation()
        free = np.empty_like(bx.state)
        free_steps(bx.state, self.acceleration, h, free)
        self.free[rows] = free[rows]
        shape, velocity, rotation = self._box_rows(self.free, Rb)
        self.scene.shapes[rows, slot] = shape[rows]
        self.scene.velocity[rows, slot] = velocity[rows]
        self._rotation[rows] = rotation[rows]
        box_response(bx.parameters, self.free, h, self._A)
        closest = self._pairs(self.scene.shapes[:, slot], self.scene.velocity[:, slot], self.cp)[6]
        normal, G, D, law = np.empty_like(self._normal), np.empty_like(self._G), np.empty_like(self._yield), \
            np.empty_like(self.cp)
        interface(self._A, closest, Rb, self.base_position, self.free, self.cp, self._arm_force, h, normal, G,
                  D, law)
        self._normal[rows], self._G[rows], self._yield[rows] = normal[rows], G[rows], D[rows]
        self.scene.cp[rows, slot] = law[rows]

    def step(self, dt: float, active=None) -> tuple[np.ndarray, np.ndarray]:
        """Step the boxes by ``dt`` [s] under the arms' contact of their last step (call it right after
        ``arm.step``: module docstring, step 3), then :meth:`sync`. ``active`` ``(B,)`` (default all):
        the arms whose step counts (the others push nothing; their boxes still step). Returns the boxes'
        table normal force ``(B,)`` [N] and deepest table penetration ``(B,)`` [m] (:meth:`BatchedBoxes.step`)."""
        h = check_positive("dt", dt)
        bx, slot, B = self.boxes, self.slot, self.arm.n_arms
        _, point, Kb, Cb, _, _, _, jac = self._pairs(self.scene.shapes[:, slot], self.scene.velocity[:, slot],
                                                     self.scene.cp[:, slot])
        wrench = self.scene.wrench[:, slot]
        if active is not None:  # (an arm that did not step keeps its last measurements: ignored)
            mask = np.asarray(active, dtype=bool).reshape(-1)
            wrench, Kb, Cb = wrench * mask[:, None], Kb * mask[:, None, None], Cb * mask[:, None, None]
        Kb, Cb = self._in_series(h, Kb, Cb, jac)
        Rb = self.base_rotation()
        W, force, start, torque, lever = (np.empty((B, 3)) for _ in range(5))
        K, C = np.empty((B, 3, 3)), np.empty((B, 3, 3))
        box_load(point, Kb, Cb, np.ascontiguousarray(wrench), Rb, self.base_position, self.free, self._rotation,
                 bx.state, self._yield, self.horizon, W, force, start, torque, K, C, lever)
        before = bx.state.copy()
        result = bx.step(h, force, start, torque, K, C)
        pulled = np.empty(B, dtype=np.bool_)
        self._exchange(force, torque, K, C, lever, before, h, W, Rb, jac, pulled)
        if np.any(pulled):  # the box left faster than the arm assumed: the contact opened; it takes W
            bx.state[:] = before
            force[pulled], K[pulled], C[pulled] = W[pulled], 0.0, 0.0
            result = bx.step(h, force, start, torque, K, C)
            self._exchange(force, torque, K, C, lever, before, h, W, Rb, jac, pulled)
        self._arm_force = W
        self.horizon = h
        self.sync()
        return result

    def _in_series(self, h: float, K: np.ndarray, C: np.ndarray, jac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``K``, ``C`` (base frame) scaled by ``r = 1 / (1 + (k h/2 + c) g_a)``: the contact in series
        with the arm's yield over the step, ``g_a = h aᵀ A_a⁻¹ a`` (``a = Jᵀ n`` at the pushing witnesses,
        ``A_a = M + h D + h²/2 K_a`` the arm's mass, Rayleigh damping and stiffness at its end state;
        ``k``, ``c`` the pushing segments' along ``n``)."""
        p = self.arm.params
        A = self.arm.mass_matrix() * (1.0 + h * p.rayleigh[:, :1, None])
        idx = np.arange(self.arm.n_dof)
        A[:, idx, idx] += (h * p.rayleigh[:, 1:] + 0.5 * h * h) * p.stiffness
        n = np.einsum("bji,bj->bi", self.base_rotation(), self._normal)
        a = np.einsum("bri,br->bi", jac, n)
        g = h * np.einsum("bi,bi->b", a, np.linalg.solve(A, a[:, :, None])[:, :, 0])
        r = 1.0 / (1.0 + (0.5 * h * np.einsum("bij,bi,bj->b", K, n, n) + np.einsum("bij,bi,bj->b", C, n, n)) * g)
        return K * r[:, None, None], C * r[:, None, None]

    def _exchange(self, force, torque, K, C, lever, before, h, W, Rb, jac, pulled) -> None:
        """:func:`~soft_envs.sim.arm_box_kernels.exchange` into :attr:`force`, :attr:`torque`,
        :attr:`reaction`, :attr:`acceleration` and ``pulled``."""
        exchange(force, torque, K, C, lever, before, self.boxes.state, h, W, self._normal, self._G, self._yield,
                 self._A, jac, Rb, self.force, self.torque, self.reaction, self.acceleration, pulled)

    def advance(self, dt: float, torque: np.ndarray, **arm_keywords) -> tuple[np.ndarray, np.ndarray]:
        """One physics step of arms and boxes: ``arm.step(dt, torque + reaction, **arm_keywords)`` (the
        reaction also added to a ``torque_end``), then :meth:`step`; returns :meth:`step`'s."""
        if arm_keywords.get("torque_end") is not None:
            arm_keywords["torque_end"] = np.asarray(arm_keywords["torque_end"], dtype=float) + self.reaction
        self.arm.step(dt, np.asarray(torque, dtype=float) + self.reaction, **arm_keywords)
        return self.step(dt, arm_keywords.get("active"))

    # ------------------------------------------------------------------ measurements and resets

    def contact_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arms' contact with the boxes where both are now (not the free steps' poses), at the
        contact's own ``k``, ``c``, ``v_s``: the force on each box ``(B, 3)`` [N, world], the contact
        springs' energy ``Σ ½ k δ²`` ``(B,)`` [J] and the deepest penetration ``(B,)`` [m]."""
        Rb = self.base_rotation()
        shape, velocity, _ = self._box_rows(self.boxes.state, Rb)
        force, _, _, _, energy, depth = self._pairs(shape, velocity, self.cp)[:6]
        return np.einsum("bij,bj->bi", Rb, force), energy, depth

    def reset(self, index, position, orientation=(0.0, 0.0, 0.0, 1.0), velocity=None,
              angular_velocity=None) -> None:
        """Put the boxes of the arms ``index`` at a pose and velocity (:meth:`BatchedBoxes.reset`,
        world), clear those arms' scene measurements and what the scheme carries over, and sync them."""
        rows = _rows(index, self.arm.n_arms)
        self.boxes.reset(rows, position, orientation, velocity, angular_velocity)
        self.scene.clear_measurements(rows)
        for array in (self.force, self.torque, self.reaction, self.acceleration, self._arm_force):
            array[rows] = 0.0
        self.sync(rows)
