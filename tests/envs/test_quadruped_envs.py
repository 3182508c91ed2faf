"""QuadrupedWalk-v0 and QuadrupedPose-v0: observation layout, rewards, the trot and the body pose in physics."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.body_pose import BodyPoseController
from soft_envs.agents.gait import TrotController
from soft_envs.geometry import quaternion_to_matrix, quaternion_to_rpy, rpy_to_matrix


@pytest.fixture
def walk_env():
    env = gym.make("soft_envs/QuadrupedWalk-v0")
    yield env
    env.close()


@pytest.fixture
def pose_env():
    env = gym.make("soft_envs/QuadrupedPose-v0")
    yield env
    env.close()


def test_rotation_conventions_agree():
    rpy = np.array([0.3, -0.2, 1.1])
    import pybullet

    quat = pybullet.getQuaternionFromEuler(rpy)  # PyBullet: R = Rz(yaw) Ry(pitch) Rx(roll)
    np.testing.assert_allclose(quaternion_to_matrix(np.asarray(quat)), rpy_to_matrix(*rpy), atol=1e-12)
    np.testing.assert_allclose(quaternion_to_rpy(quat), rpy, atol=1e-12)


def test_walk_observation_layout_and_action_mapping(walk_env):
    env = walk_env.unwrapped
    obs, info = walk_env.reset(seed=0)
    assert obs.shape == (39,) and walk_env.observation_space.contains(obs)
    standing = env.model.standing_configuration().ravel()
    action = env.model_to_action(standing)
    np.testing.assert_allclose(env.action_to_model(action), standing, atol=1e-6)
    for _ in range(20):
        obs, reward, terminated, truncated, info = walk_env.step(action)
    q, qd, _ = env.body.joint_state()
    np.testing.assert_allclose(obs[10:22], q, atol=1e-6)
    np.testing.assert_allclose(obs[22:34], qd, atol=1e-5)
    np.testing.assert_allclose(obs[34:38], 1.0)  # all four feet on the ground
    pos, quat = env.body.base_pose()
    np.testing.assert_allclose(obs[0:4], quat, atol=1e-6)
    assert abs(obs[38] - pos[2]) < 1e-6 and abs(pos[2] - 0.088) < 3e-3
    assert not terminated and set(info) >= {"reward_forward", "reward_healthy", "x", "y", "yaw", "fallen"}
    assert np.allclose(np.linalg.norm(env.action_to_model(np.ones(12)) - env.model.upper), 0)


@pytest.mark.parametrize("fall_weight", [0.0, 3.0])
def test_walk_reward_terms_and_fall_termination(fall_weight):
    walk_env = gym.make("soft_envs/QuadrupedWalk-v0", fall_weight=fall_weight)
    env = walk_env.unwrapped
    walk_env.reset(seed=1)
    _, reward, _, _, info = walk_env.step(walk_env.action_space.sample())
    terms = [v for k, v in info.items() if k.startswith("reward_")]
    assert len(terms) == 9 and reward == pytest.approx(sum(terms), abs=1e-12)
    assert info["reward_fall"] == 0.0  # standing
    assert info["reward_slip"] == 0.0 and info["reward_reversal"] == 0.0  # their weights default to 0
    # Upside down on the ground: a fall, priced by the fall term.
    env.body.reset(env.model.standing_configuration().ravel(), position=(0, 0, 0.03), orientation=(1, 0, 0, 0))
    _, reward, terminated, _, info = walk_env.step(np.zeros(12, dtype=np.float32))
    assert terminated and info["fallen"] and info["reward_healthy"] == 0.0
    assert info["reward_fall"] == -fall_weight
    assert reward == pytest.approx(sum(v for k, v in info.items() if k.startswith("reward_")), abs=1e-12)
    walk_env.close()
    with pytest.raises(ValueError, match="fall_weight"):
        gym.make("soft_envs/QuadrupedWalk-v0", fall_weight=-1.0)
    with pytest.raises(ValueError, match="slip_weight"):
        gym.make("soft_envs/QuadrupedWalk-v0", slip_weight=-1.0)
    with pytest.raises(ValueError, match="reversal_weight"):
        gym.make("soft_envs/QuadrupedWalk-v0", reversal_weight=-1.0)


def test_the_reversal_term_prices_each_joint_target_that_turns_back():
    walk_env = gym.make("soft_envs/QuadrupedWalk-v0", reversal_weight=0.5)
    walk_env.reset(seed=2)
    zigzag = [np.full(12, 0.2, dtype=np.float32), np.full(12, -0.2, dtype=np.float32)]
    rewards, counts = [], []
    for k in range(6):
        _, _, _, _, info = walk_env.step(zigzag[k % 2])
        rewards.append(info["reward_reversal"])
        counts.append(int(walk_env.unwrapped.gait.reversals.count.sum()))
    walk_env.close()
    made = np.diff([0, *counts])  # reversals of the 12 targets at each step
    np.testing.assert_allclose(rewards, -0.5 * made)
    assert made[0] == 0 and made[1:].sum() > 0  # the first move sets a direction; turns count after it


def test_the_slip_term_prices_the_stance_feet_skating():
    """``slip = −slip_weight · mean stance-foot slip speed`` of the step (the gait meter's)."""
    env = gym.make("soft_envs/QuadrupedWalk-v0", slip_weight=30.0)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(20):
        _, _, _, _, info = env.step(env.action_space.sample())
        assert info["reward_slip"] == pytest.approx(-30.0 * env.unwrapped.gait.step_slip) and info["reward_slip"] <= 0
    env.close()


def test_scripted_trot_walks_forward_straight_without_falling(walk_env):
    obs, info = walk_env.reset(seed=2)
    controller = TrotController(walk_env)
    controller.reset(obs, info)
    for _ in range(300):  # 3 s
        obs, reward, terminated, truncated, info = walk_env.step(controller.act(obs))
        assert not terminated
    assert info["x"] / 3.0 > 0.06  # includes the first cycle's ramp; the bench measures 20 s
    assert abs(info["y"]) < 0.1 * info["x"]
    assert np.all(controller.last_iterations == 5)  # every gait step within one 0.6 cm NR move


def test_trot_feet_targets_pair_legs_half_a_cycle_apart(walk_env):
    controller = TrotController(walk_env, ramp_cycles=0.0, heading_gain=0.0)
    period = controller.period
    for t in np.linspace(0, period, 7):
        feet = controller.foot_targets(t)
        np.testing.assert_allclose(feet[0, [0, 2]], feet[3, [0, 2]], atol=1e-15)  # legs 1 and 4
        np.testing.assert_allclose(feet[1, [0, 2]], feet[2, [0, 2]], atol=1e-15)  # legs 2 and 3
        np.testing.assert_allclose(controller.foot_targets(t + period / 2)[1], feet[0] * [1, -1, 1], atol=1e-15)


@pytest.mark.parametrize("goal", [(0.2618, 0, 0), (0, -0.2618, 0), (0, 0, 0.2618)])
def test_body_pose_tracks_15_degrees_with_feet_fixed(pose_env, goal):
    obs, info = pose_env.reset(seed=0, options={"goal": goal})
    np.testing.assert_allclose(obs[39:42], goal, atol=1e-6)
    controller = BodyPoseController(pose_env)
    for _ in range(200):
        obs, reward, terminated, truncated, info = pose_env.step(controller.act(obs))
    assert not info["fallen"]
    assert np.degrees(info["orientation_error"]) < 1.0
    assert info["foot_slip"] < 2e-3 and info["foot_displacement"] < 4e-3
    np.testing.assert_allclose(obs[42:45], quaternion_to_rpy(obs[0:4]), atol=1e-5)


def test_pose_reward_terms_goal_conditioned_and_bad_options():
    env = gym.make("soft_envs/QuadrupedPose-v0", goal_conditioned=True)
    obs, info = env.reset(seed=3)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    assert np.all(np.abs(obs["desired_goal"]) <= np.radians(10.0) + 1e-6)
    obs, reward, _, _, info = env.step(env.action_space.sample())
    terms = [v for k, v in info.items() if k.startswith("reward_")]
    assert reward == pytest.approx(sum(terms), abs=1e-12)
    assert env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == reward
    batch = env.unwrapped.compute_reward(np.zeros((5, 3)), np.zeros((5, 3)), np.array([{}] * 5))
    assert batch.shape == (5,) and np.all(batch == 0)
    relabelled = env.unwrapped.compute_reward(obs["achieved_goal"], obs["achieved_goal"], info)
    assert relabelled == pytest.approx(info["reward_slip"] + info["reward_action_rate"], abs=1e-12)
    flat = gym.make("soft_envs/QuadrupedPose-v0")
    assert not hasattr(flat.unwrapped, "compute_reward")  # not mistaken for a goal env
    flat.close()
    with pytest.raises(ValueError):
        env.reset(options={"goal": (0.1, np.nan, 0.0)})
    env.close()
    with pytest.raises(ValueError):
        gym.make("soft_envs/QuadrupedPose-v0", goal_range=1.0)
    with pytest.raises(ValueError):
        gym.make("soft_envs/QuadrupedWalk-v0", forward_weight=-1.0)
