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
from soft_envs.sim.contact import DIAG_PENETRATION, MAX_SUBSTEPS, SWEEP_LENGTH
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
    for bad in (0, -1, 2.5, "4", 10**6):
        with pytest.raises(InvalidParameterError):
            scene.max_substeps = bad
    assert scene.max_substeps == MAX_SUBSTEPS


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


def _swinging_pcc(max_substeps: int, sphere_x: float = 0.0):
    """A weightless two-segment PCC arm released from a 60 % bend towards +x: it swings through the
    straight pose at ~5 m/s at its tip (25 mm a 5 ms step); a 2 mm sphere sits 1.5 mm into the tip
    capsule's path above the straight pose, at ``x = sphere_x``."""
    model = PCCArm(2)
    body = BatchedPCCBody(model, 1, gravity=0.0)
    u0 = np.zeros(body.n_dof)
    u0[1], u0[4] = 0.6 * model.smooth_upper[1], 0.6 * model.smooth_upper[4]
    body.reset(0, u0, rest=np.zeros(body.n_dof))
    centre = np.array([sphere_x, 0.0, model.total_length + model.body_radius + 0.002 - 0.0015])
    scene = body.add_scene(1)
    scene.max_substeps = max_substeps
    scene.set_shapes(0, sphere_row(centre, 0.002)[None])
    return body, scene


@pytest.mark.parametrize("sphere_x", [0.0, -0.005, -0.01])
def test_a_fast_arm_meets_a_small_sphere_in_sub_steps(sphere_x):
    """The tip capsule sweeps 25 mm a step past a sphere it cuts 1.5 mm into: in whole steps at most one
    end state touches it (mostly none: the touch is never measured); in sub-steps of at most 1 mm
    (:data:`~soft_envs.sim.contact.SWEEP_LENGTH`) the touch is counted over more steps and stays shallow."""
    touches, deepest = {}, {}
    for most in (1, MAX_SUBSTEPS):
        body, scene = _swinging_pcc(most, sphere_x)
        touches[most], deepest[most] = 0, 0.0
        for _ in range(12):
            body.step(0.005, np.zeros((1, body.n_dof)))
            touches[most] += int(scene.touched[0, 0])
            deepest[most] = max(deepest[most], float(scene.diagnostics[0, DIAG_PENETRATION]))
        assert np.all(np.isfinite(body.state.u))
    assert touches[1] <= 1 < touches[MAX_SUBSTEPS]
    assert 0.0 < deepest[MAX_SUBSTEPS] <= 1e-3


def test_a_sub_stepped_step_is_that_many_shorter_steps():
    """One step that the contact splits into ``m`` sub-steps equals ``m`` whole steps of ``dt / m`` (the
    torque and the rest configuration interpolated linearly between the step's ends), to rounding."""
    dt = 0.005
    steps = []
    for _ in range(3):
        body, scene = _swinging_pcc(1)
        for _ in range(8):  # in whole steps to just before the sphere (the tip ~26 mm from the straight pose)
            body.step(dt, np.zeros((1, body.n_dof)))
        steps.append((body, scene))
    (whole, _), (split, split_scene), (short, _) = steps
    split_scene.max_substeps = MAX_SUBSTEPS
    start = whole.backbone()[0][0].copy()
    rng = np.random.default_rng(0)
    torque, torque_end = rng.normal(0.0, 1e-3, (2, 1, whole.n_dof))
    rest_end = rng.normal(0.0, 1e-3, (1, whole.n_dof))
    whole.step(dt, torque, torque_end=torque_end, rest_end=rest_end)
    moved = np.linalg.norm(whole.backbone()[0][0] - start, axis=1).max()
    m = int(np.ceil(moved / SWEEP_LENGTH))
    assert 1 < m <= MAX_SUBSTEPS
    split.step(dt, torque, torque_end=torque_end, rest_end=rest_end)
    rest_start = short.state.rest.copy()
    for j in range(m):
        f0, f1 = j / m, (j + 1) / m
        short.step(dt / m, torque + f0 * (torque_end - torque), torque_end=torque + f1 * (torque_end - torque),
                   rest_end=rest_start + f1 * (rest_end - rest_start))
    for name in ("u", "w", "a", "c"):
        np.testing.assert_allclose(getattr(split.state, name), getattr(short.state, name), rtol=1e-9, atol=1e-12,
                                   err_msg=name)
    assert split_scene.touched[0, 0]
