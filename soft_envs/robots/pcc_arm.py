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

:class:`PlanarPCCArm` is the 2-D variant (``φ = 0``, configuration ``(ΔL, θ)`` per segment):
the arm moves in the ``x–z`` plane.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import bend_functions, bend_rotation, chain_frames, skew
from soft_envs.robots.base import KinematicModel
from soft_envs.sim.urdf import Joint, Link, Visual, cylinder_inertia, urdf_text

_DW_DA = skew(np.array([0.0, 1.0, 0.0]))   # d[w]×/da for w = (−b, a, 0)
_DW_DB = skew(np.array([-1.0, 0.0, 0.0]))  # d[w]×/db
_CLOSED_FORM_MIN_BEND = 1e-3  # rad; below it the series-based path is used

# Paper's physical segment (section 3.2): mass, relaxed length, Young's modulus, Poisson's ratio.
PAPER_SEGMENT_MASS = 0.0173  # kg
PAPER_RELAXED_LENGTH = 0.0644  # m
PAPER_YOUNGS_MODULUS = 80e6  # Pa
PAPER_POISSON_RATIO = 0.49
ELASTOMER_DENSITY = 1100.0  # kg/m^3, printed elastomer (assumption, used only to size the cross-section)


class PCCArm(KinematicModel):
    """Kinematic model of an extensible multi-segment PCC arm discretised into rigid links.

    Args:
        n_segments: number of segments (≥ 1).
        links_per_segment: rigid links ``m`` per segment (the paper: 6).
        segment_length: relaxed segment length ``L`` [m], one value or one per segment.
        elongation: ``|ΔL| ≤ elongation · L`` (the paper's code: 10 %).
        max_bend: ``|θ| ≤ max_bend`` [rad] (the paper's code: 140°).
        segment_mass: mass of one segment [kg] (body and dynamics only).
        youngs_modulus, poisson_ratio: material of the segments (elastic joints, see
            :meth:`stiffness`).

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
    ) -> None:
        if int(n_segments) != n_segments or n_segments < 1:
            raise InvalidParameterError(f"n_segments must be a positive integer; got {n_segments!r}")
        if int(links_per_segment) != links_per_segment or links_per_segment < 1:
            raise InvalidParameterError(f"links_per_segment must be a positive integer; got {links_per_segment!r}")
        lengths = np.broadcast_to(np.asarray(segment_length, dtype=float), (int(n_segments),)).copy()
        if not np.all(np.isfinite(lengths)) or np.any(lengths <= 0):
            raise InvalidParameterError(f"segment_length must be positive [m]; got {segment_length!r}")
        if np.any(lengths > 2.0):
            raise InvalidParameterError("segment_length is in metres; got a value above 2 m (mm given?)")
        if not np.isfinite(elongation) or not 0 <= elongation < 1:
            raise InvalidParameterError(f"elongation must be in [0, 1); got {elongation!r}")
        if not np.isfinite(max_bend) or not 0 < max_bend <= np.pi:
            raise InvalidParameterError(f"max_bend must be in (0, π] rad; got {max_bend!r}")
        for name, value in (("segment_mass", segment_mass), ("youngs_modulus", youngs_modulus)):
            if not np.isfinite(value) or value <= 0:
                raise InvalidParameterError(f"{name} must be positive [SI]; got {value!r}")
        if not np.isfinite(poisson_ratio) or not -1 < poisson_ratio < 0.5:
            raise InvalidParameterError(f"poisson_ratio must be in (−1, 0.5); got {poisson_ratio!r}")
        self.n_segments = int(n_segments)
        self.links_per_segment = int(links_per_segment)
        self.segment_lengths = lengths
        self.elongation = float(elongation)
        self.max_bend = float(max_bend)
        self.segment_mass = float(segment_mass)
        self.youngs_modulus = float(youngs_modulus)
        self.poisson_ratio = float(poisson_ratio)
        m = self.links_per_segment
        self._f = (2.0 * np.arange(1, m + 1) - 1.0) / (2.0 * m)  # link k at bend fraction f_k
        self._f2, self._f3, self._f4 = self._f**2, self._f**3, self._f**4
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

    def with_links(self, links_per_segment: int) -> "PCCArm":
        """The same arm with another number of links per segment."""
        return type(self)(self.n_segments, links_per_segment, self.segment_lengths.copy(),
                          elongation=self.elongation, max_bend=self.max_bend, segment_mass=self.segment_mass,
                          youngs_modulus=self.youngs_modulus, poisson_ratio=self.poisson_ratio)

    @property
    def total_length(self) -> float:
        """Relaxed length of the whole arm [m]."""
        return float(self.segment_lengths.sum())

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
                return self._closed_form(u, with_jacobian=False)[0]
        u, _ = self._smooth_from_config(np.atleast_2d(c))
        tip = self._evaluate(u, with_jacobian=False)[0]
        return tip[0] if c.ndim == 1 else tip

    def jacobian(self, c: np.ndarray) -> np.ndarray:
        """Analytic ``d tip / d c`` [m per unit of c], ``(3, 3N)`` or ``(B, 3, 3N)``."""
        c = self.check_configuration(c)
        c2 = np.atleast_2d(c)
        u, du = self._smooth_from_config(c2)
        _, ju, _ = self._evaluate(u, with_jacobian=True)
        n = self.n_segments
        ju = ju.reshape(c2.shape[0], 3, n, 3)
        jac = np.einsum("bxnj,bnjk->bxnk", ju, du).reshape(c2.shape[0], 3, 3 * n)
        return self._reduce_jacobian(jac[0] if c.ndim == 1 else jac)

    def _reduce_jacobian(self, jac: np.ndarray) -> np.ndarray:
        return jac

    def smooth_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tip [m] and ``d tip / d u`` in smooth coordinates, for one ``u`` ``(3N,)`` (IK fast path)."""
        s = np.asarray(u, dtype=float).reshape(self.n_segments, 3)
        if np.all(s[:, 1] ** 2 + s[:, 2] ** 2 > _CLOSED_FORM_MIN_BEND**2):
            return self._closed_form(s)
        tip, jac, _ = self._evaluate(s[None], with_jacobian=True)
        return tip[0], jac[0]

    def _closed_form(self, s: np.ndarray, with_jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Single-configuration kinematics with the link sums in closed form (all ``|θ| > 1e-3``).

        ``Σ_k sin((2k−1)x) = sin²(mx)/sin x`` and ``Σ_k cos((2k−1)x) = sin(2mx)/(2 sin x)`` with
        ``x = θ/2m`` give the segment chord ``(L/m)(g a, g b, h)``,
        ``g = sin²(θ/2)/(θ sin x)``, ``h = sin θ/(2 sin x)``. Plain-float arithmetic: for one
        configuration it is several times faster than numpy on 3-vectors.
        """
        m = self.links_per_segment
        inv2m = 0.5 / m
        rot = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
        end = (0.0, 0.0, 0.0)
        frames = []  # (rot_prev, local derivative columns as functions of r), filled below
        for (dl, a, b), length in zip(s.tolist(), self.segment_lengths.tolist()):
            th = math.hypot(a, b)
            ell = length + dl
            k = ell / m
            x = th * inv2m
            sin_t, cos_t = math.sin(th), math.cos(th)
            sin_x, cos_x = math.sin(x), math.cos(x)
            sin_h = math.sin(0.5 * th)
            num, den = sin_h * sin_h, th * sin_x
            g = num / den
            dg = (0.5 * sin_t * den - num * (sin_x + th * cos_x * inv2m)) / (den * den)
            h = sin_t / (2 * sin_x)
            dh = (cos_t * sin_x - sin_t * cos_x * inv2m) / (2 * sin_x * sin_x)
            ca, sa = a / th, b / th
            p = (k * g * a, k * g * b, k * h)
            dp_dl = (g * a / m, g * b / m, h / m)
            dp_da = (k * (g + a * dg * ca), k * a * dg * sa, k * dh * ca)
            dp_db = (k * b * dg * ca, k * (g + b * dg * sa), k * dh * sa)
            th2 = th * th
            sv = sin_t / th
            cv = 2 * sin_h * sin_h / th2
            dsv = (th * cos_t - sin_t) / th2
            dcv = (th * sin_t - 2 * (1 - cos_t)) / (th2 * th)
            R = ((1 - cv * a * a, -cv * a * b, sv * a), (-cv * a * b, 1 - cv * b * b, sv * b),
                 (-sv * a, -sv * b, 1 - cv * th2))
            derivs = []
            for d_th, x1, x2, first in ((ca, a, b, True), (sa, b, a, False)):
                s_d, c_d = dsv * d_th, dcv * d_th
                d11 = -c_d * x1 * x1 - 2 * cv * x1
                d12 = -c_d * x1 * x2 - cv * x2
                d22 = -c_d * x2 * x2
                d13, d23 = s_d * x1 + sv, s_d * x2
                d33 = -c_d * th2 - 2 * cv * x1
                if first:
                    derivs.append(((d11, d12, d13), (d12, d22, d23), (-d13, -d23, d33)))
                else:
                    derivs.append(((d22, d12, d23), (d12, d11, d13), (-d23, -d13, d33)))
            end = tuple(end[i] + rot[i][0] * p[0] + rot[i][1] * p[1] + rot[i][2] * p[2] for i in range(3))
            new_rot = tuple(tuple(rot[i][0] * R[0][j] + rot[i][1] * R[1][j] + rot[i][2] * R[2][j]
                                  for j in range(3)) for i in range(3))
            frames.append((rot, dp_dl, dp_da, dp_db, derivs, end, new_rot))
            rot = new_rot
        tip = end
        if not with_jacobian:
            return np.array(tip), None
        cols = []
        for rot_prev, dp_dl, dp_da, dp_db, (dRa, dRb), seg_end, end_rot in frames:
            d = (tip[0] - seg_end[0], tip[1] - seg_end[1], tip[2] - seg_end[2])
            r = tuple(end_rot[0][j] * d[0] + end_rot[1][j] * d[1] + end_rot[2][j] * d[2] for j in range(3))
            la = tuple(dp_da[i] + dRa[i][0] * r[0] + dRa[i][1] * r[1] + dRa[i][2] * r[2] for i in range(3))
            lb = tuple(dp_db[i] + dRb[i][0] * r[0] + dRb[i][1] * r[1] + dRb[i][2] * r[2] for i in range(3))
            for v in (dp_dl, la, lb):
                cols.append([rot_prev[i][0] * v[0] + rot_prev[i][1] * v[1] + rot_prev[i][2] * v[2]
                             for i in range(3)])
        return np.array(tip), np.array(cols).T

    def smooth_forward(self, u: np.ndarray) -> np.ndarray:
        """Tip [m] of smooth coordinates ``(3N,)`` or ``(B, 3N)``."""
        u = np.asarray(u, dtype=float)
        u2 = np.atleast_2d(u)
        tip = self._evaluate(u2.reshape(u2.shape[0], self.n_segments, 3), with_jacobian=False)[0]
        return tip[0] if u.ndim == 1 else tip

    def tip_rotation(self, c: np.ndarray) -> np.ndarray:
        """Orientation of the tip frame in the base frame, ``(3, 3)`` or ``(B, 3, 3)``."""
        c = self.check_configuration(c)
        u, _ = self._smooth_from_config(np.atleast_2d(c))
        rot = self._evaluate(u, with_jacobian=False)[2]
        return rot[0] if c.ndim == 1 else rot

    def _evaluate(self, u: np.ndarray, with_jacobian: bool):
        """Tip ``(B, 3)``, ``d tip/du`` ``(B, 3, 3N)`` (or None) and tip rotation ``(B, 3, 3)``."""
        batch = u.shape[0]
        m = self.links_per_segment
        pos = np.zeros((batch, 3))
        rot = np.broadcast_to(np.eye(3), (batch, 3, 3))
        if with_jacobian:
            store = []
        for i in range(self.n_segments):
            dl, a, b = u[:, i, 0], u[:, i, 1], u[:, i, 2]
            ell = self.segment_lengths[i] + dl
            q = a * a + b * b
            S, dS, C, dC = bend_functions(q[:, None] * self._f2)
            sig_s = S @ self._f
            sig_c = C @ self._f2
            k = ell / m
            p = np.stack((k * sig_s * a, k * sig_s * b, k * (m - sig_c * q)), axis=-1)
            s, ds, c, dc = bend_functions(q)
            W = skew(np.stack((-b, a, np.zeros_like(a)), axis=-1))
            W2 = W @ W
            seg_rot = np.eye(3) + s[:, None, None] * W + c[:, None, None] * W2
            if with_jacobian:
                dsig_s = dS @ self._f3
                dsig_c = dC @ self._f4
                dp = np.empty((batch, 3, 3))  # (B, param, xyz)
                dp[:, 0] = p / ell[:, None]
                dpz = -k * (dsig_c * q + sig_c)
                dp[:, 1] = np.stack((k * (sig_s + 2 * a * a * dsig_s), k * 2 * a * b * dsig_s, 2 * a * dpz), axis=-1)
                dp[:, 2] = np.stack((k * 2 * a * b * dsig_s, k * (sig_s + 2 * b * b * dsig_s), 2 * b * dpz), axis=-1)
                dR = np.zeros((batch, 3, 3, 3))
                for j, (x, dW) in enumerate(((a, _DW_DA), (b, _DW_DB)), start=1):
                    dR[:, j] = (2 * x * ds)[:, None, None] * W + s[:, None, None] * dW \
                        + (2 * x * dc)[:, None, None] * W2 + c[:, None, None] * (dW @ W + W @ dW)
                store.append((rot, dp, dR))
            pos = pos + np.einsum("bij,bj->bi", rot, p)
            rot = rot @ seg_rot
            if with_jacobian:
                store[-1] = store[-1] + (pos, rot)
        if not with_jacobian:
            return pos, None, rot
        jac = np.empty((batch, 3, 3 * self.n_segments))
        tip = pos
        for i, (rot_prev, dp, dR, end, end_rot) in enumerate(store):
            r = np.einsum("bji,bj->bi", end_rot, tip - end)  # tip in the segment's end frame
            # tip − end = end_rot r = rot_prev seg_rot r, so d(seg_rot r) = dR r.
            local = dp + np.einsum("bpij,bj->bpi", dR, r)
            jac[:, :, 3 * i:3 * i + 3] = np.einsum("bij,bpj->bip", rot_prev, local)
        return tip, jac, rot

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
            for fk in self._f:
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

        Linear elasticity of the equivalent cross-section (:meth:`cross_section`) over each
        segment's relaxed length ``L``: axial ``E A / L``, bending ``E I / L``; the bending
        plane ``φ`` stores no energy. With the paper's material (E = 80 MPa) and 17.3 g:
        ``A = 2.44e-4 m²``, ``I = 4.7e-9 m⁴``.
        """
        area, inertia = self.cross_section()
        e = self.youngs_modulus
        return np.stack((e * area / self.segment_lengths, e * inertia / self.segment_lengths,
                         np.zeros(self.n_segments)), axis=-1)

    # ------------------------------------------------------------------ PyBullet body

    def body_link_names(self) -> list[str]:
        """Names of the body's moving links, in PyBullet joint-index order (one joint each)."""
        names = []
        for i in range(self.n_segments):
            names.append(f"s{i}_plane")
            for k in range(self.links_per_segment):
                names += [f"s{i}_bend{k}", f"s{i}_link{k}"]
            names += [f"s{i}_tilt", f"s{i}_end"]
        return names

    def body_joint_kinds(self) -> list[str]:
        """``"revolute_z"``, ``"revolute_y"`` or ``"prismatic_z"`` for each body joint."""
        kinds = []
        for _ in range(self.n_segments):
            kinds.append("revolute_z")
            kinds += ["revolute_y", "prismatic_z"] * self.links_per_segment
            kinds += ["revolute_y", "revolute_z"]
        return kinds

    def body_joint_map(self) -> np.ndarray:
        """Constant matrix ``B`` with body joint positions ``= B c`` (``(n_joints, 3N)``).

        Per segment: ``φ`` (revolute z), then ``m`` pairs (revolute y by ``θ/2m`` for the
        first link and ``θ/m`` after, prismatic ``ΔL/m``), the last half bend ``θ/2m``
        (revolute y) and ``−φ`` (revolute z): ``Rz(φ) Ry(θ) Rz(−φ)`` exactly, every link along
        the arc tangent at its midpoint, as in :meth:`forward`.
        """
        m = self.links_per_segment
        per = 2 * m + 3
        full = np.zeros((self.n_segments * per, 3 * self.n_segments))
        bends = np.array([0.5] + [1.0] * (m - 1)) / m
        for i in range(self.n_segments):
            rows = slice(i * per, (i + 1) * per)
            block = np.zeros((per, 3))
            block[0, 2] = 1.0
            block[1:2 * m + 1:2, 1] = bends
            block[2:2 * m + 2:2, 0] = 1.0 / m
            block[2 * m + 1, 1] = 0.5 / m
            block[2 * m + 2, 2] = -1.0
            full[rows, 3 * i:3 * i + 3] = block
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

    def _link_geometry(self) -> list[tuple[float, tuple[float, float, float], float]]:
        """Per body link: (mass [kg], centre-of-mass offset in the link frame [m], joint offset [m])."""
        m = self.links_per_segment
        out = []
        for i in range(self.n_segments):
            nominal = float(self.segment_lengths[i]) / m
            link_mass = self.segment_mass / m
            hinge = 1e-3 * link_mass
            out.append((hinge, (0.0, 0.0, 0.0), 0.0))  # plane: at the segment's foot
            for k in range(m):
                out.append((hinge, (0.0, 0.0, 0.0), 0.0 if k == 0 else nominal))  # bend joint
                out.append((link_mass - hinge, (0.0, 0.0, 0.5 * nominal), 0.0))  # link (prismatic)
            out.append((hinge, (0.0, 0.0, 0.0), nominal))  # tilt: end of the last link
            out.append((hinge, (0.0, 0.0, 0.0), 0.0))  # end frame
        return out

    def link_frames(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Analytic body link frames for one ``c``: positions ``(K, 3)`` [m], rotations
        ``(K, 3, 3)`` and centre-of-mass positions ``(K, 3)`` [m], in the base frame."""
        geometry = self._link_geometry()
        positions, rotations = chain_frames(self.body_joint_positions(c), self.body_joint_kinds(),
                                            [offset for _, _, offset in geometry])
        coms = positions + np.einsum("kij,kj->ki", rotations, np.array([com for _, com, _ in geometry]))
        return positions, rotations, coms

    def urdf(self) -> str:
        """URDF of the rigid-link body generated from this model (joints of :meth:`body_joint_kinds`).

        Each rigid link carries the segment's mass ``/ m`` with its centre at the link's middle
        (relaxed length) and the transverse inertia of the equivalent solid cylinder (no spin
        inertia about its own axis); hinge links are nearly massless. Joint limits are wide: bounds are the model's, enforced by the caller.
        """
        m = self.links_per_segment
        area, _ = self.cross_section()
        radius = float(np.sqrt(area / np.pi))
        colours = [(0.85, 0.35, 0.2, 1.0), (0.2, 0.5, 0.85, 1.0), (0.3, 0.7, 0.35, 1.0), (0.8, 0.7, 0.2, 1.0)]
        links = [Link("base", 0.0, (0.0, 0.0, 0.0), visuals=[Visual(
            f'<cylinder radius="{2.5 * radius!r}" length="0.004"/>', xyz=(0, 0, -0.002), rgba=(0.3, 0.3, 0.3, 1))])]
        joints: list[Joint] = []
        geometry = self._link_geometry()
        names, kinds = self.body_link_names(), self.body_joint_kinds()
        parent = "base"
        big = 4 * np.pi
        for idx, (name, kind, (mass, com, offset)) in enumerate(zip(names, kinds, geometry)):
            seg = idx // (2 * m + 3)
            nominal = float(self.segment_lengths[seg]) / m
            visuals = []
            if "_link" in name:
                inertia = cylinder_inertia(mass, radius, nominal)
                visuals.append(Visual(f'<cylinder radius="{radius!r}" length="{0.9 * nominal!r}"/>',
                                      xyz=(0, 0, 0.5 * nominal), rgba=colours[seg % len(colours)]))
            else:
                inertia = cylinder_inertia(mass, radius, 1e-3)
            # No spin inertia: the body's link frames are Rz(φ)·(physical orientation), an extra
            # spin about the link's own axis that the material does not have (see pcc_body).
            inertia = (inertia[0], inertia[1], 0.0)
            links.append(Link(name, mass, inertia, com=com, visuals=visuals))
            if kind == "prismatic_z":
                joints.append(Joint(name, "prismatic", parent, name, xyz=(0, 0, offset), axis=(0.0, 0.0, 1.0),
                                    lower=-nominal, upper=nominal, effort=100.0, velocity=10.0))
            else:
                axis = (0.0, 0.0, 1.0) if kind == "revolute_z" else (0.0, 1.0, 0.0)
                joints.append(Joint(name, "revolute", parent, name, xyz=(0, 0, offset), axis=axis,
                                    lower=-big, upper=big, effort=100.0, velocity=50.0))
            parent = name
        return urdf_text(f"pcc_{self.n_segments}x{m}", links, joints)


class PlanarPCCArm(PCCArm):
    """The 2-D PCC arm: ``φ = 0``; configuration ``(ΔL, θ)`` per segment (``(2N,)`` or ``(B, 2N)``).

    The arm moves in the ``x–z`` plane (``forward`` returns ``(x, 0, z)``); ``θ`` is signed
    (positive bends towards ``+x``). :meth:`tip_angle` is the signed tip direction ``Σ θ_i``
    measured from ``z`` (the paper's eq. 3 secondary task).
    """

    per_segment = 2
    planar = True

    def _segment_bounds(self):
        def lo(i: int) -> np.ndarray:
            return np.array([-self.elongation * self.segment_lengths[i], -self.max_bend])

        def hi(i: int) -> np.ndarray:
            return np.array([self.elongation * self.segment_lengths[i], self.max_bend])
        return lo, hi

    def _embed(self, c: np.ndarray) -> np.ndarray:
        s = c.reshape(*c.shape[:-1], self.n_segments, 2)
        full = np.concatenate((s, np.zeros(s.shape[:-1] + (1,))), axis=-1)
        return full.reshape(c.shape[:-1] + (3 * self.n_segments,))

    def _config_embedding(self) -> np.ndarray:
        emb = np.zeros((3 * self.n_segments, 2 * self.n_segments))
        for i in range(self.n_segments):
            emb[3 * i, 2 * i] = emb[3 * i + 1, 2 * i + 1] = 1.0
        return emb

    def _smooth_from_config(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return super()._smooth_from_config(self._embed(c))

    def _reduce_jacobian(self, jac: np.ndarray) -> np.ndarray:
        keep = np.sort(np.concatenate((np.arange(self.n_segments) * 3, np.arange(self.n_segments) * 3 + 1)))
        return jac[..., keep]

    def to_smooth(self, c: np.ndarray) -> np.ndarray:
        """Planar configurations are already smooth (``θ`` signed, no ``φ``): returns a copy."""
        return np.array(self.check_configuration(c), dtype=float)

    def from_smooth(self, u: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        return np.array(u, dtype=float)

    @property
    def smooth_lower(self) -> np.ndarray:
        return self.lower.copy()

    @property
    def smooth_upper(self) -> np.ndarray:
        return self.upper.copy()

    def project_smooth(self, u: np.ndarray) -> np.ndarray:
        return np.clip(u, self.lower, self.upper)

    def smooth_constraint(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(0), np.zeros((0, self.n_dof))

    def smooth_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tip, jac = PCCArm.smooth_kinematics(self, self._embed(np.asarray(u, dtype=float)))
        return tip, self._reduce_jacobian(jac)

    def smooth_forward(self, u: np.ndarray) -> np.ndarray:
        return self.forward(u)

    def arc_tip(self, c: np.ndarray) -> np.ndarray:
        return PCCArm.arc_tip(self._as_3d(), self._embed(self.check_configuration(c)))

    def link_points(self, c: np.ndarray) -> np.ndarray:
        return PCCArm.link_points(self._as_3d(), self._embed(self.check_configuration(c)))

    def _as_3d(self) -> PCCArm:
        return PCCArm(self.n_segments, self.links_per_segment, self.segment_lengths.copy(),
                      elongation=self.elongation, max_bend=self.max_bend, segment_mass=self.segment_mass,
                      youngs_modulus=self.youngs_modulus, poisson_ratio=self.poisson_ratio)

    def pcc_state(self, c: np.ndarray) -> np.ndarray:
        """``(ε, κ)`` per segment (``κ = θ / (L + ΔL)`` [1/m]), shape like ``c``."""
        c = self.check_configuration(c)
        s = c.reshape(*c.shape[:-1], self.n_segments, 2)
        out = np.stack((s[..., 0] / self.segment_lengths, s[..., 1] / (self.segment_lengths + s[..., 0])), axis=-1)
        return out.reshape(c.shape)

    def tip_angle(self, c: np.ndarray) -> np.ndarray:
        """Signed tip direction ``Σ θ_i`` from the base ``z`` axis towards ``+x`` [rad]."""
        c = self.check_configuration(c)
        return c[..., 1::2].sum(axis=-1)

    def tip_angle_gradient(self, c: np.ndarray | None = None) -> np.ndarray:
        """``d tip_angle / d c`` (constant), ``(2N,)``."""
        g = np.zeros(self.n_dof)
        g[1::2] = 1.0
        return g

    def stiffness(self) -> np.ndarray:
        return super().stiffness()[:, :2]
