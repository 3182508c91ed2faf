"""Per-arm kernels of the batched soft-arm core (:mod:`soft_envs.sim.batched_arm`), compiled with
numba: the section map and the rigid-body terms of the generated chain (the time step is
:func:`soft_envs.sim.integrator.generalized_alpha_step`, shared with the single core).

Every function here works on ONE arm (small fixed-size arrays, scalar loops over joints and
sections) and the ``batch_*`` drivers run it for every arm of a batch in one compiled loop —
the MJX pattern (a single-world step, batched by ``vmap``). This file is the whole of the
batched core's arithmetic; nothing else loops over arms. :mod:`soft_envs.sim.batched_cuda`
compiles the same per-arm functions for CUDA (their ``py_func``), so they must stay free of
allocation and of anything CUDA lacks.

Rigid-body terms (:func:`rigid_terms`). The chain (:class:`~soft_envs.robots.chain.Chain`) is
a serial chain of ``revolute_z`` / ``revolute_y`` / ``prismatic_z`` joints, each ``offset``
along its parent's z, every link with a mass, a diagonal inertia and a centre of mass. Each
joint value is one entry of the sections' ``c̃ = (m·e, θ, φ)`` times a constant
(``q_j = β_j c̃[σ_j]``, the rows of :attr:`SectionMap.B`). The kernel computes, in the arm's
base frame and spatial (Plücker) coordinates at the base origin:

* forward pass: link frames, joint motion axes ``S_j`` (revolute: ``(a, o × a)``, prismatic
  ``(0, a)``), each link's spatial inertia about the origin ``(m, h = m c, Ī)``, velocities and
  the bias accelerations (recursive Newton–Euler, gravity as a base acceleration);
* backward pass: composite inertias ``I_c,j`` (plain sums: every inertia is about the same
  point), the joint forces ``τ_j = S_j · Σ_{k≥j} f_k`` and ``G_j = S_j · I_c,j (0, −g)``;
* the mass matrix straight in ``c̃`` (composite-rigid-body, ``M_ij = S_i · I_c,j S_j`` for
  ``i ≤ j``, summed into ``Bᵀ M_b B`` through running sums ``Ψ_α = Σ_{i<j, σ_i = α} β_i S_i``,
  so the joint-space matrix is never formed).

``M_u = Jᵀ M_c J`` and ``C u̇ + G = Jᵀ h_c`` follow with the section map's block-diagonal ``J``,
as :class:`~soft_envs.sim.soft_arm.SoftArmBody` does with PyBullet's ``calculateMassMatrix`` /
``calculateInverseDynamics`` (checked against them in ``tests/sim/test_batched_arm.py``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.sim.sections import _SMALL_HALF, MIN_BEND  # one source for the section map's constants

REVOLUTE_Z, REVOLUTE_Y, PRISMATIC_Z = 0, 1, 2

_JIT = {"cache": True, "nogil": True, "error_model": "numpy", "fastmath": {"contract", "reassoc", "nsz", "arcp"}}
_INLINE = dict(_JIT, inline="always")  # the small per-arm helpers, inlined into their callers
_NO_NRT = dict(_JIT, _nrt=False)  # loops over arms: no reference counting of the per-arm views


# ---------------------------------------------------------------------------- section map

@njit(**_INLINE)
def _wrap(angle):
    """``angle`` into ``[−π, π)`` exactly as Python's ``(angle + π) % 2π − π`` (``fmod`` skipped when
    ``angle + π`` is already in ``[0, 2π)``, where it returns it unchanged)."""
    shifted = angle + math.pi
    if 0.0 <= shifted < 2.0 * math.pi:
        return shifted - math.pi
    return shifted % (2.0 * math.pi) - math.pi


@njit(**_INLINE)
def _sinc(r, m):
    """``sin(y)/y`` with ``y = r/2m`` and its first two derivatives in ``r`` (as sections._sinc_scalar)."""
    y = r / (2.0 * m)
    if abs(y) < _SMALL_HALF:
        return (1.0 - y * y / 6.0 + y**4 / 120.0, (-y / 3.0 + y**3 / 30.0) / (2.0 * m),
                (-1.0 / 3.0 + y * y / 10.0) / (4.0 * m * m))
    s, c = math.sin(y), math.cos(y)
    return s / y, (y * c - s) / (y * y) / (2.0 * m), ((2.0 - y * y) * s - 2.0 * y * c) / y**3 / (4.0 * m * m)


@njit(**_INLINE)
def configuration(u, ref, has_ref, planar, chord, links, lref, out):
    """``c̃`` of one arm's ``u`` into ``out`` (``SectionMap.configuration``; ``ref`` used if ``has_ref``)."""
    n_sec = lref.shape[0]
    per = 2 if planar else 3
    for i in range(n_sec):
        x = u[per * i]
        if planar:
            out[3 * i] = x
            out[3 * i + 1] = u[per * i + 1]
            out[3 * i + 2] = 0.0
            continue
        a, b = u[per * i + 1], u[per * i + 2]
        theta = math.hypot(a, b)
        ext = (lref[i] + x) * _sinc(theta, links)[0] - lref[i] if chord else x
        phi = math.atan2(b, a)
        if has_ref:
            ref_theta, ref_phi = ref[3 * i + 1], ref[3 * i + 2]
            flip_phi = _wrap(phi + math.pi)
            d_keep = abs(_wrap(phi - ref_phi)) + abs(theta - ref_theta)
            d_flip = abs(_wrap(flip_phi - ref_phi)) + abs(theta + ref_theta)
            if d_flip < d_keep:
                theta, phi = -theta, flip_phi
            if theta == 0.0:
                phi = ref_phi
        out[3 * i] = ext
        out[3 * i + 1] = theta
        out[3 * i + 2] = phi


