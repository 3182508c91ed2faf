"""A control period of PCC arms compiled whole: every physics step of the period, arm by arm, in one
call per block of arms (the vector step of ``PCCTrack-v0``, single and vector envs alike).

Per arm and physics step (what :meth:`~soft_envs.envs.pcc_arms.PCCArms.simulate`'s numpy loop does
for the whole batch between the core's calls):

1. the rigid-body terms at the step's start (:func:`~soft_envs.sim.batched_kernels.terms_of_arm`);
2. :func:`actuate_arm`: on the law's ticks the paper's PD + feed-forward law
   (:meth:`~soft_envs.sim.actuators.BatchedPDFeedforward.torque_smooth` with ``include_damping``,
   without the unknown-payload correction) at the set-point interpolated over the period (its
   gravity :func:`setpoint_gravity`, a lean pass of its own), else the held torque or pressure;
   then the chambers' regulators (set-point, dead time, lag) and the generalised forces at the
   step's start and end;
3. the core's step (:func:`~soft_envs.sim.batched_integrator.arm_step`);
4. the validity check (:func:`~soft_envs.sim.batched_kernels.pcc_code`, the batch check's per arm):
   an arm whose state left the PCC model goes back to the step's start, at rest, keeps its code and
   stops for the period.

Arm-major. Every arm reads and writes only its own rows, so the loop runs an arm's whole period before
the next arm's (its state, terms and workspace stay in the first-level cache, and the period costs
one call instead of five per physics step): the numbers are those of the step-major loop, and a batch
split into blocks in threads gives the same numbers as one call. Arithmetic: the core's options
(fast-math; the law's sums in index order), equal to the numpy loop to rounding
(``tests/envs/test_vector_step.py``). Arrays are ``(B, …)`` float64 (``bool``/``int64`` flags),
C-contiguous; SI units.

Measured (``soft-envs bench vector``, ``PCCTrack-v0``, 1024 arms, one thread): the step-major loop
(five compiled calls per physics step, the law's gravity a full configuration pass of the core's
terms) ran at 0.75–0.79 of the core's physics-only rate; arm-major, 0.79–0.81; with
:func:`setpoint_gravity` (one sine and cosine a section, no inertias) 0.83–0.85; with its planar runs,
:func:`actuate_arm` inlined (a call passes some forty arrays) and the command ramp compiled
(:func:`~soft_envs.sim.period_kernels.pcc_ramp`), see BENCHMARKS' vector section.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.sim.batched_integrator import arm_step, step_workspace
from soft_envs.sim.batched_kernels import (
    _INLINE,
    _JIT,
    _NO_NRT,
    PRISMATIC_Z,
    REVOLUTE_Y,
    REVOLUTE_Z,
    _sinc,
    pcc_code,
    terms_of_arm,
    workspace,
)
from soft_envs.sim.period_kernels import release
from soft_envs.sim.sections import MIN_BEND

#: The core's compile options (:mod:`soft_envs.sim.batched_kernels`: cached, GIL released, fast-math):
#: drivers, inlined helpers, loops over arms without reference counting.
_CORE: dict = _JIT
_CORE_INLINE: dict = _INLINE
_CORE_LOOP: dict = _NO_NRT
#: actuate_arm's: inlined into the period (some 40 array arguments; the period measured ~2 % faster than with a call).
_CORE_LOOP_INLINE: dict = dict(_NO_NRT, inline="always")


@njit(**_CORE_LOOP)
def setpoint_gravity(topology, mass, gravity, u, c, g, ws):
    """``G(u)`` ``(n,)`` of one arm at the smooth configuration ``u`` into ``g`` (``mass`` ``(K,)`` its
    links', ``gravity`` ``(3,)`` [m/s²] in its base frame, ``c`` its current ``c̃``, whose ``φ`` is a
    straight section's direction (none if it has a NaN: +x); ``ws`` = ``(cs (T, 2), S (K, 6), link (K, 4),
    gc (3N,), jac (N, 3, 3))`` scratch): the gravity of
    :func:`~soft_envs.sim.batched_kernels.rigid_terms` alone (no velocities, no inertias) and the
    section map's projection, with every section in the representation ``θ = √(a² + b²) ≥ 0``,
    ``cos φ = a/θ``, ``sin φ = b/θ`` (``G`` does not depend on it), so that a section costs one sine
    and one cosine. Between a section's two ``φ`` joints its ``y`` revolutes and ``z`` prismatics turn
    about one axis: the walk follows that run in its plane (the angle's cosine and sine, two
    coordinates) and writes each joint's gravity as ``G_j = A_j·h_j + B_j m_j`` of the mass ``m_j`` and
    first moment ``h_j`` beyond it (revolute: ``A = e × g``, ``B = −A·p``; prismatic: ``A = 0``,
    ``B = −e·g``); massless links are skipped. Bends below :data:`~soft_envs.sim.sections.MIN_BEND`
    are evaluated there, as the terms are; equal to ``terms``' ``G`` to rounding
    (``tests/sim/test_pcc_period.py``); 0.31 µs an arm against 0.44 µs for the three-dimensional walk
    of ``rigid_terms`` (the PCCTrack arm, 30 joints, this 2-core machine)."""
    ints, table, trig, sec, lref = topology
    cs, S, link, gc, jac = ws
    planar, chord, links = sec[0] != 0, sec[1] != 0, sec[2]
    n_sec = lref.shape[0]
    per = 2 if planar else 3
    has = True
    for j in range(c.shape[0]):
        if math.isnan(c[j]):
            has = False
    for i in range(n_sec):  # per section: c̃ = (ext, θ, φ) by its cosines, the blocks of ∂c̃/∂u
        x, a = u[per * i], u[per * i + 1]
        b = 0.0 if planar else u[per * i + 2]
        for r in range(3):
            for q in range(3):
                jac[i, r, q] = 0.0
        if planar:
            gc[3 * i], gc[3 * i + 1], gc[3 * i + 2] = x, a, 0.0  # (c̃ itself, until the backward pass)
            jac[i, 0, 0], jac[i, 1, 1] = 1.0, 1.0
            continue
        r = math.hypot(a, b)
        if r < MIN_BEND:  # the evaluation point, along the bend's direction (when straight: c̃'s φ)
            phi = math.atan2(b, a) if r > 0.0 else (c[3 * i + 2] if has else 0.0)
            a, b, r = MIN_BEND * math.cos(phi), MIN_BEND * math.sin(phi), MIN_BEND
        ell = lref[i] + x
        ext = x
        jac[i, 0, 0] = 1.0
        if chord:
            sv, ds, _ = _sinc(r, links)
            ext = ell * sv - lref[i]
            jac[i, 0, 0], jac[i, 0, 1], jac[i, 0, 2] = sv, ell * ds * a / r, ell * ds * b / r
        jac[i, 1, 1], jac[i, 1, 2] = a / r, b / r
        jac[i, 2, 1], jac[i, 2, 2] = -b / (r * r), a / (r * r)
        gc[3 * i], gc[3 * i + 1], gc[3 * i + 2] = ext, r, 0.0
    for t in range(trig.shape[0]):
        half = int(trig[t, 2])
        slot, beta = int(trig[t, 0]), trig[t, 1]
        if half >= 0:  # twice an earlier angle
            co, sn = cs[half, 0], cs[half, 1]
            cs[t, 0], cs[t, 1] = 1.0 - 2.0 * sn * sn, 2.0 * sn * co
        elif slot % 3 == 2 and not planar and abs(beta) == 1.0:  # ±φ: from the bend's direction
            i = slot // 3
            cs[t, 0], cs[t, 1] = jac[i, 1, 1], beta * jac[i, 1, 2]
        elif slot % 3 == 2 and not planar:
            angle = beta * math.atan2(jac[slot // 3, 1, 2], jac[slot // 3, 1, 1])
            cs[t, 0], cs[t, 1] = math.cos(angle), math.sin(angle)
        else:
            angle = beta * gc[slot]
            cs[t, 0], cs[t, 1] = math.cos(angle), math.sin(angle)
    K = ints.shape[0]
    gx, gy, gz = gravity[0], gravity[1], gravity[2]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    planar_run = False  # a run of y revolutes and z prismatics: the frame R0·Ry(α), at p0 + R0·(x, 0, z)
    ca, sa, x, z = 1.0, 0.0, 0.0, 0.0
    kx = ky = kz = c0 = klx = klz = glx = glz = 0.0
    for j in range(K):  # forward: each joint's G_j = A_j·h_j + B_j m_j (S[j, :4]), the links' first moments
        kind, slot, t = ints[j, 0], ints[j, 1], ints[j, 2]
        coef = table[j, 1]
        off = table[j, 0]
        co = sn = 0.0
        if kind != PRISMATIC_Z:
            co = cs[t, 0]
            sn = cs[t, 1] if coef == trig[t, 1] else -cs[t, 1]
        if kind == REVOLUTE_Z and planar_run:  # the run's frame, back in three dimensions
            planar_run = False
            px, py, pz = px + r00 * x + r02 * z, py + r10 * x + r12 * z, pz + r20 * x + r22 * z
            r00, r02 = ca * r00 - sa * r02, sa * r00 + ca * r02
            r10, r12 = ca * r10 - sa * r12, sa * r10 + ca * r12
            r20, r22 = ca * r20 - sa * r22, sa * r20 + ca * r22
        if kind != REVOLUTE_Z and not planar_run:  # a run starts: its constant axis y0 and k = y0 × g
            planar_run = True
            ca, sa, x, z = 1.0, 0.0, 0.0, 0.0
            kx, ky, kz = r11 * gz - r21 * gy, r21 * gx - r01 * gz, r01 * gy - r11 * gx
            c0 = kx * px + ky * py + kz * pz
            klx, klz = r00 * kx + r10 * ky + r20 * kz, r02 * kx + r12 * ky + r22 * kz  # R0ᵀ k
            glx, glz = r00 * gx + r10 * gy + r20 * gz, r02 * gx + r12 * gy + r22 * gz  # R0ᵀ g
        if planar_run:
            x, z = x + off * sa, z + off * ca
            if kind == REVOLUTE_Y:  # G = y0 · (g × (h − m p)) = k·h − m (k·p)
                S[j, 0], S[j, 1], S[j, 2], S[j, 3] = kx, ky, kz, -(c0 + klx * x + klz * z)
                ca, sa = ca * co - sa * sn, sa * co + ca * sn
            else:  # G = −m (e·g), e = R0·(sin α, 0, cos α)
                S[j, 0], S[j, 1], S[j, 2], S[j, 3] = 0.0, 0.0, 0.0, -(glx * sa + glz * ca)
                q = coef * gc[slot]
                x, z = x + q * sa, z + q * ca
        else:  # a z revolute: G = e·(g × (h − m p)) = a·h − m (a·p), a = e × g
            px, py, pz = px + off * r02, py + off * r12, pz + off * r22
            ax, ay, az = r12 * gz - r22 * gy, r22 * gx - r02 * gz, r02 * gy - r12 * gx
            S[j, 0], S[j, 1], S[j, 2], S[j, 3] = ax, ay, az, -(ax * px + ay * py + az * pz)
            r00, r01 = co * r00 + sn * r01, co * r01 - sn * r00
            r10, r11 = co * r10 + sn * r11, co * r11 - sn * r10
            r20, r21 = co * r20 + sn * r21, co * r21 - sn * r20
        m = mass[j]
        link[j, 0] = m
        if m == 0.0:
            link[j, 1], link[j, 2], link[j, 3] = 0.0, 0.0, 0.0
            continue
        lx, ly, lz = table[j, 2], table[j, 3], table[j, 4]
        if planar_run:  # the centre of mass in the run's frame R0: (x, 0, z) + Ry(α) l
            ox, oy, oz = x + ca * lx + sa * lz, ly, z - sa * lx + ca * lz
        else:
            ox, oy, oz = lx, ly, lz
        link[j, 1] = m * (px + r00 * ox + r01 * oy + r02 * oz)
        link[j, 2] = m * (py + r10 * ox + r11 * oy + r12 * oz)
        link[j, 3] = m * (pz + r20 * ox + r21 * oy + r22 * oz)
    for k in range(gc.shape[0]):
        gc[k] = 0.0
    m = hx = hy = hz = 0.0
    for j in range(K - 1, -1, -1):  # backward: the links beyond joint j (its own included)
        m, hx, hy, hz = m + link[j, 0], hx + link[j, 1], hy + link[j, 2], hz + link[j, 3]
        gc[ints[j, 1]] += table[j, 1] * (S[j, 0] * hx + S[j, 1] * hy + S[j, 2] * hz + S[j, 3] * m)
    for i in range(n_sec):
        for p in range(per):
            g[per * i + p] = jac[i, 0, p] * gc[3 * i] + jac[i, 1, p] * gc[3 * i + 1] + jac[i, 2, p] * gc[3 * i + 2]


@njit(**_CORE)
def gravity_workspace(ints, trig, lref):
    """:func:`setpoint_gravity`'s scratch for a chain of ``ints`` joints, ``trig`` angles, ``lref`` sections."""
    return (np.empty((trig.shape[0], 2)), np.empty((ints.shape[0], 6)), np.empty((ints.shape[0], 4)),
            np.empty(3 * lref.shape[0]), np.zeros((lref.shape[0], 3, 3)))


