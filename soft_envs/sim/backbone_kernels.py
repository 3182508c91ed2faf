"""The soft arms' backbone for their contact, compiled with the batched core: the points and their
Jacobians of one arm, and of a batch.

The body's collision envelope is capsules on the segments of its backbone (the base origin, then the
frame origins of ``Chain.backbone_links()``: one point per rigid link along each section), in the
arm's base frame. :func:`backbone` computes the points and their Jacobians ``∂P/∂c̃`` from the chain's
joint axes (``∂p/∂q_j = e_j × (p − o_j)`` for a revolute joint, ``e_j`` for a prismatic one, times the
joint's ``β_j``), and :func:`smooth_point_jacobians` turns them with the section map's blocks into
``∂P/∂u`` (at the section map's evaluation point, as the rigid-body terms are). The per-arm functions
are compiled for CUDA too (:mod:`soft_envs.sim.batched_cuda`); :func:`batch_backbone` is the CPU's.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.sim.batched_kernels import _JIT, _NO_NRT, PRISMATIC_Z, REVOLUTE_Z, _evaluation_state, workspace


@njit(**_NO_NRT)
def backbone(ints, table, trig, c, points, axes, P, Jc, cs):
    """Backbone points ``P`` ``(p + 1, 3)`` [m, base frame] (the base origin, then the frame origin
    of each link of ``points``) and ``Jc`` ``(p + 1, 3, 3N)`` = ``∂P/∂c̃`` of one arm at ``c̃ = c``;
    ``axes`` ``(K, 6)`` scratch: each joint's axis and origin; ``cs`` ``(T, 2)`` scratch: the joint
    angles' cosines and sines (:func:`backbone_points`)."""
    backbone_points(ints, table, trig, c, points, axes, P, cs)
    backbone_jacobian(ints, table, points, axes, P, Jc)


@njit(**_NO_NRT)
def backbone_points(ints, table, trig, c, points, axes, P, cs):
    """:func:`backbone`'s points ``P`` and the joints' ``axes`` alone (no Jacobian). The cosines and
    sines of the distinct joint angles (the trig table ``trig`` ``(T, 3)`` of
    :func:`~soft_envs.sim.batched_kernels.rigid_terms`, ``ints[:, 2]`` each joint's row) are computed
    once into ``cs`` ``(T, 2)``, each by ``cos`` and ``sin`` (not from its ``half``'s, so each joint's
    are exactly its own angle's; a joint at minus its row's angle flips the sine)."""
    for t in range(trig.shape[0]):
        angle = trig[t, 1] * c[int(trig[t, 0])]
        cs[t, 0], cs[t, 1] = math.cos(angle), math.sin(angle)
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    for r in range(3):
        P[0, r] = 0.0
    nxt = 0
    for j in range(ints.shape[0]):
        kind, t = ints[j, 0], ints[j, 2]
        coef = table[j, 1]
        off = table[j, 0]
        px, py, pz = px + off * r02, py + off * r12, pz + off * r22
        axes[j, 3], axes[j, 4], axes[j, 5] = px, py, pz
        if kind == REVOLUTE_Z or kind == PRISMATIC_Z:
            axes[j, 0], axes[j, 1], axes[j, 2] = r02, r12, r22
        else:
            axes[j, 0], axes[j, 1], axes[j, 2] = r01, r11, r21
        if kind == PRISMATIC_Z:
            q = coef * c[ints[j, 1]]
            px, py, pz = px + q * r02, py + q * r12, pz + q * r22
        else:
            co, sn = cs[t, 0], (cs[t, 1] if coef == trig[t, 1] else -cs[t, 1])
            if kind == REVOLUTE_Z:
                r00, r01 = co * r00 + sn * r01, co * r01 - sn * r00
                r10, r11 = co * r10 + sn * r11, co * r11 - sn * r10
                r20, r21 = co * r20 + sn * r21, co * r21 - sn * r20
            else:
                r00, r02 = co * r00 - sn * r02, sn * r00 + co * r02
                r10, r12 = co * r10 - sn * r12, sn * r10 + co * r12
                r20, r22 = co * r20 - sn * r22, sn * r20 + co * r22
        if nxt < points.shape[0] and points[nxt] == j:
            P[nxt + 1, 0], P[nxt + 1, 1], P[nxt + 1, 2] = px, py, pz
            nxt += 1


@njit(**_NO_NRT)
def backbone_jacobian(ints, table, points, axes, P, Jc):
    """:func:`backbone`'s ``Jc`` from the points ``P`` and joints' ``axes`` of :func:`backbone_points`."""
    for i in range(Jc.shape[0]):
        for r in range(3):
            for col in range(Jc.shape[2]):
                Jc[i, r, col] = 0.0
    for i in range(points.shape[0]):
        x, y, z = P[i + 1, 0], P[i + 1, 1], P[i + 1, 2]
        for j in range(points[i] + 1):
            beta, slot = table[j, 1], ints[j, 1]
            ex, ey, ez = axes[j, 0], axes[j, 1], axes[j, 2]
            if ints[j, 0] == PRISMATIC_Z:
                dx, dy, dz = ex, ey, ez
            else:
                ox, oy, oz = x - axes[j, 3], y - axes[j, 4], z - axes[j, 5]
                dx, dy, dz = ey * oz - ez * oy, ez * ox - ex * oz, ex * oy - ey * ox
            Jc[i + 1, 0, slot] += beta * dx
            Jc[i + 1, 1, slot] += beta * dy
            Jc[i + 1, 2, slot] += beta * dz


@njit(**_NO_NRT)
def smooth_point_jacobians(Jc, jac, per, PJ):
    """``PJ[i] = Jc[i] J`` ``(3, n)``: the points' Jacobians in ``u`` (``jac`` the section blocks ``(N, 3, per)``)."""
    for i in range(Jc.shape[0]):
        for r in range(3):
            for s in range(jac.shape[0]):
                for p in range(per):
                    PJ[i, r, per * s + p] = (Jc[i, r, 3 * s] * jac[s, 0, p] + Jc[i, r, 3 * s + 1] * jac[s, 1, p]
                                             + Jc[i, r, 3 * s + 2] * jac[s, 2, p])


@njit(**_JIT)
def batch_backbone(ints, table, trig, sec, lref, u, w, c, points, P, PJ):
    """Backbone points ``(B, p + 1, 3)`` and their Jacobians in ``u`` ``(B, p + 1, 3, n)`` of every arm."""
    n = u.shape[1]
    ws = workspace(lref.shape[0], n, ints.shape[0], trig.shape[0])
    Jc = np.empty((points.shape[0] + 1, 3, 3 * lref.shape[0]))
    axes = np.empty((ints.shape[0], 6))
    for b in range(u.shape[0]):
        backbone(ints, table, trig, c[b], points, axes, P[b], Jc, ws[12])
        _evaluation_state(sec, lref, u[b], w[b], c[b], ws)
        smooth_point_jacobians(Jc, ws[6], 2 if sec[0] != 0 else 3, PJ[b])
