"""``HexapodPose-v0``: observation layout (quaternions (x, y, z, w)), goal-conditioned reward, rendering."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.geometry import quaternion_to_matrix, rotation_vector_error


def test_env_observation_layout_and_goal_conditioned_reward():
    env = gym.make("soft_envs/HexapodPose-v0", goal_conditioned=True)
    obs, info = env.reset(seed=3)
    obs, reward, *_ , info = env.step(np.full(6, 0.3, dtype=np.float32))
    u = env.unwrapped
    np.testing.assert_allclose(obs["achieved_goal"], u.solution.pose, atol=1e-6)
    expected = u.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
    assert expected == pytest.approx(info["reward_position"] + info["reward_orientation"], abs=1e-5)
    np.testing.assert_allclose(info["inputs"], 0.3 * u.model.input_limit, atol=1e-7)  # float32 action
    env.close()
    flat = gym.make("soft_envs/HexapodPose-v0")
    o, _ = flat.reset(seed=3)
    fu = flat.unwrapped
    np.testing.assert_allclose(o[0:7], fu.solution.pose, atol=1e-6)
    np.testing.assert_allclose(o[7:14], fu.goal, atol=1e-6)
    # quaternions (x, y, z, w) with w >= 0, and [17:20] the rotation vector of goal ⊗ platform⁻¹
    assert o[6] >= 0 and o[13] >= 0
    np.testing.assert_allclose(quaternion_to_matrix(o[3:7].astype(float)), fu.solution.rotation, atol=1e-6)
    np.testing.assert_allclose(o[17:20], rotation_vector_error(fu.goal[3:], fu.solution.quaternion), atol=1e-6)
    np.testing.assert_allclose(o[20:38], -fu.solution.forces.reshape(18), atol=1e-6)
    flat.close()


def test_rendered_rods_follow_the_model():
    env = gym.make("soft_envs/HexapodPose-v0", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.array([1, -1, 0.5, 0, -0.5, 1], dtype=np.float32))
    img = env.render()
    assert img.shape == (240, 320, 3) and img.std() > 5
    u = env.unwrapped
    client, ids = u.render_client, u.render_bodies
    rods = u.model.rod_states(u.solution, n_steps=len(ids["segments"][0]))
    for i in (0, 4):
        for k in (0, 9):
            pos, _ = client.getBasePositionAndOrientation(ids["segments"][i][k])
            mid = 0.5 * (rods[i].positions[k] + rods[i].positions[k + 1])
            np.testing.assert_allclose(pos, mid, atol=1e-9)
    env.close()
    assert u.render_client is None
