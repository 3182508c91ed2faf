"""Free boxes pushed by the soft arms (soft_envs.sim.arm_objects): the frames and bookkeeping of the
coupling, and the independent checks of soft_envs.bench.contact_push (force balance in a steady
slide, momentum, energy, halving the step, light and heavy boxes, the arm's lateral force)."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.bench import contact_push as checks
from soft_envs.collision import BOX, SPHERE
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix
from soft_envs.sim.arm_objects import ArmBoxCoupling
from soft_envs.sim.batched_bodies import BatchedPCCBody
from soft_envs.sim.rigid_object import BatchedBoxes, BoxParameters

DT = checks.PUSH_STEP


def _assert_rows(rows):
    for row in rows:
        assert row["passed"], row


def _hanging(n: int = 2, **box):
    """``n`` hanging arms over their tables, each box against its arm's tip capsule."""
    model = checks.pcc_arm()
    arm = BatchedPCCBody(model, n, base_orientation=checks.HANGING)
    boxes = BatchedBoxes(n, BoxParameters(**box))
    x = model.chain().body_radius + boxes.params.half_extents[0]
    boxes.reset(None, [x, 0.0, boxes.position[0, 2]])
    base = np.array([0.0, 0.0, model.total_length + checks.TIP_HEIGHT])
    return arm, boxes, ArmBoxCoupling(arm, boxes, 0, base, horizon=DT), base


def test_sync_writes_the_free_step_in_the_base_frame():
    model = checks.pcc_arm()
    turn = quaternion_from_rotation_vector(np.array([0.3, -0.2, 0.5]))
    arm = BatchedPCCBody(model, 1, base_orientation=turn)
    boxes = BatchedBoxes(1, BoxParameters(gravity=0.0, table_height=-10.0))
    boxes.reset(0, [0.3, -0.1, 0.2], quaternion_from_rotation_vector(np.array([0.1, 0.2, 0.3])),
                velocity=[0.1, 0.2, -0.3], angular_velocity=[1.0, -2.0, 0.5])
    base = np.array([0.05, 0.02, -0.01])
    coupling = ArmBoxCoupling(arm, boxes, 0, base, horizon=DT)
    assert arm.scene is coupling.scene and arm.scene.slots == 1  # (added: the arm had none)
    Rb = quaternion_to_matrix(turn)
    row, velocity = coupling.scene.shapes[0, 0], coupling.scene.velocity[0, 0]
    # nothing accelerates the box yet: the free step is the box moving on at its velocity
    assert row[0] == BOX
    np.testing.assert_allclose(Rb @ row[1:4] + base, boxes.position[0] + DT * boxes.velocity[0], atol=1e-15)
    turned = quaternion_to_matrix(quaternion_from_rotation_vector(DT * boxes.angular_velocity[0])) @ boxes.rotation()[0]
    np.testing.assert_allclose(Rb @ row[4:13].reshape(3, 3), turned, atol=1e-14)
    np.testing.assert_allclose(row[13:], boxes.params.half_extents)
    np.testing.assert_allclose(Rb @ velocity[:3], boxes.velocity[0], atol=1e-15)
    np.testing.assert_allclose(Rb @ velocity[3:], boxes.angular_velocity[0], atol=1e-15)


def test_the_arms_law_is_its_step_and_the_box_gets_its_force_in_a_steady_press():
    arm, boxes, coupling, _ = _hanging()
    torque = np.zeros((2, arm.n_dof))
    for i in range(60):  # pressing the box, still stuck (0.3 s of the push's ramp)
        torque[:, 1::3] = checks.START * min((i + 1) * DT / checks.RISE, 1.0)
        coupling.advance(DT, torque)
    scale = coupling.law[:, 0] / coupling.cp[:, 0]
    assert np.all((scale > 0.0) & (scale < 1.0))  # the contact in series with the box's yield
    arm.step(DT, torque + coupling.reaction)
    # the coupling's own evaluation of the contact is the arm's step's (the same law and geometry)
    force = coupling._pairs(coupling.scene.shapes[:, 0], coupling.scene.velocity[:, 0], coupling.law)[0]
    np.testing.assert_allclose(force, coupling.scene.wrench[:, 0, :3], rtol=1e-6, atol=1e-9)
    W = quaternion_to_matrix(checks.HANGING) @ coupling.scene.wrench[0, 0, :3]
    coupling.step(DT)
    assert W[0] > 0.05  # the arm pushes along +x
    assert np.linalg.norm(coupling.force[0] - W) < 0.05 * np.linalg.norm(W)  # it yields nearly as the law assumed
    assert np.linalg.norm(boxes.velocity[0]) < 1e-2  # and stays stuck
    np.testing.assert_allclose(coupling.force[0], coupling.force[1], rtol=1e-12)  # the two rows alike


