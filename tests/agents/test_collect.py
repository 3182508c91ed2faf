"""``collect_samples``: random inflation times on the env's own robot, through ``env.step``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.nn import collect_samples
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import CalibratedPeter

PETER = "soft_envs/PeterReach-v0"
#: The realistic robot with what makes a reading differ from the static arm switched off.
STATIC = {"preset": "realistic", "leak_rate": 0.0, "observation_noise": 0.0, "observation_latency": 0.0}


def _same_robot(a: dict, b: dict) -> bool:
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_samples_are_the_robots_static_tips_and_the_robot_is_kept():
    env = gym.make(PETER, kinematic=True, realism=STATIC)
    _, info = env.reset(seed=3)
    times, tips = collect_samples(env, 12, seed=0, progress=False)
    assert times.shape == (12, 6) and tips.shape == (12, 3)
    model = env.unwrapped.model
    assert np.all(times >= model.lower) and np.all(times <= model.upper) and np.ptp(times) > 1.0
    drawn = info["realism"]
    assert _same_robot(env.unwrapped.perturbations, drawn)  # collecting kept the robot
    # The tips are the perturbed legs' (eq. 1 per leg) arm with its radius, turned by the base tilt.
    robot = CalibratedPeter(model.with_parameters(radius=model.radius * (1 + drawn["radius_error"])),
                            leg_gain=drawn["leg_gain"] * drawn["supply_gain"], leg_offset=drawn["leg_offset"],
                            base_tilt=drawn["base_tilt"])
    np.testing.assert_allclose(tips, robot.forward(times), atol=1e-7)  # the observation's float32
    assert np.max(np.linalg.norm(tips - model.forward(times), axis=1)) > 1e-3  # not the nominal model
    again = collect_samples(env, 12, seed=0, progress=False)
    np.testing.assert_array_equal(again[0], times)
    np.testing.assert_array_equal(again[1], tips)
    assert not np.array_equal(collect_samples(env, 12, seed=1, progress=False)[0], times)
    env.close()


def test_soft_samples_settle_and_read_at_a_stated_time_agree_without_leaks():
    env = gym.make(PETER, realism=STATIC)
    env.reset(seed=4)
    settled_times, settled = collect_samples(env, 4, seed=2, progress=False)
    timed_times, timed = collect_samples(env, 4, seed=2, settle_time=5.0, progress=False)
    np.testing.assert_array_equal(settled_times, timed_times)
    assert np.max(np.linalg.norm(settled - timed, axis=1)) < 2e-4  # a settled arm: within 0.2 mm
    env.close()


def test_leaks_take_their_rate_times_the_reading_time_down_to_the_deflated_leg():
    env = gym.make(PETER, kinematic=True, realism={"leak_rate": (2e-3, 2e-3), "leg_gain": (0.9, 1.1)})
    _, info = env.reset(seed=2)
    times, tips = collect_samples(env, 20, seed=3, settle_time=1.5, progress=False)
    drawn, model = info["realism"], env.unwrapped.model
    robot = CalibratedPeter(model, leg_gain=drawn["leg_gain"], leak_loss=2e-3 * 1.5)
    assert np.any(drawn["leg_gain"] * times * model.leg_rate < 3e-3)  # some legs leaked empty: the clamp
    np.testing.assert_allclose(tips, robot.forward(times), atol=1e-7)
    env.close()


def test_a_leaking_leg_reads_lower_the_later_it_is_read():
    env = gym.make(PETER, kinematic=True, realism={"leak_rate": 3e-4})
    env.reset(seed=0)
    times, early = collect_samples(env, 6, seed=5, settle_time=1.0, progress=False)  # legs act at once
    _, late = collect_samples(env, 6, seed=5, settle_time=2.5, progress=False)  # the episode: 2.5 s
    assert np.all(late[:, 2] < early[:, 2])
    env.close()


def test_noise_is_in_the_samples():
    env = gym.make(PETER, kinematic=True, realism={"observation_noise": 3e-4})
    env.reset(seed=0)
    times, tips = collect_samples(env, 30, seed=0, progress=False)
    residual = tips - env.unwrapped.model.forward(times)
    assert 1.5e-4 < residual.std() < 4.5e-4
    env.close()


def test_the_dict_observation_works_too():
    env = gym.make(PETER, kinematic=True, goal_conditioned=True, realism=STATIC)
    env.reset(seed=1)
    times, tips = collect_samples(env, 3, seed=0, progress=False)
    flat = gym.make(PETER, kinematic=True, realism=STATIC)
    flat.reset(seed=1)
    np.testing.assert_array_equal(collect_samples(flat, 3, seed=0, progress=False)[1], tips)
    env.close()
    flat.close()


def test_bad_collection_input_is_a_value_error():
    env = gym.make(PETER, kinematic=True)
    with pytest.raises(InvalidParameterError, match="reset"):
        collect_samples(env, 3, seed=0)
    env.reset(seed=0)
    with pytest.raises(InvalidParameterError, match="n must be an integer"):
        collect_samples(env, 0, seed=0)
    with pytest.raises(InvalidParameterError, match="longer than max_time"):
        collect_samples(env, 3, seed=0, settle_time=6.0)
    with pytest.raises(InvalidParameterError, match="settle_time"):
        collect_samples(env, 3, seed=0, settle_time=-1.0)
    env.close()
