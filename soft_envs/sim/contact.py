"""Contact of the soft arms' bodies with their scene, compiled with the batched core's step.

The body. An arm's collision envelope is capsules of radius ``Chain.body_radius`` on the segments of
its backbone (the base origin, then the frame origins of ``Chain.backbone_links()``: one point per
rigid link along each section), in the arm's base frame: the points and their Jacobians in ``u``
come from :mod:`soft_envs.sim.backbone_kernels`.

The contact model: a penalty with damping and regularised Coulomb friction per (segment, shape)
pair, at the segment's witness point (:func:`soft_envs.collision.segment_shape_distance`, one
contact a pair; a witness at a segment's start point is the previous segment's contact, counted
there once): penetration ``δ = r − d`` (``d`` the segment's distance to the shape's surface),
normal force ``f_n = max(0, k δ − c v_n)`` along the shape's outward normal ``n``, friction
``f_t = −μ f_n v_t / √(|v_t|² + v_s²)`` (``v`` the witness point's velocity relative to the shape's
surface; ``v_s`` the stiction speed: below it friction acts as a viscous damper of slope
``μ f_n / v_s``), the generalised force ``Jᵀ (f_n n + f_t)`` with ``J = ∂p/∂u`` at the witness
point. The shape receives the opposite force at its surface point (the scene's ``wrench``, for free
objects).

Integration. The contact force acts at the step's end, whole (as MuJoCo's and Drake's contact
impulses do: implicit in the end state, first order in time for the contact), not split between the
step's two ends by the generalised-α weights: an impact that the step does not resolve (PETER's
bending mode at the tip meets a sphere within one 1/120 s step) then loses energy instead of
gaining it. It is linearised at the latest end state, ``F_c(u, u̇) ≈ F_c(u_p, u̇_p) − K_c (u − u_p) −
D_c (u̇ − u̇_p)`` with ``K_c = Jᵀ k n nᵀ J`` and ``D_c = Jᵀ (c n nᵀ + μ f_n / √(|v_t|² + v_s²) (I − n nᵀ)) J``,
both in the solve's matrix (:func:`soft_envs.sim.batched_integrator.solve_pass`'s ``extra``), and the
solve is repeated at the new end state until it moves by less than :data:`CONTACT_TOLERANCE`
(Newton's method; after the predictor and after each corrector pass). So the stiff contact does not
bound the time step, and an arm at rest against a wall is in exact static equilibrium (its elastic
force equals the contact's). Measured (``soft-envs bench contact``): with the arm's own Rayleigh
damping (the envs' default) the energy of an arm swinging into a sphere never rises; with no damping
at all, the method's carried acceleration can return part of an unresolved impact's energy, which is
why the checks run at the default damping.

Sub-steps. Acting at the step's end, the contact sees only where a step ends: a body that moves
further in one step than the penetration allowed can end deep in a shape's edge, or sweep past a
small shape with every end state clear, the touch never felt nor counted (the PCC arm's tip under
random actions: up to 6 m/s, 30 mm a 5 ms step against its 8.8 mm radius). So where a step moved a
backbone point by ``d`` > :data:`SWEEP_LENGTH` with a shape's bound within ``r + d`` of the body at
either end, the step is taken again as ``⌈d / SWEEP_LENGTH⌉`` sub-steps (at most the scene's
``max_substeps``), each a whole contact step of ``dt / m`` with the torque and the rest configuration
interpolated linearly: exactly ``m`` shorter steps (``tests/sim/test_contact.py``). Measured
(``soft-envs bench contact``'s random-action table, 32 PCC arms × 200 random steps): the deepest
penetration 1.93 mm in whole steps, 0.87 mm in sub-steps; a 2 mm sphere that the tip capsule cuts
1.5 mm into at 5 m/s is never touched at a whole step's end and is met within 1 mm in sub-steps.
Slow arms never split (PETER's reach, the IK controllers): the check costs an evaluation of the
backbone's points at the step's start per contact step (the end's is the step's last).

Cost. Each function here is compiled once and called (numba's inlining of them made the cold
compile minutes long). An arm with no shape within reach at the predictor's state and at the end
of the free step from there takes that free step (:func:`arm_step_contact`): it costs the bound
checks and the backbone's points twice (each distinct joint angle's cosine and sine once, the
chain's trig table). Where a shape is within reach, the points' Jacobians are computed once per
pass (the Newton iterations after the first reuse them: modified Newton), the end state's ``c̃``
once per solve, and a pass does not evaluate again the state that the previous pass's last
evaluation found clear. Measured (``soft-envs bench contact``'s cost setting: 256 PETER arms
released from a bend, one thread, thread CPU time, best of 3 of 60 steps, two runs, the other core
busy): free space 3.2-3.5 µs an arm-step; three 12 mm spheres 0.3 m away 4.5 µs (1.3-1.45×; 5.2 µs,
1.6×, before the free step was taken for clear arms); three beside the tip, every arm touching,
9.3-9.8 µs (2.7-3.1×; 9.0-9.2 µs before: the check at ``û`` is an evaluation more).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from soft_envs import kernel_cache  # noqa: F401  (the package's on-disk kernel cache: soft_envs.kernel_cache)
from soft_envs.collision import EMPTY, segment_shape_distance, shape_bound_distance
from soft_envs.sim.backbone_kernels import backbone_jacobian, backbone_points, smooth_point_jacobians
from soft_envs.sim.batched_integrator import corrector_passes, hold, prepare, solve_pass, step_workspace
from soft_envs.sim.batched_kernels import (
    _INLINE,
    _JIT,
    _NO_NRT,
    _evaluation_state,
    configuration,
    terms_of_arm,
    workspace,
)

#: Per-arm diagnostics of the last step (:func:`batch_step_contact`'s ``diag``): contacts, deepest
#: penetration [m], total normal force on the arm [N] and the contact springs' energy ``Σ ½ k δ²`` [J]
#: at the step's end state.
DIAG_CONTACTS, DIAG_PENETRATION, DIAG_NORMAL_FORCE, DIAG_SPRING_ENERGY = 0, 1, 2, 3
#: Newton iterations on the contact per pass of the step, and when they stop: the end state moved by
#: at most this [m or rad] in the last one. 1e-5 (an assumption): 10 µm of a section's length or
#: 1e-5 rad of its bend (≈ 1 µm at a 0.1 m section's end), 1 % of the 1 mm penetration bound and of
#: the reach tasks' tolerance. The lagged friction's fixed point converges linearly (each iterate
#: about 7× closer when the arm is held against a shape): at 1e-10 most touching passes ran all four
#: iterations, the contact step cost 5.9× the free one for 256 arms held against spheres; at 1e-5
#: (with the measurement's evaluation below), 3.0× (``soft-envs bench contact``'s cost table, one
#: run on 2 shared cores), the statics, energy and halving checks unchanged.
CONTACT_ITERATIONS, CONTACT_TOLERANCE = 4, 1e-5
#: The last iteration's evaluation (the state before its solve) stands for the end state's measurement
#: (``diag``, ``touched``, ``wrench``) when that solve moved it by at most this [m or rad]; else the end
#: state is evaluated once more for them.
MEASURED_TOLERANCE = 1e-10
#: The most shape slots a scene holds per arm.
MAX_SHAPES = 64
#: A contact step near a shape is split into sub-steps where a backbone point moves further than this
#: [m] (:func:`substep_count`). The contact acts at a step's end only: a body that moves further in
#: one step can carry that far into a shape before its force acts (its end state deep in the shape's
#: edge, or past a small shape unseen). 1 mm, the penetration the tasks allow (an assumption sized by
#: the PCC arm's random-action episodes, ``soft-envs bench contact``'s random-action table, 32 arms ×
#: 200 steps: whole 5 ms steps of its body, up to 6 m/s (30 mm a step), met spheres 1.9 mm deep and
#: passed through some unseen; sub-steps of at most half its 8.8 mm radius, 1.2 mm; of 2 mm, 1.15 mm
#: over three seeds; of 1 mm, 0.87 mm on seed 0 and 1.15 mm once in 19,200 env steps over three).
SWEEP_LENGTH = 1e-3
#: The most sub-steps a contact step is split into (:func:`substep_count`): 32 mm at 1 mm each.
MAX_SUBSTEPS = 32


@njit(**_NO_NRT)
def contact_forces(P, PJ, w, shapes, shape_velocity, radius, cp, weights, force, matrix, with_matrix, out, Jp,
                   record, diag, touched, wrench, near, held):
    """The contact's generalised force ``force`` ``(n,)`` of one arm at backbone points ``P`` with
    Jacobians ``PJ`` and rate ``w`` against ``shapes`` ``(S, 16)`` moving at ``shape_velocity``
    ``(S, 6)`` (linear [m/s], angular [rad/s] about the shape's origin); ``cp`` ``(S, 4)`` each
    shape's (k [N/m], c [N s/m], μ, v_s [m/s]). With ``with_matrix``, ``matrix`` ``(n, n)`` = ``w_u K_c + w_v D_c``
    (``weights`` = ``(w_u, w_v)``). With ``record``, ``diag``, ``touched`` ``(S,)`` and ``wrench``
    ``(S, 6)`` (the force on each shape and its moment about the shape's origin) are written.
    ``out`` ``(8,)`` and ``Jp`` ``(3, n)`` scratch. Without ``near`` (no shape within reach, :func:`_near`)
    only the zeros are written. ``held`` ``(p + 1, ≥ S)``: the (segment, shape) pairs that pushed at an
    earlier evaluation of this step; one that pushes now is marked, and one no longer pushing keeps its
    normal stiffness and damping in ``matrix`` (no force), so that Newton's iterations do not cycle
    between a state that penetrates and a state the force lifted just clear (the free step from there
    penetrating again: the step then ended inside the shape, up to a few mm deep on the light PCC arm)."""
    n = w.shape[0]
    wu, wv = weights[0], weights[1]
    for i in range(n):
        force[i] = 0.0
        if with_matrix:
            for j in range(n):
                matrix[i, j] = 0.0
    if record:
        diag[DIAG_CONTACTS] = 0.0
        diag[DIAG_PENETRATION] = 0.0
        diag[DIAG_NORMAL_FORCE] = 0.0
        diag[DIAG_SPRING_ENERGY] = 0.0
        for s in range(shapes.shape[0]):
            touched[s] = False
            for r in range(6):
                wrench[s, r] = 0.0
    for seg in range(P.shape[0] - 1 if near else 0):
        a, b = P[seg], P[seg + 1]
        for s in range(shapes.shape[0]):
            row = shapes[s]
            kept = with_matrix and held[seg, s]
            if row[0] == EMPTY or (shape_bound_distance(a, b, row) >= radius and not kept):
                continue
            k, damping, mu, vs = cp[s, 0], cp[s, 1], cp[s, 2], cp[s, 3]
            segment_shape_distance(a, b, row, out)
            depth = radius - out[0]
            t = out[1]
            if (depth <= 0.0 and not kept) or (seg > 0 and t <= 0.0):
                continue  # (t = 0: the shared point, the previous segment's contact, as deep or deeper)
            nx, ny, nz = out[5], out[6], out[7]
            for r in range(3):
                for i in range(n):
                    Jp[r, i] = (1.0 - t) * PJ[seg, r, i] + t * PJ[seg + 1, r, i]
            if depth <= 0.0:  # clear now, pushing before: its normal stiffness and damping stay in the matrix
                _add_normal(matrix, Jp, nx, ny, nz, wu * k + wv * damping, n)
                continue
            vx = vy = vz = 0.0
            for i in range(n):
                vx += Jp[0, i] * w[i]
                vy += Jp[1, i] * w[i]
                vz += Jp[2, i] * w[i]
            sv = shape_velocity[s]  # the shape's surface point's velocity
            lx, ly, lz = out[2] - row[1], out[3] - row[2], out[4] - row[3]
            vx -= sv[0] + sv[4] * lz - sv[5] * ly
            vy -= sv[1] + sv[5] * lx - sv[3] * lz
            vz -= sv[2] + sv[3] * ly - sv[4] * lx
            vn = nx * vx + ny * vy + nz * vz
            fn = k * depth - damping * vn
            if fn <= 0.0 and kept:
                _add_normal(matrix, Jp, nx, ny, nz, wu * k + wv * damping, n)
            if record:
                diag[DIAG_CONTACTS] += 1.0
                diag[DIAG_PENETRATION] = max(diag[DIAG_PENETRATION], depth)
                diag[DIAG_SPRING_ENERGY] += 0.5 * k * depth * depth
                touched[s] = True
            if fn <= 0.0:
                continue
            held[seg, s] = True
            tx, ty, tz = vx - vn * nx, vy - vn * ny, vz - vn * nz
            slope = mu * fn / math.sqrt(tx * tx + ty * ty + tz * tz + vs * vs)
            fx, fy, fz = fn * nx - slope * tx, fn * ny - slope * ty, fn * nz - slope * tz
            for i in range(n):
                force[i] += Jp[0, i] * fx + Jp[1, i] * fy + Jp[2, i] * fz
            if with_matrix:  # Jpᵀ ((w_u k + w_v c) n nᵀ + w_v slope (I − n nᵀ)) Jp
                normal = wu * k + wv * damping - wv * slope
                tangent = wv * slope
                for i in range(n):
                    gi = nx * Jp[0, i] + ny * Jp[1, i] + nz * Jp[2, i]
                    for j in range(n):
                        gj = nx * Jp[0, j] + ny * Jp[1, j] + nz * Jp[2, j]
                        matrix[i, j] += normal * gi * gj + tangent * (
                            Jp[0, i] * Jp[0, j] + Jp[1, i] * Jp[1, j] + Jp[2, i] * Jp[2, j])
            if record:
                diag[DIAG_NORMAL_FORCE] += fn
                wrench[s, 0] -= fx
                wrench[s, 1] -= fy
                wrench[s, 2] -= fz
                wrench[s, 3] -= ly * fz - lz * fy
                wrench[s, 4] -= lz * fx - lx * fz
                wrench[s, 5] -= lx * fy - ly * fx


@njit(**_NO_NRT)
def _add_normal(matrix, Jp, nx, ny, nz, weight, n):
    """``matrix += weight Jpᵀ n nᵀ Jp`` (a contact's normal stiffness and damping, weighted)."""
    for i in range(n):
        gi = nx * Jp[0, i] + ny * Jp[1, i] + nz * Jp[2, i]
        for j in range(n):
            matrix[i, j] += weight * gi * (nx * Jp[0, j] + ny * Jp[1, j] + nz * Jp[2, j])


@njit(**_JIT)
def contact_workspace(n_points, n, nc, K):
    """Scratch of one arm's contact (:func:`arm_contact`): four vectors of ``n``, the matrix ``(n, n)``,
    ``P`` ``(p + 1, 3)``, ``Jc`` ``(p + 1, 3, 3N)``, ``PJ`` ``(p + 1, 3, n)``, the joints' axes ``(K, 6)``,
    the distance's output ``(8,)``, ``Jp`` ``(3, n)``, the pairs held this step ``(p + 1, MAX_SHAPES)``
    (:func:`contact_forces`), and :func:`arm_step_contact`'s: a sub-step's state and inputs ``(8, n)``,
    the step's start points ``(p + 1, 3)``, the sub-steps' touches and wrench ``(MAX_SHAPES, 7)``."""
    return (np.empty((4, n)), np.empty((n, n)), np.empty((n_points + 1, 3)), np.empty((n_points + 1, 3, nc)),
            np.empty((n_points + 1, 3, n)), np.empty((K, 6)), np.empty(8), np.empty((3, n)),
            np.zeros((n_points + 1, MAX_SHAPES), dtype=np.bool_), np.empty((8, n)), np.empty((n_points + 1, 3)),
            np.empty((MAX_SHAPES, 7)))


@njit(**_NO_NRT)
def arm_contact(topology, scene, u, w, c, weights, with_matrix, record, force, ws, cws, diag, touched, wrench,
                reuse=False):
    """The contact's generalised force (and with ``with_matrix`` its matrix ``cws[1]``) of one arm at
    ``(u, u̇ = w)`` with ``c̃ = c``; ``scene`` = ``(shapes, shape_velocity, cp, radius, points)``. With
    ``reuse``, the points' Jacobians in the scratch (this arm's, of a state a Newton step away) are
    used again (modified Newton). Returns whether a shape was within reach or a pair held (then the
    scratch holds this arm's Jacobians: this state's, or with ``reuse`` the earlier ones)."""
    ints, table, trig, sec, lref = topology
    shapes, shape_velocity, cp, radius, points = scene
    matrix, P, Jc, PJ, axes, out, Jp = cws[1], cws[2], cws[3], cws[4], cws[5], cws[6], cws[7]
    backbone_points(ints, table, trig, c, points, axes, P, ws[12])
    # a held pair stays in the matrix; else a shape within reach of a capsule
    near = (with_matrix and _any(cws[8], shapes.shape[0])) or _near(P, shapes, radius)
    if near and not reuse:  # (no shape within reach of a capsule: no force, no Jacobian needed)
        backbone_jacobian(ints, table, points, axes, P, Jc)
        _evaluation_state(sec, lref, u, w, c, ws)
        smooth_point_jacobians(Jc, ws[6], 2 if sec[0] != 0 else 3, PJ)
    contact_forces(P, PJ, w, shapes, shape_velocity, radius, cp, weights, force, matrix, with_matrix, out, Jp,
                   record, diag, touched, wrench, near, cws[8])
    return near


@njit(**_INLINE)
def _near(P, shapes, radius):
    """Whether a shape's bound (:func:`soft_envs.collision.shape_bound_distance`) is within ``radius``
    of a backbone segment."""
    for seg in range(P.shape[0] - 1):
        for s in range(shapes.shape[0]):
            if shapes[s, 0] != EMPTY and shape_bound_distance(P[seg], P[seg + 1], shapes[s]) < radius:
                return True
    return False


@njit(**_INLINE)
def _any(flags, S):
    """Whether any entry of the boolean array ``flags`` ``(p, ≥ S)`` is set in its first ``S`` columns."""
    for i in range(flags.shape[0]):
        for s in range(S):
            if flags[i, s]:
                return True
    return False


@njit(**_NO_NRT)
def arm_step_contact(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, tau_s, tau_e, cancel,
                     fresh, coefficients, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws, cws, diag,
                     touched, wrench, max_substeps):
    """:func:`~soft_envs.sim.batched_integrator.arm_step` with the scene's contact (module docstring):
    one :func:`contact_step` of the whole step, taken again as ``m`` contact steps of ``dt / m`` where a
    backbone point moved by more than :data:`SWEEP_LENGTH` with a shape within reach of its sweep
    (:func:`substep_count`; ``m`` at most ``max_substeps``, 1: never), the torque and the rest
    configuration interpolated linearly across the step (``cws[9]`` a sub-step's start state and
    inputs, ``cws[11]`` the sub-steps' touches and wrench). The measurements (``diag``, ``touched``,
    ``wrench``) are the end state's, or over the sub-steps: the most contacts and the deepest
    penetration, the mean normal force and wrench (the step's impulse over its length), a shape
    touched in any of them and the end state's spring energy."""
    P0 = cws[10]
    if max_substeps > 1:
        backbone_points(topology[0], topology[1], topology[2], c, scene[4], cws[5], P0, ws[12])
    contact_step(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, tau_s, tau_e, cancel,
                 fresh, coefficients, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws, cws, diag,
                 touched, wrench)
    m = min(substep_count(scene, P0, cws[2]), max_substeps) if max_substeps > 1 else 1
    if m == 1:
        return
    n, S = u.shape[0], scene[0].shape[0]
    sub, total = cws[9], cws[11]
    for i in range(n):
        sub[0, i], sub[1, i], sub[2, i], sub[3, i] = u[i], w[i], a[i], c[i]
    for s in range(S):
        for r in range(7):
            total[s, r] = 0.0
    contacts = depth = force = 0.0
    part = (coefficients[0] / m, coefficients[1], coefficients[2], coefficients[3], coefficients[4])
    for j in range(m):
        f0, f1 = j / m, (j + 1) / m
        for i in range(n):
            sub[4, i], sub[5, i] = tau_s[i] + f0 * (tau_e[i] - tau_s[i]), tau_s[i] + f1 * (tau_e[i] - tau_s[i])
            sub[6, i], sub[7, i] = rest_s[i] + f0 * (rest_e[i] - rest_s[i]), rest_s[i] + f1 * (rest_e[i] - rest_s[i])
        first = fresh and j == 0  # (the carried acceleration is consistent after the first sub-step)
        contact_step(topology, mass, inertia, gravity, k, rayleigh, sub[0], sub[1], sub[2], sub[3], sub[6], sub[7],
                     sub[4], sub[5], cancel, first, part, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out,
                     c_out, ws, sws, cws, diag, touched, wrench)
        for i in range(n):
            sub[0, i], sub[1, i], sub[2, i], sub[3, i] = u_out[i], w_out[i], a_out[i], c_out[i]
        contacts, depth, force = max(contacts, diag[DIAG_CONTACTS]), max(depth, diag[DIAG_PENETRATION]), \
            force + diag[DIAG_NORMAL_FORCE]
        for s in range(S):
            if touched[s]:
                total[s, 6] = 1.0
            for r in range(6):
                total[s, r] += wrench[s, r]
    diag[DIAG_CONTACTS], diag[DIAG_PENETRATION], diag[DIAG_NORMAL_FORCE] = contacts, depth, force / m
    for s in range(S):
        touched[s] = total[s, 6] != 0.0
        for r in range(6):
            wrench[s, r] = total[s, r] / m


@njit(**_NO_NRT)
def substep_count(scene, P0, P):
    """How many sub-steps a contact step needs: 1, or where some backbone point moved from ``P0`` (the
    step's start) to ``P`` (its end; both ``(p + 1, 3)`` [m], the end's as :func:`contact_step` leaves
    it in the scratch's ``cws[2]``) by ``d`` > :data:`SWEEP_LENGTH` and a shape's bound is within
    ``r + d`` of the body (radius ``r``) at either end, ``⌈d / SWEEP_LENGTH⌉``."""
    shapes, radius = scene[0], scene[3]
    moved = 0.0
    for i in range(P.shape[0]):
        dx, dy, dz = P[i, 0] - P0[i, 0], P[i, 1] - P0[i, 1], P[i, 2] - P0[i, 2]
        moved = max(moved, math.sqrt(dx * dx + dy * dy + dz * dz))
    if not moved > SWEEP_LENGTH:
        return 1
    if not (_near(P, shapes, radius + moved) or _near(P0, shapes, radius + moved)):
        return 1
    return int(math.ceil(moved / SWEEP_LENGTH))


@njit(**_NO_NRT)
def contact_step(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, tau_s, tau_e, cancel,
                 fresh, coefficients, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws, cws, diag,
                 touched, wrench):
    """One step of :func:`arm_step_contact` with the scene's contact acting at its end (module
    docstring): Newton's method on the contact in the predictor's solve and in each corrector pass's
    (:func:`_end_contact`); the end state's contact measured into ``diag``, ``touched``, ``wrench``.
    Where no shape is within reach of the body (:func:`_near`) at the predictor's state ``û`` (the
    contact's first evaluation), the free step is taken from there, and kept where none is within
    reach at its end either: the contact step would find no force at those states and end at the
    same state (its Newton iterations stop once the force is zero before and after a solve). It
    leaves the end state's backbone points in ``cws[2]`` (its last evaluation's, of the end state or
    of one within :data:`MEASURED_TOLERANCE` of it)."""
    ints, table, trig, sec, lref = topology
    shapes, points, radius = scene[0], scene[4], scene[3]
    M_e, A, vec = sws
    g_e, h_e = vec[9], vec[10]
    n = u.shape[0]
    terms_of_arm(topology, mass, inertia, gravity, u, w, c, True, True, M_s, h_s, g_s, ws)
    prepare(u, w, a, k, rayleigh, rest_s, tau_s, cancel, fresh, coefficients, passes, M_s, h_s, A, vec)
    for i in range(n):  # linearised first at (û, ŵ): a_{n+1} = 0
        u_out[i], w_out[i], a_out[i] = vec[4, i], vec[5, i], 0.0
    configuration(u_out, c, True, sec[0] != 0, sec[1] != 0, sec[2], lref, c_out)
    if not _near_at(topology, c_out, points, shapes, radius, ws, cws):  # the free step: predict's solve, the passes
        solve_pass(k, rest_e, tau_e, coefficients, M_s, h_s, M_s, False, A, vec, A, False, u_out, w_out, a_out)
        corrector_passes(topology, mass, inertia, gravity, k, rest_e, tau_e, cancel, coefficients, passes, M_s, h_s,
                         g_s, c, u_out, w_out, a_out, c_out, ws, sws)
        if not _near_at(topology, c_out, points, shapes, radius, ws, cws):
            _no_contact(diag, touched, wrench)
            return
        for i in range(n):  # within reach at the end: the contact step from û (prepare's vec is intact)
            u_out[i], w_out[i], a_out[i] = vec[4, i], vec[5, i], 0.0
        configuration(u_out, c, True, sec[0] != 0, sec[1] != 0, sec[2], lref, c_out)
    held = cws[8]
    for i in range(held.shape[0]):  # no pair has pushed yet this step (the scene's slots: no other is read)
        for s in range(shapes.shape[0]):
            held[i, s] = False
    recorded = _end_contact(topology, scene, k, rest_e, tau_e, coefficients, M_s, h_s, M_s, False, c, A, vec,
                            u_out, w_out, a_out, c_out, ws, cws, diag, touched, wrench, NOT_MEASURED)
    for _ in range(passes):  # (c_out is the c̃ of u_out here: _end_contact keeps it so)
        terms_of_arm(topology, mass, inertia, gravity, u_out, w_out, c_out, True, True, M_e, h_e, g_e, ws)
        if cancel:  # the controller's C u̇ of the step's start cancels the arm's: held there
            for i in range(n):
                h_e[i] = g_e[i] + (h_s[i] - g_s[i])
        recorded = _end_contact(topology, scene, k, rest_e, tau_e, coefficients, M_e, h_e, M_s, True, c, A, vec,
                                u_out, w_out, a_out, c_out, ws, cws, diag, touched, wrench, recorded)
    if recorded == NOT_MEASURED:  # the Newton iterations ran out: measure the end state itself
        arm_contact(topology, scene, u_out, w_out, c_out, (0.0, 0.0), False, True, cws[0][0], ws, cws, diag,
                    touched, wrench)


@njit(**_INLINE)
def _near_at(topology, c, points, shapes, radius, ws, cws):
    """:func:`_near` of the backbone at ``c̃ = c`` (into the scratch ``cws``)."""
    P = cws[2]
    backbone_points(topology[0], topology[1], topology[2], c, points, cws[5], P, ws[12])
    return _near(P, shapes, radius)


@njit(**_INLINE)
def _no_contact(diag, touched, wrench):
    """The measurements of a step that ended with no shape within reach: zero, nothing touched."""
    for i in range(diag.shape[0]):
        diag[i] = 0.0
    for s in range(touched.shape[0]):
        touched[s] = False
        for r in range(wrench.shape[1]):
            wrench[s, r] = 0.0


#: :func:`_end_contact`'s outcomes: the end state's contact not measured by its last evaluation; measured
#: (to :data:`MEASURED_TOLERANCE`); measured at exactly the end state, where no shape was within reach
#: and no pair held (its force and matrix zero: the next pass's first evaluation, of the same state,
#: is that one again and is skipped).
NOT_MEASURED, MEASURED, CLEAR = 0, 1, 2


@njit(**_NO_NRT)
def _end_contact(topology, scene, k, rest_e, tau_e, coefficients, M_e, h_e, M_s, corrected, c, A, vec, u_out, w_out,
                 a_out, c_out, ws, cws, diag, touched, wrench, before):
    """The solves of one pass (:func:`~soft_envs.sim.batched_integrator.solve_pass`) with the contact's
    force at the step's end, whole, linearised at the latest end state ``(u_out, w_out)`` (its
    ``a_{n+1}`` = ``a_out``, its ``c̃`` = ``c_out``, kept so on return); repeated while that state moves
    by more than :data:`CONTACT_TOLERANCE` (Newton's method, at most :data:`CONTACT_ITERATIONS` solves;
    the first stands where no contact is near the states before and after it). Each evaluation is
    measured into ``diag``, ``touched``, ``wrench``; ``before`` the previous pass's outcome (its
    :data:`CLEAR`: this state's evaluation is already in ``cws``, ``diag``, ``touched``, ``wrench``).
    Returns :data:`NOT_MEASURED`, :data:`MEASURED` or :data:`CLEAR` (the last evaluation's)."""
    sec, lref = topology[3], topology[4]
    matrix = cws[1]
    tau_end, force, previous = cws[0][1], cws[0][2], cws[0][3]
    dt, af, gamma, beta = coefficients[0], coefficients[2], coefficients[3], coefficients[4]
    weights = (beta * dt * dt, gamma * dt)
    n = tau_e.shape[0]
    was_touching = False
    jacobians = False  # whether the scratch holds this arm's points' Jacobians (of this pass's first state)
    for iteration in range(CONTACT_ITERATIONS):
        near = False  # (before = CLEAR, at iteration 0: force and matrix zero, measured, no Jacobian)
        if iteration > 0 or before != CLEAR:
            near = arm_contact(topology, scene, u_out, w_out, c_out, weights, True, True, force, ws, cws, diag,
                               touched, wrench, jacobians)
            jacobians = jacobians or near
        touching = False
        for i in range(n):
            touching = touching or force[i] != 0.0
        if iteration > 0 and not (touching or was_touching):  # no contact before the last solve nor after it
            return MEASURED if near else CLEAR
        for i in range(n):  # F_c(u_p) + (β dt² K_c + γ dt D_c) a_p: the force linearised at a_{n+1} = a_p
            s = force[i]
            for j in range(n):
                s += matrix[i, j] * a_out[j]
            tau_end[i] = tau_e[i] + s / (1.0 - af)  # the whole force at the end (solve_pass weighs it 1 − α_f)
            previous[i] = u_out[i]
        solve_pass(k, rest_e, tau_end, coefficients, M_e, h_e, M_s, corrected, A, vec, matrix, True, u_out, w_out,
                   a_out)
        configuration(u_out, c, True, sec[0] != 0, sec[1] != 0, sec[2], lref, c_out)
        was_touching = touching
        moved = 0.0
        for i in range(n):
            moved = max(moved, abs(u_out[i] - previous[i]))
        if moved <= CONTACT_TOLERANCE:
            return MEASURED if moved <= MEASURED_TOLERANCE else NOT_MEASURED
    return NOT_MEASURED


@njit(**_JIT)
def batch_step_contact(ints, table, trig, sec, lref, mass, inertia, gravity, stiffness, rayleigh, u, w, a, c, rest_s,
                       rest_e, tau_s, tau_e, cancel, fresh, active, dt, am, af, gamma, beta, passes, shapes,
                       shape_velocity, cp, radius, points, M_s, h_s, g_s, u_out, w_out, a_out, c_out, diag, touched,
                       wrench, max_substeps):
    """:func:`arm_step_contact` of every ``active`` arm (the others' state copied unchanged, their
    measurements zero); per-arm arrays have the batch on their leading axis: ``shapes`` ``(B, S, 16)``,
    ``shape_velocity`` ``(B, S, 6)``, ``cp`` ``(B, S, 4)``, ``diag`` ``(B, 3)``, ``touched`` ``(B, S)``,
    ``wrench`` ``(B, S, 6)``; ``max_substeps`` the most sub-steps of a step (:func:`arm_step_contact`)."""
    n = u.shape[1]
    ws = workspace(lref.shape[0], n, ints.shape[0], trig.shape[0])
    sws = step_workspace(n)
    cws = contact_workspace(points.shape[0], n, 3 * lref.shape[0], ints.shape[0])
    _step_arms((ints, table, trig, sec, lref), (mass, inertia, gravity, stiffness, rayleigh),
               (u, w, a, c, rest_s, rest_e, tau_s, tau_e), (cancel, fresh, active), (dt, am, af, gamma, beta),
               passes, (shapes, shape_velocity, cp, radius, points), (M_s, h_s, g_s), (u_out, w_out, a_out, c_out),
               (diag, touched, wrench), max_substeps, ws, sws, cws)


@njit(**_NO_NRT)
def _step_arms(topology, params, arrays, flags, coefficients, passes, scene, start_terms, out, record, max_substeps, ws,
               sws, cws):
    """The loop of :func:`batch_step_contact` over arms (no reference counting of the per-arm views)."""
    mass, inertia, gravity, stiffness, rayleigh = params
    u, w, a, c, rest_s, rest_e, tau_s, tau_e = arrays
    cancel, fresh, active = flags
    shapes, shape_velocity, cp, radius, points = scene
    M_s, h_s, g_s = start_terms
    u_out, w_out, a_out, c_out = out
    diag, touched, wrench = record
    for b in range(u.shape[0]):
        if not active[b]:
            hold(u[b], w[b], a[b], c[b], u_out[b], w_out[b], a_out[b], c_out[b])
            for i in range(diag.shape[1]):
                diag[b, i] = 0.0
            continue
        arm_step_contact(topology, mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b], u[b], w[b], a[b], c[b],
                         rest_s[b], rest_e[b], tau_s[b], tau_e[b], cancel[b], fresh[b], coefficients, passes,
                         (shapes[b], shape_velocity[b], cp[b], radius, points), M_s[b], h_s[b], g_s[b], u_out[b],
                         w_out[b], a_out[b], c_out[b], ws, sws, cws, diag[b], touched[b], wrench[b], max_substeps)


@njit(**_JIT)
def batch_contact(ints, table, trig, sec, lref, u, w, c, shapes, shape_velocity, cp, radius, points, force, diag,
                  touched, wrench):
    """The contact's generalised force ``(B, n)`` and diagnostics of every arm at its state (no step)."""
    n = u.shape[1]
    ws = workspace(lref.shape[0], n, ints.shape[0], trig.shape[0])
    cws = contact_workspace(points.shape[0], n, 3 * lref.shape[0], ints.shape[0])
    weights = (0.0, 0.0)
    for b in range(u.shape[0]):
        arm_contact((ints, table, trig, sec, lref), (shapes[b], shape_velocity[b], cp[b], radius, points), u[b], w[b],
                    c[b], weights, False, True, force[b], ws, cws, diag[b], touched[b], wrench[b])
