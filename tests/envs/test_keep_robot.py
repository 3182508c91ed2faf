"""``reset(options={"keep_robot": True})``: a new task on the same robot, on every env with ``realism=``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs
from soft_envs.exceptions import InvalidParameterError

#: Per env: keywords that make the robot's response independent of the task's draws, and the
#: observation entries that show the robot only (not the goal).
ROBOT_TRACES = {
    "soft_envs/PeterReach-v0": ({}, slice(0, 3)),  # the tip; goals are drawn, starts are at rest
    "soft_envs/PCCTrack-v0": ({"random_start": False}, slice(None)),
    "soft_envs/PCCReach-v0": ({}, slice(0, 3)),  # the tip: the arm starts straight, goals are drawn
    "soft_envs/PCCPush-v0": ({}, slice(0, 3)),  # the tip (three steps: it does not reach the box)
    "soft_envs/QuadrupedWalk-v0": ({"reset_noise_scale": 0.0}, slice(None)),
    "soft_envs/QuadrupedPose-v0": ({"reset_noise_scale": 0.0}, slice(0, 39)),  # without the goal
    "soft_envs/HexapodPose-v0": ({}, np.r_[0:7, 20:38]),  # platform pose and rod forces
}


def test_every_env_is_covered():
    assert set(ROBOT_TRACES) == set(soft_envs.ENV_IDS)


def _noise_free_realistic(env_id: str) -> dict:
    """The realistic preset with every per-step noise off (so that rollouts are comparable)."""
    env = gym.make(env_id)
    names = [name for name in env.unwrapped.realism.table if "noise" in name]
    env.close()
    return {"preset": "realistic", **{name: 0.0 for name in names}}


def _trace(env, seed: int, keep_robot: bool, robot_part, steps: int = 3):
    obs, info = env.reset(seed=seed, options={"keep_robot": keep_robot})
    actions = np.linspace(-0.5, 0.5, steps * env.action_space.shape[0]).reshape(steps, -1).astype(np.float32)
    trace = [np.asarray(obs)[robot_part]]
    for action in actions:
        obs, *_ = env.step(action)
        trace.append(np.asarray(obs)[robot_part])
    return np.array(trace), info["realism"]


def _same(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("env_id", sorted(ROBOT_TRACES))
def test_keep_robot_keeps_every_perturbation_and_the_simulated_robot(env_id):
    kwargs, robot_part = ROBOT_TRACES[env_id]
    env = gym.make(env_id, realism=_noise_free_realistic(env_id), **kwargs)
    try:
        first, drawn_first = _trace(env, 5, False, robot_part)
        second, drawn_second = _trace(env, 6, False, robot_part)
        assert not _same(drawn_first, drawn_second)  # a new robot at a plain reset …
        assert not np.allclose(first, second)
        kept, drawn_kept = _trace(env, 7, True, robot_part)  # … the same one with keep_robot
        assert _same(drawn_kept, drawn_second)
        assert np.allclose(kept, second, rtol=0.0, atol=1e-12)
        kept_again, drawn_again = _trace(env, None, True, robot_part)  # a reset without a seed keeps it too
        assert _same(drawn_again, drawn_second)
        assert np.allclose(kept_again, second, rtol=0.0, atol=1e-12)
    finally:
        env.close()


def test_keep_robot_gives_a_new_task_and_new_noise():
    env = gym.make("soft_envs/PeterReach-v0", kinematic=True, realism="realistic")
    obs, info = env.reset(seed=1)
    goals, noisy_tips = {tuple(obs[3:6])}, {tuple(obs[0:3])}
    for _ in range(3):
        obs, kept = env.reset(options={"keep_robot": True})
        assert _same(kept["realism"], info["realism"])
        goals.add(tuple(obs[3:6]))
        noisy_tips.add(tuple(obs[0:3]))  # the same arm at rest, measured with new noise
    assert len(goals) == 4 and len(noisy_tips) == 4
    env.close()


def test_keep_robot_on_the_ideal_preset_is_the_ideal_robot():
    env = gym.make("soft_envs/PeterReach-v0", kinematic=True)
    _, info = env.reset(seed=0)
    _, kept = env.reset(seed=1, options={"keep_robot": True})
    assert _same(info["realism"], kept["realism"])
    env.close()


@pytest.mark.parametrize("env_id", sorted(ROBOT_TRACES))
def test_keep_robot_before_any_reset_and_unknown_options_are_value_errors(env_id):
    env = gym.make(env_id)
    try:
        with pytest.raises(InvalidParameterError, match="no robot to keep"):
            env.reset(seed=0, options={"keep_robot": True})
        env.reset(seed=0, options={"keep_robot": False})
        with pytest.raises(InvalidParameterError, match="unknown reset option.*accepts: keep_robot"):
            env.reset(options={"keep_robbot": True})
        with pytest.raises(InvalidParameterError, match="True or False"):
            env.reset(options={"keep_robot": "yes"})
        with pytest.raises(InvalidParameterError, match="must be a dict"):
            env.reset(options=[("keep_robot", True)])
    finally:
        env.close()


def test_quadruped_pose_takes_a_goal_and_keep_robot_together():
    env = gym.make("soft_envs/QuadrupedPose-v0", realism="realistic")
    _, info = env.reset(seed=0)
    obs, kept = env.reset(seed=1, options={"keep_robot": True, "goal": (0.05, 0.0, -0.05)})
    assert np.allclose(obs[39:42], (0.05, 0.0, -0.05), atol=1e-6)
    assert _same(kept["realism"], info["realism"])
    env.close()


def test_vector_envs_keep_each_robot():
    envs = gym.make_vec("soft_envs/PeterReach-v0", num_envs=2, vectorization_mode="sync", kinematic=True,
                        realism="realistic")
    _, info = envs.reset(seed=0)
    _, kept = envs.reset(seed=10, options={"keep_robot": True})
    assert np.array_equal(info["realism"]["leg_gain"], kept["realism"]["leg_gain"])
    assert not np.array_equal(info["realism"]["leg_gain"][0], info["realism"]["leg_gain"][1])
    envs.close()


@pytest.mark.parametrize("env_id, kwargs", [("soft_envs/PeterReach-v0", {"kinematic": True}),
                                            ("soft_envs/PeterReach-v0", {}), ("soft_envs/PCCTrack-v0", {})])
def test_native_vector_envs_keep_every_sub_envs_robot(env_id, kwargs):
    envs = gym.make_vec(env_id, num_envs=2, realism=_noise_free_realistic(env_id), **kwargs)
    try:
        with pytest.raises(InvalidParameterError, match="no robot to keep"):
            envs.reset(seed=0, options={"keep_robot": True})
        _, first = envs.reset(seed=0)
        _, kept = envs.reset(seed=10, options={"keep_robot": True})
        _, other = envs.reset(seed=10)
        for name in first["realism"]:
            assert np.array_equal(kept["realism"][name], first["realism"][name])
        assert any(not np.array_equal(other["realism"][n], first["realism"][n]) for n in first["realism"])
        single = gym.make(env_id, realism=_noise_free_realistic(env_id), **kwargs)  # sub-env 1 is seed 1's robot
        single.reset(seed=1)
        obs, _ = single.reset(seed=11, options={"keep_robot": True})
        vector_obs, _ = envs.reset(seed=[0, 1], options={"keep_robot": False})  # robots of seeds 0 and 1 …
        vector_obs, _ = envs.reset(seed=10, options={"keep_robot": True})  # … kept, tasks of seeds 10 and 11
        np.testing.assert_allclose(vector_obs[1], obs, atol=1e-6)
        single.close()
        with pytest.raises(InvalidParameterError, match="unknown reset option"):
            envs.reset(options={"keep_robbot": True})
    finally:
        envs.close()
