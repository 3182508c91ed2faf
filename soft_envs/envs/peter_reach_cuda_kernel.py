"""The CUDA kernel of ``soft_envs/PeterReach-v0``'s vector step on a GPU, realism included.

One thread an arm, what :class:`~soft_envs.envs.peter_arms.PeterArms` does to one row on the CPU:

* **reset** (``mode`` 1: the arms in ``reset``; ``mode`` 2: the same with the perturbations already
  in ``draws``, e.g. the CPU env's, and the goals kept): the ``realism=`` draws (one uniform per
  perturbation and element from the arm's ``xoroshiro128p`` stream, in the table's order, over the
  ranges the env resolved), then what they do (``PeterArms._apply_realism``): leg gains, offsets and
  leaks, the valves' delay, the sensor's latency and noise, the base tilt (the tip's frame and
  gravity in the base), and the plant (leg-circle radius, module mass, leg stiffness, payload:
  masses, inertias, stiffness and the legs-to-arc map from :func:`plant_basis`); the arm at rest on
  its legs, the sensor's history full of that reading, a goal from the bank. Under ``"ideal"``
  nothing is drawn and the rest state is the host's
  (:meth:`~soft_envs.sim.batched_bodies.BatchedSoftPeter.reset_inflation`, to the bit).
* **step** (``mode`` 0): the action into set-points and leg targets given to the valves (at once,
  or queued ``delay`` after ``now``: ``BatchedDeadTime``), then ``frame_skip`` physics steps of
  the legs (fill and vent rates; gain, offset and leak) and of the arm (the CPU core's
  ``arm_step``, compiled for CUDA from the same source, :mod:`soft_envs.sim.batched_cuda`),
  checking the PCC model's validity after each (an arm outside it goes back to its last valid
  state, at rest, and its episode terminates), the tip in the goals' frame, the sensor (latency,
  Gaussian noise on the position), the observation, the reward terms from the measured tip, and
  the autoreset of the ended arms (``SameStep``).

With obstacles (``n_shapes`` > 0) each physics step is the contact's
(:func:`soft_envs.sim.contact.arm_step_contact`, compiled for CUDA from the same source as the rest
of the core) against the arm's spheres, which a reset takes from the task bank (with its goal) and
turns into shape rows in the arm's base frame (``Rᵀ`` of its tilt: ``sphere_rows``); after each
physics step the touches are counted as ``PeterArms.simulate`` counts them (a touch of an obstacle
not touched at the step before), the deepest penetration kept and the total normal force read (an
arm that leaves the PCC model keeps that step's, as the single env does). The observation appends
each obstacle's centre and radius; ``success`` needs no collision this episode.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from soft_envs.collision import SPHERE
from soft_envs.robots.peter import Peter
from soft_envs.sim.batched_cuda import cuda, cuda_module, device_functions
from soft_envs.sim.contact import DIAG_NORMAL_FORCE, DIAG_PENETRATION, MAX_SUBSTEPS

#: ``coef`` entries of the kernel (one float64 array), by name.
COEF = ("dt", "alpha_m", "alpha_f", "gamma", "beta", "fill_step", "vent_step", "rest_length", "fill_rate",
        "reference_length", "distance_weight", "success_threshold", "success_reward", "shortest_leg", "gravity",
        "radius", "module_mass", "leg_stiffness", "payload", "command_delay", "control_period")
#: ``slots`` entries: where each perturbation's draws start in a row of ``draws`` (:data:`PERTURBATIONS` order).
PERTURBATIONS = ("leg_gain", "supply_gain", "leg_offset", "leak_rate", "command_delay", "observation_noise",
                 "observation_latency", "base_tilt", "radius_error", "leg_stiffness_error", "mass_error", "payload")
#: ``flags`` entries (int64): realism on, instant legs, the tilt turns the tip, corrector passes, max steps.
FLAGS = ("realistic", "instant", "tilted", "passes", "max_steps")
#: Within this of its due time a queued command acts (``BatchedDeadTime.EPS``) [s].
DUE_EPS = 1e-9
#: Largest finite value of a state entry (the CPU core's finiteness check, ``peter_validity``).
HUGE = 1e300
#: Rates above this [m/s, rad/s] leave the model (``MAX_RATE`` of the CPU check).
MAX_RATE = 1e3


def plant_basis(model: Peter, topology, payload_scale: float = 1.0) -> dict[str, np.ndarray]:
    """The link masses ``(K,)`` [kg] and inertias ``(K, 3)`` [kg m²] of ``model``'s chain as the core
    takes them, as ``mass = M m_M + P m_P`` and ``inertia = M (I_M + r² I_Mr) + P (I_P + r² I_Pr)``
    in the module mass ``M`` [kg], the payload ``P`` [kg] and the leg-circle radius ``r`` [m]; the
    stiffness ``K = k (S₀ + r² S₂)`` (``stiffness``: ``(2, n)``) in the leg stiffness ``k`` [N/m] and the
    legs-to-arc map ``Q = Q₀ + Q₁ / r`` (``legs_to_arc``: ``(2, 3, 3)``), all read off the model at two
    radii (:meth:`Peter.chain`: each link a cylinder of its share of ``M``, the payload on the last plate;
    ``tests/sim/test_batched_cuda.py`` checks the episodes it gives against the CPU env's, whose
    :meth:`BatchedSoftPeter.set_model` builds the chain)."""
    def dynamics(mass: float, radius: float, payload: float) -> tuple[np.ndarray, np.ndarray]:
        plant = model.with_parameters(module_mass=mass, radius=radius, kinematics="pcc")
        return topology.link_dynamics(plant.chain(payload))

    r0, r1 = model.radius, 2.0 * model.radius
    m0, i0 = dynamics(1.0, r0, 0.0)
    _, i1 = dynamics(1.0, r1, 0.0)
    mp, ip0 = dynamics(1.0, r0, payload_scale)
    _, ip1 = dynamics(1.0, r1, payload_scale)
    inertia_mr = (i1 - i0) / (r1**2 - r0**2)
    inertia_p0, inertia_p1 = (ip0 - i0) / payload_scale, (ip1 - i1) / payload_scale
    inertia_pr = (inertia_p1 - inertia_p0) / (r1**2 - r0**2)
    # the elastic stiffness K = k (S₀ + r² S₂) and the legs-to-arc map Q = Q₀ + Q₁ / r, from the model's own
    k0, k1 = (model.with_parameters(leg_stiffness=1.0, radius=r).stiffness().ravel() for r in (r0, r1))
    stiffness_r2 = (k1 - k0) / (r1**2 - r0**2)
    q0, q1 = (model.with_parameters(radius=r).arc_from_legs(np.eye(3)[:, None, :])[:, 0, :].T for r in (r0, r1))
    arc_inverse_r = (q0 - q1) / (1.0 / r0 - 1.0 / r1)
    return {"mass_m": m0, "mass_p": (mp - m0) / payload_scale, "inertia_m": i0 - r0**2 * inertia_mr,
            "inertia_mr": inertia_mr, "inertia_p": inertia_p0 - r0**2 * inertia_pr, "inertia_pr": inertia_pr,
            "stiffness": np.stack((k0 - r0**2 * stiffness_r2, stiffness_r2)),
            "legs_to_arc": np.stack((q0 - arc_inverse_r / r0, arc_inverse_r))}


@cache
def env_kernel(n_modules: int, n_joints: int, n_angles: int, queue: int, history: int,  # noqa: C901
               n_shapes: int = 0, n_points: int = 0):
    """The kernel (module docstring) for arms of ``n_modules`` modules, ``queue`` pending valve
    commands, ``history`` sensor samples at most and ``n_shapes`` obstacles touched by a body of
    ``n_points`` backbone points after the base (0: no contact)."""
    cuda_module()
    from numba import boolean, float64
    from numba.cuda.random import xoroshiro128p_normal_float64, xoroshiro128p_uniform_float64

    functions = device_functions()
    arm_step, evaluation_state, point_state, configuration = (
        functions["arm_step"], functions["_evaluation_state"], functions["point_state"], functions["configuration"])
    n = 3 * n_modules
    n_obs = 12 + n + 4 * n_shapes
    n_links = n_joints
    n_slots, p1 = max(n_shapes, 1), n_points + 1  # (the contact's scratch sizes; unused without obstacles)

    if n_shapes:
        arm_step_contact = functions["arm_step_contact"]

        @cuda.jit(device=True)
        def physics(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, zero, first,
                    coefficients, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws, cws, diag,
                    touched, wrench):
            """One physics step of one arm with the contact of its scene (``arm_step_contact``)."""
            arm_step_contact(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, zero, zero,
                             False, first, coefficients, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws,
                             sws, cws, diag, touched, wrench, MAX_SUBSTEPS)
    else:
        @cuda.jit(device=True)
        def physics(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, zero, first,
                    coefficients, passes, scene, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws, cws, diag,
                    touched, wrench):
            """One physics step of one arm in free space (``arm_step``; the scene's arguments unused)."""
            arm_step(topology, mass, inertia, gravity, k, rayleigh, u, w, a, c, rest_s, rest_e, zero, zero, False,
                     first, coefficients, passes, False, M_s, h_s, g_s, u_out, w_out, a_out, c_out, ws, sws)

    @cuda.jit(device=True)
    def place_obstacles(b, obstacles, rot, shapes, touching, touches):
        """Arm ``b``'s obstacles ``(x, y, z, r)`` (goals' frame [m]; r = 0: none) as sphere rows in its
        base frame (``Rᵀ`` of the goals' frame, ``sphere_rows``), none touched yet."""
        for s in range(n_shapes):
            x, y, z, r = obstacles[b, s, 0], obstacles[b, s, 1], obstacles[b, s, 2], obstacles[b, s, 3]
            for k in range(16):
                shapes[b, s, k] = 0.0
            if r > 0.0:
                shapes[b, s, 0] = SPHERE
                for k in range(3):
                    shapes[b, s, 1 + k] = rot[b, 0, k] * x + rot[b, 1, k] * y + rot[b, 2, k] * z
                    shapes[b, s, 4 + 4 * k] = 1.0
                shapes[b, s, 13] = r
            touching[b, s] = False
        touches[b] = 0

    @cuda.jit(device=True)
    def tally(b, touched, diag, touching, touches, deepest):
        """After a physics step (``PeterArms.simulate``): a touch of an obstacle not touched at the step
        before counts once; returns the deepest penetration [m] so far this period."""
        for s in range(n_shapes):
            if touched[s] and not touching[b, s]:
                touches[b] += 1
            touching[b, s] = touched[s]
        return max(deepest, diag[DIAG_PENETRATION])

    @cuda.jit(device=True)
    def tip_in_goal_frame(ints, table, sec, lref, u, w, c, rot, tilted, ws, out):
        """The tip [m] and its velocity [m/s] in the goals' frame into ``out[:6]``."""
        evaluation_state(sec, lref, u, w, c, ws)
        point_state(ints, table, c, ws[2], out)
        if tilted:
            for part in range(2):
                x, y, z = out[3 * part], out[3 * part + 1], out[3 * part + 2]
                for k in range(3):
                    out[3 * part + k] = rot[k, 0] * x + rot[k, 1] * y + rot[k, 2] * z

    @cuda.jit(device=True)
    def observe(row, tip, goal, setpoint, obstacles):
        """One arm's observation (``reach_observation``): tip, goal, goal − tip, tip velocity, set-points,
        then each obstacle's centre and radius (``PeterArms.observation``)."""
        for k in range(3):
            row[k] = tip[k]
            row[3 + k] = goal[k]
            row[6 + k] = goal[k] - tip[k]
            row[9 + k] = tip[3 + k]
        for i in range(n):
            row[12 + i] = setpoint[i]
        for s in range(n_shapes):
            for k in range(4):
                row[12 + n + 4 * s + k] = obstacles[s, k]

    @cuda.jit(device=True)
    def measure(b, true, hist, count, latency, noise, rng, restart, out):
        """The sensor (``BatchedSensor``): ``true`` ``latency`` samples old, Gaussian noise on the position."""
        if restart:
            for s in range(history):
                for k in range(6):
                    hist[b, s, k] = true[k]
            count[b] = 0
            src = 0
        else:
            count[b] += 1
            slot = count[b] % history
            for k in range(6):
                hist[b, slot, k] = true[k]
            src = (count[b] - latency[b]) % history
        for k in range(6):
            out[k] = hist[b, src, k]
        if noise[b] != 0.0:
            for k in range(3):
                out[k] += noise[b] * xoroshiro128p_normal_float64(rng, b)

    @cuda.jit(device=True)
    def draw(b, draws, ranges, rng):
        """One row of perturbations, uniform over their ranges (``Realism.draw``)."""
        for j in range(draws.shape[1]):
            low, high = ranges[j, 0], ranges[j, 1]
            draws[b, j] = low + (high - low) * xoroshiro128p_uniform_float64(rng, b) if high > low else low

    @cuda.jit(device=True)
    def apply(b, d, slots, coef, gain, offset, leak, perfect, delay, latency, noise, rot, gravity, radius,
              legs_to_arc, mass, inertia, stiffness, basis_m, basis_p, basis_i, basis_k, basis_q):
        """What the drawn row ``d`` does to arm ``b`` (``PeterArms._apply_realism``)."""
        is_perfect = True
        supply = d[slots[1]]
        for i in range(n):
            gain[b, i] = d[slots[0] + i] * supply
            offset[b, i] = d[slots[2] + i]
            leak[b, i] = d[slots[3] + i]
            if gain[b, i] != 1.0 or offset[b, i] != 0.0 or leak[b, i] != 0.0:
                is_perfect = False
        perfect[b] = is_perfect
        delay[b] = coef[19] + d[slots[4]]
        noise[b] = d[slots[5]]
        latency[b] = int(math.floor(d[slots[6]] / coef[20] + 0.5))
        # base tilt about x and y: quaternion (x, y, z, w) of the rotation vector, then its matrix
        tx, ty = d[slots[7]], d[slots[7] + 1]
        th = math.sqrt(tx * tx + ty * ty)
        k = math.sin(0.5 * th) / th if th > 1e-12 else 0.5
        qx, qy, qz, qw = k * tx, k * ty, 0.0, math.cos(0.5 * th)
        rot[b, 0, 0], rot[b, 0, 1], rot[b, 0, 2] = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), \
            2 * (qx * qz + qy * qw)
        rot[b, 1, 0], rot[b, 1, 1], rot[b, 1, 2] = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), \
            2 * (qy * qz - qx * qw)
        rot[b, 2, 0], rot[b, 2, 1], rot[b, 2, 2] = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), \
            1 - 2 * (qx * qx + qy * qy)
        for i in range(3):  # gravity in the base: Rᵀ (0, 0, −g)
            gravity[b, i] = rot[b, 2, i] * -coef[14]
        # the plant: radius, module mass, leg stiffness, payload
        r = coef[15] * (1.0 + d[slots[8]])
        k_leg = coef[17] * (1.0 + d[slots[9]])
        m_module = coef[16] * (1.0 + d[slots[10]])
        load = coef[18] + d[slots[11]]
        radius[b] = r
        for i in range(3):
            for j in range(3):
                legs_to_arc[b, i, j] = basis_q[0, i, j] + basis_q[1, i, j] / r
        for i in range(n):
            stiffness[b, i] = k_leg * (basis_k[0, i] + r * r * basis_k[1, i])
        for link in range(n_links):
            mass[b, link] = m_module * basis_m[link] + load * basis_p[link]
            for k3 in range(3):
                inertia[b, link, k3] = m_module * (basis_i[0, link, k3] + r * r * basis_i[1, link, k3]) \
                    + load * (basis_i[2, link, k3] + r * r * basis_i[3, link, k3])

    @cuda.jit
    def kernel(ints, table, trig, sec, lref, mass, inertia, gravity, stiffness, rayleigh, legs_to_arc, radius,
               leg_cos, leg_sin, u, w, a, c, rest, fresh, clock, legs, current, due, queued, gain, offset, leak,
               extension, perfect, delay, hist, count, latency, noise, rot, draws, ranges, slots, basis_m, basis_p,
               basis_i, basis_k, basis_q, goal, steps, actions, mode, reset, u0, c0, tip0, setpoint0, goals, rng, coef,
               flags, t_low, t_span, frame_skip, obs, final_obs, reward, terminated, truncated, distance, shapes,
               shape_velocity, cp, contact_radius, points, obstacles, bank, touching, touches, collisions, penetration,
               contact_force, success):
        b = cuda.grid(1)
        if b >= u.shape[0]:
            return
        realistic, instant, tilted, passes, max_steps = flags[0] != 0, flags[1] != 0, flags[2] != 0, flags[3], \
            flags[4]
        jac = cuda.local.array((n_modules, 3, 3), float64)  # (the scratch of arm_step, as the core's kernel)
        for i in range(n_modules):
            for r in range(3):
                for p in range(3):
                    jac[i, r, p] = 0.0
        ws = (cuda.local.array(n, float64), cuda.local.array(n, float64), cuda.local.array(n, float64),
              cuda.local.array(n, float64), cuda.local.array(n, float64), cuda.local.array(n, float64), jac,
              cuda.local.array((n, n), float64), cuda.local.array((n_joints, 6), float64),
              cuda.local.array((n_joints, 16), float64), cuda.local.array((n_joints, 6), float64),
              cuda.local.array((n, n), float64), cuda.local.array((n_angles, 2), float64))
        tip = cuda.local.array(6, float64)
        measured = cuda.local.array(6, float64)
        done = False
        if mode == 0:
            sws = (cuda.local.array((n, n), float64), cuda.local.array((n, n), float64),
                   cuda.local.array((12, n), float64))
            M_s = cuda.local.array((n, n), float64)
            h_s = cuda.local.array(n, float64)
            g_s = cuda.local.array(n, float64)
            u1, w1, a1, c1 = (cuda.local.array(n, float64), cuda.local.array(n, float64),
                              cuda.local.array(n, float64), cuda.local.array(n, float64))
            u2, w2, a2, c2 = (cuda.local.array(n, float64), cuda.local.array(n, float64),
                              cuda.local.array(n, float64), cuda.local.array(n, float64))
            rest_s, rest_e = cuda.local.array(n, float64), cuda.local.array(n, float64)
            zero, actual = cuda.local.array(n, float64), cuda.local.array(n, float64)
            cws = (cuda.local.array((4, n), float64), cuda.local.array((n, n), float64),  # contact_workspace's
                   cuda.local.array((p1, 3), float64), cuda.local.array((p1, 3, n), float64),
                   cuda.local.array((p1, 3, n), float64), cuda.local.array((n_joints, 6), float64),
                   cuda.local.array(8, float64), cuda.local.array((3, n), float64),
                   cuda.local.array((p1, n_slots), boolean), cuda.local.array((8, n), float64),
                   cuda.local.array((p1, 3), float64), cuda.local.array((n_slots, 7), float64))
            diag = cuda.local.array(4, float64)
            touched = cuda.local.array(n_slots, boolean)
            wrench = cuda.local.array((n_slots, 6), float64)
            deepest, pushing = 0.0, 0.0
            setpoint = cuda.local.array(n, float64)
            now = clock[b]
            free = -1
            for q in range(queue):
                if free < 0 and due[b, q] == math.inf:
                    free = q
            if delay[b] != 0.0 and free < 0:  # full (longer than the env allows): the oldest is dropped
                free = 0
                for q in range(queue):
                    if due[b, q] < due[b, free]:
                        free = q
            for i in range(n):
                x = min(max(np.float64(actions[b, i]), -1.0), 1.0)
                t = t_low[i] + (x + 1.0) * 0.5 * t_span[i]  # inflation time [s] (SoftEnv._action_to_model)
                setpoint[i] = min(max(2.0 * (t - t_low[i]) / t_span[i] - 1.0, -1.0), 1.0)
                target = coef[7] + coef[8] * t  # eq. 1: the leg's length at that inflation [m]
                if delay[b] == 0.0:
                    current[b, i] = target
                else:
                    queued[b, free, i] = target
                zero[i] = 0.0
                u1[i], w1[i], a1[i], c1[i] = u[b, i], w[b, i], a[b, i], c[b, i]
                rest_s[i] = rest[b, i]
            if delay[b] != 0.0:
                due[b, free] = now + delay[b]
            first = fresh[b] and passes > 0
            coefficients = (coef[0], coef[1], coef[2], coef[3], coef[4])
            bad = False
            for _ in range(frame_skip):
                latest = -1  # the valve commands due now: the latest acts (BatchedDeadTime.at)
                for q in range(queue):
                    if due[b, q] <= now + DUE_EPS and (latest < 0 or due[b, q] > due[b, latest]):
                        latest = q
                if latest >= 0:
                    for i in range(n):
                        current[b, i] = queued[b, latest, i]
                    for q in range(queue):
                        if due[b, q] <= now + DUE_EPS:
                            due[b, q] = math.inf
                for i in range(n):  # the legs toward their targets at the fill and vent rates
                    change = current[b, i] - legs[b, i] if instant else \
                        min(max(current[b, i] - legs[b, i], -coef[6]), coef[5])
                    legs[b, i] = current[b, i] if instant else legs[b, i] + change
                    if not perfect[b]:
                        extension[b, i] = max(extension[b, i] + gain[b, i] * change - leak[b, i] * coef[0], 0.0)
                        actual[i] = coef[7] + offset[b, i] + extension[b, i]
                    else:
                        actual[i] = legs[b, i]
                for m in range(n_modules):  # the rest arc (L, a, b) of each module's legs
                    for r in range(3):
                        s = 0.0
                        for j in range(3):
                            s += legs_to_arc[b, r, j] * actual[3 * m + j]
                        rest_e[3 * m + r] = s
                    rest_e[3 * m] -= coef[9]
                physics((ints, table, trig, sec, lref), mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b],
                        u1, w1, a1, c1, rest_s, rest_e, zero, first, coefficients, passes,
                        (shapes[b], shape_velocity, cp, contact_radius, points), M_s, h_s, g_s, u2, w2, a2, c2, ws,
                        sws, cws, diag, touched, wrench)
                if n_shapes:  # (before the validity check, as on the CPU: an invalid step's contact counts)
                    deepest = tally(b, touched, diag, touching, touches, deepest)
                    pushing = diag[DIAG_NORMAL_FORCE]
                # validity (PeterArms.violations): finite, no leg crushed, bends <= π, rates below MAX_RATE
                for i in range(n):
                    if not (abs(u2[i]) < HUGE and abs(w2[i]) < MAX_RATE):
                        bad = True
                for m in range(n_modules):
                    x, ab, bb = u2[3 * m], u2[3 * m + 1], u2[3 * m + 2]
                    if math.sqrt(ab * ab + bb * bb) > math.pi:
                        bad = True
                    for j in range(3):
                        leg = x + coef[9] - radius[b] * (ab * leg_cos[j] + bb * leg_sin[j])
                        if not leg >= coef[13]:
                            bad = True
                if bad:  # back to the last valid state, at rest; the episode ends
                    for i in range(n):
                        w1[i], a1[i] = 0.0, 0.0
                    break
                first = False
                now += coef[0]
                u1, u2 = u2, u1
                w1, w2 = w2, w1
                a1, a2 = a2, a1
                c1, c2 = c2, c1
                for i in range(n):
                    rest_s[i] = rest_e[i]
            for i in range(n):
                u[b, i], w[b, i], a[b, i], c[b, i], rest[b, i] = u1[i], w1[i], a1[i], c1[i], rest_s[i]
            clock[b] = now
            fresh[b] = bad
            tip_in_goal_frame(ints, table, sec, lref, u1, w1, c1, rot[b], tilted, ws, tip)
            if realistic:
                measure(b, tip, hist, count, latency, noise, rng, False, measured)
            else:
                for k in range(6):
                    measured[k] = tip[k]
            # the reward terms (PeterReachEnv.goal_terms on the float32 measured tip and goal); info's true distance
            d2 = 0.0
            t2 = 0.0
            for k in range(3):
                diff = np.float64(np.float32(goal[b, k])) - np.float64(np.float32(measured[k]))
                d2 += diff * diff
                true_diff = np.float64(np.float32(goal[b, k])) - np.float64(np.float32(tip[k]))
                t2 += true_diff * true_diff
            dist = math.sqrt(d2)
            distance[b] = math.sqrt(t2)
            success[b] = distance[b] < coef[11] and touches[b] == 0
            collisions[b], penetration[b], contact_force[b] = touches[b], deepest, pushing
            r_total = -coef[10] * dist
            if coef[12] > 0.0 and dist < coef[11]:
                r_total += coef[12]
            reward[b] = r_total
            steps[b] += 1
            terminated[b] = bad
            truncated[b] = max_steps > 0 and steps[b] >= max_steps
            done = bad or truncated[b]
            observe(obs[b], measured, goal[b], setpoint, obstacles[b])
            if done:
                for k in range(n_obs):
                    final_obs[b, k] = obs[b, k]
        if (mode >= 1 and reset[b]) or done:  # a new episode: a new robot (realism), at rest, a new goal
            if realistic:
                if mode != 2:
                    draw(b, draws, ranges, rng)
                apply(b, draws[b], slots, coef, gain, offset, leak, perfect, delay, latency, noise, rot, gravity,
                      radius, legs_to_arc, mass, inertia, stiffness, basis_m, basis_p, basis_i, basis_k, basis_q)
            for i in range(n):
                legs[b, i], current[b, i], extension[b, i] = coef[7], coef[7], 0.0
            for q in range(queue):
                due[b, q] = math.inf
            clock[b] = 0.0
            fresh[b] = True
            steps[b] = 0
            if realistic:  # at rest on its legs (their offsets) with the drawn radius
                for m in range(n_modules):
                    for r in range(3):
                        s = 0.0
                        for j in range(3):
                            leg = coef[7] if perfect[b] else coef[7] + offset[b, 3 * m + j]
                            s += legs_to_arc[b, r, j] * leg
                        u[b, 3 * m + r] = s
                    u[b, 3 * m] -= coef[9]
                for i in range(n):
                    w[b, i], a[b, i], rest[b, i], ws[0][i] = 0.0, 0.0, u[b, i], 0.0
                configuration(u[b], ws[0], True, sec[0] != 0, sec[1] != 0, sec[2], lref, c[b])
                tip_in_goal_frame(ints, table, sec, lref, u[b], w[b], c[b], rot[b], tilted, ws, tip)
                measure(b, tip, hist, count, latency, noise, rng, True, measured)
            else:
                for i in range(n):
                    u[b, i], w[b, i], a[b, i], rest[b, i], c[b, i] = u0[i], 0.0, 0.0, u0[i], c0[i]
                for k in range(6):
                    measured[k] = tip0[k]
            if mode != 2:  # a task from the bank: its goal and obstacles
                pick = min(int(xoroshiro128p_uniform_float64(rng, b) * goals.shape[0]), goals.shape[0] - 1)
                for k in range(3):
                    goal[b, k] = goals[pick, k]
                for s in range(n_shapes):
                    for k in range(4):
                        obstacles[b, s, k] = bank[pick, s, k]
            if n_shapes:
                place_obstacles(b, obstacles, rot, shapes, touching, touches)
            observe(obs[b], measured, goal[b], setpoint0, obstacles[b])

    return kernel
