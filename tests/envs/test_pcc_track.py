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
    np.testing.assert_allclose(obs[12:18], unwrapped.model.pcc_state(unwrapped.body.configuration[0]), atol=1e-5)
    env.close()


def test_env_torque_action_and_validation():
    env = gym.make("soft_envs/PCCTrack-v0", action_type="torque", random_start=False, start_straight=True)
    obs, _ = env.reset(seed=0)
    tip0 = obs[0:3].copy()
    push = np.zeros(6, dtype=np.float32)
    push[1] = 0.2  # bending moment on a of the first segment: bends towards +x
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(push)
    assert obs[0] > tip0[0] + 0.01 and not terminated
    with pytest.raises(ValueError):
        env.step(np.full(6, np.nan, dtype=np.float32))
    env.close()
    with pytest.raises(ValueError):
        gym.make("soft_envs/PCCTrack-v0", action_type="pressure", actuation="direct")  # no chambers
    for kwargs in (dict(trajectory="unknown"), dict(physics="rigid"), dict(actuation="motors"),
                   dict(controller_period=3e-3), dict(regulator_delay=-0.1), dict(max_pressure=3e5)):
        with pytest.raises(ValueError):
            gym.make("soft_envs/PCCTrack-v0", **kwargs)


def test_pressure_action_bends_towards_the_pressurised_chamber():
    env = gym.make("soft_envs/PCCTrack-v0", action_type="pressure", random_start=False, start_straight=True)
    obs, info = env.reset(seed=0)
    unwrapped = env.unwrapped
    # The action's bound: the largest pressure whose every combination holds the arm inside the
    # workspace box; with three chambers (+p, -p, -p) bends a segment by 2 α₁ r_b p / k_θ = 140°.
    limit = unwrapped.pressure_action_limit
    np.testing.assert_allclose(unwrapped.action_to_model(np.ones(6)), limit)
    pressure = unwrapped.model.pressure
    bend = 2 * pressure.alpha1 * pressure.chamber_offset * limit / unwrapped.nominal_stiffness[1]
    assert bend == pytest.approx(np.radians(140.0)) and limit == pytest.approx(0.375 * 30e3)
    hold = unwrapped.model_to_action(info["pressures"])  # the pressures that hold the start
    action = hold.copy()
    action[0] += 0.3  # chamber 1 of segment 1 (γ = 0): bends the segment towards +x
    for _ in range(10):
        obs, _, terminated, _, info = env.step(action)
    assert obs[0] > 0.01 and abs(obs[1]) < 1e-3 and not terminated
    np.testing.assert_allclose(info["pressures"][0], unwrapped.action_to_model(action)[0], rtol=1e-3)
    assert not info["pressure_saturated"]
    env.close()


@pytest.mark.parametrize("kwargs", [dict(), dict(trajectory="planar_circle", n_segments=4, time_scale=4.0)],
                         ids=["spiral", "planar"])
def test_ik_plus_pd_feedforward_tracks_the_trajectory(kwargs):
    # The soft arm lags its moving set-point (the paper's law feeds forward K and G only):
    # about a millimetre, below the paper's 3 mm on the real robot.
    env = gym.make("soft_envs/PCCTrack-v0", **kwargs)
    agent = PCCTrackingAgent(env)
    out = track(env, agent, 30, seed=1)
    env.close()
    errors = out["errors"]
    assert np.sqrt(np.mean(errors**2)) < 1e-3 and errors[5:].max() < 1.5e-3
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
    # A 10 % too stiff feed-forward: k_p M adds little to the soft arm's K, so the error stays.
    errors = {}
    for err in (0.0, 0.1):
        env = gym.make("soft_envs/PCCTrack-v0", stiffness_error=err, random_start=False)
        errors[err] = track(env, PCCTrackingAgent(env), 12)["errors"][-1]
        env.close()
    assert errors[0.0] < 1e-3 < 3e-3 < errors[0.1]
    with pytest.raises(ValueError):
        PDFeedforward(PCCArm(1, 2), stiffness_error=-1.0)