@njit(**_CORE_INLINE)
def _chamber_torque(p, pmap, maps, b, plant_maps, out):
    """``τ = H p`` of arm ``b`` (the nominal ``pmap`` or its own ``maps[b]``)."""
    n = out.shape[0]
    for i in range(n):
        x = 0.0
        for j in range(n):
            x += p[j] * (maps[b, i, j] if plant_maps else pmap[i, j])
        out[i] = x


@njit(**_CORE_INLINE)
def _pd_law(u, w, u_d, rest, k, rayleigh, M, h, g, g_d, kp, kv, stiffness_factor, lengths, per, any_alpha, damping,
            q_acc, u_acc, out):
    """The paper's PD + feed-forward law of one arm (:meth:`BatchedPDFeedforward.torque_smooth` with
    ``include_damping``; ``M``, ``h`` = C u̇ + G, ``g`` = G at its state, ``g_d`` = G at the set-point
    ``u_d``; ``k`` the stiffness, ``rayleigh`` = (α, β)) into ``out``."""
    n = u.shape[0]
    for i in range(lengths.shape[0]):  # q̈ = −kv q̇ − kp (q − q_d), then ü = H⁻¹ (q̈ − Ḣ u̇), per segment
        length, j0 = lengths[i], per * i
        s0, v0, sd0 = u[j0], w[j0], u_d[j0]
        ell, ell_d = length + s0, length + sd0
        q_acc[j0] = -kv * (v0 / length) - kp * (s0 / length - sd0 / length)
        for p in range(1, per):
            rate = (w[j0 + p] - u[j0 + p] * (v0 / ell)) / ell
            q_acc[j0 + p] = -kv * rate - kp * (u[j0 + p] / ell - u_d[j0 + p] / ell_d)
        axial = length * q_acc[j0]
        u_acc[j0] = axial
        for p in range(1, per):
            hdot_w = (-2.0 * w[j0 + p] * v0 + 2.0 * u[j0 + p] * (v0 * v0) / ell) / (ell * ell)
            u_acc[j0 + p] = ell * (q_acc[j0 + p] - hdot_w) + u[j0 + p] * (axial / ell)
    for i in range(n):
        x = 0.0
        for j in range(n):
            x += M[i, j] * u_acc[j]
        x = x + (h[i] - g[i]) + stiffness_factor * (k[i] * (u_d[i] - rest[i])) + g_d[i]
        if damping:
            d = rayleigh[1] * k[i] * w[i]
            if any_alpha:
                y = 0.0
                for j in range(n):
                    y += M[i, j] * w[j]
                d = d + rayleigh[0] * y
            x = x + d
        out[i] = x


