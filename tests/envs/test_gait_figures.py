"""Gait figures (soft_envs.envs.gait_meter) and the quadruped's servo-limited physics.

The exploit the issue reproduced: servo targets flipped every 10 ms step moved the robot 1 m
in 3.2 s with joints at 14–22 rad/s. With the servo model the 10 ms flips are never heard (the
50 Hz frame carries every other one), so the robot stays in place; no joint ever exceeds the
servos' no-load speed; the Bézier trot still walks with the figures of a servo gait.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soft_envs  # noqa: F401
from soft_envs.agents.gait import TrotController
from soft_envs.envs.gait_meter import GAIT_KEYS, GaitMeter, ReversalCounter
from soft_envs.robots.quadruped import SERVO_SPEED
from soft_envs.sim.bullet import STANDARD_GRAVITY

WALK = "soft_envs/QuadrupedWalk-v0"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-10.0, 10.0), min_size=2, max_size=50))
def test_a_monotonic_signal_never_reverses(values):
    counter = ReversalCounter(1, 0.01)
    values = np.sort(np.array(values))
    counter.reset(values[:1])
    for v in values[1:]:
        counter.update(np.array([v]))
    assert counter.count[0] == 0


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 40), st.floats(0.02, 5.0), st.floats(0.0, 0.0099))
def test_a_square_wave_reverses_at_every_flip_and_dither_never(flips, amplitude, dither):
    counter = ReversalCounter(2, 0.01)
    counter.reset(np.zeros(2))
    for k in range(flips):
        sign = 1.0 if k % 2 == 0 else -1.0
        counter.update(np.array([sign * amplitude, sign * dither / 2]))
    assert counter.count[0] == flips - 1  # the first move sets a direction, each later flip turns it
    assert counter.count[1] == 0  # turns back by less than the threshold


def test_meter_figures_on_a_known_episode():
    meter = GaitMeter(dt=0.01, mass=0.5, reversal_threshold=0.01)
    meter.reset(np.zeros(12), np.ones(4), np.zeros(3))
    for k in range(100):  # 1 s: the body walks 0.1 m; feet 0–1 touch down 5 times; joint 0 flips each step
        contacts = np.array([1.0 if (k // 10) % 2 else 0.0] * 2 + [1.0, 1.0])
        command = np.zeros(12)
        command[0] = 0.1 * (-1) ** k
        slip = np.tile([0.003, 0.004], (4, 1))
        meter.update(command, contacts, slip, np.array([0.001 * (k + 1), 0.0, 0.1]), peak_speed=2.0 + k / 100,
                     work=0.01)
    fig = meter.figures()
    assert set(fig) == set(GAIT_KEYS)
    assert fig["gait_stance_slip_speed"] == pytest.approx(0.005)
    assert fig["gait_touchdowns_per_second"] == pytest.approx((5 + 5 + 0 + 0) / 4)
    assert fig["gait_command_reversals_per_second"] == pytest.approx(99.0)
    assert fig["gait_peak_joint_speed"] == pytest.approx(2.99)
    assert fig["gait_cost_of_transport"] == pytest.approx(1.0 / (0.5 * STANDARD_GRAVITY * 0.1))
    standing = GaitMeter(dt=0.01, mass=0.5, reversal_threshold=0.01)
    standing.reset(np.zeros(12), np.ones(4), np.zeros(3))
    assert standing.figures()["gait_cost_of_transport"] == math.inf  # no distance: nothing transported


@pytest.mark.parametrize("env_id", [WALK, "soft_envs/QuadrupedPose-v0"])
def test_quadruped_envs_report_gait_figures(env_id):
    env = gym.make(env_id)
    try:
        _, info = env.reset(seed=0)
        assert set(GAIT_KEYS) <= set(info)
        for _ in range(5):
            _, _, _, _, info = env.step(env.action_space.sample())
        assert set(GAIT_KEYS) <= set(info)
        assert 0.0 < info["gait_peak_joint_speed"] <= SERVO_SPEED * (1 + 1e-9)
    finally:
        env.close()


def _chatter(env, amplitude: np.ndarray, period_steps: int, steps: int) -> tuple[float, dict]:
    """Targets flipped between standing ± ``amplitude`` [rad] every ``period_steps`` 10 ms steps;
    returns (horizontal drift [m] after the first second — the robot's first move into the
    posture it holds is not locomotion —, last info)."""
    u = env.unwrapped
    stand = u.model.standing_configuration().ravel()
    high = u.model_to_action(np.clip(stand + amplitude, u.model.lower, u.model.upper))
    low = u.model_to_action(np.clip(stand - amplitude, u.model.lower, u.model.upper))
    _, info = env.reset(seed=0)
    start = np.array([info["x"], info["y"]])
    for k in range(steps):
        _, _, terminated, _, info = env.step(high if (k // period_steps) % 2 == 0 else low)
        if k + 1 == 100:
            start = np.array([info["x"], info["y"]])
        if terminated:
            break
    return float(np.linalg.norm(np.array([info["x"], info["y"]]) - start)), info


@pytest.mark.parametrize(("signs", "amplitude"), [((1, -1, 1), 0.6), ((1, 1, 1), 0.3), ((-1, 1, -1), 0.3)])
def test_command_chatter_at_the_control_rate_leaves_the_robot_in_place(signs, amplitude):
    """The issue's exploit: targets flipped every 10 ms step. The servos hear every other one
    (50 Hz frame), so the robot holds one posture: over the 2 s after its first second it drifts
    less than 1 cm, and no joint exceeds its servo."""
    env = gym.make(WALK, max_episode_steps=300)
    try:
        moved, info = _chatter(env, amplitude * np.tile(signs, 4), period_steps=1, steps=300)
        assert not info["fallen"]
        assert moved < 0.01
        assert info["gait_peak_joint_speed"] <= SERVO_SPEED * (1 + 1e-9)
        assert info["gait_command_reversals_per_second"] > 90  # the meter sees the chatter
    finally:
        env.close()


def test_trot_walks_with_a_servo_gait():
    """The Bézier trot: forward, no fall, stance feet that do not skate, ≤ 10 reversals per
    second per joint, joints within the servos' speed."""
    env = gym.make(WALK, max_episode_steps=300)
    try:
        agent = TrotController(env)
        obs, info = env.reset(seed=0)
        agent.reset(obs, info)
        for _ in range(300):
            obs, _, terminated, _, info = env.step(agent.act(obs))
            assert not terminated
        assert info["x"] > 0.2  # 3 s
        assert info["gait_stance_slip_speed"] < 0.01
        assert info["gait_command_reversals_per_second"] <= 10.0
        assert info["gait_peak_joint_speed"] <= SERVO_SPEED * (1 + 1e-9)
        assert 1.0 < info["gait_touchdowns_per_second"] < 5.0  # one per cycle of 0.4 s
    finally:
        env.close()
