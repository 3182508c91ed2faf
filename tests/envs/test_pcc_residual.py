"""``PCCTrack-v0`` with ``action_type="residual"``: a tip-aim correction on the PD + feed-forward law."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401  (registers the envs)
from soft_envs.envs.pcc_parts import ResidualAim
from soft_envs.exceptions import InvalidParameterError

ENV = "soft_envs/PCCTrack-v0"


def test_a_zero_residual_is_the_configuration_action_of_the_trajectorys_own_setpoint():
    residual = gym.make(ENV, action_type="residual")
    plain = gym.make(ENV)
    assert residual.action_space.shape == (3,)
    obs_r, info_r = residual.reset(seed=3)
    obs_p, info_p = plain.reset(seed=3)
    np.testing.assert_array_equal(obs_r, obs_p)
    env = plain.unwrapped
    aim = ResidualAim(env.model, env.trajectory)  # the reference continued along the trajectory, as the env does
    aim.reset(info_p["setpoint"])
    for _ in range(5):
        target = aim.setpoint(env.time + env.dt, np.zeros(3))
        obs_p, reward_p, _, _, info_p = plain.step(env.model_to_action(target))
        obs_r, reward_r, _, _, info_r = residual.step(np.zeros(3, dtype=np.float32))
        np.testing.assert_allclose(obs_r, obs_p, rtol=1e-3, atol=1e-6)  # the float32 action rounds the set-point
        assert reward_r == pytest.approx(reward_p, abs=1e-6)
    assert info_r["tracking_error"] < 2e-3  # the law tracks the spiral
    residual.close()
    plain.close()


def test_a_residual_moves_the_aim_by_its_correction_in_metres():
    env = gym.make(ENV, action_type="residual", residual_limit=0.01)
    obs, info = env.reset(seed=0)
    unwrapped = env.unwrapped
    assert np.all(info["setpoint"] == unwrapped.aim.reference)
    action = np.array([0.5, -0.2, 0.1], dtype=np.float32)
    obs, _, _, _, info = env.step(action)
    np.testing.assert_allclose(unwrapped.action_to_model(action), 0.01 * action, rtol=1e-6)
    aimed = unwrapped.model.forward(unwrapped.aim.setpoint(unwrapped.time, 0.01 * action.astype(float)))
    np.testing.assert_allclose(aimed, unwrapped.trajectory.position(unwrapped.time) + 0.01 * action, atol=1e-9)
    assert unwrapped.previous_action == pytest.approx(action)  # the command is the correction
    env.close()
    with pytest.raises(InvalidParameterError, match="residual_limit"):
        gym.make(ENV, action_type="residual", residual_limit=0.0)


def test_residual_with_delta_actions_integrates_the_correction():
    env = gym.make(ENV, action_type="residual", action_mode="delta", delta_scale=0.1)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (14 + 2 * 6 + 3,)  # the observation gains the current correction
    np.testing.assert_array_equal(obs[-3:], 0.0)
    for k in range(3):
        obs, *_ = env.step(np.array([1.0, 0.0, -1.0], dtype=np.float32))
        np.testing.assert_allclose(obs[-3:], [0.1 * (k + 1), 0.0, -0.1 * (k + 1)], atol=1e-6)
    env.close()