@njit(**_CORE_LOOP_INLINE)
def actuate_arm(b, topology, params, u, w, c, rest, now, step, k, flags, law, setpoints, command_value, tau, chambers,
                dead, pressures, saturated, terms, tau_s, tau_e, scratch):
    """Physics step ``k`` of the period's actuation of arm ``b`` at ``u``, ``w``, ``c`` ``(n,)``, ``(3N,)``
    (rest ``rest``, time ``now`` [s], ``step`` its physics steps so far; ``terms`` = ``(M, C u̇ + G, G)``
    there): the generalised forces at the step's start and end into ``tau_s``, ``tau_e`` ``(n,)``.
    ``flags`` = ``(n_steps, steps_per_control, setpoint_driven, pressure_action, has_chambers,
    plant_maps, any_alpha, damping, order)`` (``order`` the period's first rank in the dead time's
    queue); ``law`` = ``(kp, kv, stiffness_factor, segment_lengths)``; ``setpoints`` = ``(u_from, u_to)``
    ``(B, n)`` smooth (the set-point of step ``k`` between them, at the law's hold's end);
    ``command_value``, ``tau`` ``(B, n)``: the held action and the law's force [N, N m] (kept);
    ``chambers`` = ``(inverse, map, maps, max_pressure, lagged, decay)``: ``p = H⁻¹ τ``, ``τ = H p``
    (``map`` ``(n, n)`` or each arm's ``maps`` ``(B, n, n)``), the bound [Pa], which arms lag,
    ``exp(−dt/T)`` ``(B,)``; ``dead`` = ``(current, values, due, order, delay)`` of the regulators'
    dead time; ``pressures`` ``(B, n)`` [Pa]; ``saturated`` = ``(regulator's, period's)`` ``(B,)`` bool;
    ``scratch`` = ``(gravity_workspace, u_d, vectors (4, n))``."""
    n_steps, spc, setpoint_driven, pressure_action, has_chambers, plant_maps, any_alpha, damping, first = flags
    kp, kv, stiffness_factor, lengths = law
    u_from, u_to = setpoints
    inverse, pmap, maps, max_pressure, lagged, decay = chambers
    current, values, due, order, delay = dead
    reg_saturated, period_saturated = saturated
    stiffness, rayleigh = params[3], params[4]
    M, h, g = terms
    gravity_ws, u_d, vectors = scratch
    q_acc, u_acc, g_d, clipped = vectors[0], vectors[1], vectors[2], vectors[3]
    n = u.shape[0]
    per = n // lengths.shape[0]
    commanded = True
    if setpoint_driven:
        commanded = step % spc == 0
        if commanded:  # the set-point at the end of the law's hold, and its gravity
            s = min((k + spc) / n_steps, 1.0)
            for j in range(n):
                u_d[j] = (1 - s) * u_from[b, j] + s * u_to[b, j]
            setpoint_gravity(topology, params[0], params[2], u_d, c, g_d, gravity_ws)
            _pd_law(u, w, u_d, rest, stiffness, rayleigh, M, h, g, g_d, kp, kv, stiffness_factor, lengths, per,
                    any_alpha, damping, q_acc, u_acc, tau[b])
    else:
        for j in range(n):
            tau[b, j] = command_value[b, j]
    if not has_chambers:
        for j in range(n):
            tau_s[j] = tau[b, j]
            tau_e[j] = tau[b, j]
        return
    if commanded:  # the regulators' new set-points (BatchedPressureRegulator.command)
        sat = False
        for i in range(n):
            x = tau[b, i]
            if not pressure_action:
                x = 0.0
                for j in range(n):
                    x += tau[b, j] * inverse[i, j]
            y = x
            if y < -max_pressure:
                y = -max_pressure
            if y > max_pressure:
                y = max_pressure
            sat = sat or y != x
            clipped[i] = y
        reg_saturated[b] = sat
        period_saturated[b] = period_saturated[b] or sat
        if delay[b] == 0.0:
            for i in range(n):
                current[b, i] = clipped[i]
        else:
            slot = 0
            while due[b, slot] != np.inf:  # a free slot (the caller grew the queue for the period)
                slot += 1
            for i in range(n):
                values[b, slot, i] = clipped[i]
            due[b, slot] = now + delay[b]
            order[b, slot] = first + k
    if not lagged[b]:  # the pressures acting at the start: the set-point due now
        release(current, values, due, order, b, now)
    _chamber_torque(pressures[b] if lagged[b] else current[b], pmap, maps, b, plant_maps, tau_s)
    release(current, values, due, order, b, now)
    for i in range(n):
        target = current[b, i]
        pressures[b, i] = target + (pressures[b, i] - target) * decay[b] if lagged[b] else target
    _chamber_torque(pressures[b], pmap, maps, b, plant_maps, tau_e)