def test_an_inactive_arm_pushes_nothing_and_reset_clears_the_carry_over():
    arm, boxes, coupling, _ = _hanging()
    torque = np.zeros((2, arm.n_dof))
    torque[:, 1::3] = 0.05
    for _ in range(10):
        coupling.advance(DT, torque)
    assert np.all(np.linalg.norm(coupling.force, axis=1) > 0.0)
    active = np.array([True, False])
    coupling.advance(DT, torque, active=active)
    assert np.linalg.norm(coupling.force[0]) > 0.0 and np.all(coupling.force[1] == 0.0)
    coupling.reset(0, [0.5, 0.0, boxes.position[0, 2]])
    assert np.all(coupling.force[0] == 0.0) and np.all(coupling.reaction[0] == 0.0)
    assert np.all(coupling.acceleration[0] == 0.0) and not coupling.scene.touched[0].any()
    assert np.all(np.isfinite(coupling.law)) and np.all(coupling.law[:, 0] <= coupling.cp[:, 0])


def test_a_box_softens_its_own_contact_and_leaves_the_other_shapes_alone():
    """The law in series with the box's yield is the box slot's; a sphere in the same scene keeps the
    scene's parameters, the box far or beside the arm (a table or an obstacle does not yield)."""
    model = checks.pcc_arm()
    arm = BatchedPCCBody(model, 1)
    scene = arm.add_scene(2)
    sphere = np.zeros(16)
    sphere[0], sphere[1:4], sphere[4:13], sphere[13] = SPHERE, (0.05, 0.0, 0.1), np.eye(3).ravel(), 0.01
    scene.shapes[0, 1] = sphere
    parameters = scene.cp[0, 1].copy()
    boxes = BatchedBoxes(1, BoxParameters(gravity=0.0, table_height=-10.0))
    boxes.reset(0, [0.5, 0.0, 0.1])
    coupling = ArmBoxCoupling(arm, boxes, 0, horizon=DT)
    np.testing.assert_array_equal(coupling.cp[0], parameters)
    boxes.reset(0, [model.chain().body_radius + 0.025, 0.0, 0.1])
    coupling.sync()
    assert coupling.law[0, 0] < coupling.cp[0, 0]  # within reach: the box's contact softened
    np.testing.assert_array_equal(coupling.law, scene.cp[:, 0])
    np.testing.assert_array_equal(scene.cp[0, 1], parameters)  # the sphere's untouched


def test_the_coupling_checks_its_arguments():
    model = checks.pcc_arm()
    arm = BatchedPCCBody(model, 2)
    with pytest.raises(InvalidParameterError):
        ArmBoxCoupling(arm, BatchedBoxes(3), 0)
    arm.add_scene(1)
    with pytest.raises(InvalidParameterError):
        ArmBoxCoupling(arm, BatchedBoxes(2), 1)
    with pytest.raises(InvalidParameterError):
        ArmBoxCoupling(arm, BatchedBoxes(2), 0, base_position=[0.0, np.nan, 0.0])


def test_f1_steady_slide_the_arms_push_is_coulombs_mu_of_the_boxs_load():
    _assert_rows(checks.force_balance())


def test_f2_the_box_takes_the_impulse_the_arm_gives_away():
    _assert_rows(checks.momentum())


def test_f3_an_arm_swinging_into_a_free_box_never_gains_energy():
    _assert_rows(checks.energy())


def test_f4_halving_the_step_keeps_the_steady_slides_push():
    # the paths' pointwise change and the slide's speed are reported, not held: the pressed box's stuck
    # phase is chaotic at 5 ms (module docstring of soft_envs.sim.arm_objects), so where the slide starts,
    # and the speed it reaches in the last 0.5 s (0.6-1.8 % apart in fresh processes), vary with rounding;
    # the push that holds the slide is Coulomb's force, whatever the step
    push = [row for row in checks.convergence() if "the arm's push" in row["check"]]
    assert len(push) == 1
    _assert_rows(push)


def test_f5_light_and_heavy_boxes_push_stably_at_5_ms():
    _assert_rows(checks.stability())


def test_f6_the_hanging_arms_full_bending_action_pushes_sideways_with_about_two_newtons():
    (row,) = checks.tip_force(beyond=(0.02,), duration=3.0)
    assert row["passed"] and 1.5 < row["measured"] < 2.5, row
