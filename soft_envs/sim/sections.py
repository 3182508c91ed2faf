"""The sections of the soft arms' bodies: how a chain of constant-curvature bend sections is laid
out in PyBullet and mapped from the smooth coordinates (:mod:`soft_envs.sim.soft_arm` integrates
them; the batched core's compiled kernels, :mod:`soft_envs.sim.batched_kernels`, transcribe
:class:`SectionMap`).

Body. A section is a constant-curvature arc in PyBullet as the rigid-link pattern of
:func:`~soft_envs.robots.chain.bend_section`: ``Rz(φ)``, ``m`` pairs (y bend, prismatic), a
last half bend, ``Rz(−φ)``. Its joint values are linear in ``c̃ = (m·e, θ, φ)``
(:func:`~soft_envs.robots.chain.section_joint_values`; ``e`` is the extension of every
prismatic joint), ``q_body = B c̃``.

Coordinates. The state is the smooth configuration ``u = (x, a, b)`` per section (planar:
``(x, θ)``): ``x`` [m] the change of the arc length ``ℓ = L_ref + x``, ``(a, b) = θ (cos φ,
sin φ)`` [rad] the bend vector, not singular for a straight section. ``c̃ = g(u)`` with
``θ = ±|(a, b)|`` (the sign nearest the previous state, so the body's joints move
continuously) and, for the link extension, either *tangent* links of length ``ℓ/m`` (the
PCC arm's discretisation, ``m·e = x``) or *chord* links whose joints lie on the arc (PETER,
``m·e = ℓ sinc(θ/2m) − L_ref``).
"""

from __future__ import annotations

import math

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.chain import Chain, ChainLink, section_joint_values

MIN_BEND = 1e-4  # rad; dynamics terms are evaluated at least this far from a straight section
_SMALL_HALF = 1e-3  # sinc series below this half-angle per link [rad]