@njit(**_CORE)
def pcc_period(topology, params, start, out, active, steps, flags, law, setpoints, command_value, tau, chambers, dead,
               pressures, saturated, integrator, validity, records):
    """Up to ``flags[0]`` physics steps of every ``active`` arm of the block (module docstring).
    ``start`` = ``(u, w, a, c, rest, time, fresh)`` (read) and ``out`` = ``(u, w, a, c, time, fresh)``
    (written: the state at the period's end, or where the arm stopped);
    ``active`` ``(B,)`` (an arm that stops leaves it), ``steps`` ``(B,)`` its physics steps (+1 a step);
    ``integrator`` = ``(dt, α_m, α_f, γ, β, corrector passes)``; ``validity`` = ``(per, half_lengths,
    max_rate)``; ``records`` = ``(codes (B,), violation (B, n))``: the code an arm stopped with and its
    post-step ``u``. The rest: :func:`actuate_arm`."""
    ints, table, trig, sec, lref = topology
    n = start[0].shape[1]
    ws = workspace(lref.shape[0], n, ints.shape[0], trig.shape[0])
    scratch = (gravity_workspace(ints, trig, lref), np.empty(n), np.zeros((4, n)))
    terms = (np.empty((n, n)), np.empty(n), np.empty(n))
    arm = (np.empty((2, n)), np.empty((2, n)), np.empty((2, n)), np.empty((2, 3 * lref.shape[0])), np.empty((2, n)))
    _period_arms(topology, params, start, out, active, steps, flags, law, setpoints, command_value, tau,
                        chambers, dead, pressures, saturated, integrator, validity, records, ws, step_workspace(n),
                        scratch, terms, arm)


