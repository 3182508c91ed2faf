"""The soft arms' actuators and validity bookkeeping of a physics step compiled, for the blocks of arms
that :mod:`soft_envs.sim.arm_period` steps in the core's threads (the vector step, issue 32's sequel).

What a control period of ``PeterReach-v0`` and ``PCCTrack-v0`` does around the core's step
(:func:`~soft_envs.sim.batched_integrator.batch_step`), per arm and physics step, written once here
and called for a block of arms at a time:

* :func:`peter_legs` — PETER's legs (:meth:`~soft_envs.sim.actuators.BatchedPneumaticLegs.advance`:
  the command due at each arm's time, fill and vent, the imperfect legs' extension) and the rest
  configuration of their true lengths (:meth:`~soft_envs.sim.batched_bodies.BatchedSoftPeter.arc_of_legs`);
* :func:`pcc_actuate` — the PCC arm's start terms, the paper's PD + feed-forward law on its ticks
  (:meth:`~soft_envs.sim.actuators.BatchedPDFeedforward.torque_smooth`, without the unknown-payload
  correction), the chambers' regulators (set-point, dead time, lag) and the generalised forces at the
  step's start and end;
* :func:`settle` — after the step: time, rest, the ``fresh`` flags, and an arm whose state left its
  model back to the step's start, at rest (``restore(..., at_rest=True)``), its code kept.

Arithmetic. No fast-math here: the element-wise operations are numpy's, in numpy's order, so that
PETER's period is the numpy code's to the bit (``tests/envs/test_vector_envs.py``); the few sums
(the law's ``M ü``, the chambers' maps) run in index order, where numpy's ``einsum`` and BLAS
pick their own (the PCC arm agrees with the numpy code to rounding, ~1e-16 relative a step).
Every arm reads and writes only its own rows: a batch split into blocks gives the same numbers.
Arrays are ``(B, …)`` float64 (``bool``/``int64`` flags), C-contiguous; SI units.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.sim.batched_kernels import (
    _NO_NRT,
    _evaluation_map,
    batch_configuration,
    rigid_terms,
    workspace,
)

#: Compiled as the core's kernels (cached, GIL released) but without fast-math (module docstring).
_ENV: dict = {"cache": True, "nogil": True, "error_model": "numpy"}
_ENV_LOOP: dict = dict(_ENV, _nrt=False)  # loops over arms: no reference counting of the per-arm views
#: The core's options (fast-math) for the PCC arm's law and gravity (compared to rounding, module docstring).
_CORE: dict = _NO_NRT
#: The tolerance [s] of a dead time's release (:attr:`~soft_envs.sim.actuators.BatchedDeadTime.EPS`).
DEAD_TIME_EPS = 1e-9


@njit(**_ENV_LOOP)
def _true_length(lengths, extension, offset, perfect, rest_length, b, j):
    """Leg ``j``'s true rest length [m] of arm ``b``
    (:attr:`~soft_envs.sim.actuators.BatchedPneumaticLegs.actual_lengths`)."""
    return lengths[b, j] if perfect[b] else rest_length + offset[b, j] + extension[b, j]


@njit(**_ENV_LOOP)
def release(current, values, due, order, b, now):
    """Arm ``b``'s dead time at ``now`` [s] (:meth:`~soft_envs.sim.actuators.BatchedDeadTime.at`): the
    latest of its commands due (``due ≤ now + 1e-9``) becomes ``current[b]``; the due slots are freed."""
    latest, slot = -1, -1
    limit = now + DEAD_TIME_EPS
    for q in range(due.shape[1]):
        if due[b, q] <= limit:
            if order[b, q] > latest:
                latest, slot = order[b, q], q
            due[b, q] = np.inf
    if slot >= 0:
        for j in range(current.shape[1]):
            current[b, j] = values[b, slot, j]


@njit(**_ENV)
def peter_legs(lengths, extension, dead, time, vent_rate, gain, offset, leak_rate, perfect, legs_to_arc, fill_rate,
               rest_length, reference_length, instant, all_perfect, dt, rest_end):
    """PETER's legs of every arm of the block advanced by ``dt`` [s] and the rest configuration of their
    true lengths into ``rest_end`` ``(B, 3N)``. ``lengths``, ``extension`` ``(B, 3N)`` [m] (nominal
    progress, the imperfect legs' extension), ``dead`` = ``(current, values, due, order)`` of the
    command delay, ``time`` ``(B,)`` [s] each arm's clock, ``legs_to_arc`` ``(B, 3, 3)``;
    ``all_perfect``: no arm of the whole batch has imperfect legs (their extension is then left)."""
    current, values, due, order = dead
    B, L = lengths.shape
    fill = fill_rate * dt
    for b in range(B):
        release(current, values, due, order, b, time[b])
        vent = -vent_rate[b] * dt
        for j in range(L):
            change = current[b, j] - lengths[b, j]
            if instant:
                lengths[b, j] = current[b, j]
            else:
                if change < vent:  # np.clip: max(x, low), then min(·, high); NaN stays
                    change = vent
                if change > fill:
                    change = fill
                lengths[b, j] = lengths[b, j] + change
            if not all_perfect:
                grown = extension[b, j] + gain[b, j] * change - leak_rate[b, j] * dt
                extension[b, j] = 0.0 if grown < 0.0 else grown
        for m in range(L // 3):
            l0, l1, l2 = _true_length(lengths, extension, offset, perfect, rest_length, b, 3 * m), \
                _true_length(lengths, extension, offset, perfect, rest_length, b, 3 * m + 1), \
                _true_length(lengths, extension, offset, perfect, rest_length, b, 3 * m + 2)
            for r in range(3):
                rest_end[b, 3 * m + r] = (legs_to_arc[b, r, 0] * l0 + legs_to_arc[b, r, 1] * l1
                                          + legs_to_arc[b, r, 2] * l2)
            rest_end[b, 3 * m] -= reference_length


@njit(**_ENV)
def settle(before, after, rest_end, moving_rest, active, dt, code, counts, violation, stop_code):
    """After the step of the block's ``active`` arms from ``before`` to ``after`` (``(u, w, a, c, rest,
    time, fresh)``; ``after``'s ``u``, ``w``, ``a``, ``c`` written by the step): every arm's time, rest
    (``rest_end`` where ``moving_rest``) and ``fresh`` flag in ``after``; an active arm with a validity
    ``code`` ≠ 0 goes back to ``before`` at rest, its post-step ``u`` into ``violation``, its code into
    ``stop_code``, and leaves ``active``; ``counts`` (physics steps) +1 for the arms that stepped.
    Returns how many arms of the block are still active."""
    u0, w0, a0, c0, rest0, time0, fresh0 = before
    u1, w1, a1, c1, rest1, time1, fresh1 = after
    B, n = u0.shape
    left = 0
    for b in range(B):
        if not active[b]:
            time1[b], fresh1[b] = time0[b], fresh0[b]
            if moving_rest:
                for j in range(n):
                    rest1[b, j] = rest0[b, j]
            continue
        counts[b] += 1
        if code[b] == 0:
            time1[b], fresh1[b] = time0[b] + dt, False
            if moving_rest:
                for j in range(n):
                    rest1[b, j] = rest_end[b, j]
            left += 1
            continue
        for j in range(n):
            violation[b, j] = u1[b, j]
            u1[b, j], w1[b, j], a1[b, j] = u0[b, j], 0.0, 0.0
            if moving_rest:
                rest1[b, j] = rest0[b, j]
        for j in range(c0.shape[1]):
            c1[b, j] = c0[b, j]
        time1[b], fresh1[b] = time0[b], True
        stop_code[b] = code[b]
        active[b] = False
    return left


@njit(**_CORE)
def pcc_actuate(topology, params, state, active, steps, flags, law, u_from, u_to, command_value, tau, chambers, dead,
                pressures, saturated, start_terms, tau_s, tau_e, scratch):
    """The generalised forces ``tau_s``, ``tau_e`` ``(B, n)`` at the step's start and end of every PCC arm
    of the block at ``state`` = ``(u, w, c, rest, time)`` (``start_terms`` = ``(M, C u̇ + G, G)`` there, of
    its ``active`` arms). ``steps`` ``(B,)`` the arms' physics steps so far; ``flags`` =
    ``(steps_per_control, setpoint_driven, pressure_action, has_chambers, plant_maps, any_alpha,
    damping, order)`` (ints and bools; ``order`` this step's rank in the dead time's queue); ``law`` =
    ``(s, kp, kv, stiffness_factor, segment_lengths)`` (``s`` where the set-point is between ``u_from``
    and ``u_to`` ``(B, n)`` smooth); ``command_value``, ``tau`` ``(B, n)``: the held action and the law's
    force [N, N m] (kept); ``chambers`` = ``(inverse, map, maps, max_pressure, lagged, decay)``: ``p = H⁻¹ τ``
    ``(n, n)``, ``τ = H p`` (``map`` ``(n, n)`` or each arm's ``maps`` ``(B, n, n)``), the bound [Pa], which
    arms lag, ``exp(−dt/T)`` ``(B,)``; ``dead`` = ``(current, values, due, order, delay)`` of the
    regulators' dead time; ``pressures`` ``(B, n)`` [Pa]; ``saturated`` = ``(regulator's, period's)``
    ``(B,)`` bool; ``scratch`` = ``(workspace, u_d, c̃_d, has, vectors)`` (:func:`pcc_scratch`). Arms not
    active keep their pressures (their forces are not used)."""
    ws, u_d, c_d, has, vectors = scratch
    u, w, c, rest, time = state
    B, n = u.shape
    sec, lref = topology[3], topology[4]
    if flags[1]:  # the set-points of the step, and their c̃ nearest the arms' (as terms(u=u_d) derives them)
        s = law[0]
        for b in range(B):
            has[b] = True
            for j in range(c.shape[1]):
                if math.isnan(c[b, j]):
                    has[b] = False
            for j in range(n):
                u_d[b, j] = (1 - s) * u_from[b, j] + s * u_to[b, j]
        batch_configuration(sec, lref, u_d, c, has, c_d)
    mass, inertia, gravity, stiffness, rayleigh = params
    M, h, g = start_terms
    spc, setpoint_driven, pressure_action, has_chambers, plant_maps, any_alpha, damping, rank = flags
    s, kp, kv, stiffness_factor, lengths = law
    inverse, pmap, maps, max_pressure, lagged, decay = chambers
    current, values, due, order, delay = dead
    reg_saturated, period_saturated = saturated
    q_acc, u_acc, g_d, rates, clipped, held = vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5]
    per = n // lengths.shape[0]
    for b in range(B):
        commanded = active[b]
        if setpoint_driven:
            commanded = active[b] and steps[b] % spc == 0
            if commanded:
                gravity_of_arm(topology, mass[b], inertia[b], gravity[b], u_d[b], rates, c_d[b], g_d, ws)
                _pd_law(u[b], w[b], u_d[b], rest[b], stiffness[b], rayleigh[b], M[b], h[b], g[b], g_d, s, kp, kv,
                        stiffness_factor, lengths, per, any_alpha, damping, q_acc, u_acc, tau[b])
        elif active[b]:
            for j in range(n):
                tau[b, j] = command_value[b, j]
        if not has_chambers:
            for j in range(n):
                tau_s[b, j] = tau[b, j]
                tau_e[b, j] = tau[b, j]
            continue
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
                due[b, slot] = time[b] + delay[b]
                order[b, slot] = rank
        for i in range(n):
            held[i] = pressures[b, i]
        if not lagged[b]:  # the pressures acting at the start: the set-point due now
            release(current, values, due, order, b, time[b])
        _chamber_torque(pressures[b] if lagged[b] else current[b], pmap, maps, b, plant_maps, tau_s[b])
        release(current, values, due, order, b, time[b])
        for i in range(n):
            target = current[b, i]
            pressures[b, i] = target + (pressures[b, i] - target) * decay[b] if lagged[b] else target
        _chamber_torque(pressures[b], pmap, maps, b, plant_maps, tau_e[b])
        if not active[b]:
            for i in range(n):
                pressures[b, i] = held[i]


def pcc_scratch(topology: tuple[np.ndarray, ...], n_arms: int) -> tuple:
    """:func:`pcc_actuate`'s scratch for ``n_arms`` arms of ``topology`` (allocated once a period and block)."""
    ints, _, trig, sections, lref = topology
    n = (2 if sections[0] else 3) * lref.shape[0]
    return (workspace(lref.shape[0], n, ints.shape[0], trig.shape[0]), np.empty((n_arms, n)),
            np.empty((n_arms, 3 * lref.shape[0])), np.ones(n_arms, dtype=np.bool_), np.zeros((6, n)))


@njit(**_CORE)
def _chamber_torque(p, pmap, maps, b, plant_maps, out):
    """``τ = H p`` of one arm (the nominal ``pmap`` or its own ``maps[b]``)."""
    n = out.shape[0]
    for i in range(n):
        x = 0.0
        for j in range(n):
            x += p[j] * (maps[b, i, j] if plant_maps else pmap[i, j])
        out[i] = x


@njit(**_CORE)
def _pd_law(u, w, u_d, rest, k, rayleigh, M, h, g, g_d, s, kp, kv, stiffness_factor, lengths, per, any_alpha, damping,
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


@njit(**_CORE)
def gravity_of_arm(topology, mass, inertia, gravity, u, zeros, c, g, ws):
    """``G(u)`` of one arm into ``g`` ``(n,)``: :func:`~soft_envs.sim.batched_kernels.rigid_terms`'s
    configuration pass alone (no velocities, no mass matrix) projected through the section map —
    what the law needs at its set-point each physics step. ``c`` the ``c̃`` of ``u``, ``zeros``
    ``(n,)`` the rates, ``ws`` a :func:`~soft_envs.sim.batched_kernels.workspace`."""
    ints, table, trig, sec, lref = topology
    per = 2 if sec[0] != 0 else 3
    ce, cd, acc, hc, gc, jac = ws[1], ws[2], ws[3], ws[4], ws[5], ws[6]
    _evaluation_map(sec, lref, u, zeros, c, ws[0], ce, jac, acc)
    for k in range(cd.shape[0]):
        cd[k] = 0.0
    rigid_terms(ints, table, trig, mass, inertia, gravity, ce, cd, acc, False, False, ws[7], hc, gc, ws[8], ws[9],
                ws[10], ws[12])
    for i in range(lref.shape[0]):
        for p in range(per):
            sg = 0.0
            for r in range(3):
                sg += jac[i, r, p] * gc[3 * i + r]
            g[per * i + p] = sg


@njit(**_ENV)
def pcc_observation(tip, goal, velocity, u, w, lengths, sin_phase, cos_phase, high, out):
    """``PCCTrack-v0``'s observations ``(B, 17 or 12 + 2n)`` float32 into ``out``
    (:func:`~soft_envs.envs.pcc_parts.track_observation`): measured tip [m], goal [m], their difference,
    measured velocity [m/s], the paper's state ``q`` and rate ``q̇`` of ``u``, ``w`` (segment ``lengths``)
    and the trajectory phase's sine and cosine, clipped into ``±high``; returns how many entries were clipped."""
    B, n = u.shape
    per = n // lengths.shape[0]
    raw = np.empty(out.shape[1])
    clipped = 0
    for b in range(B):
        for k in range(3):
            raw[k], raw[3 + k], raw[6 + k] = tip[b, k], goal[b, k], goal[b, k] - tip[b, k]
            raw[9 + k] = velocity[b, k]
        for j0 in range(0, n, per):
            length = lengths[j0 // per]
            s0, v0 = u[b, j0], w[b, j0]
            ell = length + s0
            raw[12 + j0], raw[12 + n + j0] = s0 / length, v0 / length
            for p in range(1, per):
                raw[12 + j0 + p] = u[b, j0 + p] / ell
                raw[12 + n + j0 + p] = (w[b, j0 + p] - u[b, j0 + p] * (v0 / ell)) / ell
        raw[12 + 2 * n], raw[13 + 2 * n] = sin_phase[b], cos_phase[b]
        for k in range(raw.shape[0]):
            x = raw[k]
            y = x
            if y < -high[k]:
                y = -high[k]
            if y > high[k]:
                y = high[k]
            if y != x:
                clipped += 1
            out[b, k] = np.float32(y)
    return clipped
