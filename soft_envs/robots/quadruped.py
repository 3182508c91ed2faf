"""The 12-DOF quadruped of Orbegoso, Rodríguez and Valverde (Revista elektron 2021; SPEC §4).

Frames and units (SI throughout):

* **Body frame** — origin at the centre of the body, ``x`` forward, ``y`` left, ``z`` up. The
  four leg bases (the abduction-joint axes) sit at the corners of a ``body_length × body_width``
  rectangle (0.15 m × 0.135 m, seed Table I) in the plane ``z = 0``.
* **Leg base frame** — origin at a leg base, axes parallel to the body frame. Every leg
  model (:class:`QuadrupedLeg`) maps joint angles to the foot centre in this frame.

Joints of one leg, ``q = (q0, q1, q2)`` [rad]: ``q0`` abduction (about ``x``), ``q1`` hip and
``q2`` knee (both about ``y``). Right legs follow the seed's closed form exactly::

    X = −l2 cos q1 + l3 cos(q1 + q2)
    Y =  l0 sin q0 − l1 cos q0 − l2 sin q0 sin q1 + l3 sin q0 sin(q1 + q2)
    Z = −l0 cos q0 − l1 sin q0 + l2 sin q1 cos q0 − l3 sin(q1 + q2) cos q0

(the hip offset ``l1`` points outward, to −y). Left legs are the mirror image through the
body's sagittal plane, ``(X, Y, Z) → (X, −Y, Z)`` for the same joint angles — equivalently the
seed's formula with ``l1 → −l1`` and ``q0 → −q0`` — so symmetric commands give symmetric
motion and ``q0 > 0`` moves a foot toward the midline on both sides. ``q2`` is the interior
knee angle (0 folded, π straight); the knee points backward.

Leg numbering (seed Fig. 3): 1 front-left, 2 front-right, 3 rear-left, 4 rear-right; the trot
pairs are (1, 4) and (2, 3). Joint vectors of the whole robot are ordered leg by leg in that
order, ``(q0, q1, q2)`` per leg.

The PyBullet body is the package file ``soft_envs/urdf/quadruped/quadruped.urdf`` (masses,
inertias, limits documented in its README); a test checks that its geometry equals this model.
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError
from soft_envs.robots.base import KinematicModel

LEG_NAMES: tuple[str, ...] = ("front_left", "front_right", "rear_left", "rear_right")
JOINT_NAMES: tuple[str, ...] = ("abduction", "hip", "knee")

# Seed Table I [m].
BODY_LENGTH = 0.15
BODY_WIDTH = 0.135
L0, L1, L2, L3 = 0.012532, 0.00585, 0.045, 0.050

# Joint ranges [rad] of the hobby-servo robot (not in the paper; see urdf/quadruped/README.md).
JOINT_LOWER = np.array([-0.6, -2.2, 0.3])
JOINT_UPPER = np.array([0.6, 0.6, 2.9])
# MG90S-class micro servo: 2.2 kg·cm stall torque (6 V), no-load speed 0.1 s / 60° (4.8 V: the slower of
# the data sheet's two); how the servo model uses them: soft_envs.sim.servo.
SERVO_TORQUE = 0.22  # [N m]
SERVO_SPEED = 10.5  # [rad/s]
FOOT_RADIUS = 0.008  # [m]


# ---------------------------------------------------------------------------------------------
# Batched leg kinematics on component arrays (any broadcastable shapes): the single place the
# closed form lives. ``side`` is +1 for left legs, −1 for right legs.
# ---------------------------------------------------------------------------------------------
def _planar(q1, q2, l0, l2, l3):
    """Foot in the abduction-rotated leg plane: ``a`` along x, ``c`` along the rotated z, and
    their derivatives w.r.t. q1 and q2."""
    s1, c1 = np.sin(q1), np.cos(q1)
    q12 = q1 + q2
    s12, c12 = np.sin(q12), np.cos(q12)
    a = -l2 * c1 + l3 * c12
    c = -l0 + l2 * s1 - l3 * s12
    a2 = -l3 * s12
    c2 = -l3 * c12
    return a, c, l2 * s1 + a2, a2, l2 * c1 + c2, c2


def leg_forward_components(q0, q1, q2, side, l0=L0, l1=L1, l2=L2, l3=L3):
    """Foot position components ``(X, Y, Z)`` [m] in the leg base frame."""
    a, c, *_ = _planar(q1, q2, l0, l2, l3)
    s0, c0 = np.sin(q0), np.cos(q0)
    return a, side * (l1 * c0 + c * s0), -l1 * s0 + c * c0


def leg_newton_step(q0, q1, q2, side, rx, ry, rz, l0=L0, l1=L1, l2=L2, l3=L3):
    """``δ = J(q)^{-1} r`` in closed form, with the residual ``r`` given by components.

    Also returns ``det J = −side · c · l2 l3 sin q2``, zero at the singularities
    (knee straight or folded, or the foot on the abduction axis's level ``c = 0``).
    """
    a, c, a1, a2, c1, c2 = _planar(q1, q2, l0, l2, l3)
    s0, c0 = np.sin(q0), np.cos(q0)
    u = side * ry
    d0 = (u * c0 - rz * s0) / c
    m = u * s0 + rz * c0 + l1 * d0
    det2 = a1 * c2 - a2 * c1
    d1 = (rx * c2 - a2 * m) / det2
    d2 = (a1 * m - c1 * rx) / det2
    return d0, d1, d2, -side * c * det2


class QuadrupedLeg(KinematicModel):
    """One 3-DOF leg: ``forward(q)`` is the foot centre [m] in the leg base frame.

    Args:
        name: one of :data:`LEG_NAMES`.
        base: position of the leg base (abduction axis) in the body frame [m].
        side: +1 for a left leg, −1 for a right leg (see the module docstring).
        l0, l1, l2, l3: link lengths [m] (seed Table I).
        lower, upper: joint bounds [rad].
    """

    def __init__(self, name: str, base: np.ndarray, side: int, *, l0: float = L0, l1: float = L1,
                 l2: float = L2, l3: float = L3, lower: np.ndarray = JOINT_LOWER,
                 upper: np.ndarray = JOINT_UPPER) -> None:
        if side not in (1, -1):
            raise InvalidParameterError(f"side must be +1 (left) or -1 (right); got {side!r}")
        for label, value in (("l0", l0), ("l1", l1), ("l2", l2), ("l3", l3)):
            if not (np.isfinite(value) and value > 0):
                raise InvalidParameterError(f"{label} must be a positive length [m]; got {value!r}")
        self.name = name
        self.base = np.asarray(base, dtype=float).copy()
        self.side = int(side)
        self.l0, self.l1, self.l2, self.l3 = float(l0), float(l1), float(l2), float(l3)
        self.lower = np.asarray(lower, dtype=float).copy()
        self.upper = np.asarray(upper, dtype=float).copy()

    @property
    def lengths(self) -> tuple[float, float, float, float]:
        """``(l0, l1, l2, l3)`` [m]."""
        return self.l0, self.l1, self.l2, self.l3

    @property
    def reach(self) -> float:
        """Upper bound of the foot's distance from the leg base [m]: ``l0 + l1 + l2 + l3``."""
        return self.l0 + self.l1 + self.l2 + self.l3

    def forward(self, q: np.ndarray) -> np.ndarray:
        """Foot centre [m] in the leg base frame, ``(3,)`` or ``(B, 3)``."""
        q = self.check_configuration(q)
        x, y, z = leg_forward_components(q[..., 0], q[..., 1], q[..., 2], self.side, *self.lengths)
        return np.stack((x, y, z), axis=-1)

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """Analytic ``d foot / d q`` [m/rad], ``(3, 3)`` or ``(B, 3, 3)``."""
        q = self.check_configuration(q)
        s = self.side
        a, c, a1, a2, c1, c2 = _planar(q[..., 1], q[..., 2], self.l0, self.l2, self.l3)
        s0, c0 = np.sin(q[..., 0]), np.cos(q[..., 0])
        z = -self.l1 * s0 + c * c0
        jac = np.empty(q.shape[:-1] + (3, 3))
        jac[..., 0, 0] = 0.0
        jac[..., 0, 1] = a1
        jac[..., 0, 2] = a2
        jac[..., 1, 0] = s * z
        jac[..., 1, 1] = s * c1 * s0
        jac[..., 1, 2] = s * c2 * s0
        jac[..., 2, 0] = -self.l1 * c0 - c * s0
        jac[..., 2, 1] = c1 * c0
        jac[..., 2, 2] = c2 * c0
        return jac

    def jacobian_solve(self, q: np.ndarray, residual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J(q)^{-1} residual, det J(q))`` in closed form; ``(B, 3)`` inputs give ``(B, 3), (B,)``.

        The determinant is zero at a singularity, where the step is not finite.
        """
        q = np.asarray(q, dtype=float)
        r = np.asarray(residual, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            d0, d1, d2, det = leg_newton_step(q[..., 0], q[..., 1], q[..., 2], self.side,
                                              r[..., 0], r[..., 1], r[..., 2], *self.lengths)
        return np.stack((d0, d1, d2), axis=-1), det

    def inverse(self, foot: np.ndarray) -> np.ndarray:
        """Closed-form IK (knee backward, foot below the abduction axis), ``(3,)`` or ``(B, 3)``.

        Returns NaN rows for feet out of reach; the joint bounds are not applied (see
        :meth:`reachable`). Used to check the numerical solvers and to pick reachable targets.
        """
        p = np.asarray(foot, dtype=float)
        x, y, z = p[..., 0], p[..., 1], p[..., 2]
        yp = -self.side * y  # the right-leg (seed) frame
        with np.errstate(invalid="ignore"):
            c = -np.sqrt(yp**2 + z**2 - self.l1**2)
            q0 = np.arctan2(z, yp) - np.arctan2(c, -self.l1)
            q0 = (q0 + np.pi) % (2 * np.pi) - np.pi
            zp = c + self.l0
            cos_q2 = (self.l2**2 + self.l3**2 - x**2 - zp**2) / (2 * self.l2 * self.l3)
            q2 = np.arccos(np.where(np.abs(cos_q2) <= 1.0, cos_q2, np.nan))
            big_a = -self.l2 + self.l3 * np.cos(q2)
            big_b = self.l3 * np.sin(q2)
            q1 = np.arctan2(-zp, x) - np.arctan2(big_b, big_a)
            q1 = (q1 + np.pi) % (2 * np.pi) - np.pi
        return np.stack((q0, q1, q2), axis=-1)

    def reachable(self, foot: np.ndarray, margin: float = 0.0) -> np.ndarray | bool:
        """Whether the foot position has a closed-form solution within the bounds (shrunk by
        ``margin`` [rad])."""
        q = self.inverse(foot)
        ok = np.all(np.isfinite(q), axis=-1)
        with np.errstate(invalid="ignore"):
            ok &= np.all((q >= self.lower + margin) & (q <= self.upper - margin), axis=-1)
        return ok if ok.ndim else bool(ok)


class Quadruped:
    """The quadruped: body dimensions, its four :class:`QuadrupedLeg` models, the URDF.

    Args:
        body_length: distance between front and rear leg bases [m] (seed: 0.15 m).
        body_width: distance between left and right leg bases [m] (seed: 0.135 m).
        l0, l1, l2, l3: leg link lengths [m] (seed Table I).
        stance_height: default height of the leg bases above the foot centres [m].

    The URDF file is fixed (package data); :meth:`urdf_path` refuses a model whose dimensions
    differ from it.
    """

    def __init__(self, *, body_length: float = BODY_LENGTH, body_width: float = BODY_WIDTH,
                 l0: float = L0, l1: float = L1, l2: float = L2, l3: float = L3,
                 stance_height: float = 0.08) -> None:
        if not (body_length > 0 and body_width > 0):
            raise InvalidParameterError("body_length and body_width must be > 0 [m]")
        self.body_length, self.body_width = float(body_length), float(body_width)
        self.stance_height = float(stance_height)
        hx, hy = 0.5 * self.body_length, 0.5 * self.body_width
        bases = {"front_left": (hx, hy, 0.0), "front_right": (hx, -hy, 0.0),
                 "rear_left": (-hx, hy, 0.0), "rear_right": (-hx, -hy, 0.0)}
        self.legs: dict[str, QuadrupedLeg] = {
            name: QuadrupedLeg(name, np.array(bases[name]), 1 if name.endswith("left") else -1,
                               l0=l0, l1=l1, l2=l2, l3=l3)
            for name in LEG_NAMES}
        self.sides = np.array([self.legs[n].side for n in LEG_NAMES], dtype=float)
        self.bases = np.array([self.legs[n].base for n in LEG_NAMES])
        self.lower = np.tile(JOINT_LOWER, 4)
        self.upper = np.tile(JOINT_UPPER, 4)
        self.foot_radius = FOOT_RADIUS
        self.servo_torque = SERVO_TORQUE
        self.servo_speed = SERVO_SPEED
        # Leg bases at stance height; feet straight below the hip offset.
        if not self.legs["front_left"].reachable(self.neutral_feet()[0]):
            raise InvalidParameterError(f"stance_height {stance_height} m is out of the legs' reach")

    @property
    def n_dof(self) -> int:
        return 12

    @property
    def lengths(self) -> tuple[float, float, float, float]:
        """``(l0, l1, l2, l3)`` [m] of every leg."""
        return self.legs["front_left"].lengths

    @property
    def leg_reach(self) -> float:
        """Upper bound of a foot's distance from its leg base [m] (:attr:`QuadrupedLeg.reach`)."""
        return self.legs["front_left"].reach

    def leg(self, name: str) -> QuadrupedLeg:
        """The leg model called ``name`` (``front_left``, ``front_right``, ``rear_left``, ``rear_right``)."""
        if name not in self.legs:
            raise InvalidParameterError(f"unknown leg {name!r}; choose from {LEG_NAMES}")
        return self.legs[name]

    # ------------------------------------------------------------------ all four legs at once
    def neutral_feet(self, height: float | None = None) -> np.ndarray:
        """``(4, 3)`` standing foot centres [m] in the leg base frames: below the hip offset."""
        h = self.stance_height if height is None else float(height)
        l1 = self.lengths[1]
        return np.stack([np.zeros(4), self.sides * l1, np.full(4, -h)], axis=-1)

    def standing_configuration(self, height: float | None = None) -> np.ndarray:
        """``(4, 3)`` joint angles [rad] of the standing pose (closed form)."""
        feet = self.neutral_feet(height)
        return np.array([self.legs[n].inverse(f) for n, f in zip(LEG_NAMES, feet)])

    def legs_forward(self, q: np.ndarray) -> np.ndarray:
        """Feet [m] in their leg base frames, ``(..., 4, 3)`` from joint angles ``(..., 4, 3)``."""
        q = np.asarray(q, dtype=float)
        x, y, z = leg_forward_components(q[..., 0], q[..., 1], q[..., 2], self.sides, *self.lengths)
        return np.stack((x, y, z), axis=-1)

    def feet_in_body(self, q: np.ndarray) -> np.ndarray:
        """Feet [m] in the body frame, ``(..., 4, 3)``."""
        return self.legs_forward(q) + self.bases

    def check_joint_vector(self, q: np.ndarray) -> np.ndarray:
        """``q`` as a ``(4, 3)`` float array (accepts ``(12,)``); :class:`InvalidConfigurationError`
        (a ``ValueError``) otherwise."""
        arr = np.asarray(q, dtype=float)
        if arr.shape not in ((12,), (4, 3)):
            raise InvalidConfigurationError(f"joint vector must have shape (12,) or (4, 3); got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise InvalidConfigurationError(f"joint vector has NaN/inf: {arr}")
        return arr.reshape(4, 3)

    # ------------------------------------------------------------------ URDF
    def urdf_path(self):
        """Context manager giving a filesystem path to the packaged URDF (``importlib.resources``)."""
        if not np.allclose((self.body_length, self.body_width, *self.lengths),
                           (BODY_LENGTH, BODY_WIDTH, L0, L1, L2, L3), rtol=0, atol=1e-12):
            raise InvalidParameterError("the packaged URDF has the seed's dimensions; this model differs")
        return resources.as_file(resources.files("soft_envs.urdf").joinpath("quadruped/quadruped.urdf"))

    @staticmethod
    def urdf_text() -> str:
        """The packaged URDF document."""
        return resources.files("soft_envs.urdf").joinpath("quadruped/quadruped.urdf").read_text()

    @staticmethod
    def joint_name(leg: str, joint: str) -> str:
        """URDF name of a joint, e.g. ``front_left_hip``."""
        return f"{leg}_{joint}"

    @staticmethod
    def foot_link_name(leg: str) -> str:
        """URDF name of a foot link, e.g. ``front_left_foot``."""
        return f"{leg}_foot"