@njit(**_CORE_LOOP)
def _period_arms(topology, params, start, out, active, steps, flags, law, setpoints, command_value, tau, chambers, dead,
                 pressures, saturated, integrator, validity, records, ws, sws, scratch, terms, arm):
    """The loop of :func:`pcc_period` over the block's arms (no reference counting of the per-arm views);
    ``arm`` = ``(u, w, a, c, forces)`` ``(2, …)``: an arm's state before and after a step, its forces."""
    u0, w0, a0, c0, rest, time0, fresh0 = start
    u1, w1, a1, c1, time1, fresh1 = out
    mass, inertia, gravity, stiffness, rayleigh = params
    dt, am, af, gamma, beta, passes = integrator
    per, half_lengths, max_rate = validity
    codes, violation = records
    M, h, g = terms
    su, sw, sa, sc, forces = arm
    coefficients = (dt, am, af, gamma, beta)
    n_steps = flags[0]
    for b in range(u0.shape[0]):
        for j in range(u0.shape[1]):
            su[0, j], sw[0, j], sa[0, j] = u0[b, j], w0[b, j], a0[b, j]
        for j in range(c0.shape[1]):
            sc[0, j] = c0[b, j]
        now, fresh, cur, ran = time0[b], fresh0[b], 0, 0
        arm_params = (mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b])
        while active[b] and ran < n_steps:
            nxt = 1 - cur
            from_true = fresh and passes > 0  # (the true start acceleration; never without corrector passes)
            terms_of_arm(topology, mass[b], inertia[b], gravity[b], su[cur], sw[cur], sc[cur], True, True, M, h, g, ws)
            actuate_arm(b, topology, arm_params, su[cur], sw[cur], sc[cur], rest[b], now, steps[b], ran, flags, law,
                        setpoints, command_value, tau, chambers, dead, pressures, saturated, terms, forces[0],
                        forces[1], scratch)
            arm_step(topology, mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b], su[cur], sw[cur], sa[cur],
                     sc[cur], rest[b], rest[b], forces[0], forces[1], False, from_true, coefficients, passes, True,
                     M, h, g, su[nxt], sw[nxt], sa[nxt], sc[nxt], ws, sws)
            steps[b] += 1
            ran += 1
            code = pcc_code(su[nxt], sw[nxt], per, half_lengths, max_rate)
            if code == 0:
                now, fresh, cur = now + dt, False, nxt
                continue
            fresh = True
            for j in range(u0.shape[1]):  # back to the step's start, at rest
                violation[b, j] = su[nxt, j]
                sw[cur, j], sa[cur, j] = 0.0, 0.0
            codes[b] = code
            active[b] = False
        for j in range(u0.shape[1]):
            u1[b, j], w1[b, j], a1[b, j] = su[cur, j], sw[cur, j], sa[cur, j]
        for j in range(c0.shape[1]):
            c1[b, j] = sc[cur, j]
        time1[b], fresh1[b] = now, fresh