@njit(**_INLINE)
def evaluation_point(u, c, planar, ue):
    """``u`` with every bend at least :data:`MIN_BEND` into ``ue``; True if it was moved."""
    for i in range(u.shape[0]):
        ue[i] = u[i]
    if planar:
        return False
    moved = False
    for i in range(c.shape[0] // 3):
        if abs(c[3 * i + 1]) >= MIN_BEND:
            continue
        a, b = u[3 * i + 1], u[3 * i + 2]
        r = math.hypot(a, b)
        if r < MIN_BEND:
            phi = math.atan2(b, a) if r > 0 else c[3 * i + 2]
            ue[3 * i + 1] = MIN_BEND * math.cos(phi)
            ue[3 * i + 2] = MIN_BEND * math.sin(phi)
            moved = True
    return moved


@njit(**_INLINE)
def section_jacobian(u, c, w, planar, chord, links, lref, jac, acc):
    """Per-section blocks ``jac[i] = ∂c̃_i/∂u_i`` ``(N, 3, per)`` and ``acc = J̇ w`` ``(3N,)``
    (``SectionMap.jacobian``; ``u`` at the evaluation point, ``c = c̃(u)``)."""
    n_sec = lref.shape[0]
    for i in range(n_sec):
        for r in range(3):
            acc[3 * i + r] = 0.0
            for p in range(3):
                jac[i, r, p] = 0.0
    if planar:
        for i in range(n_sec):
            jac[i, 0, 0] = 1.0
            jac[i, 1, 1] = 1.0
        return
    for i in range(n_sec):
        x, a, b = u[3 * i], u[3 * i + 1], u[3 * i + 2]
        r2 = a * a + b * b
        r = math.sqrt(r2)
        sign = -1.0 if c[3 * i + 1] < 0 else 1.0
        jac[i, 1, 1] = sign * a / r
        jac[i, 1, 2] = sign * b / r
        jac[i, 2, 1] = -b / r2
        jac[i, 2, 2] = a / r2
        sv, ds, dds = 1.0, 0.0, 0.0
        ell = lref[i] + x
        if chord:
            sv, ds, dds = _sinc(r, links)
            jac[i, 0, 0] = sv
            jac[i, 0, 1] = ell * ds * a / r
            jac[i, 0, 2] = ell * ds * b / r
        else:
            jac[i, 0, 0] = 1.0
        xd, ad, bd = w[3 * i], w[3 * i + 1], w[3 * i + 2]
        cross = a * bd - b * ad
        rdot = (a * ad + b * bd) / r
        rdd = cross * cross / (r2 * r)
        acc[3 * i + 1] = sign * rdd
        acc[3 * i + 2] = -2.0 * cross * rdot / (r2 * r)
        if chord:
            acc[3 * i] = 2.0 * xd * ds * rdot + ell * (dds * rdot * rdot + ds * rdd)


# ---------------------------------------------------------------------------- rigid-body terms

@njit(**_NO_NRT)
def rigid_terms(ints, table, trig, mass, inertia, gravity, c, cd, cdd, with_mass, with_bias, Mc, hc, gc, S, link, F,
                cs):
    """``Bᵀ M_b B`` into ``Mc`` (if ``with_mass``), ``Bᵀ ID(q, q̇, q̈)`` into ``hc`` (if ``with_bias``) and
    ``Bᵀ ID(q, 0, 0)`` into ``gc`` for one arm at ``c̃ = c`` with ``ċ̃ = cd``, ``c̃̈ = cdd``
    (module docstring). ``ints`` ``(K, 3)`` = (kind, slot, trig) per joint, ``table`` ``(K, 5)`` =
    (offset, β, com), ``trig`` ``(T, 3)`` = (slot, β, half) of the distinct joint angles (their
    cosines and sines are computed once into ``cs`` ``(T, 2)``; from ``half``'s when it is ≥ 0).
    ``S`` ``(K, 6)``, ``link`` ``(K, 16)``,
    ``F`` ``(K, 6)``: scratch."""
    K = ints.shape[0]
    for t in range(trig.shape[0]):
        half = int(trig[t, 2])
        if half >= 0:  # twice an earlier angle
            co, sn = cs[half, 0], cs[half, 1]
            cs[t, 0], cs[t, 1] = 1.0 - 2.0 * sn * sn, 2.0 * sn * co
        else:
            angle = trig[t, 1] * c[int(trig[t, 0])]
            cs[t, 0], cs[t, 1] = math.cos(angle), math.sin(angle)
    nc = c.shape[0]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    wx = wy = wz = vx = vy = vz = 0.0  # spatial velocity (ω, v_O)
    gx, gy, gz = gravity[0], gravity[1], gravity[2]
    ax = ay = az = 0.0
    bx, by, bz = -gx, -gy, -gz  # spatial acceleration (α, a_O): gravity as a base acceleration
    for j in range(K):
        kind, slot, t = ints[j, 0], ints[j, 1], ints[j, 2]
        coef = table[j, 1]
        qd = coef * cd[slot]
        qdd = coef * cdd[slot]
        off = table[j, 0]
        px, py, pz = px + off * r02, py + off * r12, pz + off * r22
        if kind != PRISMATIC_Z:
            co = cs[t, 0]
            sn = cs[t, 1] if coef == trig[t, 1] else -cs[t, 1]
        if kind == REVOLUTE_Z:
            ex, ey, ez = r02, r12, r22
            r00, r01 = co * r00 + sn * r01, co * r01 - sn * r00
            r10, r11 = co * r10 + sn * r11, co * r11 - sn * r10
            r20, r21 = co * r20 + sn * r21, co * r21 - sn * r20
        elif kind == REVOLUTE_Y:
            ex, ey, ez = r01, r11, r21
            r00, r02 = co * r00 - sn * r02, sn * r00 + co * r02
            r10, r12 = co * r10 - sn * r12, sn * r10 + co * r12
            r20, r22 = co * r20 - sn * r22, sn * r20 + co * r22
        else:
            ex, ey, ez = r02, r12, r22
            q = coef * c[slot]
            px, py, pz = px + q * r02, py + q * r12, pz + q * r22
        if kind == PRISMATIC_Z:
            s0 = s1 = s2 = 0.0
            s3, s4, s5 = ex, ey, ez
        else:
            s0, s1, s2 = ex, ey, ez
            s3, s4, s5 = py * ez - pz * ey, pz * ex - px * ez, px * ey - py * ex
        S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5] = s0, s1, s2, s3, s4, s5
        # the link's spatial inertia about the origin: m, h = m c, Ī = R I Rᵀ + m (|c|² 1 − c cᵀ)
        m = mass[j]
        lx, ly, lz = table[j, 2], table[j, 3], table[j, 4]
        cx = px + r00 * lx + r01 * ly + r02 * lz
        cy = py + r10 * lx + r11 * ly + r12 * lz
        cz = pz + r20 * lx + r21 * ly + r22 * lz
        i0, i1, i2 = inertia[j, 0], inertia[j, 1], inertia[j, 2]
        cc = cx * cx + cy * cy + cz * cz
        ixx = i0 * r00 * r00 + i1 * r01 * r01 + i2 * r02 * r02 + m * (cc - cx * cx)
        iyy = i0 * r10 * r10 + i1 * r11 * r11 + i2 * r12 * r12 + m * (cc - cy * cy)
        izz = i0 * r20 * r20 + i1 * r21 * r21 + i2 * r22 * r22 + m * (cc - cz * cz)
        ixy = i0 * r00 * r10 + i1 * r01 * r11 + i2 * r02 * r12 - m * cx * cy
        ixz = i0 * r00 * r20 + i1 * r01 * r21 + i2 * r02 * r22 - m * cx * cz
        iyz = i0 * r10 * r20 + i1 * r11 * r21 + i2 * r12 * r22 - m * cy * cz
        hx, hy, hz = m * cx, m * cy, m * cz
        link[j, 6], link[j, 7], link[j, 8], link[j, 9] = m, hx, hy, hz
        link[j, 10], link[j, 11], link[j, 12], link[j, 13], link[j, 14], link[j, 15] = ixx, iyy, izz, ixy, ixz, iyz
        if not with_bias:  # the configuration terms only (M, G): no velocities
            continue
        # velocity and bias acceleration: v += S q̇, a += S q̈ + v ×m S q̇
        t0, t1, t2, t3, t4, t5 = s0 * qd, s1 * qd, s2 * qd, s3 * qd, s4 * qd, s5 * qd
        wx, wy, wz, vx, vy, vz = wx + t0, wy + t1, wz + t2, vx + t3, vy + t4, vz + t5
        ax += s0 * qdd + wy * t2 - wz * t1
        ay += s1 * qdd + wz * t0 - wx * t2
        az += s2 * qdd + wx * t1 - wy * t0
        bx += s3 * qdd + wy * t5 - wz * t4 + vy * t2 - vz * t1
        by += s4 * qdd + wz * t3 - wx * t5 + vz * t0 - vx * t2
        bz += s5 * qdd + wx * t4 - wy * t3 + vx * t1 - vy * t0
        # f = I a + v ×* (I v);  I (ω, v) = (Ī ω + h × v, m v − h × ω)
        nx = ixx * ax + ixy * ay + ixz * az + hy * bz - hz * by
        ny = ixy * ax + iyy * ay + iyz * az + hz * bx - hx * bz
        nz = ixz * ax + iyz * ay + izz * az + hx * by - hy * bx
        fx = m * bx - (hy * az - hz * ay)
        fy = m * by - (hz * ax - hx * az)
        fz = m * bz - (hx * ay - hy * ax)
        Lx = ixx * wx + ixy * wy + ixz * wz + hy * vz - hz * vy
        Ly = ixy * wx + iyy * wy + iyz * wz + hz * vx - hx * vz
        Lz = ixz * wx + iyz * wy + izz * wz + hx * vy - hy * vx
        Px = m * vx - (hy * wz - hz * wy)
        Py = m * vy - (hz * wx - hx * wz)
        Pz = m * vz - (hx * wy - hy * wx)
        nx += wy * Lz - wz * Ly + vy * Pz - vz * Py
        ny += wz * Lx - wx * Lz + vz * Px - vx * Pz
        nz += wx * Ly - wy * Lx + vx * Py - vy * Px
        fx += wy * Pz - wz * Py
        fy += wz * Px - wx * Pz
        fz += wx * Py - wy * Px
        link[j, 0], link[j, 1], link[j, 2], link[j, 3], link[j, 4], link[j, 5] = nx, ny, nz, fx, fy, fz
    # backward: composites, joint forces, gravity forces
    for k in range(nc):
        hc[k] = 0.0
        gc[k] = 0.0
    m = hx = hy = hz = ixx = iyy = izz = ixy = ixz = iyz = 0.0
    nx = ny = nz = fx = fy = fz = 0.0
    for j in range(K - 1, -1, -1):
        m, hx, hy, hz = m + link[j, 6], hx + link[j, 7], hy + link[j, 8], hz + link[j, 9]
        ixx, iyy, izz = ixx + link[j, 10], iyy + link[j, 11], izz + link[j, 12]
        ixy, ixz, iyz = ixy + link[j, 13], ixz + link[j, 14], iyz + link[j, 15]
        s0, s1, s2, s3, s4, s5 = S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5]
        if with_bias:
            nx, ny, nz = nx + link[j, 0], ny + link[j, 1], nz + link[j, 2]
            fx, fy, fz = fx + link[j, 3], fy + link[j, 4], fz + link[j, 5]
            hc[ints[j, 1]] += table[j, 1] * (s0 * nx + s1 * ny + s2 * nz + s3 * fx + s4 * fy + s5 * fz)
        # I_c (0, −g) = (h × (−g), −m g)
        gn_x, gn_y, gn_z = -(hy * gz - hz * gy), -(hz * gx - hx * gz), -(hx * gy - hy * gx)
        tg = s0 * gn_x + s1 * gn_y + s2 * gn_z - m * (s3 * gx + s4 * gy + s5 * gz)
        gc[ints[j, 1]] += table[j, 1] * tg
        if with_mass:
            F[j, 0] = ixx * s0 + ixy * s1 + ixz * s2 + hy * s5 - hz * s4
            F[j, 1] = ixy * s0 + iyy * s1 + iyz * s2 + hz * s3 - hx * s5
            F[j, 2] = ixz * s0 + iyz * s1 + izz * s2 + hx * s4 - hy * s3
            F[j, 3] = m * s3 - (hy * s2 - hz * s1)
            F[j, 4] = m * s4 - (hz * s0 - hx * s2)
            F[j, 5] = m * s5 - (hx * s1 - hy * s0)
    if not with_mass:
        return
    # Mc = P + Pᵀ + D from the pairs i < j (running sums Ψ per slot, kept in link[:nc, :6])
    psi = link
    for k in range(nc):
        for d in range(6):
            psi[k, d] = 0.0
        for l2 in range(nc):
            Mc[k, l2] = 0.0
    top = 0  # Ψ is zero from slot ``top`` on
    for j in range(K):
        sj = ints[j, 1]
        bj = table[j, 1]
        f0, f1, f2, f3, f4, f5 = F[j, 0], F[j, 1], F[j, 2], F[j, 3], F[j, 4], F[j, 5]
        for k in range(top):
            p = bj * (psi[k, 0] * f0 + psi[k, 1] * f1 + psi[k, 2] * f2 + psi[k, 3] * f3 + psi[k, 4] * f4
                      + psi[k, 5] * f5)
            Mc[k, sj] += p
            Mc[sj, k] += p
        top = max(top, sj + 1)
        s0, s1, s2, s3, s4, s5 = S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5]
        Mc[sj, sj] += bj * bj * (s0 * f0 + s1 * f1 + s2 * f2 + s3 * f3 + s4 * f4 + s5 * f5)
        psi[sj, 0] += bj * s0
        psi[sj, 1] += bj * s1
        psi[sj, 2] += bj * s2
        psi[sj, 3] += bj * s3
        psi[sj, 4] += bj * s4
        psi[sj, 5] += bj * s5


