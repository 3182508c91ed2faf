"""PETER as a compliant arm on the elastic soft-arm core (the default body of ``PeterReach-v0``).

A module is an extensible PCC section (:mod:`soft_envs.sim.soft_arm`) with *chord* links (its
joints lie on the arc, so the module plates are the PCC model's module tops, as in the stiff
body of :mod:`soft_envs.sim.peter_body`). Its state is the arc ``u = (x, a, b)`` with
``x = L − l₀`` (``L`` the mean leg length, ``l₀`` the leg length at zero inflation) and the bend
vector ``(a, b)``. The legs are springs about their *rest* lengths: the rest shape is the arc
of the legs' rest lengths (``Peter.arc_from_legs``) and the stiffness ``Peter.stiffness()``
(``3k``, ``3/2 k r²`` from the leg stiffness ``k`` and the leg-circle radius ``r``, derived
there). The pneumatics (:class:`~soft_envs.sim.actuators.BatchedPneumaticLegs`) move the rest lengths;
gravity and a tip payload deflect the arm about the rest shape, smoothly and (for small loads)
linearly. With no gravity, no payload and the legs at rest the body is exactly the PCC model's
shape (``Peter(kinematics="pcc")``), to 1e-9 m.

Parameter sources: the geometry, leg law and module mass are :class:`~soft_envs.robots.Peter`'s
(seed 000 eq. 1, SPEC section 2; the 0.12 kg module mass is an assumption of the model); the
leg stiffness (1300 N/m) is an assumption documented on :class:`Peter`; the Rayleigh damping
``β = 0.02 s`` is an assumption (the paper gives no dynamics): damping ratios ``β ω / 2`` of
0.75 on the 2-module arm's first bending mode (75 rad/s), 0.25 with a 0.5 kg payload
(25 rad/s), 0.18 on the 4-module arm's (18 rad/s); the axial modes are over-damped.
"""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import STANDARD_GRAVITY
from soft_envs.robots.peter import Peter
from soft_envs.sim.damping import PETER_RAYLEIGH_STIFFNESS
from soft_envs.sim.sections import SectionMap
from soft_envs.sim.soft_arm import SoftArmBody

DEFAULT_RAYLEIGH_STIFFNESS = PETER_RAYLEIGH_STIFFNESS  # s (assumption, see the module docstring)


class SoftPeterBody(SoftArmBody):
    """A PETER arm in a PyBullet ``client`` with compliant legs (see the module docstring).

    Args:
        client: a ``BulletClient`` owned by the caller.
        model: the arm (its PCC realisation is simulated whatever its ``kinematics``).
        payload: tip mass [kg] on the last plate.
        gravity: standard gravity [m/s²] along the world's −z.
        rayleigh_mass, rayleigh_stiffness: ``α`` [1/s] and ``β`` [s] of ``D = α M + β K``.
        base_position: where the arm's foot is in the world [m].
        base_orientation: the arm's base frame in the world, quaternion ``(x, y, z, w)``
            (default upright; measurements are in the base frame).
        backend: ``"batched"`` (default) or ``"pybullet"`` (:class:`SoftArmBody`).

    Use :meth:`reset` to put it at rest on inflation times, :meth:`set_rest_legs` (or ``step``'s
    ``rest_end``) to move the legs' rest lengths.
    """

    def __init__(self, client, model: Peter, *, payload: float = 0.0, gravity: float = STANDARD_GRAVITY,
                 rayleigh_mass: float = 0.0, rayleigh_stiffness: float = DEFAULT_RAYLEIGH_STIFFNESS,
                 base_position: tuple[float, float, float] = (0.0, 0.0, 0.0),
                 base_orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0),
                 backend: str = "batched") -> None:
        self.model = model.with_kinematics("pcc")
        self.payload = float(payload)
        n = self.model.n_modules
        self.reference_length = self.model.leg_length_at_rest
        sections = SectionMap(self.model.links_per_module, np.full(n, self.reference_length), chord=True)
        super().__init__(client, self.model.chain(payload), sections, self.model.stiffness().ravel(),
                         gravity=gravity, rayleigh_mass=rayleigh_mass, rayleigh_stiffness=rayleigh_stiffness,
                         base_position=base_position, base_orientation=base_orientation, backend=backend)

    def set_model(self, model: Peter, payload: float = 0.0) -> None:
        """Simulate ``model`` with ``payload`` [kg]: this arm with another leg radius, module mass or
        leg stiffness (the same modules, links and leg law), on the same PyBullet body."""
        model = model.with_kinematics("pcc")
        mine = self.model
        if (model.n_modules, model.links_per_module, model.leg_length_at_rest, model.gap) != \
                (mine.n_modules, mine.links_per_module, mine.leg_length_at_rest, mine.gap):
            raise InvalidParameterError("set_model takes the same arm with other radius, mass or stiffness")
        self.model, self.payload = model, float(payload)
        self.stiffness = model.stiffness().ravel()
        self.set_link_dynamics(model.chain(payload))

    def arc_of_legs(self, legs: np.ndarray) -> np.ndarray:
        """Smooth coordinates ``u`` (flat) of leg lengths ``(3N,)`` [m]."""
        legs = np.asarray(legs, dtype=float).reshape(self.model.n_modules, 3)
        arc = self.model.arc_from_legs(legs)
        arc[:, 0] -= self.reference_length
        return arc.ravel()

    def legs_of_arc(self, u: np.ndarray) -> np.ndarray:
        """Leg lengths ``(3N,)`` [m] of smooth coordinates ``u``."""
        arc = np.array(u, dtype=float).reshape(self.model.n_modules, 3)
        arc[:, 0] += self.reference_length
        return self.model.legs_from_arc(arc).ravel()

    def reset(self, t: np.ndarray) -> None:
        """At rest with every leg at its rest length for inflation times ``t`` [s] (no load deflection)."""
        t = self.model.check_configuration(t)
        if t.ndim != 1:
            raise InvalidParameterError("reset takes a single configuration")
        u = self.arc_of_legs(self.model.leg_lengths(t).ravel())
        self.rest = u.copy()
        # φ in [−π/2, π/2], as Peter.body_joint_positions chooses (the link frames then match too)
        self.set_state(u, reference=np.zeros(3 * self.model.n_modules))

    def set_rest_legs(self, legs: np.ndarray) -> None:
        """Set the legs' rest lengths [m] (the shape the arm relaxes to without load)."""
        self.rest = self.arc_of_legs(legs)

    def rest_of_legs(self, legs: np.ndarray) -> np.ndarray:
        """The rest configuration ``u_rest`` of rest lengths ``legs`` [m] (for ``step(rest_end=...)``)."""
        return self.arc_of_legs(legs)

    def leg_lengths(self) -> np.ndarray:
        """Current (deflected) leg lengths ``(3N,)`` [m]."""
        return self.legs_of_arc(self.u)
