"""The soft arms' contact (soft_envs.sim.contact, soft_envs.sim.scene) against independent answers:
the backbone against the chain's frames and its Jacobian against finite differences; an arm pressed
against a wall against the elastic model's constrained equilibrium; Coulomb's cone; the energy of an
arm swinging into an obstacle; halving the time step; free space unchanged by a scene.
(The scenarios are soft_envs.bench.contact_checks, which `soft-envs bench contact` reports.)"""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.bench.contact_checks import (
    PETER_STEP,
    PRESSING,
    backbone_at,
    convergence_check,
    pressed_arm,
    sphere_row,
    statics_check,
    swing,
    wall_row,
)
from soft_envs.collision import SHAPE_WIDTH
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import PCCArm, Peter
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter
from soft_envs.sim.scene import ContactParameters

DT = 1.0 / 120.0


@pytest.mark.parametrize("make", [lambda: BatchedSoftPeter(Peter(2), 1), lambda: BatchedPCCBody(PCCArm(2), 1)],
                         ids=["peter", "pcc"])
def test_backbone_is_the_chain_and_its_jacobian_the_derivative(make):
    body = make()
    chain = body.model.chain()
    points = chain.backbone_links()
    rng = np.random.default_rng(0)
    ints, table = body.topology.ints, body.topology.table
    for _ in range(3):
        u = rng.uniform(-0.6, 0.6, body.n_dof)
        u[0::3] *= 0.01
        P, PJ = backbone_at(body, u)
        joint_values = table[:, 1] * body.state.c[0][ints[:, 1]]  # q_j = β_j c̃[slot_j]
        np.testing.assert_allclose(P[1:], chain.frames(joint_values)[0][points], atol=1e-12)
        np.testing.assert_array_equal(P[0], 0.0)
        numeric = np.zeros_like(PJ)
        for i in range(body.n_dof):
            du = np.zeros(body.n_dof)
            du[i] = 1e-6
            numeric[:, :, i] = (backbone_at(body, u + du)[0] - backbone_at(body, u - du)[0]) / 2e-6
        np.testing.assert_allclose(PJ, numeric, atol=1e-7)


def test_an_arm_pressed_against_a_wall_pushes_as_its_elastic_model_says():
    check = statics_check()
    assert check.residual_rate < 1e-6  # settled
    assert 0.0 < check.penetration < 1e-3
    assert check.relative_error <= 0.02, (check.simulated_force, check.elastic_force)
    assert check.configuration_difference < 1e-3


def test_friction_stays_in_its_cone_and_slides_at_it():
    ratios = []

    def cone(body):
        wrench = body.scene.wrench[0, 0]
        normal, along = wrench[0], float(np.hypot(wrench[1], wrench[2]))  # the arm pushes the wall along +x
        assert along <= 0.6 * normal * (1 + 1e-9) + 1e-12  # Coulomb's cone on the wall's force
        if normal > 0:
            ratios.append(along / normal)

    pressed_arm(friction=0.6, on_step=cone)
    assert max(ratios) > 0.5  # its tip slid along the wall, friction near μ times the normal force


def test_an_arm_swinging_into_an_obstacle_gains_no_energy():
    result = swing()
    assert result.touching_steps > 0
    assert 0.0 < result.deepest <= 1e-3
    assert result.largest_gain <= 1e-9, result.largest_gain
    assert np.all(np.isfinite(result.path))


def test_halving_the_step_moves_a_contact_path_by_under_one_percent_of_its_span():
    change, touches = convergence_check()
    assert touches > 0  # the episode touches its obstacles
    assert change <= 0.01


def test_free_space_is_the_core_without_a_scene():
    """A scene whose shapes are far from the arms changes nothing: an arm with no shape within reach
    takes the free step itself (the same numbers, to rounding, as no scene)."""
    rng = np.random.default_rng(3)
    bodies = [BatchedSoftPeter(Peter(2), 3), BatchedSoftPeter(Peter(2), 3)]
    rest = rng.uniform(-0.2, 0.2, (3, bodies[0].n_dof)) * np.tile([0.01, 1.0, 1.0], 2)
    for body in bodies:
        body.reset(None, np.zeros(body.n_dof), rest=rest)
    scene = bodies[1].add_scene(2)
    scene.set_shapes(None, np.stack([sphere_row(np.array([0.5, 0.0, 0.0]), 0.01),
                                     sphere_row(np.array([0.0, 0.6, 0.1]), 0.02)]))
    zero = np.zeros((3, bodies[0].n_dof))
    for _ in range(30):
        for body in bodies:
            body.step(DT, zero)
    for name in ("u", "w", "c"):
        np.testing.assert_allclose(getattr(bodies[1].state, name), getattr(bodies[0].state, name), rtol=0, atol=1e-13)
    assert not scene.touched.any() and not scene.diagnostics.any()


def test_scene_input_is_checked():
    body = BatchedSoftPeter(Peter(2), 2)
    scene = body.add_scene(2)
    with pytest.raises(InvalidParameterError):
        scene.set_shapes(0, np.zeros((3, SHAPE_WIDTH)))  # more shapes than slots
    with pytest.raises(InvalidParameterError):
        scene.set_shapes(0, np.full((1, SHAPE_WIDTH), np.nan))
    with pytest.raises(InvalidParameterError):
        ContactParameters(stiffness=-1.0)
    with pytest.raises(InvalidParameterError):
        ContactParameters(friction=float("nan"))


def test_each_shape_slot_has_its_own_parameters():
    """Two arms pressed alike against a frictionless wall, one wall in slot 0 at the default stiffness,
    the other in slot 1 at four times it: the force is the arm's (its elastic model's, far softer than
    either), so the stiffer slot's wall is penetrated a quarter as deep; the other slots keep theirs."""
    body = BatchedSoftPeter(Peter(2), 2, gravity=0.0)
    body.reset_inflation(None, np.tile(PRESSING, (2, 1)))
    rest = body.state.u.copy()
    x0 = float(body.backbone()[0][0, -1, 0]) + body.model.chain().body_radius - 0.004
    body.reset(None, np.zeros((2, body.n_dof)), rest=rest)
    default = ContactParameters(friction=0.0)
    scene = body.add_scene(2, default)
    scene.set_shapes(0, wall_row(x0)[None])
    scene.set_shapes(1, np.stack([np.zeros(SHAPE_WIDTH), wall_row(x0)]))
    scene.set_parameters(1, ContactParameters(stiffness=4 * default.stiffness, friction=0.0), slot=1)
    assert scene.cp[1, 1, 0] == 4 * scene.cp[0, 0, 0] and np.all(scene.cp[:, 0] == scene.cp[0, 0])
    for _ in range(int(round(4.0 / PETER_STEP))):
        body.step(PETER_STEP, np.zeros((2, body.n_dof)))
    depth, force = scene.diagnostics[:, 1], scene.diagnostics[:, 2]
    assert force[1] == pytest.approx(force[0], rel=0.01) and force[0] > 0.5
    assert depth[1] == pytest.approx(depth[0] / 4, rel=0.02)
    with pytest.raises(InvalidParameterError):
        scene.set_parameters(0, default, slot=2)
