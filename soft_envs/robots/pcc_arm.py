"""Multi-segment extensible PCC soft arm discretised into rigid links (Keyvanara et al., Sensors 2023;
SPEC section 3).

Frames and units: the base frame has its origin at the foot of the first segment, ``z`` along
the unbent arm. Segment ``i`` has the configuration ``(ΔL_i, θ_i, φ_i)``: elongation [m], total
bend angle [rad] (signed) and bending-plane direction [rad] measured from ``x``. It is a
constant-curvature arc of length ``L_i + ΔL_i`` discretised into ``m`` rigid links; link
``k = 1..m`` has length ``(L_i + ΔL_i)/m`` and points along the arc tangent at its midpoint,
i.e. at bend angle ``(2k − 1) θ_i / (2m)`` in the plane ``φ_i`` (paper eq. 1). Segment frames
compose with the full rotation ``Rz(φ) Ry(θ) Rz(−φ)`` of every earlier segment.

Smooth coordinates. ``(θ, φ)`` is singular at ``θ = 0`` (``φ`` is then undetermined) and ``φ``
is periodic, so the kinematics are evaluated in the smooth coordinates
``u = (ΔL, a, b)`` with ``a = θ cos φ``, ``b = θ sin φ`` (the bend vector; the paper's
curvatures are ``κx = a/L``, ``κy = b/L``). :meth:`PCCArm.to_smooth` and
:meth:`PCCArm.from_smooth` convert; the IK solvers work in ``u``. The signed ``θ`` means
``(θ, φ)`` and ``(−θ, φ ± π)`` are the same shape; :meth:`PCCArm.from_smooth` picks the one
nearest a reference configuration so that trajectories stay continuous.

:class:`~soft_envs.robots.planar_pcc_arm.PlanarPCCArm` is the 2-D variant (``φ = 0``, configuration
``(ΔL, θ)`` per segment): the arm moves in the ``x–z`` plane.

The link sums are evaluated by :class:`~soft_envs.robots.pcc_kinematics.PCCKinematics`; the
PyBullet body is described as a rigid-link chain by :meth:`PCCArm.chain`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_finite, check_integer
from soft_envs.geometry import bend_functions, bend_rotation
from soft_envs.robots.base import ChainBody, KinematicModel
from soft_envs.robots.chain import (
    BASE_COLOUR,
    Body,
    Chain,
    ChainLink,
    Cylinder,
    Limits,
    backbone_jacobian,
    backbone_points,
    bend_section,
    bend_section_jacobian,
    cylinder_inertia,
    section_colour,
    section_joint_values,
)
from soft_envs.robots.pcc_kinematics import PCCKinematics
from soft_envs.robots.pcc_pressure import DEFAULT_MAX_PRESSURE, PAPER_ALPHA1, PAPER_ALPHA2, PressureMap

_CLOSED_FORM_MIN_BEND = 1e-3  # rad; below it the series-based path is used

# Paper's physical segment (section 3.2): mass, relaxed length, Young's modulus, Poisson's ratio.
PAPER_SEGMENT_MASS = 0.0173  # kg
PAPER_RELAXED_LENGTH = 0.0644  # m
PAPER_YOUNGS_MODULUS = 80e6  # Pa
PAPER_POISSON_RATIO = 0.49
ELASTOMER_DENSITY = 1100.0  # kg/m^3, printed elastomer (assumption, used only to size the cross-section)
STIFFNESS_SOURCES = ("pressure", "material")
#: The most segments an arm may have (a bound on its size, checked before anything is built; an env
#: that steps the arm in PyBullet takes fewer: at most 127 joints, ``(2m + 3) N``).
MAX_SEGMENTS = 32
#: The most rigid links per segment.
MAX_LINKS_PER_SEGMENT = 64


class PCCArm(ChainBody, KinematicModel):
    """Kinematic model of an extensible multi-segment PCC arm discretised into rigid links.

    Args:
        n_segments: number of segments, 1 to :data:`MAX_SEGMENTS` (32).
        links_per_segment: rigid links ``m`` per segment (the paper: 6), 1 to
            :data:`MAX_LINKS_PER_SEGMENT` (64).
        segment_length: relaxed segment length ``L`` [m], one value or one per segment.
        elongation: ``|ΔL| ≤ elongation · L`` (the paper's code: 10 %).
        max_bend: ``|θ| ≤ max_bend`` [rad] (the paper's code: 140°).
        segment_mass: mass of one segment [kg] (body and dynamics only).
        youngs_modulus, poisson_ratio: material of the segments (the ``"material"`` stiffness).
        alpha1, alpha2: eq. 9's pressure-map parameters [m², m⁴] (the paper's identified values;
            :mod:`~soft_envs.robots.pcc_pressure` says how their exponents were read).
        max_pressure: chamber gauge-pressure bound [Pa]; chambers work in ``±max_pressure``
            (an assumption, default 30 kPa; the stiffness is calibrated on it).
        stiffness_source: ``"pressure"`` (default): the elastic stiffness calibrated so that the
            pressure bounds reach the elongation and bend bounds; ``"material"``: ``E A/L`` and
            ``E I/L`` of the equivalent solid cross-section (the stiff arm of earlier versions).

    Configuration ``c``: ``(ΔL, θ, φ)`` per segment, shape ``(3 N,)`` or ``(B, 3 N)``; bounds
    ``ΔL ∈ ±elongation·L``, ``θ ∈ ±max_bend``, ``φ ∈ [−π, π]``.
    """

    per_segment = 3
    planar = False

    def __init__(
        self,
        n_segments: int = 3,
        links_per_segment: int = 6,
        segment_length: float | Sequence[float] = 0.065,
        *,
        elongation: float = 0.1,
        max_bend: float = np.deg2rad(140.0),
        segment_mass: float = PAPER_SEGMENT_MASS,
        youngs_modulus: float = PAPER_YOUNGS_MODULUS,
        poisson_ratio: float = PAPER_POISSON_RATIO,
        alpha1: float = PAPER_ALPHA1,
        alpha2: float = PAPER_ALPHA2,
        max_pressure: float = DEFAULT_MAX_PRESSURE,
        stiffness_source: str = "pressure",
    ) -> None:
        check_integer("n_segments", n_segments, minimum=1, maximum=MAX_SEGMENTS)
        check_integer("links_per_segment", links_per_segment, minimum=1, maximum=MAX_LINKS_PER_SEGMENT)
        try:
            lengths = np.broadcast_to(np.asarray(segment_length, dtype=float), (int(n_segments),)).copy()
        except (TypeError, ValueError):
            raise InvalidParameterError(f"segment_length must be a number or one per segment [m]; "
                                        f"got {segment_length!r}") from None
        if not np.all(np.isfinite(lengths)) or np.any(lengths <= 0):
            raise InvalidParameterError(f"segment_length must be positive [m]; got {segment_length!r}")
        if np.any(lengths > 2.0):
            raise InvalidParameterError("segment_length is in metres; got a value above 2 m (mm given?)")
        if not 0 <= check_finite("elongation", elongation) < 1:
            raise InvalidParameterError(f"elongation must be in [0, 1); got {elongation!r}")
        if not 0 < check_finite("max_bend [rad]", max_bend) <= np.pi:
            raise InvalidParameterError(f"max_bend must be in (0, π] rad; got {max_bend!r}")
        for name, value in (("segment_mass", segment_mass), ("youngs_modulus", youngs_modulus)):
            if check_finite(f"{name} [SI]", value) <= 0:
                raise InvalidParameterError(f"{name} must be positive [SI]; got {value!r}")
        if not -1 < check_finite("poisson_ratio", poisson_ratio) < 0.5:
            raise InvalidParameterError(f"poisson_ratio must be in (−1, 0.5); got {poisson_ratio!r}")
        if stiffness_source not in STIFFNESS_SOURCES:
            raise InvalidParameterError(
                f"stiffness_source must be one of {STIFFNESS_SOURCES}; got {stiffness_source!r}")
        if stiffness_source == "pressure" and elongation == 0:
            raise InvalidParameterError("the pressure-calibrated stiffness needs elongation > 0")
        self.n_segments = int(n_segments)
        self.links_per_segment = int(links_per_segment)
        self.segment_lengths = lengths
        self.elongation = float(elongation)
        self.max_bend = float(max_bend)
        self.segment_mass = float(segment_mass)
        self.youngs_modulus = float(youngs_modulus)
        self.poisson_ratio = float(poisson_ratio)
        self.stiffness_source = stiffness_source
        #: The chambers of every segment and eq. 9 (:class:`~soft_envs.robots.pcc_pressure.PressureMap`).
        self.pressure = PressureMap(2 if self.planar else 3, alpha1, alpha2, PAPER_RELAXED_LENGTH, max_pressure)
        self._kinematics = PCCKinematics(self.segment_lengths, self.links_per_segment)
        lo, hi = self._segment_bounds()
        self.lower = np.concatenate([lo(i) for i in range(self.n_segments)])
        self.upper = np.concatenate([hi(i) for i in range(self.n_segments)])

    def _segment_bounds(self):
        def lo(i: int) -> np.ndarray:
            return np.array([-self.elongation * self.segment_lengths[i], -self.max_bend, -np.pi])

        def hi(i: int) -> np.ndarray:
            return np.array([self.elongation * self.segment_lengths[i], self.max_bend, np.pi])
        return lo, hi

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_segments={self.n_segments}, links_per_segment={self.links_per_segment}, "
                f"segment_length={self.segment_lengths.tolist()})")

    def with_links(self, links_per_segment: int) -> PCCArm:
        """The same arm with another number of links per segment."""
        return type(self)(self.n_segments, links_per_segment, self.segment_lengths.copy(), **self._parameters())

    def _parameters(self) -> dict:
        """The keyword parameters of this arm (for copies)."""
        return dict(elongation=self.elongation, max_bend=self.max_bend, segment_mass=self.segment_mass,
                    youngs_modulus=self.youngs_modulus, poisson_ratio=self.poisson_ratio,
                    alpha1=self.pressure.alpha1, alpha2=self.pressure.alpha2,
                    max_pressure=self.pressure.max_pressure, stiffness_source=self.stiffness_source)

    @property
    def total_length(self) -> float:
        """Relaxed length of the whole arm [m]."""
        return float(self.segment_lengths.sum())

    @property
    def reach(self) -> float:
        """Length of the straight, fully extended arm [m]."""
        return self.total_length * (1.0 + self.elongation)

    # ------------------------------------------------------------------ coordinates

    @property
    def smooth_lower(self) -> np.ndarray:
        """Box bounds of the smooth coordinates ``(ΔL, a, b)`` (the bend disk is tighter)."""
        lo = np.tile([0.0, -self.max_bend, -self.max_bend], self.n_segments)
        lo[0::3] = -self.elongation * self.segment_lengths
        return lo

    @property
    def smooth_upper(self) -> np.ndarray:
        return -self.smooth_lower

    def to_smooth(self, c: np.ndarray) -> np.ndarray:
        """Configuration ``(ΔL, θ, φ)`` per segment -> smooth ``(ΔL, a, b)``, same shape."""
        c = self.check_configuration(c)
        s = c.reshape(*c.shape[:-1], self.n_segments, 3)
        u = np.stack((s[..., 0], s[..., 1] * np.cos(s[..., 2]), s[..., 1] * np.sin(s[..., 2])), axis=-1)
        return u.reshape(c.shape[:-1] + (3 * self.n_segments,))

    def from_smooth(self, u: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """Smooth ``(ΔL, a, b)`` -> ``(ΔL, θ, φ)``, choosing ``(θ, φ)`` or ``(−θ, φ ± π)``.

        With a ``reference`` configuration the representation nearest it is returned (and
        ``φ`` keeps the reference's value at ``θ = 0``); otherwise ``θ ≥ 0``. ``φ`` is wrapped
        into ``[−π, π]``.
        """
        u = np.asarray(u, dtype=float)
        s = u.reshape(*u.shape[:-1], self.n_segments, 3)
        theta = np.hypot(s[..., 1], s[..., 2])
        phi = np.arctan2(s[..., 2], s[..., 1])
        if reference is not None:
            ref = np.broadcast_to(np.asarray(reference, dtype=float), u.shape).reshape(s.shape)
            ref_theta, ref_phi = ref[..., 1], ref[..., 2]
            flip_phi = np.angle(np.exp(1j * (phi + np.pi)))
            d_keep = np.abs(np.angle(np.exp(1j * (phi - ref_phi)))) + np.abs(theta - ref_theta)
            d_flip = np.abs(np.angle(np.exp(1j * (flip_phi - ref_phi)))) + np.abs(-theta - ref_theta)
            flip = d_flip < d_keep
            theta = np.where(flip, -theta, theta)
            phi = np.where(flip, flip_phi, phi)
            phi = np.where(theta == 0.0, ref_phi, phi)
        c = np.stack((s[..., 0], theta, phi), axis=-1)
        return c.reshape(u.shape)

    def project_smooth(self, u: np.ndarray) -> np.ndarray:
        """Nearest feasible smooth point: ``ΔL`` clipped, the bend vector scaled into ``|θ| ≤ max_bend``."""
        u = np.array(u, dtype=float)
        s = u.reshape(*u.shape[:-1], self.n_segments, 3)
        s[..., 0] = np.clip(s[..., 0], -self.elongation * self.segment_lengths, self.elongation * self.segment_lengths)
        theta = np.hypot(s[..., 1], s[..., 2])
        scale = np.where(theta > self.max_bend, self.max_bend / np.maximum(theta, 1e-300), 1.0)
        s[..., 1] *= scale
        s[..., 2] *= scale
        return u

    def smooth_constraint(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``g(u) = max_bend² − a² − b² ≥ 0`` per segment and its Jacobian ``(N, 3N)`` (single ``u``)."""
        s = np.asarray(u, dtype=float).reshape(self.n_segments, 3)
        g = self.max_bend**2 - s[:, 1] ** 2 - s[:, 2] ** 2
        dg = np.zeros((self.n_segments, 3 * self.n_segments))
        idx = np.arange(self.n_segments)
        dg[idx, 3 * idx + 1] = -2 * s[:, 1]
        dg[idx, 3 * idx + 2] = -2 * s[:, 2]
        return g, dg

    def _smooth_from_config(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``u`` ``(B, N, 3)`` and the chain matrix ``du/dc`` ``(B, N, 3, 3)``."""
        s = c.reshape(c.shape[0], self.n_segments, 3)
        cos, sin = np.cos(s[..., 2]), np.sin(s[..., 2])
        a, b = s[..., 1] * cos, s[..., 1] * sin
        u = np.stack((s[..., 0], a, b), axis=-1)
        du = np.zeros(s.shape + (3,))
        du[..., 0, 0] = 1.0
        du[..., 1, 1], du[..., 1, 2] = cos, -b
        du[..., 2, 1], du[..., 2, 2] = sin, a
        return u, du

    # ------------------------------------------------------------------ kinematics

    def forward(self, c: np.ndarray) -> np.ndarray:
        """Tip position [m], ``(3,)`` or ``(B, 3)``."""
        c = self.check_configuration(c)
        if c.ndim == 1:
            u = self._smooth_from_config(c[None])[0][0]
            if np.all(u[:, 1] ** 2 + u[:, 2] ** 2 > _CLOSED_FORM_MIN_BEND**2):
                return self._kinematics.closed_form(u, with_jacobian=False)[0]
        u, _ = self._smooth_from_config(np.atleast_2d(c))
        tip = self._kinematics.series(u, with_jacobian=False)[0]
        return tip[0] if c.ndim == 1 else tip

    def jacobian(self, c: np.ndarray) -> np.ndarray:
        """Analytic ``d tip / d c`` [m per unit of c], ``(3, 3N)`` or ``(B, 3, 3N)``."""
        c = self.check_configuration(c)
        c2 = np.atleast_2d(c)
        u, du = self._smooth_from_config(c2)
        n = self.n_segments
        ju = self.smooth_jacobian(u.reshape(c2.shape[0], 3 * n)).reshape(c2.shape[0], 3, n, 3)
        jac = np.einsum("bxnj,bnjk->bxnk", ju, du).reshape(c2.shape[0], 3, 3 * n)
        return self._reduce_jacobian(jac[0] if c.ndim == 1 else jac)

    def _reduce_jacobian(self, jac: np.ndarray) -> np.ndarray:
        return jac

    def smooth_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tip [m] and ``d tip / d u`` in smooth coordinates, for one ``u`` ``(3N,)`` (IK fast path)."""
        s = np.asarray(u, dtype=float).reshape(self.n_segments, 3)
        rows = s.tolist()
        if all(a * a + b * b > _CLOSED_FORM_MIN_BEND**2 for _, a, b in rows):
            tip_row, jac_rows = self._kinematics.closed_form_rows(rows)
            return np.array(tip_row), np.array(jac_rows).reshape(-1, 3).T
        tip, jac, _ = self._kinematics.series(s[None], with_jacobian=True)
        assert jac is not None  # asked for
        return tip[0], jac[0]

    def smooth_jacobian(self, u: np.ndarray) -> np.ndarray:
        """Analytic ``d tip / d u`` [m per unit of u] in the smooth coordinates ``(ΔL, a, b)`` per
        segment: ``(3, 3N)`` for ``u`` ``(3N,)``, ``(B, 3, 3N)`` for ``(B, 3N)`` (full rank at the
        straight arm, where ``d tip / d c`` has no ``φ`` column)."""
        u = np.asarray(u, dtype=float)
        u2 = np.atleast_2d(u)
        _, jac, _ = self._kinematics.series(u2.reshape(u2.shape[0], self.n_segments, 3), with_jacobian=True)
        assert jac is not None  # asked for
        jac = jac.reshape(u2.shape[0], 3, 3 * self.n_segments)
        return jac[0] if u.ndim == 1 else jac

    def smooth_forward(self, u: np.ndarray) -> np.ndarray:
        """Tip [m] of smooth coordinates ``(3N,)`` or ``(B, 3N)``."""
        u = np.asarray(u, dtype=float)
        u2 = np.atleast_2d(u)
        tip = self._kinematics.series(u2.reshape(u2.shape[0], self.n_segments, 3), with_jacobian=False)[0]
        return tip[0] if u.ndim == 1 else tip

    def tip_rotation(self, c: np.ndarray) -> np.ndarray:
        """Orientation of the tip frame in the base frame, ``(3, 3)`` or ``(B, 3, 3)``."""
        c = self.check_configuration(c)
        u, _ = self._smooth_from_config(np.atleast_2d(c))
        rot = self._kinematics.series(u, with_jacobian=False)[2]
        return rot[0] if c.ndim == 1 else rot

    def link_points(self, c: np.ndarray) -> np.ndarray:
        """Every link end (joint) position [m], ``(N·m + 1, 3)`` for one ``c``, base first."""
        c = self.check_configuration(c)
        if c.ndim != 1:
            raise InvalidParameterError("link_points takes a single configuration")
        s = self.to_smooth(c).reshape(self.n_segments, 3)
        m = self.links_per_segment
        pts = [np.zeros(3)]
        rot = np.eye(3)
        for i in range(self.n_segments):
            dl, a, b = s[i]
            ell = self.segment_lengths[i] + dl
            for fk in self._kinematics.fractions:
                d = bend_rotation(np.array(fk * a), np.array(fk * b))[:, 2]
                pts.append(pts[-1] + rot @ d * ell / m)
            rot = rot @ bend_rotation(np.array(a), np.array(b))
        return np.array(pts)

    def arc_tip(self, c: np.ndarray) -> np.ndarray:
        """Tip of the exact PCC arcs (the limit ``m → ∞``) [m], one ``c``."""
        s = self.to_smooth(self.check_configuration(c)).reshape(-1, self.n_segments, 3)[0]
        pos, rot = np.zeros(3), np.eye(3)
        for i in range(self.n_segments):
            dl, a, b = s[i]
            ell = self.segment_lengths[i] + dl
            sv, _, cv, _ = bend_functions(np.array(a * a + b * b))
            pos = pos + rot @ (ell * np.array([cv * a, cv * b, sv]))
            rot = rot @ bend_rotation(np.array(a), np.array(b))
        return pos

    # ------------------------------------------------------------------ paper state

    def pcc_state(self, c: np.ndarray) -> np.ndarray:
        """The paper's dynamic state ``(ε, κx, κy)`` per segment, ``ε = ΔL/L``, ``κ = (a, b)/(L+ΔL)``.

        Units: ``ε`` dimensionless, ``κ`` [1/m]; shape like ``c``.
        """
        u = self.to_smooth(c)
        s = u.reshape(*u.shape[:-1], self.n_segments, 3)
        ell = self.segment_lengths + s[..., 0]
        out = np.stack((s[..., 0] / self.segment_lengths, s[..., 1] / ell, s[..., 2] / ell), axis=-1)
        return out.reshape(u.shape)

    def tip_angle(self, c: np.ndarray) -> np.ndarray:
        """Angle between the tip tangent and the base ``z`` axis [rad] (planar: signed ``Σ θ``)."""
        rot = self.tip_rotation(c)
        return np.arccos(np.clip(rot[..., 2, 2], -1.0, 1.0))

    # ------------------------------------------------------------------ material

    def cross_section(self) -> tuple[float, float]:
        """Equivalent solid circular cross-section: area [m²] and second moment [m⁴].

        Sized so that a segment of the paper's relaxed length and the model's mass has the
        density of a printed elastomer (1100 kg/m³): ``A = m / (ρ L0)``, ``I = A² / (4π)``.
        """
        area = self.segment_mass / (ELASTOMER_DENSITY * PAPER_RELAXED_LENGTH)
        return area, area**2 / (4 * np.pi)

    def stiffness(self) -> np.ndarray:
        """Elastic stiffness per segment ``(k_ΔL [N/m], k_θ [N m/rad], k_φ = 0)``, shape ``(N, 3)``.

        Energy ``½ k_ΔL ΔL² + ½ k_θ θ²``; the bending plane ``φ`` stores none.
        ``stiffness_source="pressure"`` (default): calibrated so that the chamber-pressure bounds
        hold the arm at the corners of the elongation and bend bounds
        (:meth:`~soft_envs.robots.pcc_pressure.PressureMap.calibrated_stiffness`; with the
        defaults ``k_ΔL ≈ 5.5e3 N/m``, ``k_θ ≈ 0.113 N m/rad`` for 65 mm). ``"material"``:
        linear elasticity of the equivalent cross-section (:meth:`cross_section`) over each
        segment's relaxed length, ``E A / L`` and ``E I / L`` (E = 80 MPa, 17.3 g:
        ``A = 2.44e-4 m²``, ``I = 4.7e-9 m⁴``) — about 50 times stiffer.
        """
        if self.stiffness_source == "pressure":
            k = np.array([self.pressure.calibrated_stiffness(length, self.elongation, self.max_bend)
                          for length in self.segment_lengths.tolist()])
            return np.stack((k[:, 0], k[:, 1], np.zeros(self.n_segments)), axis=-1)
        area, inertia = self.cross_section()
        e = self.youngs_modulus
        return np.stack((e * area / self.segment_lengths, e * inertia / self.segment_lengths,
                         np.zeros(self.n_segments)), axis=-1)

    def pressure_map(self) -> np.ndarray:
        """``H_u`` with ``τ_u = H_u p``: generalised forces on the smooth coordinates ``(ΔL, a, b)``
        (planar ``(ΔL, θ)``) per pascal of every chamber, ``(n_dof, n_dof)``, block diagonal
        (chambers ordered segment by segment; eq. 9, :mod:`~soft_envs.robots.pcc_pressure`)."""
        block = self.pressure.segment_matrix()
        d = block.shape[0]
        out = np.zeros((self.n_dof, self.n_dof))
        for i in range(self.n_segments):
            out[d * i:d * (i + 1), d * i:d * (i + 1)] = block
        return out

    # ------------------------------------------------------------------ PyBullet body

    def body_joint_map(self) -> np.ndarray:
        """Constant matrix ``B`` with body joint positions ``= B c`` (``(n_joints, 3N)``).

        Per segment (:meth:`chain`): ``φ`` (revolute z), then ``m`` pairs (revolute y by
        ``θ/2m`` for the first link and ``θ/m`` after, prismatic ``ΔL/m``), the last half bend
        ``θ/2m`` (revolute y) and ``−φ`` (revolute z): ``Rz(φ) Ry(θ) Rz(−φ)`` exactly, every
        link along the arc tangent at its midpoint, as in :meth:`forward`.
        """
        m = self.links_per_segment
        per = 2 * m + 3
        # Columns: the joint values of a unit ΔL, θ and φ (the values are linear in them).
        block = np.stack([section_joint_values(0.0, 0.0, 1.0 / m, m), section_joint_values(0.0, 1.0, 0.0, m),
                          section_joint_values(1.0, 0.0, 0.0, m)], axis=-1)
        full = np.zeros((self.n_segments * per, 3 * self.n_segments))
        for i in range(self.n_segments):
            full[i * per:(i + 1) * per, 3 * i:3 * i + 3] = block
        return full @ self._config_embedding()

    def _config_embedding(self) -> np.ndarray:
        """``d (ΔL, θ, φ) / d c`` — identity for the 3-D arm."""
        return np.eye(3 * self.n_segments)

    def body_joint_positions(self, c: np.ndarray) -> np.ndarray:
        """Body joint positions [rad or m] that realise configuration ``c`` (single ``c``)."""
        c = self.check_configuration(c)
        if c.ndim != 1:
            raise InvalidParameterError("body_joint_positions takes a single configuration")
        return self.body_joint_map() @ c

    def chain(self, payload: float = 0.0) -> Chain:
        """The rigid-link body as a chain (plain data; joint values :meth:`body_joint_positions`).

        Per segment ``s{i}_``: :func:`~soft_envs.robots.chain.bend_section` with
        ``links_per_segment`` bend/link pairs, the next segment starting at its end frame. Each
        rigid link carries the segment's mass ``/ m`` with its centre at the link's middle
        (relaxed length) and the transverse inertia of the equivalent solid cylinder
        (:meth:`cross_section`); hinge links are nearly massless (``1e-3`` of a link). No link
        has spin inertia about its own axis: the body's link frames are ``Rz(φ)`` · (physical
        orientation), an extra spin about the link's own axis that the material does not have
        (see :mod:`soft_envs.sim.soft_arm`). Joint limits are wide: bounds are the model's,
        enforced by the caller. ``payload`` [kg] is a point mass at the tip (on the last end link).
        """
        if check_finite("payload [kg]", payload) < 0:
            raise InvalidParameterError(f"payload must be >= 0 kg; got {payload!r}")
        m = self.links_per_segment
        area, _ = self.cross_section()
        radius = float(np.sqrt(area / np.pi))
        revolute = Limits(-4 * np.pi, 4 * np.pi, effort=100.0, velocity=50.0)
        links: list[ChainLink] = []
        for i, length in enumerate(self.segment_lengths.tolist()):
            nominal = length / m
            link_mass = self.segment_mass / m
            hinge_mass = 1e-3 * link_mass
            hinge = Body(hinge_mass, _spinless(cylinder_inertia(hinge_mass, radius, 1e-3)))
            rigid_mass = link_mass - hinge_mass
            extension = Body(rigid_mass, _spinless(cylinder_inertia(rigid_mass, radius, nominal)),
                             com=(0.0, 0.0, 0.5 * nominal),
                             visuals=(Cylinder(radius, 0.9 * nominal, 0.5 * nominal, section_colour(i)),))
            end = Body(hinge_mass + payload, hinge.inertia) if i == self.n_segments - 1 and payload else hinge
            links += bend_section(f"s{i}", m, nominal, entry_offset=0.0, plane=hinge, bend=hinge, extension=extension,
                                  tilt=hinge, end=end, extension_name="link", end_name="end", revolute=revolute,
                                  prismatic=Limits(-nominal, nominal, effort=100.0, velocity=10.0))
        base = Body(visuals=(Cylinder(2.5 * radius, 0.004, -0.002, BASE_COLOUR),))
        return Chain(f"pcc_{self.n_segments}x{m}", base, tuple(links), body_radius=radius)

    def link_frames(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Analytic body link frames for one ``c`` (order of ``chain().names``): positions ``(K, 3)``
        [m], rotations ``(K, 3, 3)`` and centre-of-mass positions ``(K, 3)`` [m], in the base frame."""
        return self.chain().frames(self.body_joint_positions(c))

    # ------------------------------------------------------------------ the body's backbone

    def backbone(self, c: np.ndarray) -> np.ndarray:
        """The body's backbone points ``(P, 3)`` [m, base frame] for one ``c``: the base origin, then the
        frame origins of ``chain().backbone_links()`` (capsules of :attr:`body_radius` on the segments
        between consecutive points)."""
        return backbone_points(self._body_chain(), self.body_joint_positions(c))

    def backbone_jacobian(self, c: np.ndarray) -> np.ndarray:
        """``∂ backbone / ∂ c`` ``(P, 3, n_dof)`` for one ``c`` (:meth:`backbone_kinematics`)."""
        return self.backbone_kinematics(c)[1]

    def backbone_kinematics(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The backbone points ``(P, 3)`` [m] and ``∂points/∂c`` ``(P, 3, n_dof)`` for one ``c``: the
        chain's joint axes (:func:`~soft_envs.robots.chain.backbone_jacobian`) times the constant
        :meth:`body_joint_map` (the joint values are linear in ``c``)."""
        points, jac_v, _, _ = backbone_jacobian(self._body_chain(), self.body_joint_positions(c))
        return points, jac_v @ self.body_joint_map()

    def smooth_backbone_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The backbone points ``(P, 3)`` [m] and ``∂points/∂u`` ``(P, 3, 3N)`` in the smooth
        coordinates ``u = (ΔL, a, b)`` per segment (one ``u``; smooth at ``θ = 0`` too:
        :func:`~soft_envs.robots.chain.bend_section_jacobian`)."""
        u = np.asarray(u, dtype=float)
        chain = self._body_chain()
        values = self.body_joint_map() @ self.from_smooth(u)
        points, jac_v, positions, rotations = backbone_jacobian(chain, values)
        point_links = np.array([-1, *chain.backbone_links()])
        m = self.links_per_segment
        jac = np.empty((points.shape[0], 3, 3 * self.n_segments))
        for i in range(self.n_segments):
            jac[:, :, 3 * i:3 * i + 3] = bend_section_jacobian(jac_v, points, point_links, positions, rotations,
                                                               values, i * (2 * m + 3), m, (1.0 / m, 0.0))
        return points, jac

    def urdf(self) -> str:
        """URDF text of the rigid-link body (:meth:`chain`)."""
        return self.chain().urdf()


def _spinless(inertia: tuple[float, float, float]) -> tuple[float, float, float]:
    """The inertia without its part about the link's own (z) axis."""
    return (inertia[0], inertia[1], 0.0)
