"""PCCTrack-v0 never returns NaN: an arm driven beyond the PCC model is stopped with a reason."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_full_torque_holds_the_arm_inside_its_model(sign):
    # The torque bound is the elastic force at the workspace bounds (the ramp brings it in).
    env = gym.make("soft_envs/PCCTrack-v0", action_type="torque")
    env.reset(seed=0)
    for _ in range(60):
        obs, reward, terminated, _, info = env.step(np.full(env.action_space.shape, sign, dtype=np.float32))
        assert not terminated and np.all(np.isfinite(obs))
    bend = np.hypot(*env.unwrapped.body.state.u.reshape(-1, 3)[:, 1:].T)
    assert bend.max() > np.radians(90.0)  # it does bend far
    env.close()


def test_a_payload_that_folds_the_arm_stops_it_with_a_reason():
    env = gym.make("soft_envs/PCCTrack-v0", payload=0.25)  # seven times the arm: folds it over
    env.reset(seed=0)
    hold = env.unwrapped.model_to_action(env.unwrapped.setpoint)
    for _ in range(40):
        obs, reward, terminated, _, info = env.step(hold)
        assert np.all(np.isfinite(obs)) and np.isfinite(reward)
        if terminated:
            assert "beyond the PCC model" in info["termination_reason"]
            state = env.unwrapped.body.configuration[0]
            assert np.all(np.abs(state[1::3]) <= np.pi)  # stopped at its last valid state
            break
    else:
        pytest.fail("a 0.25 kg payload should fold the 35 g arm past 180 degrees")
    env.close()


def test_random_torque_episodes_stay_finite_and_deterministic():
    env = gym.make("soft_envs/PCCTrack-v0", action_type="torque")
    traces = []
    for _ in range(2):
        env.action_space.seed(3)
        trace = []
        for episode in range(10):
            obs, _ = env.reset(seed=episode)
            for _ in range(20):
                obs, _, terminated, _, info = env.step(env.action_space.sample())
                assert np.all(np.isfinite(obs))
                trace.append(obs)
                if terminated:
                    assert info["termination_reason"]
                    break
        traces.append(np.array(trace))
    np.testing.assert_array_equal(traces[0], traces[1])
    env.close()


def test_tracking_is_unaffected_by_the_validity_check():
    env = gym.make("soft_envs/PCCTrack-v0")
    env.reset(seed=0)
    hold = env.unwrapped.model_to_action(env.unwrapped.setpoint)  # hold the start set-point
    for _ in range(20):
        _, _, terminated, _, info = env.step(hold)
        assert not terminated and "termination_reason" not in info
    env.close()
