"""The batched soft-arm core against the single PyBullet core: rigid-body terms against
``calculateMassMatrix`` / ``calculateInverseDynamics`` (through ``SoftArmBody``), the section
map against ``SectionMap``, and B arms with different parameters stepped against B single bodies."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_from_rotation_vector
from soft_envs.robots import PCCArm, Peter, PlanarPCCArm
from soft_envs.sim.batched_arm import ArmState, section_map, step, terms
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter
from soft_envs.sim.batched_kernels import arm_section_map
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody
from soft_envs.sim.peter_soft import SoftPeterBody

TILT = tuple(quaternion_from_rotation_vector(np.array([0.03, -0.02, 0.0])))


@pytest.fixture
def client():
    c = connect()
    yield c
    disconnect(c)


def random_states(body, rng, count: int, near_straight: bool = False):
    """``count`` random smooth states (u, w) of ``body``'s arm (bends up to ~1 rad)."""
    per = body.sections.per_section
    for _ in range(count):
        u = rng.uniform(-1.0, 1.0, body.n_dof)
        u[0::per] *= 0.005
        if near_straight and per == 3:
            u[1:3] = rng.uniform(-3e-5, 3e-5, 2)  # below the 1e-4 rad evaluation bend
        yield u, rng.normal(size=body.n_dof)


def compare_terms(body, batched, rng, count=6, near_straight=False):
    """Largest relative differences of M, C u̇ + G and G over ``count`` random states."""
    reference, us, ws, cs = [], [], [], []
    for u, w in random_states(body, rng, count, near_straight):
        body.set_state(u, w)
        reference.append((body.mass_matrix(), body.bias(), body.gravity_torque()))
        us.append(body.u), ws.append(body.w), cs.append(body.c)
    n = body.n_dof
    state = ArmState(np.array(us), np.array(ws), np.zeros((count, n)), np.array(cs), np.zeros((count, n)),
                     np.zeros(count), np.ones(count, dtype=bool))
    params = batched.params.take(np.zeros(count, dtype=int))
    got = terms(batched.topology, params, state)
    return [max(np.abs(g[i] - r[k]).max() / np.abs(r[k]).max() for i, r in enumerate(reference))
            for k, g in enumerate(got)]


@pytest.mark.parametrize("modules", [1, 2, 3, 4])
@pytest.mark.parametrize("payload, tilted", [(0.0, False), (0.4, True)], ids=["bare", "payload-tilted"])
def test_peter_terms_match_pybullet(client, modules, payload, tilted):
    model = Peter(modules)
    orientation = TILT if tilted else (0.0, 0.0, 0.0, 1.0)
    body = SoftPeterBody(client, model, payload=payload, base_orientation=orientation, backend="pybullet")
    batched = BatchedSoftPeter(model, 1, payload=payload, base_orientation=orientation)
    errors = compare_terms(body, batched, np.random.default_rng(modules))
    assert max(errors) < 1e-9, errors


@pytest.mark.parametrize("arm", [PCCArm(2, 6), PCCArm(3, 4), PlanarPCCArm(2, 6), PlanarPCCArm(4, 6)],
                         ids=["3d-2x6", "3d-3x4", "planar-2x6", "planar-4x6"])
@pytest.mark.parametrize("payload, tilted", [(0.0, False), (0.01, True)], ids=["bare", "payload-tilted"])
def test_pcc_terms_match_pybullet(client, arm, payload, tilted):
    orientation = TILT if tilted else (0.0, 0.0, 0.0, 1.0)
    body = PCCBody(client, arm, payload=payload, base_orientation=orientation, backend="pybullet")
    batched = BatchedPCCBody(arm, 1, payload=payload, base_orientation=orientation)
    errors = compare_terms(body, batched, np.random.default_rng(arm.n_dof))
    assert max(errors) < 1e-9, errors


@pytest.mark.parametrize("make", [lambda c: SoftPeterBody(c, Peter(2), payload=0.2, backend="pybullet"),
                                  lambda c: PCCBody(c, PCCArm(2, 6), backend="pybullet")], ids=["peter", "pcc"])
def test_terms_near_a_straight_section(client, make):
    # The terms are evaluated at 1e-4 rad: J has 1/θ² ≈ 1e8 entries there, which magnify both
    # cores' rounding (PyBullet's included) — agreement to 1e-8 instead of 1e-15.
    body = make(client)
    batched = BatchedSoftPeter(body.model, 1, payload=0.2) if isinstance(body, SoftPeterBody) \
        else BatchedPCCBody(body.model, 1)
    assert max(compare_terms(body, batched, np.random.default_rng(5), near_straight=True)) < 1e-8


