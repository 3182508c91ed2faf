"""The soft arms' actuators and validity bookkeeping of a physics step compiled, for the blocks of arms
that :mod:`soft_envs.sim.arm_period` steps in the core's threads (the vector step).

What a control period of ``PeterReach-v0`` does around the core's step
(:func:`~soft_envs.sim.batched_integrator.batch_step`), per arm and physics step, written once here
and called for a block of arms at a time (``PCCTrack-v0``'s whole period is one kernel:
:mod:`soft_envs.sim.pcc_period`):

* :func:`peter_legs` — PETER's legs (:meth:`~soft_envs.sim.actuators.BatchedPneumaticLegs.advance`:
  the command due at each arm's time, fill and vent, the imperfect legs' extension) and the rest
  configuration of their true lengths (:meth:`~soft_envs.sim.batched_bodies.BatchedSoftPeter.arc_of_legs`);
* :func:`settle` — after the step: time, rest, the ``fresh`` flags, and an arm whose state left its
  model back to the step's start, at rest (``restore(..., at_rest=True)``), its code kept;
* :func:`release` — a dead time's due command (PETER's legs, the PCC arm's chambers);
* :func:`pcc_observation` — ``PCCTrack-v0``'s observations;
* :func:`pcc_ramp` — the PCC arms' command ramp (:mod:`soft_envs.envs.pcc_ramp`).

Arithmetic. No fast-math here: the element-wise operations are numpy's, in numpy's order, so that
PETER's period is the numpy code's to the bit (``tests/envs/test_vector_envs.py``).
Every arm reads and writes only its own rows: a batch split into blocks gives the same numbers.
Arrays are ``(B, …)`` float64 (``bool``/``int64`` flags), C-contiguous; SI units.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)

#: Compiled as the core's kernels (cached, GIL released) but without fast-math (module docstring).
_ENV: dict = {"cache": True, "nogil": True, "error_model": "numpy"}
_ENV_LOOP: dict = dict(_ENV, _nrt=False)  # loops over arms: no reference counting of the per-arm views
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


@njit(**_ENV_LOOP)
def _wrap(angle):
    """``angle`` wrapped into ``[−π, π)`` (numpy's ``angle(exp(1j·angle))`` to rounding)."""
    return angle - 2.0 * math.pi * math.floor((angle + math.pi) / (2.0 * math.pi))


@njit(**_ENV)
def pcc_ramp(setpoint, target, step, out, u_from, u_to):
    """The PCC arms' configuration set-points ``(B, 3N)`` ``(ΔL, θ, φ)`` per segment moved towards
    ``target`` by at most ``step`` ``(3N,)`` per smooth coordinate ``(ΔL, a, b)``
    (:func:`~soft_envs.envs.pcc_ramp.ramp_setpoint`, row by row) into ``out``; the smooth forms of the
    set-point before and after into ``u_from``, ``u_to``. A ramped row takes the ``(θ, φ)`` or
    ``(−θ, φ ± π)`` nearest its target (``φ`` the target's at ``θ = 0``), as ``PCCArm.from_smooth``."""
    B, n = setpoint.shape
    for b in range(B):
        limited = False
        for j in range(0, n, 3):
            u_from[b, j], u_to[b, j] = setpoint[b, j], target[b, j]
            u_from[b, j + 1] = setpoint[b, j + 1] * math.cos(setpoint[b, j + 2])
            u_from[b, j + 2] = setpoint[b, j + 1] * math.sin(setpoint[b, j + 2])
            u_to[b, j + 1] = target[b, j + 1] * math.cos(target[b, j + 2])
            u_to[b, j + 2] = target[b, j + 1] * math.sin(target[b, j + 2])
        for j in range(n):
            limited = limited or abs(u_to[b, j] - u_from[b, j]) > step[j]
        if not limited:
            for j in range(n):
                out[b, j] = target[b, j]
            continue
        for j in range(n):
            u_to[b, j] = u_from[b, j] + min(max(u_to[b, j] - u_from[b, j], -step[j]), step[j])
        for j in range(0, n, 3):
            a, c = u_to[b, j + 1], u_to[b, j + 2]
            theta, phi = math.hypot(a, c), math.atan2(c, a)
            ref_theta, ref_phi = target[b, j + 1], target[b, j + 2]
            flip_phi = _wrap(phi + math.pi)
            keep = abs(_wrap(phi - ref_phi)) + abs(theta - ref_theta)
            if abs(_wrap(flip_phi - ref_phi)) + abs(-theta - ref_theta) < keep:
                theta, phi = -theta, flip_phi
            out[b, j], out[b, j + 1], out[b, j + 2] = u_to[b, j], theta, ref_phi if theta == 0.0 else phi
