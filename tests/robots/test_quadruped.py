"""Quadruped model (seed 001): leg kinematics, closed-form inverse Jacobian and IK, the URDF.

The Newton–Raphson IK is tested in tests/agents/test_newton.py, the trot and body-pose
controllers in tests/agents/test_quadruped_control.py.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pybullet
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots import Quadruped
from soft_envs.robots.base import JacobianSolve
from soft_envs.robots.quadruped import JOINT_NAMES, LEG_NAMES
from soft_envs.sim.bullet import connect

ROBOT = Quadruped()
LEG = ROBOT.leg("front_left")
unit = st.floats(0.0, 1.0)
leg_names = st.sampled_from(LEG_NAMES)


def config(leg, u):
    """A configuration inside the bounds from three numbers in [0, 1]."""
    return leg.lower + np.asarray(u) * (leg.upper - leg.lower)


def seed_formula(q, l0, l1, l2, l3):
    """The seed's closed form, written out as printed (the right legs)."""
    q0, q1, q2 = q
    return np.array([
        -l2 * math.cos(q1) + l3 * math.cos(q1 + q2),
        (l0 * math.sin(q0) - l1 * math.cos(q0) - l2 * math.sin(q0) * math.sin(q1)
         + l3 * math.sin(q0) * math.sin(q1 + q2)),
        (-l0 * math.cos(q0) - l1 * math.sin(q0) + l2 * math.sin(q1) * math.cos(q0)
         - l3 * math.sin(q1 + q2) * math.cos(q0)),
    ])


# ------------------------------------------------------------------------------------ model
def test_dimensions_are_the_seeds():
    assert (ROBOT.body_length, ROBOT.body_width) == (0.15, 0.135)
    assert ROBOT.lengths == (0.012532, 0.00585, 0.045, 0.050)
    assert ROBOT.leg("rear_right").side == -1 and ROBOT.leg("rear_left").side == 1
    assert isinstance(LEG, JacobianSolve)
    assert LEG.reach == ROBOT.leg_reach == pytest.approx(sum(ROBOT.lengths))
    with pytest.raises(ValueError):
        ROBOT.leg("middle_left")


