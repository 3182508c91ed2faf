"""Free rigid boxes on a table: compliant contact and regularised Coulomb friction, batched.

``B`` boxes, one per env of a vector env (a single env is ``B = 1``); every box is a full 6-DOF
rigid body on its own table plane. The per-box kernel (:func:`~soft_envs.sim.box_kernels.step_box`)
is allocation-free scalar math over small arrays (the style of :mod:`soft_envs.sim.batched_kernels`,
whose jit options it reuses) and :func:`~soft_envs.sim.box_kernels.batch_step` loops it over the
batch in one compiled loop.

The body. A solid box of mass ``m`` and half extents ``(hx, hy, hz)`` (body-frame inertia
``diag(m (hy² + hz²)/3, m (hx² + hz²)/3, m (hx² + hy²)/3)``). State in the world frame: centre
position ``p`` ``(B, 3)`` [m], orientation quaternion ``q`` ``(B, 4)`` **in PyBullet's
``(x, y, z, w)`` order** (as everywhere in :mod:`soft_envs.geometry`; ``R(q)`` maps body vectors into
the world), linear velocity ``v`` ``(B, 3)`` [m/s] and angular velocity ``ω`` ``(B, 3)`` [rad/s],
both in the world frame. Gravity ``g = 9.81`` m/s² along −z.

The contact. The table top is the plane ``z = table_height`` (one per box). The contact points are
the box's 8 corners only: a box rests flat on its four lower corners, which carry the whole
support polygon, so face centres or edge midpoints add nothing to flat resting (they would sit
at the corners' depth and only split the same load); a box on an edge rests on its two corners. Per corner ``i`` with
penetration ``δ_i = table_height − z_i`` and upward corner velocity ``v_n``:

* normal force ``f_n = max(0, k δ − c v_n)`` (no adhesion), MuJoCo's ``solref = (τ, ζ)``
  parameterisation (MuJoCo documentation, "Solver parameters": stiffness ``1/(τ ζ)²`` and damping
  ``2/τ`` per unit of mass, i.e. a mass-spring-damper of natural period ``2π τ ζ`` and damping ratio
  ``ζ``), applied so that the box resting flat on its four corners is that oscillator:
  ``k = m / (4 (τ ζ)²)`` [N/m] and ``c = m / (2 τ)`` [N s/m] per corner (``4k = m/(τζ)²``,
  ``4c = 2m/τ``). The resting penetration is then ``g (τ ζ)²`` whatever the mass;
* Coulomb friction, regularised: ``f_t = −μ f_n v_t / √(|v_t|² + v_s²)`` (``v_t`` the corner's
  tangential velocity, ``v_s`` the stiction speed: below it friction is a viscous damper of slope
  ``μ f_n / v_s``). A tangential force ``F < μ f_n`` held on a resting box makes it creep at
  ``v_s F / √((μ f_n)² − F²)`` (``1.33 v_s`` at ``0.8 μ f_n``) — the price of the regularisation,
  which the default ``v_s`` keeps below 0.03 mm per 2 s.

External wrench. :meth:`BatchedBoxes.step` takes a force ``F`` ``(B, 3)`` [N] at a world point
(or at the centre) plus a torque ``(B, 3)`` [N m] about the centre, and optionally the force's
linearisation: a stiffness ``K`` ``(B, 3, 3)`` [N/m] and a damping ``C`` ``(B, 3, 3)`` [N s/m] with the
sign of a spring, ``F(x, ẋ) ≈ F − K Δx − C Δẋ`` (``Δx``, ``Δẋ`` the displacement and velocity change
of the point of application, fixed in the box, since the step's start). ``F`` is the force at the
step's start; ``K`` and ``C`` enter the step's implicit matrix, so a stiff pusher (the soft arm's
contact) does not bound the time step on the box's side either.

Integration (per box, one time step ``h``): the generalised velocity ``ν = (v, ω)`` is found
implicitly from the momentum balance

    ``m (v₁ − v₀) = h F(x₁, ν₁)``,  ``I_w(q₁) ω₁ − I_w(q₀) ω₀ = h τ(x₁, ν₁)``,

(``I_w = R I_b Rᵀ``: the world-frame angular momentum form, which holds the gyroscopic term
``ω × I ω`` exactly and conserves the angular momentum of a free box to rounding), and the
configuration by the trapezoidal rule, ``p₁ = p₀ + h (v₀ + v₁)/2``,
``q₁ = exp(h (ω₀ + ω₁)/2) ⊗ q₀`` (normalised). This is Newmark's method with ``γ = 1``,
``β = ½``: unconditionally stable (``2β ≥ γ ≥ ½``), the velocity backward Euler (so a stiff
viscous slope — friction in stiction, contact damping — is damped, not rung) and the position
exact under a constant force (free flight and steady sliding are exact, which is what the stop
distance and the drop's energy need). The implicit equation is solved by Newton passes on the
6×6 system of the box (:data:`DEFAULT_PASSES`, dense Gaussian elimination with pivoting):
each pass linearises the contact at the latest end state ``(x̂, ν̂)`` — the corners in contact
there, their stiffness ``k`` and damping ``c`` along the normal (``h c + h² k / 2`` in the
matrix), friction as a damper of the lagged coefficient ``η = μ f_n / √(|v̂_t|² + v_s²)`` (a secant
of the friction law: it cannot overshoot through zero velocity, so the stick–slip switch needs
no special case), the external ``K``, ``C`` — and solves for ``ν₁``. The first pass starts from
the step's start velocity (a warm start: in stiction the answer is next to it; starting from the
free step instead left the lagged friction a slow fixed-point iteration that crept at 2.4 mm/s
under 0.8 μ m g). A corner in contact at an earlier pass keeps its normal stiffness and damping
in the matrix when a later pass lifts it clear, so the passes do not cycle between "penetrating,
no force yet" and "lifted clear by the force" at a touch-down (that cycle let a corner land with
no force and its spring energy appear from nothing: +2e-3 J at 1/120 s). Four passes: at 1/120 s
the stopping step of a slide needs them (three: the stop 1.8 % short; four: 0.3 %). The
contact's torque uses the lever arm ``ã = κ (a₀ + a₁)/2`` (:func:`_contacts`), for which the
wrench's work equals the corner's true displacement over the step. An explicit penalty step is not an option: at the
defaults ``ω_n h = h/(τ ζ)`` is 0.63 at 5 ms and the rocking modes' up to √3 times that, the
contact damping ``c h/m`` per box 1.25 and the friction slope's ``μ g h / v_s`` ~2e3; semi-implicit
Euler needs ``c h / m < 2`` and ``η h / m < 2``.

Defaults and where they come from (no seed paper covers the object):

* ``τ = 0.008`` s, ``ζ = 1`` (critical): resting penetration ``g (τ ζ)² = 0.63`` mm ≤ 1 mm
  (MuJoCo's default ``τ = 0.02`` would rest 3.9 mm deep); MuJoCo advises ``τ ≥ 2 h`` for its
  semi-implicit step — here the contact is implicit, and 5 ms and 1/120 s are both stable (the
  checks run at both);
* ``μ = 0.4``: a stated assumption for a hard plastic (3-D printed PLA/ABS) box on a dry wooden or
  laminate table top — common engineering friction tables give about 0.2–0.5 for plastic on
  wood or laminate and 0.6–1.0 for silicone or rubber (a silicone box: set ``friction`` ≈ 0.8);
* ``v_s = 1e-5`` m/s: far below the sliding speeds of a push (1 cm/s – 0.3 m/s) and small enough
  that a box held at 0.8 of the friction cone creeps < 0.1 mm in 2 s;
* mass 0.1 kg, half extents 0.02 m (a 4 cm cube of ~1.6 g/cm³), table at z = 0.

Checks (:func:`soft_envs.bench.contact_objects.object_checks`, tests in
``tests/sim/test_rigid_object.py``; the figures at the defaults — 0.1 kg, 4 cm cube, μ = 0.4):

========================================================  ==========================  =============
check                                                     5 ms                        1/120 s
========================================================  ==========================  =============
c1 deceleration (μ g = 3.924 m/s², 2 %)                   3.919                       3.902
c1 stop distance of the centre (11.47 mm, 2 %)            11.50 mm                    11.54 mm
c2 0.8 μ m g for 2 s: the contact's slide (< 0.1 mm)      0.028 mm (1.33 v_s · 2 s)   0.028 mm
c2 1.2 μ m g: acceleration (0.7848 m/s², 2 %)             0.7848                      0.7846
c3 resting 10 s: drift (< 0.1 mm)                         2e-15 mm                    1e-15 mm
d1 flat drop: E − E₀ at most (≤ 1e-12 E₀ ≈ 7e-14 J)       3e-17 J                     1e-17 J
d1 tilted drop: E − E₀ at most (≤ 1e-12 E₀ ≈ 8e-14 J)     1e-17 J                     0 J
d1 at rest after 1.5 s: speed; resting penetration        1e-16 m/s; 0.628 mm         same
d1 deepest penetration in the impact: flat, tilted        3.5 mm, 8.3 mm              4.2, 8.5 mm
e slide + spin, halving dt: path change / span (1 %)      0.28 %                      0.60 %
stiff spring k = 1e4 N/m, implicit: final gap (≤ 39 µm)   35 µm                       2 µm
========================================================  ==========================  =============

(Energy: ``E₀`` the drop's start; the bound is the rounding of sums of ~0.1 J terms. ``E`` stays
below ``E₀`` but is not monotone step to step: at 1/120 s, corners touching down while the box
rocks raise it by up to 5e-4 J in a step, long after the first impact has dissipated ~0.07 J.
A spinning box off the principal axes drifts in rotational energy by ~1e-12 J per step in free
flight: the momentum form conserves ``L``, not ``½ ω·L``.) Not met: the tumbling drop (6 cm,
tilted, thrown, spinning) changes its path by 4.5 % of its span when 5 ms is halved (1.8 % at
2.5 ms, 0.8 % at 1.25 ms): the scheme is first order through the impacts (the backward-Euler
velocity), exact only in free flight and steady sliding; the sliding, spinning episode meets the
1 %. Without its stiffness (the force alone, explicit) the k = 1e4 N/m spring blows up at 5 ms.
The stop distance is the centre's largest x: after the stop the box un-tilts on its stuck
corners and the centre settles back ``h_z θ`` = 0.25 mm (the friction's moment tilts the sliding
box by ``θ = μ g h_z (τ ζ)² / h_x²`` = 0.013 rad on the compliant contact; under c2's 0.8 μ m g
at the centre the centre moves 0.2 mm the same way while the contact creeps 0.028 mm). The impact
depths are those of the soft ``τ = 8`` ms contact (a corner carries a quarter of the resting
stiffness). A box in the 20–200 g, 2–6 cm range thrown tilted from 5 cm at either step never
gains energy and rests at 0.628 mm (the hypothesis test). Cost: ~4 µs per box and step on one
CPU core (B = 1 and B = 1024).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from soft_envs.collision import BOX, SHAPE_WIDTH  # the shape rows' layout: [BOX, p, R row-major, hx, hy, hz]
from soft_envs.exceptions import (
    InvalidActionError,
    InvalidConfigurationError,
    InvalidParameterError,
    as_real_array,
    check_finite,
    check_integer,
    check_nonnegative,
    check_positive,
)
from soft_envs.geometry import STANDARD_GRAVITY, quaternion_to_matrix
from soft_envs.sim.box_kernels import (  # the kernels' row layouts
    DIAG_NORMAL_FORCE,
    DIAG_PENETRATION,
    N_PARAMETERS,
    P_C,
    P_GRAVITY,
    P_HX,
    P_HZ,
    P_IX,
    P_IZ,
    P_K,
    P_MASS,
    P_MU,
    P_TABLE,
    P_VS,
    S_OMEGA,
    S_POS,
    S_QUAT,
    S_VEL,
    STATE_WIDTH,
    batch_step,
)

DEFAULT_MASS = 0.1  # kg
DEFAULT_HALF_EXTENT = 0.02  # m (a 4 cm cube)
DEFAULT_FRICTION = 0.4  # plastic on wood/laminate (module docstring)
DEFAULT_TIME_CONSTANT = 0.008  # s, τ
DEFAULT_DAMPING_RATIO = 1.0  # ζ
DEFAULT_STICTION_SPEED = 1e-5  # m/s, v_s
DEFAULT_PASSES = 4  # Newton passes per step (the stopping step of a slide needs 4 at 1/120 s)
MAX_PASSES = 50  # the most Newton passes per step
MAX_BOXES = 1 << 20  # the most boxes one batch takes



@dataclass(frozen=True)
class BoxParameters:
    """A box's physical parameters (SI); validated on construction (:class:`InvalidParameterError`).

    ``half_extents`` [m] along the box's body axes; ``friction`` the Coulomb coefficient ``μ ≥ 0``;
    ``table_height`` [m] the table plane's z (each box may have its own: :class:`BatchedBoxes`);
    ``time_constant`` ``τ`` [s] and ``damping_ratio`` ``ζ`` the contact's MuJoCo-style ``solref``;
    ``stiction_speed`` ``v_s`` [m/s] the friction's regularisation (module docstring)."""

    mass: float = DEFAULT_MASS
    half_extents: tuple[float, float, float] = (DEFAULT_HALF_EXTENT,) * 3
    friction: float = DEFAULT_FRICTION
    table_height: float = 0.0
    time_constant: float = DEFAULT_TIME_CONSTANT
    damping_ratio: float = DEFAULT_DAMPING_RATIO
    stiction_speed: float = DEFAULT_STICTION_SPEED
    gravity: float = STANDARD_GRAVITY

    def __post_init__(self) -> None:
        check_positive("mass", self.mass)
        extents = tuple(self.half_extents) if isinstance(self.half_extents, (tuple, list, np.ndarray)) else ()
        if len(extents) != 3:
            raise InvalidParameterError(f"half_extents must be three numbers > 0; got {self.half_extents!r}")
        object.__setattr__(self, "half_extents", tuple(check_positive("half_extents", e) for e in extents))
        check_finite("friction", self.friction)
        check_nonnegative(friction=self.friction)
        check_finite("table_height", self.table_height)
        check_positive("time_constant", self.time_constant)
        check_positive("damping_ratio", self.damping_ratio)
        check_positive("stiction_speed", self.stiction_speed)
        check_finite("gravity", self.gravity)
        check_nonnegative(gravity=self.gravity)

    @property
    def corner_stiffness(self) -> float:
        """``k = m / (4 (τ ζ)²)`` [N/m] per corner (four corners at rest: the ``solref`` oscillator)."""
        return self.mass / (4.0 * (self.time_constant * self.damping_ratio) ** 2)

    @property
    def corner_damping(self) -> float:
        """``c = m / (2 τ)`` [N s/m] per corner."""
        return self.mass / (2.0 * self.time_constant)

    @property
    def inertia(self) -> tuple[float, float, float]:
        """Principal moments [kg m²] of the solid box about its centre (body axes)."""
        hx, hy, hz = self.half_extents
        m = self.mass
        return m * (hy * hy + hz * hz) / 3.0, m * (hx * hx + hz * hz) / 3.0, m * (hx * hx + hy * hy) / 3.0

    @property
    def resting_penetration(self) -> float:
        """``g (τ ζ)²`` [m]: the depth of the box resting flat on its four corners."""
        return self.gravity * (self.time_constant * self.damping_ratio) ** 2

    def row(self) -> np.ndarray:
        """The kernel's parameter row ``(N_PARAMETERS,)``."""
        row = np.empty(N_PARAMETERS)
        row[P_MASS] = self.mass
        row[P_HX:P_HZ + 1] = self.half_extents
        row[P_MU] = self.friction
        row[P_TABLE] = self.table_height
        row[P_K] = self.corner_stiffness
        row[P_C] = self.corner_damping
        row[P_VS] = self.stiction_speed
        row[P_IX:P_IZ + 1] = self.inertia
        row[P_GRAVITY] = self.gravity
        return row

