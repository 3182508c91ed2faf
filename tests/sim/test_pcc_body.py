"""The PyBullet body of the PCC arm and its elastic reduced dynamics (:mod:`soft_envs.sim.pcc_body`):
frames equal the analytic model's, closed-form gravity and mass matrix, relaxation, the paper's
PD + feed-forward law, a payload the law does not know."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.robots import PCCArm, PlanarPCCArm
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody, PDFeedforward


@pytest.fixture
def client():
    c = connect()
    yield c
    disconnect(c)


@pytest.mark.parametrize("arm", [PCCArm(3, 6), PlanarPCCArm(4, 3)], ids=["3d", "planar"])
def test_body_link_frames_equal_the_analytic_ones(arm):
    client = connect()
    try:
        body = PCCBody(client, arm)
        rng = np.random.default_rng(0)
        for c in list(arm.sample(rng, 15)) + [np.zeros(arm.n_dof)]:
            body.reset(c)
            com, rot = body.link_frames()
            _, analytic_rot, analytic_com = arm.link_frames(c)
            assert np.abs(com - analytic_com).max() <= 1e-9
            assert np.abs(rot - analytic_rot).max() <= 1e-9
            assert np.linalg.norm(body.tip_state()[0] - arm.forward(c)) <= 1e-9
        assert body.n_joints == arm.body_joint_map().shape[0] == len(arm.chain().names)
    finally:
        disconnect(client)


def test_gravity_and_mass_matrix_against_closed_forms(client):
    # One straight-ish segment bent by θ in the x–z plane: G_a = ∂V/∂a with V = Σ m_k g z_k.
    arm = PlanarPCCArm(1, 4)
    body = PCCBody(client, arm)
    c = np.array([0.002, 0.6])
    body.reset(c)
    _, _, com = arm.link_frames(c)
    masses = arm.chain().masses

    def potential(cc):
        return 9.81 * np.dot(masses, arm.link_frames(cc)[2][:, 2])

    h = 1e-6
    fd = [(potential(c + h * e) - potential(c - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(body.gravity_torque(), fd, rtol=1e-5, atol=1e-9)
    M = body.mass_matrix()
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_mass_matrix_is_finite_for_the_straight_3d_arm(client):
    body = PCCBody(client, PCCArm(2, 6))
    body.reset(np.zeros(6))
    eig = np.linalg.eigvalsh(body.mass_matrix())
    assert np.all(np.isfinite(eig)) and eig.min() > 0


def test_released_arm_relaxes_to_straight(client):
    arm = PlanarPCCArm(2, 4)
    body = PCCBody(client, arm, gravity=0.0)
    body.reset(np.array([0.004, 0.8, -0.003, -0.5]))
    for _ in range(400):
        body.step(5e-3, np.zeros(4))
    assert np.abs(body.u).max() < 1e-3  # elastic, damped: back to straight
    assert np.abs(body.w).max() < 0.01


@pytest.mark.parametrize("compensate", [True, False])
def test_pd_feedforward_regulates_to_a_set_point(client, compensate):
    # With the law's +D term the arm's damping is cancelled and k_v = 3 /s alone settles it
    # (error ∝ e^{-1.5 t}; a small step: a large one excites the undamped stiff modes); without
    # it the Rayleigh damping settles it from the straight arm.
    arm = PCCArm(2, 6)
    body = PCCBody(client, arm)
    controller = PDFeedforward(arm, compensate_damping=compensate)
    target = np.array([-0.003, 0.7, 0.5, 0.002, -0.9, 2.0])
    body.reset(0.9 * target if compensate else np.zeros(6))
    for _ in range(2000):
        body.step(5e-3, controller.torque(body, target), cancel_damping=compensate)
    assert np.linalg.norm(body.tip_state()[0] - arm.forward(target)) < 1e-4
    np.testing.assert_allclose(body.state, arm.pcc_state(target), atol=1e-3)


def test_a_payload_the_law_does_not_know_is_a_steady_error(client):
    arm = PCCArm(2, 6)
    target = np.array([0.0, 0.6, 0.0, 0.0, 0.6, 0.0])
    tips = {}
    for known in (0.0, 0.02):
        body = PCCBody(client, arm, payload=0.02)
        controller = PDFeedforward(arm, known_payload=known, compensate_damping=False)
        body.reset(target)
        for _ in range(1500):
            body.step(5e-3, controller.torque(body, target))
        tips[known] = body.tip_state()[0]
    assert np.linalg.norm(tips[0.02] - arm.forward(target)) < 1e-5  # the model knows it: exact
    sag = arm.forward(target)[2] - tips[0.0][2]
    assert sag > 1e-3  # 20 g the feed-forward lacks: millimetres (kp adds little to K)
