"""PETER's kinematics for one configuration in plain floats: the fast path of ``Peter.forward`` and
``Peter.jacobian`` when they get a single configuration ``(3N,)``.

numpy's per-call overhead (about a microsecond a call) dominates on six to twelve numbers, so
for one configuration the two kinematics of :class:`~soft_envs.robots.peter.Peter` are written
here as straight-line float arithmetic (no array is allocated until the result), each with a
reverse-mode (adjoint) Jacobian of the tip:

* tilted plane (paper eqs. 2–5): the tip's adjoint is carried down the modules as two 3×3
  matrices ``Ū, V̄`` (sensitivity of the tip to the top triangle's edge vectors ``u, v``);
* PCC: each module is a rigid arc, so its columns are geometric: ``R_{i−1} ∂p/∂x +
  (R_{i−1} ω_x) × (tip − top_i)`` with ``ω`` from the left Jacobian of the bend rotation.

The batched numpy path (``Peter.module_points_jacobian``, forward mode) stays the reference:
``tests/robots/test_peter.py`` checks that the two agree to 1e-15 (hypothesis). Units: times
[s], lengths [m]; frames: the arm's base frame.
"""

from __future__ import annotations

from math import cos, factorial, sin, sqrt

# Taylor coefficients (powers of q = θ²) of s = sin θ/θ, c = (1 − cos θ)/θ² and their q-derivatives
# ds/dq, dc/dq, to the term below 1e-17 for q < 0.25 (θ < 0.5 rad, where the closed forms cancel).
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7 = ((-1) ** k / factorial(2 * k + 1) for k in range(8))
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7 = ((-1) ** k / factorial(2 * k + 2) for k in range(8))
_D0, _D1, _D2, _D3, _D4, _D5, _D6 = ((-1) ** (k + 1) * (k + 1) / factorial(2 * k + 3) for k in range(7))
_E0, _E1, _E2, _E3, _E4, _E5, _E6 = ((-1) ** (k + 1) * (k + 1) / factorial(2 * k + 4) for k in range(7))
# ... and of (1 − s)/q = 2 ds/dq + c, to the term below 1e-18 for q < 0.25.
_F0, _F1, _F2, _F3, _F4, _F5, _F6 = ((-1) ** k / factorial(2 * k + 3) for k in range(7))


def bend_scalars(q: float) -> tuple[float, float, float, float]:
    """``(s, ds/dq, c, dc/dq)`` of :func:`soft_envs.geometry.bend_functions` for one ``q = θ² ≥ 0``."""
    if q < 0.25:
        return (_S0 + q * (_S1 + q * (_S2 + q * (_S3 + q * (_S4 + q * (_S5 + q * (_S6 + q * _S7)))))),
                _D0 + q * (_D1 + q * (_D2 + q * (_D3 + q * (_D4 + q * (_D5 + q * _D6))))),
                _C0 + q * (_C1 + q * (_C2 + q * (_C3 + q * (_C4 + q * (_C5 + q * (_C6 + q * _C7)))))),
                _E0 + q * (_E1 + q * (_E2 + q * (_E3 + q * (_E4 + q * (_E5 + q * _E6))))))
    th = sqrt(q)
    sn, cs = sin(th), cos(th)
    half = sin(0.5 * th)
    return sn / th, (th * cs - sn) / (2.0 * th * q), 2.0 * half * half / q, (th * sn - 2.0 * (1.0 - cs)) / (2.0 * q * q)