# ---------------------------------------------------------------------------- the batch

def _batch_array(value, name: str, shape: tuple[int, ...], error: type[ValueError] = InvalidActionError) -> np.ndarray:
    """``value`` broadcast to ``shape`` as a finite float64 array (``error`` otherwise)."""
    array = as_real_array(value, name, error)
    try:
        array = np.broadcast_to(array, shape)
    except ValueError:
        raise error(f"{name} must have shape {shape} (or broadcast to it); got {array.shape}") from None
    if not np.all(np.isfinite(array)):
        raise error(f"{name} must be finite")
    return np.ascontiguousarray(array, dtype=float)


class BatchedBoxes:
    """``n`` free boxes, each on its own table plane (module docstring for the model and scheme).

    ``state`` ``(n, 13)``: per box the centre ``[0:3]`` [m], the orientation quaternion ``[3:7]`` in
    PyBullet's ``(x, y, z, w)`` order, the velocity ``[7:10]`` [m/s] and the angular velocity
    ``[10:13]`` [rad/s], all in the world frame; :attr:`position`, :attr:`orientation`,
    :attr:`velocity`, :attr:`angular_velocity` are views of it. ``table_height`` ``(n,)`` [m]
    (writable view). A new batch rests every box flat at the origin of its table, at its resting
    depth. ``n``: 1 to :data:`MAX_BOXES`; ``passes``: Newton passes per step, 1 to :data:`MAX_PASSES`."""

    def __init__(self, n: int, params: BoxParameters | None = None, *, table_height=None,
                 passes: int = DEFAULT_PASSES) -> None:
        self.n = check_integer("n", n, minimum=1, maximum=MAX_BOXES)
        self.params = BoxParameters() if params is None else params
        if not isinstance(self.params, BoxParameters):
            raise InvalidParameterError(f"params must be a BoxParameters; got {type(params).__name__}")
        self.passes = check_integer("passes", passes, minimum=1, maximum=MAX_PASSES)
        self.parameters = np.tile(self.params.row(), (self.n, 1))
        if table_height is not None:
            self.parameters[:, P_TABLE] = _batch_array(table_height, "table_height", (self.n,), InvalidParameterError)
        self.state = np.zeros((self.n, STATE_WIDTH))
        self.state[:, S_QUAT + 3] = 1.0
        self.state[:, S_POS + 2] = self.table_height + self.params.half_extents[2] - self.params.resting_penetration
        self.diagnostics = np.zeros((self.n, 2))
        self._zeros3 = np.zeros((self.n, 3))
        self._zeros33 = np.zeros((self.n, 3, 3))

    # views
    @property
    def table_height(self) -> np.ndarray:
        """The table planes' heights ``(n,)`` [m] (a writable view)."""
        return self.parameters[:, P_TABLE]

    @property
    def position(self) -> np.ndarray:
        """Centres ``(n, 3)`` [m, world] (view)."""
        return self.state[:, S_POS:S_POS + 3]

    @property
    def orientation(self) -> np.ndarray:
        """Orientation quaternions ``(n, 4)`` in ``(x, y, z, w)`` order (view)."""
        return self.state[:, S_QUAT:S_QUAT + 4]

    @property
    def velocity(self) -> np.ndarray:
        """Linear velocities ``(n, 3)`` [m/s, world] (view)."""
        return self.state[:, S_VEL:S_VEL + 3]

    @property
    def angular_velocity(self) -> np.ndarray:
        """Angular velocities ``(n, 3)`` [rad/s, world] (view)."""
        return self.state[:, S_OMEGA:S_OMEGA + 3]

    def rotation(self) -> np.ndarray:
        """Rotation matrices ``(n, 3, 3)`` (body → world) of the orientations."""
        return quaternion_to_matrix(self.orientation)

    def reset(self, index, position, orientation=(0.0, 0.0, 0.0, 1.0), velocity=None, angular_velocity=None) -> None:
        """Set the boxes ``index`` (an int, a sequence of ints or a boolean mask ``(n,)``) to the
        given centre(s) [m], orientation quaternion(s) in ``(x, y, z, w)`` order (unit norm within
        1e-6, then normalised), velocity [m/s] and angular velocity [rad/s] (world; default 0).
        Arrays are ``(3,)``/``(4,)`` for all selected boxes or ``(k, 3)``/``(k, 4)`` per box;
        :class:`InvalidConfigurationError` for bad values."""
        rows = np.arange(self.n)[index]
        rows = np.atleast_1d(rows)
        k = rows.shape[0]
        err = InvalidConfigurationError
        pos = _batch_array(position, "position", (k, 3), err)
        quat = _batch_array(orientation, "orientation", (k, 4), err)
        norm = np.linalg.norm(quat, axis=1)
        if np.any(np.abs(norm - 1.0) > 1e-6):
            raise err(f"orientation must be unit quaternions (x, y, z, w) (norm within 1e-6); got norms {norm}")
        vel = _batch_array(0.0 if velocity is None else velocity, "velocity", (k, 3), err)
        omega = _batch_array(0.0 if angular_velocity is None else angular_velocity, "angular_velocity", (k, 3), err)
        self.state[rows, S_POS:S_POS + 3] = pos
        self.state[rows, S_QUAT:S_QUAT + 4] = quat / norm[:, None]
        self.state[rows, S_VEL:S_VEL + 3] = vel
        self.state[rows, S_OMEGA:S_OMEGA + 3] = omega
        self.diagnostics[rows] = 0.0

    def step(self, dt: float, force=None, point=None, torque=None, stiffness=None,
             damping=None) -> tuple[np.ndarray, np.ndarray]:
        """Advance every box by ``dt`` [s] under gravity, the table and an optional external wrench.

        ``force`` ``(n, 3)`` [N] applied at ``point`` ``(n, 3)`` [m, world] (default: the centre),
        ``torque`` ``(n, 3)`` [N m] about the centre, both the values at the step's start;
        ``stiffness`` ``(n, 3, 3)`` [N/m] and ``damping`` ``(n, 3, 3)`` [N s/m] the force's
        linearisation with a spring's sign, ``F ≈ F₀ − K Δx − C Δẋ`` for the displacement and
        velocity change of the point of application (fixed in the box) over the step; they make
        the external force implicit. Every array broadcasts to its full shape.
        Returns per box the table's total normal force ``(n,)`` [N] and the deepest corner
        penetration ``(n,)`` [m] (≥ 0; 0 when no corner touches) at the step's end."""
        h = check_positive("dt", dt, 1.0)
        n = self.n
        f = self._zeros3 if force is None else _batch_array(force, "force", (n, 3))
        t = self._zeros3 if torque is None else _batch_array(torque, "torque", (n, 3))
        arm = self._zeros3 if point is None else _batch_array(point, "point", (n, 3)) - self.position
        K = self._zeros33 if stiffness is None else _batch_array(stiffness, "stiffness", (n, 3, 3))
        C = self._zeros33 if damping is None else _batch_array(damping, "damping", (n, 3, 3))
        batch_step(self.parameters, self.state, f, t, np.ascontiguousarray(arm), K, C, h, self.passes,
                   self.diagnostics)
        return self.diagnostics[:, DIAG_NORMAL_FORCE].copy(), np.maximum(self.diagnostics[:, DIAG_PENETRATION], 0.0)

    def energy(self) -> np.ndarray:
        """Mechanical energy ``(n,)`` [J]: kinetic (translation and rotation), gravity's potential
        (zero at the table plane) and the corner springs' ``½ k δ²``."""
        m = self.parameters[:, P_MASS]
        R = self.rotation()
        Ib = self.parameters[:, P_IX:P_IZ + 1]
        w_body = np.einsum("bji,bj->bi", R, self.angular_velocity)
        kinetic = 0.5 * m * np.sum(self.velocity ** 2, axis=1) + 0.5 * np.sum(Ib * w_body ** 2, axis=1)
        potential = m * self.parameters[:, P_GRAVITY] * (self.position[:, 2] - self.table_height)
        depth = self.table_height[:, None] - self.corners()[:, :, 2]
        spring = 0.5 * self.parameters[:, P_K] * np.sum(np.maximum(depth, 0.0) ** 2, axis=1)
        return kinetic + potential + spring

    def corners(self) -> np.ndarray:
        """The 8 corners ``(n, 8, 3)`` [m, world] (corner ``i``: signs of the half extents from
        the bits of ``i``, x the lowest)."""
        signs = np.array([[1.0 if i & (1 << j) else -1.0 for j in range(3)] for i in range(8)])
        local = signs[None] * self.parameters[:, None, P_HX:P_HZ + 1]
        return self.position[:, None, :] + np.einsum("bij,bkj->bki", self.rotation(), local)

    def shape_rows(self) -> np.ndarray:
        """The boxes as rows ``(n, 16)`` of :mod:`soft_envs.collision`'s shape layout:
        ``[BOX, px, py, pz, R00..R22 (row-major), hx, hy, hz]``."""
        rows = np.empty((self.n, SHAPE_WIDTH))
        rows[:, 0] = BOX
        rows[:, 1:4] = self.position
        rows[:, 4:13] = self.rotation().reshape(self.n, 9)
        rows[:, 13:16] = self.parameters[:, P_HX:P_HZ + 1]
        return rows
