"""A simulated arm given another plant in place (realism) equals an arm built as that plant."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_from_rotation_vector
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.robots.peter import Peter
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody
from soft_envs.sim.peter_soft import SoftPeterBody
from soft_envs.sim.single_core import BACKENDS


def _dynamics(body, u):
    body.set_state(u)
    return body.mass_matrix(), body.gravity_torque(), body.elastic_torque(), body.tip_state()[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_peter_set_model_and_base_orientation_equal_a_body_built_so(backend):
    nominal = Peter(2, kinematics="pcc")
    plant = Peter(2, kinematics="pcc", radius=0.048, module_mass=0.14, leg_stiffness=1100.0)
    tilt = tuple(quaternion_from_rotation_vector(np.array([0.02, -0.01, 0.0])))
    a_client, b_client = connect(gui=False), connect(gui=False)
    changed = SoftPeterBody(a_client, nominal, backend=backend)
    changed.set_model(plant, payload=0.3)
    changed.set_base_orientation(tilt)
    built = SoftPeterBody(b_client, plant, payload=0.3, base_orientation=tilt, backend=backend)
    u = np.array([0.004, 0.05, -0.08, 0.01, -0.1, 0.02])
    for x, y in zip(_dynamics(changed, u), _dynamics(built, u)):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
    with pytest.raises(InvalidParameterError, match="same arm"):
        changed.set_model(Peter(3, kinematics="pcc"))
    disconnect(a_client)
    disconnect(b_client)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pcc_set_model_equals_a_body_built_with_that_mass_and_payload(backend):
    a_client, b_client = connect(gui=False), connect(gui=False)
    changed = PCCBody(a_client, PCCArm(2, 6, 0.065), backend=backend)
    changed.set_model(PCCArm(2, 6, 0.065, segment_mass=0.02), payload=0.004)
    built = PCCBody(b_client, PCCArm(2, 6, 0.065, segment_mass=0.02), payload=0.004, backend=backend)
    u = np.array([0.002, 0.3, -0.2, -0.001, 0.1, 0.4])
    for x, y in zip(_dynamics(changed, u), _dynamics(built, u)):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
    with pytest.raises(InvalidParameterError, match="same arm"):
        changed.set_model(PCCArm(3, 6, 0.065))
    disconnect(a_client)
    disconnect(b_client)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("plants", [(0.14, 0.3), (0.10, 0.0), (0.12, 0.5)])
def test_a_second_change_reaches_the_dynamics(plants, backend):
    """PyBullet builds a body's inverse-dynamics tree at the first ``calculateMassMatrix`` /
    ``calculateInverseDynamics`` and ignores ``changeDynamics`` after it: an arm whose dynamics
    were already evaluated, then given another plant (the next realism episode), must still
    equal an arm built as that plant — M, G and the bias with a velocity."""
    mass, payload = plants
    client, fresh_client = connect(gui=False), connect(gui=False)
    arm = SoftPeterBody(client, Peter(2, kinematics="pcc"), backend=backend)
    u = np.array([0.004, 0.05, -0.08, 0.01, -0.1, 0.02])
    _dynamics(arm, u)  # the first episode's dynamics
    arm.set_model(Peter(2, kinematics="pcc", module_mass=0.2), payload=0.1)
    _dynamics(arm, u)  # the second episode's
    plant = Peter(2, kinematics="pcc", module_mass=mass)
    arm.set_model(plant, payload=payload)
    built = SoftPeterBody(fresh_client, plant, payload=payload, backend=backend)
    for x, y in zip(_dynamics(arm, u), _dynamics(built, u), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)
    w = np.array([0.01, 0.3, -0.2, 0.02, 0.1, -0.4])
    arm.set_state(u, w)
    built.set_state(u, w)
    np.testing.assert_allclose(arm.bias(), built.bias(), rtol=1e-12, atol=1e-15)
    arm.close()
    disconnect(client)
    disconnect(fresh_client)