def tilted_single(feet: tuple, rest: float, rate: float, gap: float, t: list[float],
                  with_jacobian: bool) -> tuple[list[float], list[list[float]] | None]:
    """Tip ``[x, y, z]`` [m] of the tilted-plane model and (``with_jacobian``) its Jacobian
    ``3 × 3N`` [m/s] as three row lists, for inflation times ``t`` (``feet``: the first module's
    leg feet, 3 × xyz)."""
    n = len(t)
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = feet  # feet of legs 0, 1, 2
    nx, ny, nz = 0.0, 0.0, 1.0
    modules = []  # per module: normal, leg lengths
    edges = []  # per module but the last: its top's u, v, m, |u × v|
    third = 1.0 / 3.0
    for i in range(0, n, 3):
        l0, l1, l2 = rest + rate * t[i], rest + rate * t[i + 1], rest + rate * t[i + 2]
        ax, ay, az = ax + l0 * nx, ay + l0 * ny, az + l0 * nz
        bx, by, bz = bx + l1 * nx, by + l1 * ny, bz + l1 * nz
        cx, cy, cz = cx + l2 * nx, cy + l2 * ny, cz + l2 * nz
        modules.append((nx, ny, nz, l0, l1, l2))
        if i == n - 3:
            break
        ux, uy, uz = bx - ax, by - ay, bz - az
        vx, vy, vz = cx - ax, cy - ay, cz - az
        mx, my, mz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        norm = sqrt(mx * mx + my * my + mz * mz)
        mx, my, mz = mx / norm, my / norm, mz / norm
        edges.append((ux, uy, uz, vx, vy, vz, mx, my, mz, norm))
        gx, gy, gz = gap * mx, gap * my, gap * mz
        ax, ay, az, bx, by, bz, cx, cy, cz = (ax + gx, ay + gy, az + gz, bx + gx, by + gy, bz + gz,
                                              cx + gx, cy + gy, cz + gz)
        nx, ny, nz = mx, my, mz
    tip = [(ax + bx + cx) * third, (ay + by + cy) * third, (az + bz + cz) * third]
    if not with_jacobian:
        return tip, None

    J0, J1, J2 = [0.0] * n, [0.0] * n, [0.0] * n
    # Adjoint of the tip with respect to the current module's top edges u = B − A, v = C − A:
    # U_rc = d tip_r / d u_c, V likewise (zero above the last module).
    U00 = U01 = U02 = U10 = U11 = U12 = U20 = U21 = U22 = 0.0
    V00 = V01 = V02 = V10 = V11 = V12 = V20 = V21 = V22 = 0.0
    k = rate * third
    for i in range(n - 3, -1, -3):
        nx, ny, nz, l0, l1, l2 = modules.pop()
        a0, a1, a2 = U00 * nx + U01 * ny + U02 * nz, U10 * nx + U11 * ny + U12 * nz, U20 * nx + U21 * ny + U22 * nz
        b0, b1, b2 = V00 * nx + V01 * ny + V02 * nz, V10 * nx + V11 * ny + V12 * nz, V20 * nx + V21 * ny + V22 * nz
        kx, ky, kz = k * nx, k * ny, k * nz
        J0[i], J0[i + 1], J0[i + 2] = kx - rate * (a0 + b0), kx + rate * a0, kx + rate * b0
        J1[i], J1[i + 1], J1[i + 2] = ky - rate * (a1 + b1), ky + rate * a1, ky + rate * b1
        J2[i], J2[i + 1], J2[i + 2] = kz - rate * (a2 + b2), kz + rate * a2, kz + rate * b2
        if i == 0:
            break
        # Adjoint of the previous top's normal m (this module's normal, carrying the legs and the
        # gap): G = (mean leg + gap) I + (l1 − l0) U + (l2 − l0) V, then through m = (u × v)/|u × v|.
        ux, uy, uz, vx, vy, vz, mx, my, mz, norm = edges.pop()
        diag = (l0 + l1 + l2) * third + gap
        d1, d2 = l1 - l0, l2 - l0
        G00, G01, G02 = d1 * U00 + d2 * V00 + diag, d1 * U01 + d2 * V01, d1 * U02 + d2 * V02
        G10, G11, G12 = d1 * U10 + d2 * V10, d1 * U11 + d2 * V11 + diag, d1 * U12 + d2 * V12
        G20, G21, G22 = d1 * U20 + d2 * V20, d1 * U21 + d2 * V21, d1 * U22 + d2 * V22 + diag
        p0, p1, p2 = G00 * mx + G01 * my + G02 * mz, G10 * mx + G11 * my + G12 * mz, G20 * mx + G21 * my + G22 * mz
        inv = 1.0 / norm
        G00, G01, G02 = (G00 - p0 * mx) * inv, (G01 - p0 * my) * inv, (G02 - p0 * mz) * inv
        G10, G11, G12 = (G10 - p1 * mx) * inv, (G11 - p1 * my) * inv, (G12 - p1 * mz) * inv
        G20, G21, G22 = (G20 - p2 * mx) * inv, (G21 - p2 * my) * inv, (G22 - p2 * mz) * inv
        # d(u × v) = du × v + u × dv: U_r += v × G_r, V_r += G_r × u
        U00, U01, U02 = U00 + vy * G02 - vz * G01, U01 + vz * G00 - vx * G02, U02 + vx * G01 - vy * G00
        U10, U11, U12 = U10 + vy * G12 - vz * G11, U11 + vz * G10 - vx * G12, U12 + vx * G11 - vy * G10
        U20, U21, U22 = U20 + vy * G22 - vz * G21, U21 + vz * G20 - vx * G22, U22 + vx * G21 - vy * G20
        V00, V01, V02 = V00 + G01 * uz - G02 * uy, V01 + G02 * ux - G00 * uz, V02 + G00 * uy - G01 * ux
        V10, V11, V12 = V10 + G11 * uz - G12 * uy, V11 + G12 * ux - G10 * uz, V12 + G10 * uy - G11 * ux
        V20, V21, V22 = V20 + G21 * uz - G22 * uy, V21 + G22 * ux - G20 * uz, V22 + G20 * uy - G21 * ux
    return tip, [J0, J1, J2]


