"""The compiled kernels of :mod:`soft_envs.sim.arm_objects` (the scheme, its frames and where its
numbers come from are there): per arm and its box, scalar arithmetic over small arrays, looped over
the batch in one compiled call each (the style of :mod:`soft_envs.sim.box_kernels`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.collision import BOX, EMPTY, segment_shape_distance, shape_bound_distance
from soft_envs.sim.batched_kernels import _INLINE, _JIT
from soft_envs.sim.box_kernels import (
    P_C,
    P_HX,
    P_K,
    P_MASS,
    P_MU,
    P_TABLE,
    P_VS,
    S_OMEGA,
    S_POS,
    S_QUAT,
    S_VEL,
    _add_outer,
    _corner,
    _integrate_quaternion,
    _rotation,
    _world_inertia,
)

#: numba's stubs type every keyword of ``njit``; the shared option dicts (``_JIT``, ``_INLINE``) are untyped.
_njit: Callable[..., Any] = njit

#: :func:`contact_pairs` looks for the closest pair within this gap [m] of the capsules (farther than a
#: capsule moves in a 5 ms step below 4 m/s).
NEAR = 0.02
#: :func:`contact_pairs`' ``closest`` columns: the gap [m], the touching segments, the normal, the
#: witness [m] and the arm's velocity relative to the box's surface there [m/s].
CL_GAP, CL_COUNT, CL_NORMAL, CL_POINT, CL_VELOCITY = 0, 1, 2, 5, 8
CL_WIDTH = 11


@_njit(**_JIT)
def contact_pairs(P, PJ, w, rows, velocity, radius, cp, law, force, point, K, C, energy, depth, closest, jac):
    """The arms' contact with one box each, base frame, per arm ``b`` (the pairs of
    :func:`soft_envs.sim.contact.contact_forces`: one per segment, a segment's start point counted by
    the segment before).

    ``P`` ``(B, p + 1, 3)`` [m] and ``PJ`` ``(B, p + 1, 3, n)`` the backbone points and Jacobians,
    ``w`` ``(B, n)`` the rates, ``rows`` ``(B, 16)`` the boxes and ``velocity`` ``(B, 6)`` theirs
    (linear [m/s], angular [rad/s] about the origin), ``radius`` [m], ``cp`` ``(B, 4)`` the contact's
    ``(k, c, μ, v_s)`` and ``law`` ``(B, 4)`` the arm's (``(s k, s c, μ, v_s')``). Writes the force on
    the box ``force`` ``(B, 3)`` [N] (the law's), the contact point ``point`` ``(B, 3)`` [m] (the
    witnesses weighted by normal force; the box's origin if none pushes), ``K``, ``C`` ``(B, 3, 3)``
    [N/m, N s/m] (``k``, ``c`` the contact's, the friction's tangent the law's), the springs' energy
    ``Σ ½ k δ²`` ``energy`` ``(B,)`` [J], the deepest penetration ``depth`` ``(B,)`` [m], ``closest``
    ``(B, CL_WIDTH)`` (the smallest gap, negative when penetrating; the touching segments; the
    closest pair's normal, witness and relative velocity) and ``jac`` ``(B, 3, n)``: the pushing
    witnesses' Jacobians ``∂p/∂u`` weighted by normal force."""
    out, rel = np.empty(8), np.empty(3)  # rel: the witness's velocity relative to the box's surface
    for b in range(P.shape[0]):
        row, sv = rows[b], velocity[b]
        k, damping, mu = cp[b, 0], cp[b, 1], law[b, 2]
        total = 0.0
        energy[b], depth[b] = 0.0, 0.0
        closest[b, CL_GAP], closest[b, CL_COUNT] = math.inf, 0.0
        for r in range(3):
            for i in range(w.shape[1]):
                jac[b, r, i] = 0.0
            force[b, r], point[b, r] = 0.0, 0.0
            closest[b, CL_NORMAL + r], closest[b, CL_POINT + r], closest[b, CL_VELOCITY + r] = 0.0, row[1 + r], 0.0
            for j in range(3):
                K[b, r, j], C[b, r, j] = 0.0, 0.0
        for seg in range(P.shape[1] - 1 if row[0] != EMPTY else 0):
            a, e = P[b, seg], P[b, seg + 1]
            if shape_bound_distance(a, e, row) - radius >= max(closest[b, CL_GAP], NEAR):
                continue
            segment_shape_distance(a, e, row, out)
            delta, t = radius - out[0], out[1]
            n = out[5:8]
            lx, ly, lz = out[2] - row[1], out[3] - row[2], out[4] - row[3]
            rel[0] = -(sv[0] + sv[4] * lz - sv[5] * ly)
            rel[1] = -(sv[1] + sv[5] * lx - sv[3] * lz)
            rel[2] = -(sv[2] + sv[3] * ly - sv[4] * lx)
            for r in range(3):
                for i in range(w.shape[1]):
                    rel[r] += ((1.0 - t) * PJ[b, seg, r, i] + t * PJ[b, seg + 1, r, i]) * w[b, i]
            if -delta < closest[b, CL_GAP]:
                closest[b, CL_GAP] = -delta
                for r in range(3):
                    closest[b, CL_NORMAL + r], closest[b, CL_POINT + r] = out[5 + r], out[2 + r]
                    closest[b, CL_VELOCITY + r] = rel[r]
            if delta <= 0.0 or (seg > 0 and t <= 0.0):  # (a shared point: the previous segment's contact)
                continue
            closest[b, CL_COUNT] += 1.0
            energy[b] += 0.5 * k * delta * delta
            depth[b] = max(depth[b], delta)
            vn = n[0] * rel[0] + n[1] * rel[1] + n[2] * rel[2]
            fn = law[b, 0] * delta - law[b, 1] * vn
            if fn <= 0.0:
                continue
            tx, ty, tz = rel[0] - vn * n[0], rel[1] - vn * n[1], rel[2] - vn * n[2]
            q2 = tx * tx + ty * ty + tz * tz + law[b, 3] * law[b, 3]
            slope = mu * fn / math.sqrt(q2)
            force[b, 0] -= fn * n[0] - slope * tx
            force[b, 1] -= fn * n[1] - slope * ty
            force[b, 2] -= fn * n[2] - slope * tz
            t3 = (tx, ty, tz)
            for r in range(3):
                point[b, r] += fn * out[2 + r]
                for i in range(w.shape[1]):
                    jac[b, r, i] += fn * ((1.0 - t) * PJ[b, seg, r, i] + t * PJ[b, seg + 1, r, i])
                for j in range(3):  # k n nᵀ; c n nᵀ + the friction's tangent μ f_n (I − n nᵀ − v_t v_tᵀ / q²) / q
                    nn = n[r] * n[j]
                    K[b, r, j] += k * nn
                    C[b, r, j] += damping * nn + slope * ((1.0 if r == j else 0.0) - nn - t3[r] * t3[j] / q2)
            total += fn
        for r in range(3):
            if total > 0.0:
                point[b, r] /= total
                for i in range(w.shape[1]):
                    jac[b, r, i] /= total
            else:
                point[b, r] = row[1 + r]


@_njit(**_JIT)
def box_response(prm, state, h, A):
    """Each box's step matrix ``A`` ``(B, 6, 6)`` at its state (momentum form, world, ``(v, ω)``):
    ``M ⊕ I_w`` plus, per corner pushing on the table, ``h c + h² k / 2`` along the normal and ``h``
    times the friction's tangent ``μ f_n (I − v_t v_tᵀ / q²) / q`` (``q = √(|v_t|² + v_s²)``) in the
    table plane (:mod:`soft_envs.sim.box_kernels`' contact, differentiated): a force ``F`` [N] at a
    point of lever ``l`` changes the box's velocity over a step by ``h A⁻¹ Jᵀ F``, ``J = [I, −[l]×]``."""
    R, Iw, a, row = np.empty(9), np.empty(9), np.empty(3), np.empty(6)
    for b in range(state.shape[0]):
        p, s, Ab = prm[b], state[b], A[b].reshape(36)
        _rotation(s[S_QUAT:S_QUAT + 4], R)
        _world_inertia(p, R, Iw)
        for i in range(36):
            Ab[i] = 0.0
        for r in range(3):
            Ab[7 * r] = p[P_MASS]
            for col in range(3):
                Ab[6 * (3 + r) + 3 + col] = Iw[3 * r + col]
        mu, k, c, vs = p[P_MU], p[P_K], p[P_C], p[P_VS]
        for i in range(8):
            _corner(p, R, i, a)
            depth = p[P_TABLE] - (s[S_POS + 2] + a[2])
            vx = s[S_VEL] + s[S_OMEGA + 1] * a[2] - s[S_OMEGA + 2] * a[1]
            vy = s[S_VEL + 1] + s[S_OMEGA + 2] * a[0] - s[S_OMEGA] * a[2]
            vn = s[S_VEL + 2] + s[S_OMEGA] * a[1] - s[S_OMEGA + 1] * a[0]
            fn = k * depth - c * vn
            if depth <= 0.0 or fn <= 0.0:
                continue
            row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 0.0, 1.0, a[1], -a[0], 0.0
            _add_outer(Ab, row, row, h * c + 0.5 * h * h * k)
            q2 = vx * vx + vy * vy + vs * vs
            eta = h * mu * fn / math.sqrt(q2)
            jx = (1.0, 0.0, 0.0, 0.0, a[2], -a[1])
            jy = (0.0, 1.0, 0.0, -a[2], 0.0, a[0])
            for r in range(6):
                for col in range(6):
                    Ab[6 * r + col] += eta * ((1.0 - vx * vx / q2) * jx[r] * jx[col] + (1.0 - vy * vy / q2)
                                              * jy[r] * jy[col] - vx * vy / q2 * (jx[r] * jy[col] + jy[r] * jx[col]))


@_njit(**_INLINE)
def _solve(A, X, n, m):
    """``X ← A⁻¹ X`` in place for ``A`` ``(n, n)`` (overwritten) and ``X`` ``(n, m)``: Gaussian
    elimination with partial pivoting."""
    for col in range(n):
        piv = col
        for r in range(col + 1, n):
            if abs(A[r, col]) > abs(A[piv, col]):
                piv = r
        if piv != col:
            for j in range(n):
                A[col, j], A[piv, j] = A[piv, j], A[col, j]
            for j in range(m):
                X[col, j], X[piv, j] = X[piv, j], X[col, j]
        for r in range(col + 1, n):
            f = A[r, col] / A[col, col]
            if f != 0.0:
                for j in range(col, n):
                    A[r, j] -= f * A[col, j]
                for j in range(m):
                    X[r, j] -= f * X[col, j]
    for r in range(n - 1, -1, -1):
        for j in range(m):
            s = X[r, j]
            for i in range(r + 1, n):
                s -= A[r, i] * X[i, j]
            X[r, j] = s / A[r, r]


@_njit(**_INLINE)
def _apply(M, v, out):
    """``out = M v`` (3 × 3, 3)."""
    for r in range(3):
        out[r] = M[r, 0] * v[0] + M[r, 1] * v[1] + M[r, 2] * v[2]


@_njit(**_INLINE)
def _apply_t(M, v, out):
    """``out = Mᵀ v`` (3 × 3, 3)."""
    for r in range(3):
        out[r] = M[0, r] * v[0] + M[1, r] * v[1] + M[2, r] * v[2]


@_njit(**_INLINE)
def _cross(a, b, out):
    out[0], out[1], out[2] = a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


@_njit(**_JIT)
def free_steps(state, acceleration, h, free):
    """``free`` ``(B, 13)``: each box's state a step ``h`` [s] ahead at ``acceleration`` ``(B, 6)``
    (world; the velocity ``ν + h a``, the pose by the trapezoidal rule)."""
    for b in range(state.shape[0]):
        s, f, acc = state[b], free[b], acceleration[b]
        for i in range(6):
            f[S_VEL + i] = s[S_VEL + i] + h * acc[i]
        for i in range(3):
            f[S_POS + i] = s[S_POS + i] + 0.5 * h * (s[S_VEL + i] + f[S_VEL + i])
        _integrate_quaternion(s[S_QUAT:S_QUAT + 4], 0.5 * (s[S_OMEGA] + f[S_OMEGA]),
                              0.5 * (s[S_OMEGA + 1] + f[S_OMEGA + 1]), 0.5 * (s[S_OMEGA + 2] + f[S_OMEGA + 2]), h,
                              f[S_QUAT:S_QUAT + 4])


@_njit(**_JIT)
def box_rows(state, prm, Rb, base, shapes, velocity, rotation):
    """The boxes in the states ``state`` ``(B, 13)`` as shape rows ``shapes`` ``(B, 16)`` and velocities
    ``velocity`` ``(B, 6)`` in their arms' base frames (``Rb`` ``(B, 3, 3)``, ``base`` ``(B, 3)``), and
    their world rotations ``rotation`` ``(B, 3, 3)``."""
    R, d = np.empty(9), np.empty(3)
    for b in range(state.shape[0]):
        s = state[b]
        _rotation(s[S_QUAT:S_QUAT + 4], R)
        shapes[b, 0] = BOX
        for r in range(3):
            d[r] = s[S_POS + r] - base[b, r]
            for c in range(3):
                rotation[b, r, c] = R[3 * r + c]
        _apply_t(Rb[b], d, shapes[b, 1:4])
        for r in range(3):
            for c in range(3):
                shapes[b, 4 + 3 * r + c] = Rb[b, 0, r] * R[c] + Rb[b, 1, r] * R[3 + c] + Rb[b, 2, r] * R[6 + c]
            shapes[b, 13 + r] = prm[b, P_HX + r]
        _apply_t(Rb[b], s[S_VEL:S_VEL + 3], velocity[b, 0:3])
        _apply_t(Rb[b], s[S_OMEGA:S_OMEGA + 3], velocity[b, 3:6])


@_njit(**_JIT)
def interface(A, closest, Rb, base, free, cp, arm_force, h, normal, G, D, law):
    """The arms' law for the coming step ``h`` [s] (:mod:`soft_envs.sim.arm_objects`, step 1), per arm:
    from its box's step matrix ``A`` ``(B, 6, 6)`` (:func:`box_response` at the free step ``free``
    ``(B, 13)``), the closest pair ``closest`` (:func:`contact_pairs`, base frame: ``Rb``, ``base``),
    the contact ``cp`` ``(B, 4)`` and the arm's last force ``arm_force`` ``(B, 3)`` [N, world]. Writes the
    normal ``normal`` ``(B, 3)``, the closest point's velocity compliance ``G = h J A⁻¹ Jᵀ``
    ``(B, 3, 3)``, the modelled yield ``D`` ``(B, 3, 3)`` [m/(N s)] (world) and the law ``law`` ``(B, 4)``:
    ``(s k, s c, μ, v_s')``."""
    M, X = np.empty((6, 6)), np.empty((6, 3))
    n, slip, lever, t, Gt = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for b in range(A.shape[0]):
        cl, R = closest[b], Rb[b]
        _apply(R, cl[CL_NORMAL:CL_NORMAL + 3], n)
        _apply(R, cl[CL_VELOCITY:CL_VELOCITY + 3], slip)
        _apply(R, cl[CL_POINT:CL_POINT + 3], lever)
        for r in range(3):
            lever[r] += base[b, r] - free[b, S_POS + r]
            normal[b, r] = n[r]
        # Jᵀ: the force e_j at the point is (e_j, l × e_j); X = A⁻¹ Jᵀ; G = h J X
        for r in range(6):
            for c in range(6):
                M[r, c] = A[b, r, c]
            for c in range(3):
                X[r, c] = 0.0
        for c in range(3):
            X[c, c] = 1.0
        X[3, 1], X[3, 2] = -lever[2], lever[1]
        X[4, 0], X[4, 2] = lever[2], -lever[0]
        X[5, 0], X[5, 1] = -lever[1], lever[0]
        Jt = X.copy()
        _solve(M, X, 6, 3)
        for r in range(3):
            for c in range(3):
                g = 0.0
                for i in range(6):
                    g += Jt[i, r] * X[i, c]
                G[b, r, c] = h * g
        # the friction's tangent t: along the arm's slip (else the last step's friction on the box)
        approach = max(-(n[0] * slip[0] + n[1] * slip[1] + n[2] * slip[2]), 0.0)
        sn = n[0] * slip[0] + n[1] * slip[1] + n[2] * slip[2]
        fn_last = n[0] * arm_force[b, 0] + n[1] * arm_force[b, 1] + n[2] * arm_force[b, 2]
        for r in range(3):
            slip[r] -= sn * n[r]
        speed = math.sqrt(slip[0] ** 2 + slip[1] ** 2 + slip[2] ** 2)
        for r in range(3):
            t[r] = slip[r] if speed > 0.0 else arm_force[b, r] - fn_last * n[r]
        size = math.sqrt(t[0] ** 2 + t[1] ** 2 + t[2] ** 2)
        for r in range(3):
            t[r] = t[r] / size if size > 0.0 else 0.0
        _apply(G[b], n, Gt)
        g_n = n[0] * Gt[0] + n[1] * Gt[1] + n[2] * Gt[2]
        _apply(G[b], t, Gt)
        g_nt = n[0] * Gt[0] + n[1] * Gt[1] + n[2] * Gt[2]
        if size > 0.0:
            g_t = t[0] * Gt[0] + t[1] * Gt[1] + t[2] * Gt[2]
        else:  # half the trace of G on the tangent plane
            g_t = 0.5 * (G[b, 0, 0] + G[b, 1, 1] + G[b, 2, 2] - g_n)
        k, c, mu, vs = cp[b, 0], cp[b, 1], cp[b, 2], cp[b, 3]
        # the friction's regularisation widened by the tangential yield at the normal force of the last
        # step (at a first touch: the force that stops the arm's approach within the step)
        arriving = approach / g_n if cl[CL_GAP] < h * approach and g_n > 0.0 else 0.0
        widened = vs + mu * max(abs(fn_last), arriving) * g_t
        # the normal yield per newton of the friction along t, at the friction law's share of μ f_n
        g_nt *= speed / math.sqrt(speed * speed + widened * widened)
        yielding = max(g_n - mu * g_nt, 0.1 * g_n)
        s = 1.0 / (1.0 + max(cl[CL_COUNT], 1.0) * (0.5 * k * h + c) * yielding)
        for r in range(3):
            for j in range(3):
                D[b, r, j] = n[r] * (g_n * n[j] + g_nt * t[j]) + g_t * ((1.0 if r == j else 0.0) - n[r] * n[j])
        law[b, 0], law[b, 1], law[b, 2], law[b, 3] = s * k, s * c, mu, widened


@_njit(**_JIT)
def box_load(point, Kb, Cb, wrench, Rb, base, free, free_rotation, state, D, H, W, force, start, torque, K, C, lever):
    """The load of each box's step (:mod:`soft_envs.sim.arm_objects`, step 3): from the arm's contact
    point ``point``, stiffness ``Kb`` and damping ``Cb`` and the scene's ``wrench`` (base frame: ``Rb``,
    ``base``), the free step ``free`` (its rotations ``free_rotation``), the box's ``state`` and the
    modelled yield ``D`` over the horizon ``H`` [s], writes (world): the arm's force ``W``, the force
    ``force`` at ``start`` (the contact's material point at the start pose, its ``lever`` from the
    centre), the couple ``torque``, ``K`` and ``C``: ``F = W − K (Δx − Δx̂) − C (Δẋ − Δẋ̂)``."""
    R0 = np.empty(9)
    M, x, y, dw, spin, yv = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for b in range(state.shape[0]):
        R, s, f = Rb[b], state[b], free[b]
        _apply(R, wrench[b, 0:3], W[b])
        _apply(R, wrench[b, 3:6], M)  # about the free step's centre
        for r in range(3):
            for j in range(3):
                k = c = 0.0
                for i in range(3):
                    for m in range(3):
                        k += R[r, i] * Kb[b, i, m] * R[j, m]
                        c += R[r, i] * Cb[b, i, m] * R[j, m]
                K[b, r, j], C[b, r, j] = k, c
        _apply(R, point[b], x)
        for r in range(3):
            x[r] += base[b, r]  # the contact point, on the free step's box
            y[r] = x[r] - f[S_POS + r]
        _apply_t(free_rotation[b], y, dw)  # its lever in the box's frame
        _rotation(s[S_QUAT:S_QUAT + 4], R0)
        for r in range(3):
            lever[b, r] = R0[3 * r] * dw[0] + R0[3 * r + 1] * dw[1] + R0[3 * r + 2] * dw[2]
            start[b, r] = s[S_POS + r] + lever[b, r]
        # the move the arm assumed: the free step's, plus the yield D W (velocity) and H/2 times it
        _apply(D[b], W[b], yv)
        for r in range(3):
            dw[r] = f[S_OMEGA + r] - s[S_OMEGA + r]
        _cross(dw, lever[b], spin)
        for r in range(3):
            x[r] = x[r] - start[b, r] + 0.5 * H * yv[r]  # position
            y[r] = f[S_VEL + r] - s[S_VEL + r] + spin[r] + yv[r]  # velocity
        _cross(lever[b], W[b], spin)
        for r in range(3):
            torque[b, r] = M[r] - spin[r]
            force[b, r] = W[b, r]
            for j in range(3):
                force[b, r] += K[b, r, j] * x[j] + C[b, r, j] * y[j]


@_njit(**_JIT)
def exchange(force, torque, K, C, lever, before, after, h, W, normal, G, D, A, jac, Rb, applied, moment, reaction,
             acceleration, pulled):
    """After each box's step ``h`` [s] from ``before`` to ``after`` ``(B, 13)`` under :func:`box_load`'s
    ``force``, ``torque``, ``K``, ``C`` at ``lever``: the force its step applied ``applied`` (its
    linearisation at the end) and the moment about its centre ``moment`` (world); whether that force
    pulls along ``normal`` (``pulled``); the arm's ``reaction`` ``(B, n)`` ``= −Jᵀ R_bᵀ (F − W)``
    (``jac`` the witnesses' Jacobians, base frame); the free step's ``acceleration`` ``(B, 6)``: the
    step's less the body's velocity change of the modelled yield (the force ``G⁻¹ D F`` at the point
    makes the point yield ``D F``, ``A`` the box's step matrix)."""
    theta, dv, u, spin, e, eb = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    M3, X3, M6, X6 = np.empty((3, 3)), np.empty((3, 1)), np.empty((6, 6)), np.empty((6, 1))
    for b in range(before.shape[0]):
        s0, s1, arm = before[b], after[b], lever[b]
        for r in range(3):
            theta[r] = 0.5 * h * (s0[S_OMEGA + r] + s1[S_OMEGA + r])
            dv[r] = s1[S_OMEGA + r] - s0[S_OMEGA + r]
        _cross(theta, arm, u)
        _cross(dv, arm, spin)
        for r in range(3):
            u[r] += s1[S_POS + r] - s0[S_POS + r]
            spin[r] += s1[S_VEL + r] - s0[S_VEL + r]
        for r in range(3):
            f = force[b, r]
            for j in range(3):
                f -= K[b, r, j] * u[j] + C[b, r, j] * spin[j]
            applied[b, r] = f
        pulled[b] = normal[b, 0] * applied[b, 0] + normal[b, 1] * applied[b, 1] + normal[b, 2] * applied[b, 2] > 0.0
        _cross(arm, applied[b], spin)
        for r in range(3):
            moment[b, r] = torque[b, r] + spin[r]
            e[r] = applied[b, r] - W[b, r]
        _apply_t(Rb[b], e, eb)
        for i in range(reaction.shape[1]):
            reaction[b, i] = -(jac[b, 0, i] * eb[0] + jac[b, 1, i] * eb[1] + jac[b, 2, i] * eb[2])
        _apply(D[b], applied[b], e)
        for r in range(3):
            X3[r, 0] = e[r]
            for j in range(3):
                M3[r, j] = G[b, r, j]
        if e[0] != 0.0 or e[1] != 0.0 or e[2] != 0.0:
            _solve(M3, X3, 3, 1)
        for r in range(3):
            e[r] = X3[r, 0]
        _cross(arm, e, spin)
        for r in range(3):
            X6[r, 0], X6[3 + r, 0] = e[r], spin[r]
            for j in range(6):
                M6[r, j], M6[3 + r, j] = A[b, r, j], A[b, 3 + r, j]
        _solve(M6, X6, 6, 1)
        for i in range(6):
            acceleration[b, i] = (s1[S_VEL + i] - s0[S_VEL + i]) / h - X6[i, 0]
