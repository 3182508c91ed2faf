"""Tip kinematics of a chain of PCC segments discretised into rigid links, in smooth coordinates.

The engine behind :class:`~soft_envs.robots.PCCArm` (see its module for the model): segment
``i`` is ``m`` rigid links of length ``(L_i + ΔL_i)/m``, link ``k`` along the arc tangent at bend
fraction ``f_k = (2k − 1)/(2m)``, and the segment frame turns by the full
``Rz(φ) Ry(θ) Rz(−φ)``. Configurations are the smooth coordinates ``u = (ΔL, a, b)`` per
segment (``a = θ cos φ``, ``b = θ sin φ``), positions in metres in the arm's base frame.
Two evaluations of the same sums: :meth:`PCCKinematics.series` (batched, any bend) and
:meth:`PCCKinematics.closed_form` (one configuration, every ``|θ| > 0``, plain floats: the IK
fast path).
"""

from __future__ import annotations

import math

import numpy as np

from soft_envs.geometry import bend_functions, skew

_DW_DA = skew(np.array([0.0, 1.0, 0.0]))   # d[w]×/da for w = (−b, a, 0)
_DW_DB = skew(np.array([-1.0, 0.0, 0.0]))  # d[w]×/db


def _rotation_derivative(c_d: float, s_d: float, x1: float, x2: float, sv: float, cv: float,
                         th2: float) -> tuple[float, float, float, float, float, float]:
    """Entries ``(d11, d12, d22, d13, d23, d33)`` of the derivative of a segment's rotation
    ``I + sv W + cv W²`` along the bend component ``x1`` (``x2`` the other one; ``c_d, s_d``: the
    derivatives of ``cv, sv`` along it). For ``x1 = a`` the matrix is ``[[d11, d12, d13], [d12, d22,
    d23], [−d13, −d23, d33]]``; for ``x1 = b`` rows and columns 1 and 2 swap."""
    return (-c_d * x1 * x1 - 2 * cv * x1, -c_d * x1 * x2 - cv * x2, -c_d * x2 * x2, s_d * x1 + sv, s_d * x2,
            -c_d * th2 - 2 * cv * x1)