@settings(max_examples=40, deadline=None)
@given(u=st.tuples(unit, unit, unit))
def test_forward_is_the_seed_formula_and_left_legs_mirror_it(u):
    q = config(LEG, u)
    expected = seed_formula(q, *ROBOT.lengths)
    for name in ("front_right", "rear_right"):
        np.testing.assert_allclose(ROBOT.leg(name).forward(q), expected, atol=1e-15)
    for name in ("front_left", "rear_left"):
        np.testing.assert_allclose(ROBOT.leg(name).forward(q), expected * [1, -1, 1], atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(name=leg_names, u=st.tuples(unit, unit, unit))
def test_jacobian_matches_finite_differences(name, u):
    leg = ROBOT.leg(name)
    q = config(leg, u)
    h = 1e-6
    numeric = np.stack([(leg.forward(q + h * e) - leg.forward(q - h * e)) / (2 * h) for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(leg.jacobian(q), numeric, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(name=leg_names, u=st.tuples(unit, unit, unit), r=st.tuples(*[st.floats(-0.01, 0.01)] * 3))
def test_closed_form_inverse_jacobian_solves_the_linear_system(name, u, r):
    leg = ROBOT.leg(name)
    q = config(leg, u)
    jac = leg.jacobian(q)
    step, det = leg.jacobian_solve(q, np.array(r))
    np.testing.assert_allclose(det, np.linalg.det(jac), rtol=1e-9, atol=1e-18)
    if abs(det) > 1e-9:
        np.testing.assert_allclose(jac @ step, r, atol=1e-12)


def test_batched_forward_and_jacobian_equal_single_calls():
    rng = np.random.default_rng(0)
    q = LEG.sample(rng, 7)
    np.testing.assert_array_equal(LEG.forward(q), np.array([LEG.forward(x) for x in q]))
    np.testing.assert_array_equal(LEG.jacobian(q), np.array([LEG.jacobian(x) for x in q]))
    qs = np.stack([ROBOT.legs[n].sample(rng) for n in LEG_NAMES])
    np.testing.assert_allclose(ROBOT.legs_forward(qs), [ROBOT.legs[n].forward(x) for n, x in zip(LEG_NAMES, qs)],
                               atol=1e-17)
    with pytest.raises(ValueError):
        LEG.forward(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError):
        LEG.forward(np.zeros(4))


@settings(max_examples=40, deadline=None)
@given(name=leg_names, u=st.tuples(unit, unit, unit))
def test_closed_form_inverse_round_trip(name, u):
    leg = ROBOT.leg(name)
    foot = leg.forward(config(leg, u))
    q = leg.inverse(foot)
    if np.all(np.isfinite(q)):  # the knee-backward, foot-below branch exists
        np.testing.assert_allclose(leg.forward(q), foot, atol=1e-15)


def test_standing_pose_is_inside_the_bounds_and_symmetric():
    q = ROBOT.standing_configuration()
    assert np.all(q.ravel() >= ROBOT.lower) and np.all(q.ravel() <= ROBOT.upper)
    np.testing.assert_allclose(ROBOT.legs_forward(q), ROBOT.neutral_feet(), atol=1e-15)
    np.testing.assert_allclose(q, np.tile(q[0], (4, 1)), atol=1e-15)


# ------------------------------------------------------------------------------------ URDF
def _urdf_joints():
    root = ET.fromstring(ROBOT.urdf_text())
    joints = {}
    for j in root.iter("joint"):
        origin = np.array([float(v) for v in j.find("origin").get("xyz").split()])
        axis = j.find("axis")
        limit = j.find("limit")
        joints[j.get("name")] = {
            "xyz": origin, "type": j.get("type"),
            "axis": None if axis is None else np.array([float(v) for v in axis.get("xyz").split()]),
            "limit": (None if limit is None
                      else {k: float(limit.get(k)) for k in ("lower", "upper", "effort", "velocity")}),
        }
    return joints


def test_urdf_link_lengths_limits_and_axes_equal_the_model():
    joints = _urdf_joints()
    l0, l1, l2, l3 = ROBOT.lengths
    for leg_name in LEG_NAMES:
        leg = ROBOT.leg(leg_name)
        ab = joints[f"{leg_name}_abduction"]
        np.testing.assert_allclose(ab["xyz"], leg.base, atol=1e-12)
        np.testing.assert_allclose(ab["axis"], [-leg.side, 0, 0])
        np.testing.assert_allclose(joints[f"{leg_name}_hip"]["xyz"], [0, leg.side * l1, -l0], atol=1e-12)
        np.testing.assert_allclose(joints[f"{leg_name}_knee"]["xyz"], [-l2, 0, 0], atol=1e-12)
        np.testing.assert_allclose(joints[f"{leg_name}_foot_joint"]["xyz"], [l3, 0, 0], atol=1e-12)
        for k, joint in enumerate(JOINT_NAMES):
            limit = joints[f"{leg_name}_{joint}"]["limit"]
            assert limit["lower"] == leg.lower[k] and limit["upper"] == leg.upper[k]
            assert limit["effort"] == ROBOT.servo_torque and limit["velocity"] == ROBOT.servo_speed
    assert 2 * abs(ROBOT.leg("front_left").base[0]) == ROBOT.body_length
    assert 2 * abs(ROBOT.leg("front_left").base[1]) == ROBOT.body_width


def _load(client, fixed: bool, position=(0, 0, 0), orientation=(0, 0, 0, 1)):
    with ROBOT.urdf_path() as path:
        body = client.loadURDF(str(path), list(position), list(orientation), useFixedBase=fixed,
                               flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
    joints, links = {}, {}
    for i in range(client.getNumJoints(body)):
        info = client.getJointInfo(body, i)
        joints[info[1].decode()] = i
        links[info[12].decode()] = i
    return body, joints, links


def test_pybullet_feet_equal_the_model_for_any_configuration():
    client = connect()
    try:
        position, orientation = (0.3, -0.2, 0.5), pybullet.getQuaternionFromEuler((0.2, -0.1, 0.7))
        body, joints, links = _load(client, True, position, orientation)
        rot = np.array(client.getMatrixFromQuaternion(orientation)).reshape(3, 3)
        rng = np.random.default_rng(3)
        worst = 0.0
        for _ in range(25):
            q = np.stack([ROBOT.legs[n].sample(rng) for n in LEG_NAMES])
            for i, leg in enumerate(LEG_NAMES):
                for k, joint in enumerate(JOINT_NAMES):
                    client.resetJointState(body, joints[f"{leg}_{joint}"], q[i, k])
            for i, leg in enumerate(LEG_NAMES):
                world = np.array(client.getLinkState(body, links[f"{leg}_foot"], computeForwardKinematics=True)[0])
                in_leg = rot.T @ (world - position) - ROBOT.bases[i]
                worst = max(worst, np.abs(in_leg - ROBOT.legs[leg].forward(q[i])).max())
        assert worst <= 1e-9
    finally:
        client.disconnect()


def test_urdf_loads_and_stands_under_gravity():
    from soft_envs.envs.quadruped_base import QuadrupedBody
    from soft_envs.sim.servo import ServoParameters

    client = connect()
    try:
        client.setTimeStep(1 / 500)
        client.setGravity(0, 0, -9.81)
        client.setPhysicsEngineParameter(numSolverIterations=50)
        ground = client.createMultiBody(0, client.createCollisionShape(pybullet.GEOM_PLANE))
        body = QuadrupedBody(client, ROBOT, ServoParameters(), 1 / 500)
        height = ROBOT.stance_height + ROBOT.foot_radius
        body.reset(ROBOT.standing_configuration().ravel(), position=(0, 0, height))
        for _ in range(500):  # 1 s
            body.step()
        position, orientation = body.base_pose()
        assert abs(position[2] - height) < 2e-3  # the servos hold the stance height
        assert np.all(body.foot_contacts(ground) == 1.0)
        assert not body.body_touches(ground)
        total = sum(client.getDynamicsInfo(body.id, i)[0] for i in range(-1, client.getNumJoints(body.id)))
        assert 0.4 < total < 0.5  # the documented 0.456 kg
    finally:
        client.disconnect()
