"""PCC arm in physics: elastic reduced dynamics, the paper's PD + feed-forward law, ``PCCTrack-v0``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401  (registers the envs)
from soft_envs.agents.pcc_control import PCCTrackingAgent, track
from soft_envs.robots import PCCArm, PlanarPCCArm
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody, PDFeedforward


@pytest.fixture
def client():
    c = connect()
    yield c
    disconnect(c)


def test_stiffness_from_the_papers_material():
    arm = PCCArm(2, 6)
    area, inertia = arm.cross_section()
    np.testing.assert_allclose(area, 0.0173 / (1100.0 * 0.0644))
    np.testing.assert_allclose(inertia, area**2 / (4 * np.pi))
    k = arm.stiffness()
    np.testing.assert_allclose(k[:, 0], 80e6 * area / 0.065)
    np.testing.assert_allclose(k[:, 1], 80e6 * inertia / 0.065)
    assert np.all(k[:, 2] == 0)


def test_gravity_and_mass_matrix_against_closed_forms(client):
    # One straight-ish segment bent by θ in the x–z plane: G_a = ∂V/∂a with V = Σ m_k g z_k.
    arm = PlanarPCCArm(1, 4)
    body = PCCBody(client, arm)
    c = np.array([0.002, 0.6])
    body.reset(c)
    _, _, com = arm.link_frames(c)
    masses = [link_mass for link_mass, _, _ in arm._link_geometry()]

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


def test_released_arm_relaxes_to_its_gravity_equilibrium(client):
    arm = PlanarPCCArm(2, 4)
    body = PCCBody(client, arm, gravity=0.0)
    body.reset(np.array([0.004, 0.8, -0.003, -0.5]))
    for _ in range(600):
        body.step(1e-3, np.zeros(4))
    assert np.abs(body.c).max() < 1e-3  # elastic, damped: back to straight
    assert np.abs(body.w).max() < 0.1


def test_pd_feedforward_regulates_to_a_set_point(client):
    arm = PCCArm(2, 6)
    body = PCCBody(client, arm)
    controller = PDFeedforward(arm)
    target = np.array([-0.003, 0.7, 0.5, 0.002, -0.9, 2.0])
    body.reset(np.zeros(6))
    for _ in range(1500):
        body.step(1e-3, controller.torque(body, target), cancel_damping=True)
    assert np.linalg.norm(body.tip_state()[0] - arm.forward(target)) < 1e-5
    np.testing.assert_allclose(body.state, arm.pcc_state(target), atol=1e-3)


def test_env_observation_layout_and_reward_terms():
    env = gym.make("soft_envs/PCCTrack-v0")
    obs, info = env.reset(seed=0)
    unwrapped = env.unwrapped
    assert obs.shape == (14 + 2 * 6,)
    np.testing.assert_allclose(obs[3:6], unwrapped.trajectory.position(info["time"]), atol=1e-7)
    assert info["tracking_error"] < 1e-6  # starts at rest on the IK solution of the start point
    action = unwrapped.model_to_action(info["setpoint"])
    obs, reward, terminated, truncated, info = env.step(action)
    np.testing.assert_allclose(obs[3:6], unwrapped.trajectory.position(info["time"]), atol=1e-7)
    np.testing.assert_allclose(obs[6:9], obs[3:6] - obs[0:3], atol=1e-7)
    assert reward == info["reward_tracking"] + info["reward_action_rate"]
    assert info["reward_tracking"] == pytest.approx(-info["tracking_error"])
    np.testing.assert_allclose(obs[12:18], unwrapped.body.state, atol=1e-5)
    env.close()


def test_env_torque_action_and_validation():
    env = gym.make("soft_envs/PCCTrack-v0", action_type="torque", random_start=False, start_straight=True)
    obs, _ = env.reset(seed=0)
    tip0 = obs[0:3].copy()
    push = np.zeros(6, dtype=np.float32)
    push[1] = 0.5  # bending moment on a of the first segment: bends towards +x
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(push)
    assert obs[0] > tip0[0] + 0.01 and not terminated
    with pytest.raises(ValueError):
        env.step(np.full(6, np.nan, dtype=np.float32))
    env.close()
    with pytest.raises(ValueError):
        gym.make("soft_envs/PCCTrack-v0", action_type="pressure")
    with pytest.raises(ValueError):
        gym.make("soft_envs/PCCTrack-v0", trajectory="unknown")


@pytest.mark.parametrize("kwargs", [dict(), dict(trajectory="planar_circle", n_segments=4, time_scale=4.0)],
                         ids=["spiral", "planar"])
def test_ik_plus_pd_feedforward_tracks_the_trajectory(kwargs):
    env = gym.make("soft_envs/PCCTrack-v0", **kwargs)
    agent = PCCTrackingAgent(env)
    out = track(env, agent, 30, seed=1)
    env.close()
    errors = out["errors"]
    assert np.sqrt(np.mean(errors**2)) < 0.5e-3 and errors[5:].max() < 0.1e-3  # below the paper's 3 mm
    assert out["ik_errors"].max() < 1e-9
    if env.unwrapped.model.planar:
        angles = env.unwrapped.model.tip_angle(env.unwrapped.setpoint)
        assert abs(angles - np.deg2rad(30.0)) < np.deg2rad(0.1)


def test_goal_conditioned_form_recomputes_the_reward():
    env = gym.make("soft_envs/PCCTrack-v0", goal_conditioned=True)
    obs, _ = env.reset(seed=2)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    obs, reward, _, _, info = env.step(env.action_space.sample())
    assert env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == reward
    batch = env.unwrapped.compute_reward(np.zeros((4, 3)), np.ones((4, 3)), None)
    np.testing.assert_allclose(batch, -np.sqrt(3.0))
    env.close()
    assert not hasattr(gym.make("soft_envs/PCCTrack-v0").unwrapped, "compute_reward")  # flat form: no GoalEnv


def test_feedforward_model_error_shows_in_tracking():
    errors = {}
    for err in (0.0, 0.1):
        env = gym.make("soft_envs/PCCTrack-v0", stiffness_error=err, random_start=False)
        errors[err] = track(env, PCCTrackingAgent(env), 12)["errors"][-1]
        env.close()
    assert errors[0.0] < 1e-4 < errors[0.1]
    with pytest.raises(ValueError):
        PDFeedforward(PCCArm(1, 2), stiffness_error=-1.0)
