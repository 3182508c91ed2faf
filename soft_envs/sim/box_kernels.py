"""The free boxes' compiled kernels (:mod:`soft_envs.sim.rigid_object` holds the model, its scheme and
where its parameters come from): one box's step (:func:`step_box`, allocation-free scalar arithmetic,
so the same source can be compiled for CUDA) and :func:`batch_step`, which loops it over a batch."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.sim.batched_kernels import _INLINE, _JIT

#: numba's stubs type every keyword of ``njit``; the shared option dicts (``_JIT``, ``_INLINE``) are untyped.
_njit: Callable[..., Any] = njit

# Per-box parameter row (BatchedBoxes.parameters): the kernel reads these columns.
P_MASS, P_HX, P_HY, P_HZ, P_MU, P_TABLE, P_K, P_C, P_VS, P_IX, P_IY, P_IZ, P_GRAVITY = range(13)
N_PARAMETERS = 13
# State row (BatchedBoxes.state): position, quaternion (x, y, z, w), velocity, angular velocity.
S_POS, S_QUAT, S_VEL, S_OMEGA = 0, 3, 7, 10
STATE_WIDTH = 13
# Per-box diagnostics of the last step: total normal force [N], deepest penetration [m] (end state).
DIAG_NORMAL_FORCE, DIAG_PENETRATION = 0, 1
_WORK = 152  # scratch per box (step_box's layout)


@_njit(**_INLINE)
def _rotation(q, R):
    """``R(q)`` (row-major into ``R`` (9,)) of the quaternion ``q`` ``(x, y, z, w)``."""
    x, y, z, w = q[0], q[1], q[2], q[3]
    R[0] = 1.0 - 2.0 * (y * y + z * z)
    R[1] = 2.0 * (x * y - z * w)
    R[2] = 2.0 * (x * z + y * w)
    R[3] = 2.0 * (x * y + z * w)
    R[4] = 1.0 - 2.0 * (x * x + z * z)
    R[5] = 2.0 * (y * z - x * w)
    R[6] = 2.0 * (x * z - y * w)
    R[7] = 2.0 * (y * z + x * w)
    R[8] = 1.0 - 2.0 * (x * x + y * y)


@_njit(**_INLINE)
def _integrate_quaternion(q0, wx, wy, wz, h, q):
    """``q = exp(h ω) ⊗ q0`` (world-frame ``ω``, quaternions ``(x, y, z, w)``), normalised."""
    ax, ay, az = h * wx, h * wy, h * wz
    angle = math.sqrt(ax * ax + ay * ay + az * az)
    if angle > 1e-8:
        s = math.sin(0.5 * angle) / angle
    else:
        s = 0.5 - angle * angle / 48.0
    dx, dy, dz, dw = s * ax, s * ay, s * az, math.cos(0.5 * angle)
    x, y, z, w = q0[0], q0[1], q0[2], q0[3]
    rx = dw * x + dx * w + dy * z - dz * y
    ry = dw * y + dy * w + dz * x - dx * z
    rz = dw * z + dz * w + dx * y - dy * x
    rw = dw * w - dx * x - dy * y - dz * z
    n = math.sqrt(rx * rx + ry * ry + rz * rz + rw * rw)
    q[0], q[1], q[2], q[3] = rx / n, ry / n, rz / n, rw / n


@_njit(**_INLINE)
def _world_inertia(prm, R, Iw):
    """``I_w = R diag(I_b) Rᵀ`` (row-major into ``Iw`` (9,))."""
    ix, iy, iz = prm[P_IX], prm[P_IY], prm[P_IZ]
    for r in range(3):
        for col in range(3):
            Iw[3 * r + col] = ix * R[3 * r] * R[3 * col] + iy * R[3 * r + 1] * R[3 * col + 1] \
                + iz * R[3 * r + 2] * R[3 * col + 2]


@_njit(**_INLINE)
def _add_outer(A, a, b, scale):
    """``A += scale · a bᵀ`` for 6-vectors (``A`` row-major (36,) in the work array)."""
    for r in range(6):
        s = scale * a[r]
        for col in range(6):
            A[6 * r + col] += s * b[col]


@_njit(**_INLINE)
def _solve6(work):
    """Solve ``A x = b`` in place (``A`` at ``work[0:36]`` row-major, ``b`` at ``work[36:42]``; ``x``
    overwrites ``b``): Gaussian elimination with partial pivoting."""
    for col in range(6):
        piv = col
        best = abs(work[6 * col + col])
        for r in range(col + 1, 6):
            v = abs(work[6 * r + col])
            if v > best:
                best, piv = v, r
        if piv != col:
            for j in range(6):
                t = work[6 * col + j]
                work[6 * col + j] = work[6 * piv + j]
                work[6 * piv + j] = t
            t = work[36 + col]
            work[36 + col] = work[36 + piv]
            work[36 + piv] = t
        d = work[6 * col + col]
        for r in range(col + 1, 6):
            f = work[6 * r + col] / d
            if f != 0.0:
                for j in range(col, 6):
                    work[6 * r + j] -= f * work[6 * col + j]
                work[36 + r] -= f * work[36 + col]
    for r in range(5, -1, -1):
        s = work[36 + r]
        for j in range(r + 1, 6):
            s -= work[6 * r + j] * work[36 + j]
        work[36 + r] = s / work[6 * r + r]


@_njit(**_INLINE)
def _end_configuration(s0, nu, h, p, q):
    """The trapezoidal end configuration ``p = p₀ + h (v₀ + v)/2``, ``q = exp(h (ω₀ + ω)/2) ⊗ q₀``."""
    for i in range(3):
        p[i] = s0[S_POS + i] + 0.5 * h * (s0[S_VEL + i] + nu[i])
    _integrate_quaternion(s0[S_QUAT:S_QUAT + 4], 0.5 * (s0[S_OMEGA] + nu[3]), 0.5 * (s0[S_OMEGA + 1] + nu[4]),
                          0.5 * (s0[S_OMEGA + 2] + nu[5]), h, q)


@_njit(**_INLINE)
def _corner(prm, R, i, a):
    """The arm ``a = R r_i`` [m, world] of corner ``i`` (signs from the bits of ``i``) from the centre."""
    bx = prm[P_HX] if i & 1 else -prm[P_HX]
    by = prm[P_HY] if i & 2 else -prm[P_HY]
    bz = prm[P_HZ] if i & 4 else -prm[P_HZ]
    for r in range(3):
        a[r] = R[3 * r] * bx + R[3 * r + 1] * by + R[3 * r + 2] * bz


@_njit(**_INLINE)
def _contacts(prm, p, R, R0, kappa, nu, h, matrix, A, b, a, a0, row, seen):
    """Add the corners' contact wrench at configuration ``(p, R)`` and velocity ``nu`` to ``b`` (6,)
    and, if ``matrix``, its linearisation ``h D + h²/2 K`` to ``A`` (36,): the normal's
    ``h c + h² k/2`` and friction's ``h η`` (``η = μ f_n / √(|v_t|² + v_s²)``, the law's secant
    at ``nu``) along the corner's rows of ``J = [I, −[ã]×]``. The lever arm ``ã = κ (a₀ + a)/2``
    (``a₀``, ``a`` the corner's arm at the step's start ``R0`` and end ``R``, ``κ = tan(φ/2)/(φ/2)``
    for the step's rotation angle ``φ``) makes ``θ × ã = a − a₀`` exactly, so the wrench does the
    work of the corner's true displacement (with the end arm the torque's work missed
    ``θ × (θ × a)/2`` and a spinning impact could gain energy); ``a``, ``a0`` (3,), ``row`` (6,)
    scratch. ``seen`` (8,) flags the corners in contact at an earlier pass of the step: such a
    corner out of contact now keeps its normal stiffness and damping in the matrix (no force), so
    the passes cannot cycle between a penetrating end state and one that the contact's force has
    lifted clear (they converge onto the corner's touch-down instead)."""
    mu, k, c, vs, zt = prm[P_MU], prm[P_K], prm[P_C], prm[P_VS], prm[P_TABLE]
    for i in range(8):
        _corner(prm, R, i, a)
        depth = zt - (p[2] + a[2])
        # corner velocity v + ω × a
        vx = nu[0] + nu[4] * a[2] - nu[5] * a[1]
        vy = nu[1] + nu[5] * a[0] - nu[3] * a[2]
        vn = nu[2] + nu[3] * a[1] - nu[4] * a[0]
        fn = k * depth - c * vn
        if depth <= 0.0 or fn <= 0.0:
            if matrix and seen[i] != 0.0:
                row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 0.0, 1.0, a[1], -a[0], 0.0
                _add_outer(A, row, row, h * c + 0.5 * h * h * k)
            continue
        seen[i] = 1.0
        _corner(prm, R0, i, a0)
        for r in range(3):
            a[r] = 0.5 * kappa * (a[r] + a0[r])
        eta = mu * fn / math.sqrt(vx * vx + vy * vy + vs * vs)
        ftx, fty = -eta * vx, -eta * vy
        b[0] += ftx
        b[1] += fty
        b[2] += fn
        b[3] += a[1] * fn - a[2] * fty
        b[4] += a[2] * ftx - a[0] * fn
        b[5] += a[0] * fty - a[1] * ftx
        if not matrix:
            continue
        # normal row n J = (0, 0, 1, a_y, −a_x, 0)
        row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 0.0, 1.0, a[1], -a[0], 0.0
        _add_outer(A, row, row, h * c + 0.5 * h * h * k)
        # tangential rows: x: (1, 0, 0, 0, a_z, −a_y); y: (0, 1, 0, −a_z, 0, a_x)
        row[0], row[1], row[2], row[3], row[4], row[5] = 1.0, 0.0, 0.0, 0.0, a[2], -a[1]
        _add_outer(A, row, row, h * eta)
        row[0], row[1], row[2], row[3], row[4], row[5] = 0.0, 1.0, 0.0, -a[2], 0.0, a[0]
        _add_outer(A, row, row, h * eta)


@_njit(**_JIT)
def contact_state(prm, p, R, nu, a, out):
    """Total normal force [N] and deepest penetration [m] (negative: the gap) of the box at
    configuration ``(p, R)`` and velocity ``nu`` into ``out`` (2,); ``a`` (3,) scratch."""
    k, c = prm[P_K], prm[P_C]
    total = 0.0
    deepest = -math.inf
    for i in range(8):
        _corner(prm, R, i, a)
        depth = prm[P_TABLE] - (p[2] + a[2])
        deepest = max(deepest, depth)
        if depth > 0.0:
            vn = nu[2] + nu[3] * a[1] - nu[4] * a[0]
            total += max(0.0, k * depth - c * vn)
    out[DIAG_NORMAL_FORCE] = total
    out[DIAG_PENETRATION] = deepest


@_njit(**_JIT)
def step_box(prm, s, force, torque, arm, Ke, Ce, h, passes, work, diag):
    """One time step ``h`` [s] of one box (module docstring) in place on its state row ``s`` (13,).

    ``prm`` its parameter row; ``force`` (3,) [N] at the arm ``arm`` (3,) [m, world, from the
    centre] and ``torque`` (3,) [N m] about the centre, both at the step's start; ``Ke``, ``Ce``
    (3, 3) the force's stiffness [N/m] and damping [N s/m] (spring sign) for the point's
    displacement and velocity; ``passes`` Newton passes; ``work`` (≥ 152,) scratch; ``diag`` (2,)
    receives the total normal force [N] and deepest penetration [m] at the step's end."""
    m, g = prm[P_MASS], prm[P_GRAVITY]
    s0 = work[64:77]
    for i in range(STATE_WIDTH):
        s0[i] = s[i]
    nu = work[42:48]
    p = work[77:80]
    q = work[80:84]
    R = work[84:93]
    Iw = work[93:102]
    a = work[102:105]
    row = work[105:111]
    L0 = work[111:114]
    je = work[114:132]
    R0 = work[132:141]
    a0 = work[141:144]
    seen = work[144:152]
    for i in range(8):
        seen[i] = 0.0
    ex, ey, ez = arm[0], arm[1], arm[2]  # the point moves by dp + dθ × arm
    # start angular momentum L₀ = I_w(q₀) ω₀
    _rotation(s0[S_QUAT:S_QUAT + 4], R0)
    _world_inertia(prm, R0, Iw)
    for r in range(3):
        L0[r] = Iw[3 * r] * s0[S_OMEGA] + Iw[3 * r + 1] * s0[S_OMEGA + 1] + Iw[3 * r + 2] * s0[S_OMEGA + 2]
    # predictor: the start velocity (a warm start: in stiction the step's answer is close to it)
    for r in range(6):
        nu[r] = s0[S_VEL + r]
    for _ in range(passes):
        _end_configuration(s0, nu, h, p, q)
        _rotation(q, R)
        _world_inertia(prm, R, Iw)
        A = work[0:36]
        b = work[36:42]
        for i in range(36):
            A[i] = 0.0
        for r in range(3):
            A[7 * r] = m
            for col in range(3):
                A[6 * (3 + r) + 3 + col] = Iw[3 * r + col]
        # residual b = h F̂ − (M̂ ν̂ − M₀ ν₀), forces first
        dpx = p[0] - s0[S_POS]
        dpy = p[1] - s0[S_POS + 1]
        dpz = p[2] - s0[S_POS + 2]
        # rotation increment of the iterate (small-angle, the trapezoidal ω̄ h)
        tx = 0.5 * h * (s0[S_OMEGA] + nu[3])
        ty = 0.5 * h * (s0[S_OMEGA + 1] + nu[4])
        tz = 0.5 * h * (s0[S_OMEGA + 2] + nu[5])
        # external point displacement and velocity change: d = Δp + θ × arm
        ux = dpx + ty * ez - tz * ey
        uy = dpy + tz * ex - tx * ez
        uz = dpz + tx * ey - ty * ex
        wx3, wy3, wz3 = nu[3] - s0[S_OMEGA], nu[4] - s0[S_OMEGA + 1], nu[5] - s0[S_OMEGA + 2]
        dvx = nu[0] - s0[S_VEL] + wy3 * ez - wz3 * ey
        dvy = nu[1] - s0[S_VEL + 1] + wz3 * ex - wx3 * ez
        dvz = nu[2] - s0[S_VEL + 2] + wx3 * ey - wy3 * ex
        fx = force[0] - (Ke[0, 0] * ux + Ke[0, 1] * uy + Ke[0, 2] * uz) \
            - (Ce[0, 0] * dvx + Ce[0, 1] * dvy + Ce[0, 2] * dvz)
        fy = force[1] - (Ke[1, 0] * ux + Ke[1, 1] * uy + Ke[1, 2] * uz) \
            - (Ce[1, 0] * dvx + Ce[1, 1] * dvy + Ce[1, 2] * dvz)
        fz = force[2] - (Ke[2, 0] * ux + Ke[2, 1] * uy + Ke[2, 2] * uz) \
            - (Ce[2, 0] * dvx + Ce[2, 1] * dvy + Ce[2, 2] * dvz)
        b[0], b[1], b[2] = fx, fy, fz - m * g
        b[3] = torque[0] + ey * fz - ez * fy
        b[4] = torque[1] + ez * fx - ex * fz
        b[5] = torque[2] + ex * fy - ey * fx
        # external K, C into the matrix: A += Jₑᵀ (h C + h²/2 K) Jₑ, Jₑ = [I, −[arm]×] (3 × 6)
        for r in range(18):
            je[r] = 0.0
        je[0], je[7], je[14] = 1.0, 1.0, 1.0
        je[4], je[5] = ez, -ey
        je[9], je[11] = -ez, ex
        je[15], je[16] = ey, -ex
        for r in range(3):
            for col in range(3):
                scale = h * Ce[r, col] + 0.5 * h * h * Ke[r, col]
                if scale != 0.0:
                    _add_outer(A, je[6 * r:6 * r + 6], je[6 * col:6 * col + 6], scale)
        half = 0.5 * math.sqrt(tx * tx + ty * ty + tz * tz)
        kappa = math.tan(half) / half if half > 1e-4 else 1.0 + half * half / 3.0
        _contacts(prm, p, R, R0, kappa, nu, h, True, A, b, a, a0, row, seen)
        for r in range(3):
            b[r] = h * b[r] - m * (nu[r] - s0[S_VEL + r])
            b[3 + r] = h * b[3 + r] - (Iw[3 * r] * nu[3] + Iw[3 * r + 1] * nu[4] + Iw[3 * r + 2] * nu[5] - L0[r])
        _solve6(work)
        for r in range(6):
            nu[r] += b[r]
    _end_configuration(s0, nu, h, p, q)
    for r in range(3):
        s[S_POS + r] = p[r]
        s[S_VEL + r] = nu[r]
        s[S_OMEGA + r] = nu[3 + r]
    for r in range(4):
        s[S_QUAT + r] = q[r]
    _rotation(q, R)
    contact_state(prm, p, R, nu, a, diag)


@_njit(**_JIT)
def batch_step(prm, state, force, torque, arm, Ke, Ce, h, passes, diag):
    """:func:`step_box` of every box (leading axis of every per-box array)."""
    work = np.empty(_WORK)
    for b in range(state.shape[0]):
        step_box(prm[b], state[b], force[b], torque[b], arm[b], Ke[b], Ce[b], h, passes, work, diag[b])
