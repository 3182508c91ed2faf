"""The PyBullet body of PETER (:mod:`soft_envs.sim.peter_body`): its frames equal the analytic
model's, and its motors hold the commanded shapes under gravity and payload."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.robots import Peter
from soft_envs.sim.bullet import connect
from soft_envs.sim.peter_body import PeterBody, configure_physics


@pytest.mark.parametrize("n_modules,links", [(1, 1), (2, 3), (4, 5)])
def test_pybullet_body_frames_equal_the_analytic_model(n_modules, links):
    arm = Peter(n_modules, kinematics="pcc", links_per_module=links)
    client = connect()
    try:
        body = PeterBody(client, arm)
        rng = np.random.default_rng(n_modules)
        for t in [np.zeros(arm.n_dof), np.full(arm.n_dof, 2.0), *arm.sample(rng, 5)]:
            body.reset(t)
            pos, rot = body.link_frames()
            pos_ref, rot_ref = arm.link_frames(t)
            assert pos.shape == (len(arm.chain().names), 3)
            np.testing.assert_allclose(pos, pos_ref, atol=1e-9)
            np.testing.assert_allclose(rot, rot_ref, atol=1e-9)
            # The module plates are the PCC model's module tops, whatever the link count.
            plates = [i for i, name in enumerate(arm.chain().names) if name.endswith("_plate")]
            np.testing.assert_allclose(pos[plates], arm.module_points(t), atol=1e-9)
            np.testing.assert_allclose(body.tip_state()[0], arm.forward(t), atol=1e-9)
    finally:
        client.disconnect()


@pytest.mark.parametrize("n_modules", [2, 4])
def test_body_holds_commanded_shapes_under_gravity_and_payload(n_modules):
    # Chained moves with the rated 0.5 kg payload: the arm settles on every commanded shape.
    arm = Peter(n_modules, kinematics="pcc")
    client = connect()
    try:
        configure_physics(client, time_step=1 / 240)
        body = PeterBody(client, arm, payload=0.5)
        body.reset(np.zeros(arm.n_dof))
        for t in arm.sample(np.random.default_rng(5), 4):
            body.command(t)
            for _ in range(240):
                client.stepSimulation()
            tip, velocity = body.tip_state()
            assert np.linalg.norm(tip - arm.forward(t)) < 1e-5
            assert np.linalg.norm(velocity) < 1e-4
    finally:
        client.disconnect()


def test_payload_beyond_the_motor_limits_makes_the_arm_give_way():
    arm = Peter(2, kinematics="pcc")
    t = np.array([2.0, 0.0, 0.0, 2.0, 0.0, 0.0])  # bent sideways: the payload has a lever arm
    misses = {}
    for torque in (10.0, 0.05):
        client = connect()
        configure_physics(client, time_step=1 / 240)
        body = PeterBody(client, arm, payload=0.5, max_torque=torque)
        body.reset(t)
        for _ in range(240):
            client.stepSimulation()
        misses[torque] = np.linalg.norm(body.tip_state()[0] - arm.forward(t))
        client.disconnect()
    assert misses[10.0] < 1e-5 < 1e-2 < misses[0.05]