@njit(**_INLINE)
def point_state(ints, table, c, cd, out):
    """Position and linear velocity of the last link's centre of mass (base frame) into ``out[:6]``."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    wx = wy = wz = vx = vy = vz = 0.0
    K = ints.shape[0]
    for j in range(K):
        kind, slot = ints[j, 0], ints[j, 1]
        q = table[j, 1] * c[slot]
        qd = table[j, 1] * cd[slot]
        off = table[j, 0]
        px, py, pz = px + off * r02, py + off * r12, pz + off * r22
        if kind == REVOLUTE_Z:
            ex, ey, ez = r02, r12, r22
            cs, sn = math.cos(q), math.sin(q)
            r00, r01 = cs * r00 + sn * r01, cs * r01 - sn * r00
            r10, r11 = cs * r10 + sn * r11, cs * r11 - sn * r10
            r20, r21 = cs * r20 + sn * r21, cs * r21 - sn * r20
        elif kind == REVOLUTE_Y:
            ex, ey, ez = r01, r11, r21
            cs, sn = math.cos(q), math.sin(q)
            r00, r02 = cs * r00 - sn * r02, sn * r00 + cs * r02
            r10, r12 = cs * r10 - sn * r12, sn * r10 + cs * r12
            r20, r22 = cs * r20 - sn * r22, sn * r20 + cs * r22
        else:
            ex, ey, ez = r02, r12, r22
            px, py, pz = px + q * r02, py + q * r12, pz + q * r22
        if kind == PRISMATIC_Z:
            vx, vy, vz = vx + ex * qd, vy + ey * qd, vz + ez * qd
        else:
            wx, wy, wz = wx + ex * qd, wy + ey * qd, wz + ez * qd
            vx += (py * ez - pz * ey) * qd
            vy += (pz * ex - px * ez) * qd
            vz += (px * ey - py * ex) * qd
    lx, ly, lz = table[K - 1, 2], table[K - 1, 3], table[K - 1, 4]
    cx = px + r00 * lx + r01 * ly + r02 * lz
    cy = py + r10 * lx + r11 * ly + r12 * lz
    cz = pz + r20 * lx + r21 * ly + r22 * lz
    out[0], out[1], out[2] = cx, cy, cz
    out[3] = vx + wy * cz - wz * cy
    out[4] = vy + wz * cx - wx * cz
    out[5] = vz + wx * cy - wy * cx


# ---------------------------------------------------------------------------- one arm's terms and step

@njit(**_JIT)
def workspace(n_sec, n, K, T):
    """Scratch arrays of one arm's :func:`arm_terms` (allocated once per batch)."""
    nc = 3 * n_sec
    return (np.empty(n), np.empty(nc), np.empty(nc), np.empty(nc), np.empty(nc), np.empty(nc),
            np.zeros((n_sec, 3, 3)), np.empty((nc, nc)), np.empty((K, 6)), np.empty((K, 16)), np.empty((K, 6)),
            np.empty((nc, n)), np.empty((T, 2)))