def pcc_single(q_from_l: tuple, rest: float, rate: float, gap: float, t: list[float],
               with_jacobian: bool) -> tuple[list[float], list[list[float]] | None]:
    """Tip [m] of the PCC kinematics and (``with_jacobian``) its Jacobian ``3 × 3N`` [m/s] as three
    row lists (``q_from_l``: the 3×3 map from leg lengths to ``(L, a, b)``, rows as tuples)."""
    n = len(t)
    (q00, q01, q02), (q10, q11, q12), (q20, q21, q22) = q_from_l
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    tops = []  # per module: the rotation before it, its top and its arc (L, a, b, s, (1 − s)/θ², c, dc)
    for i in range(0, n, 3):
        l0, l1, l2 = rest + rate * t[i], rest + rate * t[i + 1], rest + rate * t[i + 2]
        L = l0 * q00 + l1 * q01 + l2 * q02
        a = l0 * q10 + l1 * q11 + l2 * q12
        b = l0 * q20 + l1 * q21 + l2 * q22
        q = a * a + b * b
        if with_jacobian:
            if q < 0.25:  # two series, d = (1 − s)/q and dc/dq; s and c follow without cancellation
                d = _F0 + q * (_F1 + q * (_F2 + q * (_F3 + q * (_F4 + q * (_F5 + q * _F6)))))
                dc = _E0 + q * (_E1 + q * (_E2 + q * (_E3 + q * (_E4 + q * (_E5 + q * _E6)))))
                s = 1.0 - q * d
                c = 0.5 * s - q * dc  # dc/dq = (s − 2c)/(2q)
            else:
                s, ds, c, dc = bend_scalars(q)
                d = 2.0 * ds + c
        elif q > 0.0:  # the closed forms of s and c do not cancel
            th = sqrt(q)
            half = sin(0.5 * th)
            s, c = sin(th) / th, 2.0 * half * half / q
        else:
            s, c = 1.0, 0.5
        Lc = L * c
        ex, ey, ez = Lc * a, Lc * b, L * s  # arc end in the module frame
        tx = px + r00 * ex + r01 * ey + r02 * ez
        ty = py + r10 * ex + r11 * ey + r12 * ez
        tz = pz + r20 * ex + r21 * ey + r22 * ez
        if with_jacobian:
            tops.append((r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz, tx - px, ty - py, tz - pz,
                         L, a, b, s, d, c, dc))
        if i == n - 3:  # the tip: no frame above it
            break
        # R ← R · (I + s W + c W²), W = [(−b, a, 0)]×
        cab, sa, sb = c * a * b, s * a, s * b
        m00, m11, m22 = 1.0 - c * a * a, 1.0 - c * b * b, 1.0 - c * q
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            r00 * m00 - r01 * cab - r02 * sa, r01 * m11 - r00 * cab - r02 * sb, r00 * sa + r01 * sb + r02 * m22,
            r10 * m00 - r11 * cab - r12 * sa, r11 * m11 - r10 * cab - r12 * sb, r10 * sa + r11 * sb + r12 * m22,
            r20 * m00 - r21 * cab - r22 * sa, r21 * m11 - r20 * cab - r22 * sb, r20 * sa + r21 * sb + r22 * m22)
        px, py, pz = tx + gap * r02, ty + gap * r12, tz + gap * r22
    if not with_jacobian:
        return [tx, ty, tz], None

    J0, J1, J2 = [], [], []
    k00, k01, k02, k10, k11, k12, k20, k21, k22 = (rate * q00, rate * q01, rate * q02, rate * q10, rate * q11,
                                                   rate * q12, rate * q20, rate * q21, rate * q22)
    mean_length = q00 == q01 == q02 and q20 == 0.0
    for r00, r01, r02, r10, r11, r12, r20, r21, r22, ox, oy, oz, vx, vy, vz, L, a, b, _s, d, c, dc in tops:
        dx, dy, dz = tx - ox, ty - oy, tz - oz  # top of this module -> tip, in the base frame
        ex = r00 * dx + r10 * dy + r20 * dz  # ... and in the module's frame
        ey = r01 * dx + r11 * dy + r21 * dz
        ez = r02 * dx + r12 * dy + r22 * dz
        # Module frame: ∂(arc end)/∂a + ω_a × e and likewise for b. With d = (1 − s)/θ² (the W²
        # coefficient of the bend's left Jacobian) and u = (d a, d b, c) the angular velocities
        # are ω_a = ŷ − b u, ω_b = −x̂ + a u, so both crosses share w = u × e.
        u0, u1 = d * a, d * b
        w0, w1, w2 = u1 * ez - c * ey, c * ex - u0 * ez, u0 * ey - u1 * ex
        Lc, L2dc, Lds = L * c, 2.0 * L * dc, L * (d - c)  # Lds = 2 L ds/dq
        pab = L2dc * a * b
        A0 = Lc + L2dc * a * a + ez - b * w0
        A1 = pab - b * w1
        A2 = Lds * a - ex - b * w2
        B0 = pab + a * w0
        B1 = Lc + L2dc * b * b + ez + a * w1
        B2 = Lds * b - ey + a * w2
        # To the base frame; (L, a, b) are linear in the module's three times.
        Ax, Ay, Az = r00 * A0 + r01 * A1 + r02 * A2, r10 * A0 + r11 * A1 + r12 * A2, r20 * A0 + r21 * A1 + r22 * A2
        Bx, By, Bz = r00 * B0 + r01 * B1 + r02 * B2, r10 * B0 + r11 * B1 + r12 * B2, r20 * B0 + r21 * B1 + r22 * B2
        if mean_length:  # L is the mean leg and b does not depend on leg 0 (PETER's leg layout)
            f = k00 / L  # ∂(arc end)/∂L = (arc end)/L: the module's chord vector v in the base frame
            Lx, Ly, Lz = vx * f, vy * f, vz * f
            J0 += (Lx + Ax * k10, Lx + Ax * k11 + Bx * k21, Lx + Ax * k12 + Bx * k22)
            J1 += (Ly + Ay * k10, Ly + Ay * k11 + By * k21, Ly + Ay * k12 + By * k22)
            J2 += (Lz + Az * k10, Lz + Az * k11 + Bz * k21, Lz + Az * k12 + Bz * k22)
        else:
            Lx, Ly, Lz = vx / L, vy / L, vz / L
            J0 += (Lx * k00 + Ax * k10 + Bx * k20, Lx * k01 + Ax * k11 + Bx * k21, Lx * k02 + Ax * k12 + Bx * k22)
            J1 += (Ly * k00 + Ay * k10 + By * k20, Ly * k01 + Ay * k11 + By * k21, Ly * k02 + Ay * k12 + By * k22)
            J2 += (Lz * k00 + Az * k10 + Bz * k20, Lz * k01 + Az * k11 + Bz * k21, Lz * k02 + Az * k12 + Bz * k22)
    return [tx, ty, tz], [J0, J1, J2]