class PCCKinematics:
    """Tip position, rotation and Jacobian of ``N`` segments of ``links_per_segment`` links.

    Args:
        segment_lengths: relaxed segment lengths ``L_i`` [m], shape ``(N,)``.
        links_per_segment: rigid links ``m`` per segment.
    """

    def __init__(self, segment_lengths: np.ndarray, links_per_segment: int) -> None:
        self.segment_lengths = segment_lengths
        self.n_segments = int(segment_lengths.shape[0])
        self.links_per_segment = int(links_per_segment)
        m = self.links_per_segment
        #: Bend fraction ``f_k`` of each link's direction, ``(m,)``.
        self.fractions = (2.0 * np.arange(1, m + 1) - 1.0) / (2.0 * m)
        self._f2, self._f3, self._f4 = self.fractions**2, self.fractions**3, self.fractions**4
        self._lengths = [float(x) for x in segment_lengths]  # plain floats for closed_form

    def closed_form(self, s: np.ndarray, with_jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Single-configuration kinematics with the link sums in closed form (all ``|θ| > 1e-3``).

        ``Σ_k sin((2k−1)x) = sin²(mx)/sin x`` and ``Σ_k cos((2k−1)x) = sin(2mx)/(2 sin x)`` with
        ``x = θ/2m`` give the segment chord ``(L/m)(g a, g b, h)``,
        ``g = sin²(θ/2)/(θ sin x)``, ``h = sin θ/(2 sin x)``. Straight-line plain-float arithmetic
        (no tuple or generator per component): for one configuration it is several times faster
        than numpy on 3-vectors. ``s``: ``(N, 3)`` rows ``(ΔL, a, b)``.
        """
        tip, jac = self.closed_form_rows(np.asarray(s, dtype=float).reshape(self.n_segments, 3).tolist(),
                                         with_jacobian)
        return np.array(tip), (None if jac is None else np.array(jac).reshape(-1, 3).T)

    def closed_form_rows(self, rows: list, with_jacobian: bool = True) -> tuple[list, list | None]:
        """:meth:`closed_form` on plain floats: ``rows`` ``N × (ΔL, a, b)``; returns the tip
        ``[x, y, z]`` [m] and (``with_jacobian``) ``d tip/du`` flat and column by column (``3N × 3``:
        ``np.array(jac).reshape(-1, 3).T`` is the ``(3, 3N)`` Jacobian)."""
        m = self.links_per_segment
        inv2m = 0.5 / m
        sin, cos, hypot = math.sin, math.cos, math.hypot
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
        ex = ey = ez = 0.0
        frames = []  # per segment: rotation before it, end, rotation after it, local derivatives
        for (dl, a, b), length in zip(rows, self._lengths):
            th = hypot(a, b)
            k = (length + dl) / m
            x = th * inv2m
            sin_t, cos_t = sin(th), cos(th)
            sin_x, cos_x = sin(x), cos(x)
            sin_h = sin(0.5 * th)
            num = sin_h * sin_h
            h = sin_t / (2 * sin_x)
            den = th * sin_x
            g = num / den
            kg = k * g
            px, py, pz = kg * a, kg * b, k * h
            th2 = th * th
            sv = sin_t / th
            cv = 2 * num / th2
            cab = -cv * a * b
            R00, R11, R22 = 1 - cv * a * a, 1 - cv * b * b, 1 - cv * th2
            R02, R12 = sv * a, sv * b
            ex, ey, ez = (ex + r00 * px + r01 * py + r02 * pz, ey + r10 * px + r11 * py + r12 * pz,
                          ez + r20 * px + r21 * py + r22 * pz)
            n00, n01, n02 = r00 * R00 + r01 * cab - r02 * R02, r00 * cab + r01 * R11 - r02 * R12, \
                r00 * R02 + r01 * R12 + r02 * R22
            n10, n11, n12 = r10 * R00 + r11 * cab - r12 * R02, r10 * cab + r11 * R11 - r12 * R12, \
                r10 * R02 + r11 * R12 + r12 * R22
            n20, n21, n22 = r20 * R00 + r21 * cab - r22 * R02, r20 * cab + r21 * R11 - r22 * R12, \
                r20 * R02 + r21 * R12 + r22 * R22
            if with_jacobian:
                dg = (0.5 * sin_t * den - num * (sin_x + th * cos_x * inv2m)) / (den * den)
                dh = (cos_t * sin_x - sin_t * cos_x * inv2m) / (2 * sin_x * sin_x)
                ca, sa = a / th, b / th
                dsv = (th * cos_t - sin_t) / th2
                dcv = (th * sin_t - 2 * (1 - cos_t)) / (th2 * th)
                frames.append((r00, r01, r02, r10, r11, r12, r20, r21, r22, ex, ey, ez,
                               n00, n01, n02, n10, n11, n12, n20, n21, n22,
                               a, b, k, g, h, dg, dh, ca, sa, sv, cv, dsv, dcv, th2))
            r00, r01, r02, r10, r11, r12, r20, r21, r22 = n00, n01, n02, n10, n11, n12, n20, n21, n22
        if not with_jacobian:
            return [ex, ey, ez], None
        cols = []  # the Jacobian column by column
        for (r00, r01, r02, r10, r11, r12, r20, r21, r22, sx, sy, sz, n00, n01, n02, n10, n11, n12, n20, n21, n22,
             a, b, k, g, h, dg, dh, ca, sa, sv, cv, dsv, dcv, th2) in frames:
            dx, dy, dz = ex - sx, ey - sy, ez - sz
            # the tip in the segment's end frame
            q0 = n00 * dx + n10 * dy + n20 * dz
            q1 = n01 * dx + n11 * dy + n21 * dz
            q2 = n02 * dx + n12 * dy + n22 * dz
            # d(segment rotation)/da · q and /db · q (symmetric 2×2 block, antisymmetric column)
            d11, d12, d22, d13, d23, d33 = _rotation_derivative(dcv * ca, dsv * ca, a, b, sv, cv, th2)
            e11, e12, e22, e13, e23, e33 = _rotation_derivative(dcv * sa, dsv * sa, b, a, sv, cv, th2)
            la0 = k * (g + a * dg * ca) + d11 * q0 + d12 * q1 + d13 * q2
            la1 = k * a * dg * sa + d12 * q0 + d22 * q1 + d23 * q2
            la2 = k * dh * ca - d13 * q0 - d23 * q1 + d33 * q2
            lb0 = k * b * dg * ca + e22 * q0 + e12 * q1 + e23 * q2
            lb1 = k * (g + b * dg * sa) + e12 * q0 + e11 * q1 + e13 * q2
            lb2 = k * dh * sa - e23 * q0 - e13 * q1 + e33 * q2
            l0, l1, l2 = g * a / m, g * b / m, h / m
            cols += (r00 * l0 + r01 * l1 + r02 * l2, r10 * l0 + r11 * l1 + r12 * l2, r20 * l0 + r21 * l1 + r22 * l2,
                     r00 * la0 + r01 * la1 + r02 * la2, r10 * la0 + r11 * la1 + r12 * la2,
                     r20 * la0 + r21 * la1 + r22 * la2,
                     r00 * lb0 + r01 * lb1 + r02 * lb2, r10 * lb0 + r11 * lb1 + r12 * lb2,
                     r20 * lb0 + r21 * lb1 + r22 * lb2)
        return [ex, ey, ez], cols

    def series(self, u: np.ndarray, with_jacobian: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Batched kinematics of ``u`` ``(B, N, 3)``: tip ``(B, 3)`` [m], ``d tip/du`` ``(B, 3, 3N)``
        (or ``None``) and tip rotation ``(B, 3, 3)``; the link sums use :func:`bend_functions`'
        series, exact for every bend including ``θ = 0``.
        """
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
            sig_s = S @ self.fractions
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