@njit(**_INLINE)
def _rates(jac, w, per, cd):
    """``ċ̃ = J w`` (block-diagonal ``J``)."""
    for i in range(jac.shape[0]):
        for r in range(3):
            s = 0.0
            for p in range(per):
                s += jac[i, r, p] * w[per * i + p]
            cd[3 * i + r] = s


@njit(**_INLINE)
def _evaluation_map(sec, lref, u, w, c, ue, ce, jac, acc):
    """Evaluation point ``ue`` of ``u`` (``c`` its ``c̃``), its ``c̃`` ``ce``, the section blocks of
    ``J`` ``jac`` ``(N, 3, 3)`` and ``J̇ w`` ``acc``."""
    planar, chord, links = sec[0] != 0, sec[1] != 0, sec[2]
    if evaluation_point(u, c, planar, ue):
        configuration(ue, c, True, planar, chord, links, lref, ce)
    else:
        for i in range(c.shape[0]):
            ce[i] = c[i]
    section_jacobian(ue, ce, w, planar, chord, links, lref, jac, acc)


@njit(**_INLINE)
def _evaluation_state(sec, lref, u, w, c, ws):
    """Evaluation point ``u_e``, its ``c̃_e``, ``J``, ``J̇ w`` and ``ċ̃`` into the workspace."""
    _evaluation_map(sec, lref, u, w, c, ws[0], ws[1], ws[6], ws[3])
    _rates(ws[6], w, 2 if sec[0] != 0 else 3, ws[2])