@pytest.mark.parametrize("chord, planar", [(True, False), (False, False), (False, True)])
def test_section_map_matches(chord, planar):
    model = PlanarPCCArm(3, 4) if planar else PCCArm(3, 4)
    batched = BatchedPCCBody(model, 1)
    if chord:
        batched = BatchedSoftPeter(Peter(3), 1)
    sections = batched.sections
    rng = np.random.default_rng(7)
    B, n = 12, sections.n
    u = rng.uniform(-2.0, 2.0, (B, n))
    u[:3, 1:3] = [[0.0, 0.0], [2e-5, -1e-5], [0.0, 5e-5]][:3] if not planar else u[:3, 1:3]
    w = rng.normal(size=(B, n))
    reference = rng.uniform(-3.0, 3.0, (B, 3 * sections.n_sections))
    c = np.stack([sections.configuration(u[b], reference[b]) for b in range(B)])
    from soft_envs.sim.batched_arm import configuration
    np.testing.assert_allclose(configuration(batched.topology, u, reference), c, rtol=1e-14, atol=1e-15)
    ue, ce, J, acc = section_map(batched.topology, u, w, c)
    rows = 3 * sections.n_sections
    for b in range(B):
        ue_single = sections.evaluation_point(u[b], c[b])
        ce_single = sections.configuration(ue_single, c[b]) if ue_single is not u[b] else c[b]
        J_single, acc_single = sections.jacobian(ue_single, ce_single, w[b])
        # the one-arm kernel of the single bodies (SoftArmBody._kinematics): c̃ from u as well
        one = [np.empty(rows), np.empty(n), np.empty(rows), np.empty((rows, n)), np.empty(rows)]
        arm_section_map(batched.topology.sections, batched.topology.reference_lengths, u[b], w[b], reference[b],
                        *one, np.empty((sections.n_sections, 3, 3)))
        for got in ((ue[b], ce[b], J[b], acc[b]), tuple(one[1:])):
            np.testing.assert_allclose(got[0], ue_single, rtol=1e-14, atol=1e-18)
            np.testing.assert_allclose(got[1], ce_single, rtol=1e-14, atol=1e-15)
            np.testing.assert_allclose(got[2], J_single, rtol=1e-12, atol=1e-12 * np.abs(J_single).max())
            np.testing.assert_allclose(got[3], acc_single, rtol=1e-12, atol=1e-12 * np.abs(acc_single).max())
        np.testing.assert_allclose(one[0], c[b], rtol=1e-14, atol=1e-15)


def test_pure_step_leaves_its_input_and_masks_inactive_arms():
    batched = BatchedPCCBody(PCCArm(2, 4), 3)
    batched.reset_configuration(None, np.array([0.001, 0.4, 0.2, 0.0, 0.6, -1.0]))
    before = batched.snapshot()
    after = step(batched.topology, batched.params, before, 5e-3, np.zeros((3, 6)),
                 active=np.array([True, False, True]))
    np.testing.assert_array_equal(before.u, batched.state.u)
    np.testing.assert_array_equal(after.u[1], before.u[1])
    assert not np.array_equal(after.u[0], before.u[0])
    np.testing.assert_array_equal(after.u[0], after.u[2])


def test_bad_indices_and_parameters_raise():
    batched = BatchedPCCBody(PCCArm(2, 4), 2)
    with pytest.raises(InvalidParameterError):
        batched.reset([5], np.zeros(6))
    with pytest.raises(InvalidParameterError):
        batched.set_stiffness(None, -np.ones(6))
    with pytest.raises(InvalidParameterError):
        batched.set_model(None, PCCArm(3, 4))
    with pytest.raises(InvalidParameterError):
        batched.reset(np.array([True]), np.zeros(6))


def test_gravity_torque_takes_configurations_or_an_index_not_both():
    """Of some arms at their states, or of every arm at given configurations; both at once would leave
    one of them unread, so it is an error."""
    body = BatchedPCCBody(PCCArm(2, 4), 3)
    u = 0.1 * np.ones((3, body.n_dof))
    at_u = body.gravity_torque(u)
    assert not np.allclose(at_u, body.gravity_torque())  # (the states are straight)
    np.testing.assert_array_equal(body.gravity_torque(index=[1]), body.gravity_torque()[[1]])
    with pytest.raises(InvalidParameterError):
        body.gravity_torque(u, index=[1])
