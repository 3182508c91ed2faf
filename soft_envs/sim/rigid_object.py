"""Free rigid boxes on a table: compliant contact and regularised Coulomb friction, batched.

``B`` boxes, one per env of a vector env (a single env is ``B = 1``); every box is a full 6-DOF
rigid body on its own table plane. The per-box kernel (:func:`step_box`) is allocation-free scalar
math over small arrays (the style of :mod:`soft_envs.sim.batched_kernels`, whose jit options it
reuses) and :func:`batch_step` loops it over the batch in one compiled loop.

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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

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
from soft_envs.sim.batched_kernels import _INLINE, _JIT

#: numba's stubs type every keyword of ``njit``; the shared option dicts (``_JIT``, ``_INLINE``) are untyped.
_njit: Callable[..., Any] = njit


DEFAULT_MASS = 0.1  # kg
DEFAULT_HALF_EXTENT = 0.02  # m (a 4 cm cube)
DEFAULT_FRICTION = 0.4  # plastic on wood/laminate (module docstring)
DEFAULT_TIME_CONSTANT = 0.008  # s, τ
DEFAULT_DAMPING_RATIO = 1.0  # ζ
DEFAULT_STICTION_SPEED = 1e-5  # m/s, v_s
DEFAULT_PASSES = 4  # Newton passes per step (the stopping step of a slide needs 4 at 1/120 s)

# Per-box parameter row (BatchedBoxes.parameters): the kernel reads these columns.
P_MASS, P_HX, P_HY, P_HZ, P_MU, P_TABLE, P_K, P_C, P_VS, P_IX, P_IY, P_IZ, P_GRAVITY = range(13)
N_PARAMETERS = 13
# State row (BatchedBoxes.state): position, quaternion (x, y, z, w), velocity, angular velocity.
S_POS, S_QUAT, S_VEL, S_OMEGA = 0, 3, 7, 10
STATE_WIDTH = 13
# Per-box diagnostics of the last step: total normal force [N], deepest penetration [m] (end state).
DIAG_NORMAL_FORCE, DIAG_PENETRATION = 0, 1
_WORK = 152  # scratch per box (step_box's layout)


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


# ---------------------------------------------------------------------------- per-box kernel

@_njit(**_INLINE)
def _rotation(q, R):
    """``R(q)`` (row-major into ``R`` (9,)) of the quaternion ``q`` ``(x, y, z, w)``."""
    x, y, z, w = q[0], q[1], q[2], q[3]
    R[0] = 1.0 - 2.0 * (y * y + z * z)
    R[1] = 2.0 * (x * y - z * w)
    R[2] = 2.0 * (x * z + y * w)
    R[3] = 2.0 * (x * y + z * w)
    R[4] = 1.0 - 2.0 * (x * x + z * z)
    R[5] = 2.0 * (y * z - x * w)
    R[6] = 2.0 * (x * z - y * w)
    R[7] = 2.0 * (y * z + x * w)
    R[8] = 1.0 - 2.0 * (x * x + y * y)


@_njit(**_INLINE)
def _integrate_quaternion(q0, wx, wy, wz, h, q):
    """``q = exp(h ω) ⊗ q0`` (world-frame ``ω``, quaternions ``(x, y, z, w)``), normalised."""
    ax, ay, az = h * wx, h * wy, h * wz
    angle = math.sqrt(ax * ax + ay * ay + az * az)
    if angle > 1e-8:
        s = math.sin(0.5 * angle) / angle
    else:
        s = 0.5 - angle * angle / 48.0
    dx, dy, dz, dw = s * ax, s * ay, s * az, math.cos(0.5 * angle)
    x, y, z, w = q0[0], q0[1], q0[2], q0[3]
    rx = dw * x + dx * w + dy * z - dz * y
    ry = dw * y + dy * w + dz * x - dx * z
    rz = dw * z + dz * w + dx * y - dy * x
    rw = dw * w - dx * x - dy * y - dz * z
    n = math.sqrt(rx * rx + ry * ry + rz * rz + rw * rw)
    q[0], q[1], q[2], q[3] = rx / n, ry / n, rz / n, rw / n


@_njit(**_INLINE)
def _world_inertia(prm, R, Iw):
    """``I_w = R diag(I_b) Rᵀ`` (row-major into ``Iw`` (9,))."""
    ix, iy, iz = prm[P_IX], prm[P_IY], prm[P_IZ]
    for r in range(3):
        for col in range(3):
            Iw[3 * r + col] = ix * R[3 * r] * R[3 * col] + iy * R[3 * r + 1] * R[3 * col + 1] \
                + iz * R[3 * r + 2] * R[3 * col + 2]


@_njit(**_INLINE)
def _add_outer(A, a, b, scale):
    """``A += scale · a bᵀ`` for 6-vectors (``A`` row-major (36,) in the work array)."""
    for r in range(6):
        s = scale * a[r]
        for col in range(6):
            A[6 * r + col] += s * b[col]


@_njit(**_INLINE)
def _solve6(work):
    """Solve ``A x = b`` in place (``A`` at ``work[0:36]`` row-major, ``b`` at ``work[36:42]``; ``x``
    overwrites ``b``): Gaussian elimination with partial pivoting."""
    for col in range(6):
        piv = col
        best = abs(work[6 * col + col])
        for r in range(col + 1, 6):
            v = abs(work[6 * r + col])
            if v > best:
                best, piv = v, r
        if piv != col:
            for j in range(6):
                t = work[6 * col + j]
                work[6 * col + j] = work[6 * piv + j]
                work[6 * piv + j] = t
            t = work[36 + col]
            work[36 + col] = work[36 + piv]
            work[36 + piv] = t
        d = work[6 * col + col]
        for r in range(col + 1, 6):
            f = work[6 * r + col] / d
            if f != 0.0:
                for j in range(col, 6):
                    work[6 * r + j] -= f * work[6 * col + j]
                work[36 + r] -= f * work[36 + col]
    for r in range(5, -1, -1):
        s = work[36 + r]
        for j in range(r + 1, 6):
            s -= work[6 * r + j] * work[36 + j]
        work[36 + r] = s / work[6 * r + r]


@_njit(**_INLINE)
def _end_configuration(s0, nu, h, p, q):
    """The trapezoidal end configuration ``p = p₀ + h (v₀ + v)/2``, ``q = exp(h (ω₀ + ω)/2) ⊗ q₀``."""
    for i in range(3):
        p[i] = s0[S_POS + i] + 0.5 * h * (s0[S_VEL + i] + nu[i])
    _integrate_quaternion(s0[S_QUAT:S_QUAT + 4], 0.5 * (s0[S_OMEGA] + nu[3]), 0.5 * (s0[S_OMEGA + 1] + nu[4]),
                          0.5 * (s0[S_OMEGA + 2] + nu[5]), h, q)


@_njit(**_INLINE)
def _corner(prm, R, i, a):
    """The arm ``a = R r_i`` [m, world] of corner ``i`` (signs from the bits of ``i``) from the centre."""
    bx = prm[P_HX] if i & 1 else -prm[P_HX]
    by = prm[P_HY] if i & 2 else -prm[P_HY]
    bz = prm[P_HZ] if i & 4 else -prm[P_HZ]
    for r in range(3):
        a[r] = R[3 * r] * bx + R[3 * r + 1] * by + R[3 * r + 2] * bz


@_njit(**_INLINE)
def _contacts(prm, p, R, R0, kappa, nu, h, matrix, A, b, a, a0, row, seen):
    """Add the corners' contact wrench at configuration ``(p, R)`` and velocity ``nu`` to ``b`` (6,)
    and, if ``matrix``, its linearisation ``h D + h²/2 K`` to ``A`` (36,): the normal's
    ``h c + h² k/2`` and friction's ``h η`` (``η = μ f_n / √(|v_t|² + v_s²)``, the law's secant
    at ``nu``) along the corner's rows of ``J = [I, −[ã]×]``. The lever arm ``ã = κ (a₀ + a)/2``
    (``a₀``, ``a`` the corner's arm at the step's start ``R0`` and end ``R``, ``κ = tan(φ/2)/(φ/2)``
    for the step's rotation angle ``φ``) makes ``θ × ã = a − a₀`` exactly, so the wrench does the
    work of the corner's true displacement (with the end arm the torque's work missed
    ``θ × (θ × a)/2`` and a spinning impact could gain energy); ``a``, ``a0`` (3,), ``row`` (6,)
    scratch. ``seen`` (8,) flags the corners in contact at an earlier pass of the step: such a
    corner out of contact now keeps its normal stiffness and damping in the matrix (no force), so
    the passes cannot cycle between a penetrating end state and one that the contact's force has
    lifted clear (they converge onto the corner's touch-down instead)."""
    mu, k, c, vs, zt = prm[P_MU], prm[P_K], prm[P_C], prm[P_VS], prm[P_TABLE]
    for i in range(8):
        _corner(prm, R, i, a)
        depth = zt - (p[2] + a[2])
        # corner velocity v + ω × a
        vx = nu[0] + nu[4] * a[2] - nu[5] * a[1]
        vy = nu[1] + nu[5] * a[0] - nu[3] * a[2]
        vn = nu[2] + nu[3] * a[1] - nu[4] * a[0]
        fn = k * depth - c * vn
        if depth <= 0.0 or fn <= 0.0:
            if matrix and seen[i] != 0.0:
                row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 0.0, 1.0, a[1], -a[0], 0.0
                _add_outer(A, row, row, h * c + 0.5 * h * h * k)
            continue
        seen[i] = 1.0
        _corner(prm, R0, i, a0)
        for r in range(3):
            a[r] = 0.5 * kappa * (a[r] + a0[r])
        eta = mu * fn / math.sqrt(vx * vx + vy * vy + vs * vs)
        ftx, fty = -eta * vx, -eta * vy
        b[0] += ftx
        b[1] += fty
        b[2] += fn
        b[3] += a[1] * fn - a[2] * fty
        b[4] += a[2] * ftx - a[0] * fn
        b[5] += a[0] * fty - a[1] * ftx
        if not matrix:
            continue
        # normal row n J = (0, 0, 1, a_y, −a_x, 0)
        row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 0.0, 1.0, a[1], -a[0], 0.0
        _add_outer(A, row, row, h * c + 0.5 * h * h * k)
        # tangential rows: x: (1, 0, 0, 0, a_z, −a_y); y: (0, 1, 0, −a_z, 0, a_x)
        row[0], row[1], row[2], row[3], row[4], row[5] = 1.0, 0.0, 0.0, 0.0, a[2], -a[1]
        _add_outer(A, row, row, h * eta)
        row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 1.0, 0.0, -a[2], 0.0, a[0]
        _add_outer(A, row, row, h * eta)


@_njit(**_JIT)
def contact_state(prm, p, R, nu, a, out):
    """Total normal force [N] and deepest penetration [m] (negative: the gap) of the box at
    configuration ``(p, R)`` and velocity ``nu`` into ``out`` (2,); ``a`` (3,) scratch."""
    k, c = prm[P_K], prm[P_C]
    total = 0.0
    deepest = -math.inf
    for i in range(8):
        _corner(prm, R, i, a)
        depth = prm[P_TABLE] - (p[2] + a[2])
        deepest = max(deepest, depth)
        if depth > 0.0:
            vn = nu[2] + nu[3] * a[1] - nu[4] * a[0]
            total += max(0.0, k * depth - c * vn)
    out[DIAG_NORMAL_FORCE] = total
    out[DIAG_PENETRATION] = deepest


@_njit(**_JIT)
def step_box(prm, s, force, torque, arm, Ke, Ce, h, passes, work, diag):
    """One time step ``h`` [s] of one box (module docstring) in place on its state row ``s`` (13,).

    ``prm`` its parameter row; ``force`` (3,) [N] at the arm ``arm`` (3,) [m, world, from the
    centre] and ``torque`` (3,) [N m] about the centre, both at the step's start; ``Ke``, ``Ce``
    (3, 3) the force's stiffness [N/m] and damping [N s/m] (spring sign) for the point's
    displacement and velocity; ``passes`` Newton passes; ``work`` (≥ 152,) scratch; ``diag`` (2,)
    receives the total normal force [N] and deepest penetration [m] at the step's end."""
    m, g = prm[P_MASS], prm[P_GRAVITY]
    s0 = work[64:77]
    for i in range(STATE_WIDTH):
        s0[i] = s[i]
    nu = work[42:48]
    p = work[77:80]
    q = work[80:84]
    R = work[84:93]
    Iw = work[93:102]
    a = work[102:105]
    row = work[105:111]
    L0 = work[111:114]
    je = work[114:132]
    R0 = work[132:141]
    a0 = work[141:144]
    seen = work[144:152]
    for i in range(8):
        seen[i] = 0.0
    ex, ey, ez = arm[0], arm[1], arm[2]  # the point moves by dp + dθ × arm
    # start angular momentum L₀ = I_w(q₀) ω₀
    _rotation(s0[S_QUAT:S_QUAT + 4], R0)
    _world_inertia(prm, R0, Iw)
    for r in range(3):
        L0[r] = Iw[3 * r] * s0[S_OMEGA] + Iw[3 * r + 1] * s0[S_OMEGA + 1] + Iw[3 * r + 2] * s0[S_OMEGA + 2]
    # predictor: the start velocity (a warm start: in stiction the step's answer is close to it)
    for r in range(6):
        nu[r] = s0[S_VEL + r]
    for _ in range(passes):
        _end_configuration(s0, nu, h, p, q)
        _rotation(q, R)
        _world_inertia(prm, R, Iw)
        A = work[0:36]
        b = work[36:42]
        for i in range(36):
            A[i] = 0.0
        for r in range(3):
            A[7 * r] = m
            for col in range(3):
                A[6 * (3 + r) + 3 + col] = Iw[3 * r + col]
        # residual b = h F̂ − (M̂ ν̂ − M₀ ν₀), forces first
        dpx = p[0] - s0[S_POS]
        dpy = p[1] - s0[S_POS + 1]
        dpz = p[2] - s0[S_POS + 2]
        # rotation increment of the iterate (small-angle, the trapezoidal ω̄ h)
        tx = 0.5 * h * (s0[S_OMEGA] + nu[3])
        ty = 0.5 * h * (s0[S_OMEGA + 1] + nu[4])
        tz = 0.5 * h * (s0[S_OMEGA + 2] + nu[5])
        # external point displacement and velocity change: d = Δp + θ × arm
        ux = dpx + ty * ez - tz * ey
        uy = dpy + tz * ex - tx * ez
        uz = dpz + tx * ey - ty * ex
        wx3, wy3, wz3 = nu[3] - s0[S_OMEGA], nu[4] - s0[S_OMEGA + 1], nu[5] - s0[S_OMEGA + 2]
        dvx = nu[0] - s0[S_VEL] + wy3 * ez - wz3 * ey
        dvy = nu[1] - s0[S_VEL + 1] + wz3 * ex - wx3 * ez
        dvz = nu[2] - s0[S_VEL + 2] + wx3 * ey - wy3 * ex
        fx = force[0] - (Ke[0, 0] * ux + Ke[0, 1] * uy + Ke[0, 2] * uz) \
            - (Ce[0, 0] * dvx + Ce[0, 1] * dvy + Ce[0, 2] * dvz)
        fy = force[1] - (Ke[1, 0] * ux + Ke[1, 1] * uy + Ke[1, 2] * uz) \
            - (Ce[1, 0] * dvx + Ce[1, 1] * dvy + Ce[1, 2] * dvz)
        fz = force[2] - (Ke[2, 0] * ux + Ke[2, 1] * uy + Ke[2, 2] * uz) \
            - (Ce[2, 0] * dvx + Ce[2, 1] * dvy + Ce[2, 2] * dvz)
        b[0], b[1], b[2] = fx, fy, fz - m * g
        b[3] = torque[0] + ey * fz - ez * fy
        b[4] = torque[1] + ez * fx - ex * fz
        b[5] = torque[2] + ex * fy - ey * fx
        # external K, C into the matrix: A += Jₑᵀ (h C + h²/2 K) Jₑ, Jₑ = [I, −[arm]×] (3 × 6)
        for r in range(18):
            je[r] = 0.0
        je[0], je[7], je[14] = 1.0, 1.0, 1.0
        je[4], je[5] = ez, -ey
        je[9], je[11] = -ez, ex
        je[15], je[16] = ey, -ex
        for r in range(3):
            for col in range(3):
                scale = h * Ce[r, col] + 0.5 * h * h * Ke[r, col]
                if scale != 0.0:
                    _add_outer(A, je[6 * r:6 * r + 6], je[6 * col:6 * col + 6], scale)
        half = 0.5 * math.sqrt(tx * tx + ty * ty + tz * tz)
        kappa = math.tan(half) / half if half > 1e-4 else 1.0 + half * half / 3.0
        _contacts(prm, p, R, R0, kappa, nu, h, True, A, b, a, a0, row, seen)
        for r in range(3):
            b[r] = h * b[r] - m * (nu[r] - s0[S_VEL + r])
            b[3 + r] = h * b[3 + r] - (Iw[3 * r] * nu[3] + Iw[3 * r + 1] * nu[4] + Iw[3 * r + 2] * nu[5] - L0[r])
        _solve6(work)
        for r in range(6):
            nu[r] += b[r]
    _end_configuration(s0, nu, h, p, q)
    for r in range(3):
        s[S_POS + r] = p[r]
        s[S_VEL + r] = nu[r]
        s[S_OMEGA + r] = nu[3 + r]
    for r in range(4):
        s[S_QUAT + r] = q[r]
    _rotation(q, R)
    contact_state(prm, p, R, nu, a, diag)


@_njit(**_JIT)
def batch_step(prm, state, force, torque, arm, Ke, Ce, h, passes, diag):
    """:func:`step_box` of every box (leading axis of every per-box array)."""
    work = np.empty(_WORK)
    for b in range(state.shape[0]):
        step_box(prm[b], state[b], force[b], torque[b], arm[b], Ke[b], Ce[b], h, passes, work, diag[b])


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
    depth."""

    def __init__(self, n: int, params: BoxParameters | None = None, *, table_height=None,
                 passes: int = DEFAULT_PASSES) -> None:
        self.n = check_integer("n", n, minimum=1)
        self.params = BoxParameters() if params is None else params
        if not isinstance(self.params, BoxParameters):
            raise InvalidParameterError(f"params must be a BoxParameters; got {type(params).__name__}")
        self.passes = check_integer("passes", passes, minimum=1, maximum=50)
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