@njit(**_NO_NRT)
def arm_terms(ints, table, trig, sec, lref, mass, inertia, gravity, u, w, c, with_mass, with_bias, M, h, g, ws):
    """``M(u)`` (if ``with_mass``), ``C u̇ + G`` (if ``with_bias``) and ``G`` of one arm (smooth
    coordinates) into ``M``, ``h``, ``g``. ``ints``, ``table``, ``trig``: the chain (:func:`rigid_terms`); ``sec`` =
    ``(planar, chord, links)``; ``c`` the arm's current ``c̃`` (sign reference); ``ws`` a
    :func:`workspace`."""
    per = 2 if sec[0] != 0 else 3
    n_sec = lref.shape[0]
    ce, cd, acc, hc, gc, jac, Mc, S, link, F = ws[1], ws[2], ws[3], ws[4], ws[5], ws[6], ws[7], ws[8], ws[9], ws[10]
    _evaluation_state(sec, lref, u, w, c, ws)
    rigid_terms(ints, table, trig, mass, inertia, gravity, ce, cd, acc, with_mass, with_bias, Mc, hc, gc, S, link, F,
                ws[12])
    for i in range(n_sec):
        for p in range(per):
            sh = 0.0
            sg = 0.0
            for r in range(3):
                sh += jac[i, r, p] * hc[3 * i + r]
                sg += jac[i, r, p] * gc[3 * i + r]
            h[per * i + p] = sh
            g[per * i + p] = sg
    if not with_mass:
        return
    T = ws[11]
    for r in range(3 * n_sec):  # T = Mc J, then M = Jᵀ T (J block-diagonal)
        for k in range(n_sec):
            for q in range(per):
                T[r, per * k + q] = (Mc[r, 3 * k] * jac[k, 0, q] + Mc[r, 3 * k + 1] * jac[k, 1, q]
                                     + Mc[r, 3 * k + 2] * jac[k, 2, q])
    for i in range(n_sec):
        for p in range(per):
            j0, j1, j2 = jac[i, 0, p], jac[i, 1, p], jac[i, 2, p]
            for col in range(per * n_sec):
                M[per * i + p, col] = j0 * T[3 * i, col] + j1 * T[3 * i + 1, col] + j2 * T[3 * i + 2, col]


