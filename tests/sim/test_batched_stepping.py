"""B arms with different parameters stepped through the batched core, actuators and control law
against B single PyBullet-backed bodies under the same commands (the loops of ``PeterReachEnv``
and ``PCCTrackEnv``): the same states to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.geometry import quaternion_from_rotation_vector
from soft_envs.robots import PCCArm, Peter, PlanarPCCArm
from soft_envs.sim.actuators import (
    BatchedDeadTime,
    BatchedPDFeedforward,
    BatchedPneumaticLegs,
    BatchedPressureRegulator,
)
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody, PDFeedforward
from soft_envs.sim.peter_soft import SoftPeterBody


@pytest.fixture
def clients():
    made = []
    yield lambda: made.append(connect()) or made[-1]
    for c in made:
        disconnect(c)


# Per arm: (radius, mass, stiffness errors), payload [kg], base tilt [rad], leg (gain, offset [m],
# leak [m/s]), command delay [s], vent rate [m/s].
PETER_ARMS = [
    ((0.0, 0.0, 0.0), 0.0, (0.0, 0.0), (1.0, 0.0, 0.0), 0.0, 0.010),
    ((0.08, -0.15, 0.2), 0.35, (0.03, -0.02), (1.2, 1e-3, 2e-4), 0.1, 0.008),
    ((-0.05, 0.1, -0.25), 0.1, (-0.01, 0.02), (0.8, 2e-3, 0.0), 0.05, 0.012),
]


def test_peter_arms_step_as_single_bodies(clients):
    nominal = Peter(2)
    B, n, dt, skip = len(PETER_ARMS), nominal.n_dof, 1 / 120, 12
    rng = np.random.default_rng(11)
    gains = [np.full(n, g) * rng.uniform(0.9, 1.1, n) for (_, _, _, (g, _, _), _, _) in PETER_ARMS]
    batched = BatchedSoftPeter(nominal, B)
    legs = BatchedPneumaticLegs(B, n, rest_length=nominal.leg_length_at_rest, fill_rate=nominal.leg_rate,
                                vent_rate=[arm[5] for arm in PETER_ARMS])
    singles = []
    t0 = rng.uniform(0.0, 1.0, (B, n))
    for b, ((dr, dm, dk), payload, tilt, (_, offset, leak), delay, _vent) in enumerate(PETER_ARMS):
        plant = nominal.with_parameters(radius=nominal.radius * (1 + dr), module_mass=nominal.module_mass * (1 + dm),
                                        leg_stiffness=nominal.leg_stiffness * (1 + dk))
        quaternion = tuple(quaternion_from_rotation_vector(np.r_[tilt, 0.0]))
        body = SoftPeterBody(clients(), nominal, backend="pybullet")
        body.set_model(plant, payload)
        body.set_base_orientation(quaternion)
        singles.append(body)
        batched.set_model([b], plant, payload)
        batched.set_base_orientation([b], quaternion)
        legs.set_imperfections([b], gains[b], offset, leak)
        legs.set_delay([b], delay)
    legs.reset(None, t0)
    for b, body in enumerate(singles):  # the same legs drive each single body (its row)
        body.reset(t0[b])
        if not legs.perfect[b]:
            body.set_state(body.rest_of_legs(legs.actual_lengths[b]), reference=np.zeros(n))
            body.set_rest_legs(legs.actual_lengths[b])
    batched.reset_inflation(None, t0)
    imperfect = ~legs.perfect
    batched.reset(imperfect, batched.rest_of_legs(legs.actual_lengths[imperfect], imperfect),
                  reference=np.zeros(n), rest=batched.rest_of_legs(legs.actual_lengths[imperfect], imperfect))
    for _ in range(5):
        command = rng.uniform(0.0, 2.0, (B, n))
        legs.command(command, batched.state.time)
        for _ in range(skip):
            rest = legs.advance(dt, batched.state.time)
            batched.step(dt, 0.0, rest_end=batched.rest_of_legs(rest))
            for b, body in enumerate(singles):
                body.step(dt, np.zeros(n), rest_end=body.rest_of_legs(rest[b]))
        tip, velocity = batched.tip_state()
        for b, body in enumerate(singles):
            np.testing.assert_allclose(batched.state.u[b], body.u, rtol=0, atol=1e-11)
            np.testing.assert_allclose(batched.state.w[b], body.w, rtol=0, atol=1e-9)
            single_tip, single_velocity = body.tip_state()
            np.testing.assert_allclose(tip[b], single_tip, rtol=0, atol=1e-12)
            np.testing.assert_allclose(velocity[b], single_velocity, rtol=0, atol=1e-10)
            assert batched.state.time[b] == body.time


# Per arm: mass error, payload [kg], stiffness error, regulator delay [s], chamber gain, droop.
PCC_ARMS = [(0.0, 0.0, 0.0, 0.0, 1.0, 0.0), (0.08, 0.004, -0.12, 0.125, 1.04, 0.02),
            (-0.05, 0.002, 0.1, 0.1, 0.96, 0.0)]


@pytest.mark.parametrize("arm", [PCCArm(2, 6), PlanarPCCArm(2, 6)], ids=["3d", "planar"])
@pytest.mark.parametrize("chambers", [True, False], ids=["pressure", "direct"])
def test_pcc_arms_step_as_single_bodies(clients, arm, chambers):
    B, n, dt, skip = len(PCC_ARMS), arm.n_dof, 5e-3, 10
    rng = np.random.default_rng(3)
    pressure_map = arm.pressure_map()
    inverse = np.linalg.inv(pressure_map)
    law = PDFeedforward(arm)
    batched_law = BatchedPDFeedforward(arm)
    batched = BatchedPCCBody(arm, B)
    regulator = BatchedPressureRegulator(B, n, max_pressure=arm.pressure.max_pressure,
                                         delay=[a[3] for a in PCC_ARMS]) if chambers else None
    c0 = arm.sample(rng) * 0.5
    singles = []
    plant_maps = np.empty((B, n, n))
    for b, (dm, payload, dk, _delay, gain, droop) in enumerate(PCC_ARMS):
        body = PCCBody(clients(), arm, backend="pybullet")
        plant = type(arm)(2, 6, segment_mass=arm.segment_mass * (1 + dm))
        body.set_model(plant, payload)
        body.stiffness = body.stiffness * (1 + dk)
        body.reset(c0)
        gains = gain * rng.uniform(0.98, 1.02, n)
        plant_maps[b] = pressure_map * (gains * (1 - droop))
        singles.append(body)
        batched.set_model([b], plant, payload)
        batched.set_stiffness([b], batched.params.stiffness[b] * (1 + dk))
    # the single bodies' chambers: regulators of their own (the same class, one row per body)
    single_regulators = BatchedPressureRegulator(B, n, max_pressure=arm.pressure.max_pressure,
                                                 delay=[a[3] for a in PCC_ARMS])
    single_regulators.reset(None, np.stack([inverse @ (body.elastic_torque() + body.gravity_torque())
                                            for body in singles]))
    batched.reset_configuration(None, c0)
    hold = batched.elastic_torque() + batched.gravity_torque()
    if chambers:
        regulator.reset(None, hold @ inverse.T)
    setpoint = np.tile(batched.configuration[0], (B, 1))
    single_setpoints = [body.configuration for body in singles]
    stopped, single_stopped = np.zeros(B, dtype=bool), np.zeros(B, dtype=bool)
    for _ in range(4):
        # (the direct law rings and grows on large set-point steps, PDFeedforward's docstring: small ones;
        # the check below stops an arm as the env does, and both cores must agree on it)
        # (the direct law rings and grows on large set-point steps, PDFeedforward's docstring: small ones;
        # the check below stops an arm as the env does, and both cores must agree on it)
        span = 0.5 * (arm.upper - arm.lower)
        new = (arm.sample(rng)[None] * 0.6 if chambers else setpoint) + rng.normal(0, 0.05, (B, n)) * span
        u_from, u_to = arm.to_smooth(setpoint), arm.to_smooth(new)
        single_u = [(arm.to_smooth(s), arm.to_smooth(new[b])) for b, s in enumerate(single_setpoints)]
        for k in range(skip):  # PCCTrackEnv.simulate: an arm that leaves the model is restored and stopped
            s = (k + 1) / skip
            last_valid = batched.snapshot()
            active = ~stopped
            tau = batched_law.torque_smooth(batched, (1 - s) * u_from + s * u_to, include_damping=True)
            with np.errstate(all="ignore"):
                if chambers:
                    regulator.command(tau @ inverse.T, batched.state.time, active)
                    start = np.einsum("bij,bj->bi", plant_maps, regulator.acting(batched.state.time))
                    end = np.einsum("bij,bj->bi", plant_maps, regulator.advance(dt, batched.state.time))
                    batched.step(dt, start, torque_end=end, active=active)
                else:
                    batched.step(dt, tau, active=active)
            left = active & (batched.model_violation() != 0)
            batched.restore(left, last_valid, at_rest=True)
            stopped |= left
            single_tau = np.stack([law.torque_smooth(body, (1 - s) * single_u[b][0] + s * single_u[b][1],
                                                     include_damping=True) for b, body in enumerate(singles)])
            if chambers:
                times = np.array([body.time for body in singles])
                single_regulators.command(single_tau @ inverse.T, times, ~single_stopped)
                starts = np.einsum("bij,bj->bi", plant_maps, single_regulators.acting(times))
                ends = np.einsum("bij,bj->bi", plant_maps, single_regulators.advance(dt, times))
            for b, body in enumerate(singles):
                if single_stopped[b]:
                    continue
                before = body.snapshot()
                with np.errstate(all="ignore"):
                    if chambers:
                        body.step(dt, starts[b], torque_end=ends[b])
                    else:
                        body.step(dt, single_tau[b])
                if batched.model_violation(body.u[None], body.w[None])[0]:
                    body.restore(before, at_rest=True)
                    single_stopped[b] = True
        setpoint, single_setpoints = new, list(new)
        tip, _ = batched.tip_state()
        np.testing.assert_array_equal(stopped, single_stopped)
        assert not stopped.any()
        for b, body in enumerate(singles):
            np.testing.assert_allclose(batched.state.u[b], body.u, rtol=0, atol=1e-10)
            np.testing.assert_allclose(batched.state.w[b], body.w, rtol=0, atol=1e-8 * max(1.0, np.abs(body.w).max()))
            np.testing.assert_allclose(tip[b], body.tip_state()[0], rtol=0, atol=1e-11)
            np.testing.assert_allclose(batched.configuration[b], body.configuration, rtol=0, atol=1e-10)




def test_dead_time_is_per_arm():
    """A command given at step k acts from the first step at or after its time plus the arm's delay."""
    delays = np.array([0.0, 0.01, 0.025])
    dead = BatchedDeadTime(delays, np.zeros((3, 1)))
    given: list[tuple[float, float]] = []  # (time, value), every 3rd step of 5 ms
    for k in range(40):
        now = k * 5e-3
        if k % 3 == 0:
            dead.give(np.full((3, 1), float(k)), np.full(3, now))
            given.append((now, float(k)))
        expected = [max([v for t, v in given if t + d <= now + 1e-9], default=0.0) for d in delays]
        np.testing.assert_array_equal(dead.at(np.full(3, now))[:, 0], expected)


def test_model_violation_codes_follow_the_single_env():
    arm = PCCArm(2, 6)
    batched = BatchedPCCBody(arm, 5)
    u = np.zeros((5, 6))
    w = np.zeros((5, 6))
    u[1, 4] = 3.5             # second segment bent past 180°
    u[2, 0] = 0.04            # first segment stretched by more than half its length
    u[2, 4] = 3.5             # ... and the second bent: the first segment's reason comes first
    w[3, 2] = 2e4             # too fast
    u[4, 1] = np.nan
    codes = batched.model_violation(u, w)
    assert codes.tolist() == [0, 2, 3, 4, 1]
    assert batched.violation_reason(2, u[1]) == "a segment bent by 201° > 180°: beyond the PCC model"
