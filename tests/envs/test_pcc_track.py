"""``PCCTrack-v0``: observation, reward, actions, and tracking with the paper's PD + feed-forward law."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401  (registers the envs)
from soft_envs.agents.pcc_control import PCCTrackingAgent, track
from soft_envs.robots import PCCArm
from soft_envs.sim.pcc_body import PDFeedforward


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