# ---------------------------------------------------------------------------- batch drivers

@njit(**_JIT)
def batch_configuration(sec, lref, u, ref, has_ref, out):
    """``c̃`` of every arm's ``u`` (nearest ``ref`` where ``has_ref``)."""
    for b in range(u.shape[0]):
        configuration(u[b], ref[b], has_ref[b], sec[0] != 0, sec[1] != 0, sec[2], lref, out[b])


@njit(**_JIT)
def batch_point_state(ints, table, trig, sec, lref, u, w, c, out):
    """Last link's centre of mass, position and velocity ``(B, 6)`` in the base frame, at ``c̃ = c``
    with ``ċ̃ = J(u_e) w`` (as ``SoftArmBody.tip_state`` reads PyBullet)."""
    ws = workspace(lref.shape[0], u.shape[1], ints.shape[0], trig.shape[0])
    for b in range(u.shape[0]):
        _evaluation_state(sec, lref, u[b], w[b], c[b], ws)
        point_state(ints, table, c[b], ws[2], out[b])


@njit(**_JIT)
def batch_terms(ints, table, trig, sec, lref, mass, inertia, gravity, u, w, c, with_mass, active, M, h, g):
    """:func:`arm_terms` of every ``active`` arm (leading axis of the per-arm arrays)."""
    ws = workspace(lref.shape[0], u.shape[1], ints.shape[0], trig.shape[0])
    _terms_of_arms((ints, table, trig, sec, lref), mass, inertia, gravity, u, w, c, with_mass, active, M, h, g, ws)