class SectionMap:
    """Smooth coordinates of a chain of bend sections → the joint values of its PyBullet body.

    Args:
        links: rigid links ``m`` per section (the same for every section).
        reference_lengths: arc length ``L_ref`` [m] of every section at ``x = 0``; with chord
            links also the chord sum the body's prismatic joints are zero at.
        planar: sections bend in the ``x–z`` plane only; ``u = (x, θ)`` per section.
        chord: links are chords of the arc (joints on the arc, PETER) instead of tangent links
            of length ``ℓ/m`` (the PCC arm's discretisation).
    """

    def __init__(self, links: int, reference_lengths: np.ndarray, *, planar: bool = False,
                 chord: bool = False) -> None:
        if planar and chord:
            raise InvalidParameterError("chord links are implemented for 3-D sections only")
        self.links = int(links)
        self.reference_lengths = np.asarray(reference_lengths, dtype=float)
        self.n_sections = int(self.reference_lengths.shape[0])
        self.planar, self.chord = bool(planar), bool(chord)
        self.per_section = 2 if planar else 3
        self.n = self.per_section * self.n_sections
        m = self.links
        per = 2 * m + 3
        block = np.stack([section_joint_values(0.0, 0.0, 1.0 / m, m), section_joint_values(0.0, 1.0, 0.0, m),
                          section_joint_values(1.0, 0.0, 0.0, m)], axis=-1)
        #: ``q_body = B c̃``, ``(n_joints, 3N)``.
        self.B = np.zeros((self.n_sections * per, 3 * self.n_sections))
        for i in range(self.n_sections):
            self.B[i * per:(i + 1) * per, 3 * i:3 * i + 3] = block
        self.joints_per_section = per
        idx = np.arange(self.n_sections)
        self._rows = 3 * idx
        self._cols = self.per_section * idx

    # ------------------------------------------------------------------ maps

    def configuration(self, u: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """``c̃ = (m·e, θ, φ)`` per section, ``(3N,)``; ``(θ, φ)`` or ``(−θ, φ ± π)``, the one
        nearest ``reference`` (a previous ``c̃``; ``φ`` kept at ``θ = 0``), else ``θ ≥ 0``.

        (Scalar arithmetic per section: a handful of sections, evaluated every physics step.)
        """
        flat = np.asarray(u, dtype=float).tolist()
        ref = None if reference is None else np.asarray(reference, dtype=float).tolist()
        out = []
        per = self.per_section
        for i in range(self.n_sections):
            x = flat[per * i]
            if self.planar:
                out += [x, flat[per * i + 1], 0.0]
                continue
            a, b = flat[per * i + 1], flat[per * i + 2]
            theta = math.hypot(a, b)
            ext = (self.reference_lengths[i] + x) * _sinc_scalar(theta, self.links)[0] - self.reference_lengths[i] \
                if self.chord else x
            phi = math.atan2(b, a)
            if ref is not None:
                ref_theta, ref_phi = ref[3 * i + 1], ref[3 * i + 2]
                flip_phi = _wrap(phi + math.pi)
                d_keep = abs(_wrap(phi - ref_phi)) + abs(theta - ref_theta)
                d_flip = abs(_wrap(flip_phi - ref_phi)) + abs(theta + ref_theta)
                if d_flip < d_keep:
                    theta, phi = -theta, flip_phi
                if theta == 0.0:
                    phi = ref_phi
            out += [ext, theta, phi]
        return np.array(out)

    def evaluation_point(self, u: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``u`` with every bend moved to at least :data:`MIN_BEND` (direction from ``c`` at zero)."""
        if self.planar or all(abs(theta) >= MIN_BEND for theta in c[1::3].tolist()):
            return u
        s = u.reshape(self.n_sections, 3)
        r = np.hypot(s[:, 1], s[:, 2])
        small = r < MIN_BEND
        s = s.copy()
        ref = c.reshape(self.n_sections, 3)
        phi = np.where(r > 0, np.arctan2(s[:, 2], s[:, 1]), ref[:, 2])
        s[small, 1] = MIN_BEND * np.cos(phi[small])
        s[small, 2] = MIN_BEND * np.sin(phi[small])
        return s.ravel()

    def jacobian(self, u: np.ndarray, c: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``J = ∂c̃/∂u`` ``(3N, n)`` at ``u`` (every bend ≥ :data:`MIN_BEND`; ``c = c̃(u)`` gives
        the sign of ``θ``) and the velocity-product term ``J̇ w = wᵀ ∇²c̃ w`` ``(3N,)`` (zeros
        without ``w``)."""
        N = self.n_sections
        J = np.zeros((3 * N, self.n))
        acc = np.zeros(3 * N)
        if self.planar:
            J[self._rows, self._cols] = 1.0
            J[self._rows + 1, self._cols + 1] = 1.0
            return J, acc
        flat, cflat = u.tolist(), c.tolist()
        wflat = None if w is None else w.tolist()
        for i in range(N):
            x, a, b = flat[3 * i:3 * i + 3]
            r2 = a * a + b * b
            r = math.sqrt(r2)
            sign = -1.0 if cflat[3 * i + 1] < 0 else 1.0
            row, col = 3 * i, 3 * i
            J[row + 1, col + 1] = sign * a / r
            J[row + 1, col + 2] = sign * b / r
            J[row + 2, col + 1] = -b / r2
            J[row + 2, col + 2] = a / r2
            if self.chord:
                sv, ds, dds = _sinc_scalar(r, self.links)
                ell = self.reference_lengths[i] + x
                J[row, col] = sv
                J[row, col + 1] = ell * ds * a / r
                J[row, col + 2] = ell * ds * b / r
            else:
                J[row, col] = 1.0
            if wflat is not None:
                xd, ad, bd = wflat[3 * i:3 * i + 3]
                cross = a * bd - b * ad
                rdot = (a * ad + b * bd) / r
                rdd = cross * cross / (r2 * r)
                acc[row + 1] = sign * rdd
                acc[row + 2] = -2.0 * cross * rdot / (r2 * r)
                if self.chord:
                    acc[row] = 2.0 * xd * ds * rdot + ell * (dds * rdot * rdot + ds * rdd)
        return J, acc


def _wrap(angle: float) -> float:
    """``angle`` wrapped into ``[−π, π)``."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def _sinc_scalar(r: float, m: int) -> tuple[float, float, float]:
    """``s(r) = sin(y)/y``, ``y = r/2m``, and its first two derivatives in ``r`` (scalar)."""
    y = r / (2.0 * m)
    if abs(y) < _SMALL_HALF:
        return (1.0 - y * y / 6.0 + y**4 / 120.0, (-y / 3.0 + y**3 / 30.0) / (2.0 * m),
                (-1.0 / 3.0 + y * y / 10.0) / (4.0 * m * m))
    sin, cos = math.sin(y), math.cos(y)
    return sin / y, (y * cos - sin) / (y * y) / (2.0 * m), ((2.0 - y * y) * sin - 2.0 * y * cos) / y**3 / (4.0 * m * m)


def spinless_sections(chain: Chain, joints_per_section: int) -> Chain:
    """``chain`` with no spin inertia (about the link's own z) on every link of a section but its
    last (the links whose frames turn with the section's ``φ``; the last one is after ``Rz(−φ)``)."""
    links = []
    for k, link in enumerate(chain.links):
        if k % joints_per_section != joints_per_section - 1 and link.body.inertia[2] != 0.0:
            ixx, iyy, _ = link.body.inertia
            body = type(link.body)(link.body.mass, (ixx, iyy, 0.0), link.body.com, link.body.visuals)
            link = ChainLink(link.name, link.joint, link.offset, body, link.limits)
        links.append(link)
    return Chain(chain.name, chain.base, tuple(links), chain.body_radius)
