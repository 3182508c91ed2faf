"""The PCC arm's pneumatic chambers: the paper's pressure map (Keyvanara et al. 2023, eq. 9) and
the elastic stiffness calibrated on it.

Eq. 9 maps the chamber pressures ``p`` (one per bellow) to the generalised forces,
``τ = H p`` with ``H = [[α₁, α₁, α₁], [α₂ cos γ_j], [α₂ sin γ_j]]``, ``γ_j = (j − 1) 2π/d``,
``d`` bellows per segment. The paper identified ``α₁ = 8 × 10^±4`` and ``α₂ = 7.91 × 10^±7``:
the signs of the exponents were lost in the text extraction. Reading them on the bellow
geometry (a pressure ``p`` on a chamber of effective area ``A`` at distance ``r_b`` from the
backbone pushes with ``A p`` along the segment and bends it with the moment ``A r_b p``, whose
generalised force on the curvature ``κ = θ/ℓ`` is ``A r_b ℓ p``):

* ``α₁ = 8 × 10⁻⁴ m²`` — the axial force per pascal of one chamber, i.e. ``A``: a bellow of
  about 16 mm effective radius. ``8 × 10⁴ m²`` is absurd, and reading the row as the force on
  the strain ``ε`` (``A L0``) would need ``A = 0.012 m²`` (a 63 mm bellow on a 17 g segment).
* ``α₂ = 7.91 × 10⁻⁷ m⁴`` — ``A r_b L0`` with ``L0 = 64.4 mm``, so ``r_b = α₂ / (α₁ L0) =
  15.4 mm``: three such chambers around the backbone make a segment about 60 mm across, and
  the 17.3 g of elastomer (15.7 cm³ at 1100 kg/m³) are walls about 0.5 mm thick around them.
  A positive exponent (``7.91 × 10⁷``) gives a 10⁵ m offset.

Both negative, then. In the smooth coordinates ``u = (ΔL, a, b)`` the map is constant:
``τ_u = H_u p`` with rows ``α₁``, ``(α₂/L0) cos γ_j``, ``(α₂/L0) sin γ_j`` (the moment does
not depend on the length; ``∂κ/∂a = 1/ℓ``). The signs are eq. 9's: pressurising chamber ``j``
bends the segment towards ``γ_j`` (the chamber sits on the opposite side of the backbone).
A planar arm has ``d = 2`` chambers per segment (``γ = 0, π``), rows ``α₁`` and ``±α₂/L0``.

Pressure bounds (an assumption; the paper does not state its regulators' range): gauge
pressures in ``[−p_max, p_max]``, vacuum below atmospheric for contraction, default
``p_max = 30 kPa``. The elastic stiffness is calibrated on these bounds (the paper took its
hyper-elastic parameters from its ref. 29 without listing them): ``p_max`` holds the arm at
every corner of the paper's workspace box (``|ΔL| ≤ 10 % L``, ``|θ| ≤ 140°``, any bending
direction), the elongation and the bend taking half of the most loaded chamber's pressure each:
``k_ΔL = ½ p_max d α₁ / (0.1 L)``, ``k_θ = ½ p_max α₁ r_b / (s θ_max)`` (``s = 2/3`` with three
chambers, ``1/2`` with two). For a 65 mm segment: ``k_ΔL = 5.5e3 N/m``, ``k_θ = 0.113 N m/rad``
(planar: ``3.7e3 N/m``, ``0.151 N m/rad``), about 50 times softer than the paper's E = 80 MPa
on the equivalent solid cross-section; the four-segment planar arm's first bending mode is then
near 11 rad/s, where the paper's ``k_p = 80 s⁻²`` matters. Checked on the Figure 5 run
(``tests/envs/test_pcc_track_physics.py``, ``soft-envs bench pcc``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from soft_envs.exceptions import InvalidParameterError

PAPER_ALPHA1 = 8e-4  # m², eq. 9 (exponent sign read from the geometry, see the module docstring)
PAPER_ALPHA2 = 7.91e-7  # m⁴, eq. 9
DEFAULT_MAX_PRESSURE = 30e3  # Pa, gauge (assumption)
ATMOSPHERE = 101325.0  # Pa: the vacuum side cannot go below −1 atm gauge


@dataclass(frozen=True)
class PressureMap:
    """The chambers of one segment and eq. 9 (module docstring).

    Attributes:
        chambers: bellows per segment ``d`` (3 for a 3-D segment, 2 for a planar one).
        alpha1: eq. 9's ``α₁`` [m²] (axial force per pascal per chamber).
        alpha2: eq. 9's ``α₂`` [m⁴] (generalised force on the curvature per pascal).
        reference_length: the length ``L0`` [m] ``α₂`` was identified at (the paper's 64.4 mm).
        max_pressure: gauge-pressure bound ``p_max`` [Pa]; chambers work in ``[−p_max, p_max]``.
    """

    chambers: int
    alpha1: float = PAPER_ALPHA1
    alpha2: float = PAPER_ALPHA2
    reference_length: float = 0.0644
    max_pressure: float = DEFAULT_MAX_PRESSURE

    def __post_init__(self) -> None:
        if self.chambers not in (2, 3):
            raise InvalidParameterError(f"a segment has 2 (planar) or 3 chambers; got {self.chambers!r}")
        for name in ("alpha1", "alpha2", "reference_length", "max_pressure"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise InvalidParameterError(f"{name} must be a positive number [SI]; got {value!r}")
        if self.max_pressure > ATMOSPHERE:
            raise InvalidParameterError(
                f"max_pressure is a gauge pressure in Pa and the vacuum side is bounded by −1 atm: at most "
                f"{ATMOSPHERE:g} Pa; got {self.max_pressure!r} (kPa or bar given?)")

    @property
    def angles(self) -> np.ndarray:
        """``γ_j`` [rad]."""
        return np.arange(self.chambers) * 2.0 * np.pi / self.chambers

    @property
    def chamber_offset(self) -> float:
        """``r_b = α₂ / (α₁ L0)`` [m]: the chambers' distance from the backbone."""
        return self.alpha2 / (self.alpha1 * self.reference_length)

    def segment_matrix(self) -> np.ndarray:
        """``H_u`` of one segment: ``(3, 3)`` (rows ``ΔL, a, b``) or planar ``(2, 2)`` (``ΔL, θ``)."""
        moment = self.alpha2 / self.reference_length
        if self.chambers == 2:
            return np.array([[self.alpha1, self.alpha1], [moment, -moment]])
        g = self.angles
        return np.stack((np.full(3, self.alpha1), moment * np.cos(g), moment * np.sin(g)))

    def bending_capacity(self) -> float:
        """Largest pure bending moment [N m] within the bounds with zero total axial force."""
        return self.alpha1 * self.chamber_offset * self.max_pressure / self._bend_share

    @property
    def _bend_share(self) -> float:
        """Pressure per unit of ``moment / (α₁ r_b)`` on the most loaded chamber: 2/3 (three), 1/2 (two)."""
        return 0.5 if self.chambers == 2 else 2.0 / 3.0

    def axial_capacity(self) -> float:
        """Axial force [N] with every chamber at ``p_max``."""
        return self.chambers * self.alpha1 * self.max_pressure

    def chamber_pressures(self, force: float, moment: float) -> float:
        """Pressure [Pa] of the most loaded chamber for an axial ``force`` [N] and bending ``moment`` [N m]."""
        return abs(force) / (self.chambers * self.alpha1) + self._bend_share * abs(moment) / (
            self.alpha1 * self.chamber_offset)

    def calibrated_stiffness(self, length: float, elongation: float, max_bend: float) -> tuple[float, float]:
        """``(k_ΔL [N/m], k_θ [N m/rad])`` for which ``p_max`` holds the arm at every corner of the
        workspace box ``|ΔL| ≤ elongation·length``, ``|θ| ≤ max_bend`` (any bending direction).

        The most loaded chamber carries ``k_ΔL ΔL / (d α₁) + s k_θ θ / (α₁ r_b)`` (``s`` = 2/3 with
        three chambers, 1/2 with two); the elongation and the bend take half of it each.
        """
        if elongation <= 0:
            raise InvalidParameterError("a pressure-calibrated stiffness needs elongation > 0")
        half = 0.5 * self.max_pressure
        k_axial = half * self.chambers * self.alpha1 / (elongation * length)
        k_bend = half * self.alpha1 * self.chamber_offset / (self._bend_share * max_bend)
        return k_axial, k_bend


def workspace_pressure_limit(arm, stiffness: np.ndarray) -> float:
    """The largest chamber pressure ``p`` [Pa] (at most ``max_pressure``) such that every chamber
    pressure vector in ``[−p, p]`` holds ``arm`` (a :class:`~soft_envs.robots.PCCArm`), at rest and
    without gravity, inside its workspace box ``|ΔL| ≤ elongation · L``, ``|θ| ≤ max_bend``
    (``u = K⁻¹ H_u p``; ``stiffness`` is ``K``'s diagonal in the smooth coordinates [N/m, N m/rad]).

    The bound of ``PCCTrack-v0``'s pressure action: with three chambers one at ``+p`` and two at
    ``−p`` bend a segment by ``2 α₁ r_b p / k_θ``, so ``p = 37.5 %`` of the calibration's
    ``max_pressure`` (which holds the corners with half its pressure on the bend); 50 % with two.
    """
    per, pressure = arm.per_segment, arm.pressure
    corners = np.array(np.meshgrid(*[[-1.0, 1.0]] * pressure.chambers)).reshape(pressure.chambers, -1)
    h = pressure.segment_matrix()
    limit = pressure.max_pressure
    for i in range(arm.n_segments):
        u = (h @ corners) / np.asarray(stiffness)[per * i:per * (i + 1), None]  # per pascal
        bend = np.hypot(u[1], u[2]) if per == 3 else np.abs(u[1])
        limit = min(limit, arm.max_bend / bend.max(), arm.elongation * arm.segment_lengths[i] / np.abs(u[0]).max())
    return float(limit)