@njit(**_NO_NRT)
def _terms_of_arms(topology, mass, inertia, gravity, u, w, c, with_mass, active, M, h, g, ws):
    """The loop of :func:`batch_terms` (no reference counting of the per-arm views)."""
    for b in range(u.shape[0]):
        if active[b]:
            terms_of_arm(topology, mass[b], inertia[b], gravity[b], u[b], w[b], c[b], with_mass, True, M[b], h[b],
                         g[b], ws)


@njit(**_NO_NRT)
def terms_of_arm(topology, mass, inertia, gravity, u, w, c, with_mass, with_bias, M, h, g, ws):
    """:func:`arm_terms` as one compiled function (``topology`` = ``(ints, table, trig, sec, lref)``)
    that the batch drivers call rather than inline: its code is optimised once, which keeps the
    cold compile of the drivers short."""
    ints, table, trig, sec, lref = topology
    arm_terms(ints, table, trig, sec, lref, mass, inertia, gravity, u, w, c, with_mass, with_bias, M, h, g, ws)


@njit(**_JIT)
def batch_section_map(sec, lref, u, w, c, ue, ce, jac, acc):
    """Evaluation point ``ue``, its ``c̃`` ``ce``, the section blocks of ``J`` ``(B, N, 3, per)``
    and ``J̇ w`` ``(B, 3N)`` of every arm (what :func:`arm_terms` uses)."""
    for b in range(u.shape[0]):
        _evaluation_map(sec, lref, u[b], w[b], c[b], ue[b], ce[b], jac[b], acc[b])


