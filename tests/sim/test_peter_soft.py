"""The compliant PETER body (:mod:`soft_envs.sim.peter_soft`) and its pneumatic legs
(:mod:`soft_envs.sim.actuators`): the ideal settings are the kinematic model, loads sag it
smoothly, legs fill at the paper's 10 mm/s."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.robots import Peter
from soft_envs.sim.actuators import BatchedPneumaticLegs
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.peter_soft import SoftPeterBody

DT = 1 / 240


@pytest.fixture
def client():
    c = connect()
    yield c
    disconnect(c)


def settle(client, arm: Peter, t: np.ndarray, payload: float = 0.0, gravity: float = 9.81, steps: int = 1200):
    body = SoftPeterBody(client, arm, payload=payload, gravity=gravity)
    body.reset(t)
    for _ in range(steps):
        body.step(DT, np.zeros(body.n_dof))
    assert np.linalg.norm(body.w) < 1e-4  # settled
    return body


def test_leg_springs_give_the_derived_module_stiffness():
    arm = Peter(2, leg_stiffness=1000.0, radius=0.04)
    k = arm.stiffness()
    np.testing.assert_allclose(k[0], [3000.0, 1.5 * 1000.0 * 0.04**2, 1.5 * 1000.0 * 0.04**2])
    rng = np.random.default_rng(0)
    rest = arm.leg_lengths(arm.sample(rng))
    legs = rest + rng.normal(scale=2e-3, size=rest.shape)
    energy_legs = 0.5 * 1000.0 * np.sum((legs - rest) ** 2)
    du = (arm.arc_from_legs(legs) - arm.arc_from_legs(rest)).ravel()
    assert 0.5 * du @ (k.ravel() * du) == pytest.approx(energy_legs, rel=1e-12)
    np.testing.assert_allclose(arm.legs_from_arc(arm.arc_from_legs(legs)), legs, atol=1e-15)


@pytest.mark.parametrize("n_modules,links", [(1, 1), (2, 3), (4, 5)])
def test_ideal_body_is_the_kinematic_model(client, n_modules, links):
    arm = Peter(n_modules, kinematics="pcc", links_per_module=links)
    body = SoftPeterBody(client, arm, gravity=0.0)
    rng = np.random.default_rng(n_modules)
    for t in [np.zeros(arm.n_dof), np.full(arm.n_dof, 2.0), *arm.sample(rng, 4)]:
        body.reset(t)
        pos, rot = body.link_frames()
        pos_ref, rot_ref = arm.link_frames(t)
        np.testing.assert_allclose(pos, pos_ref, atol=1e-9)
        np.testing.assert_allclose(rot, rot_ref, atol=1e-9)
        assert np.linalg.norm(body.tip_state()[0] - arm.forward(t)) <= 1e-9


def test_ideal_actuation_settles_on_the_kinematic_model(client):
    # No gravity, no payload, the legs' rest lengths set at once: the arm swings to the new shape
    # and settles exactly on the PCC model's tip.
    arm = Peter(2, kinematics="pcc")
    body = SoftPeterBody(client, arm, gravity=0.0)
    body.reset(np.zeros(6))
    t = np.array([2.0, 0.3, 1.1, 0.0, 1.7, 0.6])
    body.set_rest_legs(arm.leg_lengths(t).ravel())
    for _ in range(int(4.0 / DT)):
        body.step(DT, np.zeros(6))
    assert np.linalg.norm(body.tip_state()[0] - arm.forward(t)) < 1e-9


def test_payload_sag_is_linear_for_small_loads_and_monotone(client):
    arm = Peter(2, kinematics="pcc")
    t = np.ones(6)  # every leg at 1 s
    base = settle(client, arm, t).tip_state()[0]
    sags = {m: base[2] - settle(client, arm, t, payload=m).tip_state()[0][2] for m in (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)}
    assert 1e-3 < sags[0.5] < 5e-3  # the documented calibration: 0.5 kg sags the arm 1–5 mm
    assert sags[0.1] == pytest.approx(2 * sags[0.05], rel=0.01)
    assert sags[0.5] == pytest.approx(10 * sags[0.05], rel=0.02)
    values = list(sags.values())
    assert all(b > a > 0 for a, b in zip(values, values[1:]))
    # a bent arm sags sideways as well, smoothly
    bent = np.array([2.0, 0.0, 0.0, 2.0, 0.0, 0.0])
    unloaded = settle(client, arm, bent).tip_state()[0]
    d1 = settle(client, arm, bent, payload=0.25).tip_state()[0] - unloaded
    d2 = settle(client, arm, bent, payload=0.5).tip_state()[0] - unloaded
    assert np.linalg.norm(d2) == pytest.approx(2 * np.linalg.norm(d1), rel=0.05)


def test_a_leg_fills_at_ten_millimetres_per_second_and_vents_at_its_rate():
    legs = BatchedPneumaticLegs(1, 3, rest_length=0.042926, fill_rate=0.010, vent_rate=0.020)
    legs.reset(None, np.zeros(3))
    legs.command(np.array([[2.0, 0.0, 0.5]]), now=np.zeros(1))
    lengths = [legs.advance(0.01, np.array([k * 0.01]))[0].copy() for k in range(300)]
    fill = np.array(lengths)[:, 0] - 0.042926
    np.testing.assert_allclose(fill[99], 0.010, atol=1e-12)   # 1 s: 10 mm
    np.testing.assert_allclose(fill[199], 0.020, atol=1e-12)  # 2 s: the full 20 mm, and it stops
    np.testing.assert_allclose(fill[-1], 0.020, atol=1e-12)
    np.testing.assert_allclose(legs.inflation[0], [2.0, 0.0, 0.5], atol=1e-9)
    legs.command(np.array([[0.0, 0.0, 0.5]]), now=np.array([3.0]))
    legs.advance(0.5, np.array([3.0]))
    assert legs.lengths[0, 0] - 0.042926 == pytest.approx(0.010, abs=1e-12)  # vents at 20 mm/s


def test_command_delay_and_instant_legs():
    delayed = BatchedPneumaticLegs(1, 3, rest_length=0.04, fill_rate=0.01, delay=0.2)
    delayed.reset(None, np.zeros(3))
    delayed.command(np.ones((1, 3)), now=np.zeros(1))
    lengths = [delayed.advance(0.05, np.array([k * 0.05]))[0, 0] for k in range(10)]
    assert lengths[3] == pytest.approx(0.04) and lengths[4] > 0.04  # moves from t = 0.2 s
    instant = BatchedPneumaticLegs(1, 3, rest_length=0.04, fill_rate=0.01, instant=True)
    instant.reset(None, np.zeros(3))
    instant.command(np.full((1, 3), 2.0), now=np.zeros(1))
    np.testing.assert_allclose(instant.advance(1e-3, np.zeros(1)), 0.06)
    with pytest.raises(ValueError):
        BatchedPneumaticLegs(1, 3, rest_length=0.04, fill_rate=0.01, vent_rate=0.001)
    with pytest.raises(ValueError):
        BatchedPneumaticLegs(1, 3, rest_length=0.04, fill_rate=0.01, delay=-1.0)
