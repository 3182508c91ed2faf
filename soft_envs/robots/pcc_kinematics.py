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

    def closed_form(self, s: np.ndarray, with_jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
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