@njit(**_JIT)
def arm_section_map(sec, lref, u, w, ref, c, ue, ce, J, acc, blocks):
    """One arm's section map, for a single body (:meth:`SoftArmBody._kinematics`): ``c̃`` of ``u``
    (θ's sign nearest ``ref``) into ``c``, the evaluation point ``ue`` and its ``c̃`` ``ce``, the
    whole ``J = ∂c̃/∂u`` ``(3N, n)`` and ``J̇ w`` ``(3N,)``; ``blocks`` ``(N, 3, 3)`` scratch."""
    planar = sec[0] != 0
    configuration(u, ref, True, planar, sec[1] != 0, sec[2], lref, c)
    _evaluation_map(sec, lref, u, w, c, ue, ce, blocks, acc)
    per = 2 if planar else 3
    for r in range(J.shape[0]):
        for col in range(J.shape[1]):
            J[r, col] = 0.0
    for i in range(lref.shape[0]):
        for r in range(3):
            for p in range(per):
                J[3 * i + r, per * i + p] = blocks[i, r, p]


# ---------------------------------------------------------------------------- the soft arms' validity


@njit(**_INLINE)
def _row_finite(u: np.ndarray, w: np.ndarray, i: int) -> bool:
    """Whether row ``i`` of the state ``u``, ``w`` is finite."""
    for j in range(u.shape[1]):
        if not (math.isfinite(u[i, j]) and math.isfinite(w[i, j])):
            return False
    return True


@njit(**_INLINE)
def _row_too_fast(w: np.ndarray, i: int, max_rate: float) -> bool:
    """Whether a rate of row ``i`` exceeds ``max_rate``."""
    for j in range(w.shape[1]):
        if abs(w[i, j]) > max_rate:
            return True
    return False


@njit(**_JIT)
def peter_validity(u: np.ndarray, w: np.ndarray, active: np.ndarray, reference_length: float, radius: np.ndarray,
                   cos: np.ndarray, sin: np.ndarray, half: float, max_rate: float) -> np.ndarray:
    """Per PETER arm ``(B,)``, the first reason its state ``u``, ``w`` ``(B, 3N)`` is outside the PCC
    model (0 valid or inactive; 1 not finite; 2 a leg ``L − r (a cos α + b sin α)`` shorter than
    ``half`` [m]; 3 a module bent past π; 4 a rate above ``max_rate``), in that order."""
    B, n = u.shape
    code = np.zeros(B, dtype=np.int64)
    for i in range(B):
        if not active[i]:
            continue
        if not _row_finite(u, w, i):
            code[i] = 1
            continue
        crushed = bent = False
        for m in range(0, n, 3):
            length, a, b = u[i, m] + reference_length, u[i, m + 1], u[i, m + 2]
            for k in range(3):
                if length - radius[i] * (a * cos[k] + b * sin[k]) < half:
                    crushed = True
            if math.hypot(a, b) > math.pi:
                bent = True
        code[i] = 2 if crushed else 3 if bent else 4 if _row_too_fast(w, i, max_rate) else 0
    return code


@njit(**_INLINE)
def pcc_code(u, w, per, half_lengths, max_rate):
    """The first reason one PCC arm's state ``u``, ``w`` ``(n,)`` (``per`` coordinates a segment) is
    outside the model: 0 valid; 1 not finite; else the first segment, in order, bent past π (2; the
    bend is tested first) or stretched beyond ``half_lengths`` [m] (3); else 4 if a rate exceeds
    ``max_rate``."""
    n = u.shape[0]
    for j in range(n):
        if not (math.isfinite(u[j]) and math.isfinite(w[j])):
            return 1
    for k in range(n // per):
        bend = abs(u[per * k + 1]) if per == 2 else math.hypot(u[per * k + 1], u[per * k + 2])
        if bend > math.pi:
            return 2
        if abs(u[per * k]) > half_lengths[k]:
            return 3
    for j in range(n):
        if abs(w[j]) > max_rate:
            return 4
    return 0


@njit(**_JIT)
def pcc_validity(u: np.ndarray, w: np.ndarray, per: int, half_lengths: np.ndarray, max_rate: float) -> np.ndarray:
    """Per PCC arm ``(B,)``, :func:`pcc_code` of its state ``u``, ``w`` ``(B, n)``."""
    code = np.zeros(u.shape[0], dtype=np.int64)
    for i in range(u.shape[0]):
        code[i] = pcc_code(u[i], w[i], per, half_lengths, max_rate)
    return code
