"""The hobby-servo model (soft_envs.sim.servo): frame, drive, torque–speed line, speed limit, play.

Checked against what the MG90S data sheet and the physics of a geared DC motor say: the target
is heard only at the 50 Hz frame; the torque limit follows the line from the stall torque at rest
to zero at the no-load speed; no command sequence makes a joint turn faster than the no-load
speed; a 60° step takes about the data sheet's 0.1 s.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybullet_utils.bullet_client import BulletClient

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.quadruped import SERVO_SPEED, SERVO_TORQUE, Quadruped
from soft_envs.sim.servo import ServoBank, ServoParameters

DT = 1.0 / 500.0
STIFF = ServoParameters(backlash=0.0)  # no play: the drive alone


def test_parameters_come_from_the_robot_and_are_checked():
    p = ServoParameters()
    assert p.stall_torque == SERVO_TORQUE and p.no_load_speed == SERVO_SPEED
    assert math.isclose(SERVO_SPEED, math.radians(60) / 0.1, rel_tol=3e-3)  # data sheet: 0.1 s per 60°
    for bad in ({"stall_torque": 0.0}, {"no_load_speed": -1.0}, {"frame_period": math.nan}, {"band": 0.0},
                {"deadband": 0.2}, {"backlash": -0.01}, {"time_constant": math.inf}):
        with pytest.raises(InvalidParameterError):
            ServoParameters(**bad)
    with pytest.raises(InvalidParameterError):
        ServoBank(1, p, time_step=0.0)


def test_a_target_is_heard_at_the_next_frame_and_a_newer_one_replaces_it():
    bank = ServoBank(1, STIFF, DT)
    bank.reset(np.zeros(1))
    bank.drive(np.zeros(1), np.zeros(1))  # t = 0: the reset's frame
    bank.command(np.array([0.5]))
    for _ in range(9):  # 2–18 ms: no frame yet, the old target holds
        bank.drive(np.zeros(1), np.zeros(1))
        assert bank.latched[0] == 0.0
    bank.command(np.array([-0.3]))  # written before the frame: it wins
    bank.drive(np.zeros(1), np.zeros(1))  # t = 20 ms: the next frame
    assert bank.latched[0] == -0.3


def test_the_drive_follows_the_torque_speed_line():
    bank = ServoBank(3, STIFF, DT)
    bank.reset(np.zeros(3))
    bank.drive(np.zeros(3), np.zeros(3))
    bank.command(np.full(3, 1.0))  # far off target: full drive
    for _ in range(9):
        bank.drive(np.zeros(3), np.zeros(3))
    speed = np.array([0.0, 0.5, 1.0]) * SERVO_SPEED
    target, limit = bank.drive(np.zeros(3), speed)
    np.testing.assert_allclose(limit, SERVO_TORQUE * np.array([1.0, 0.5, 0.0]), atol=1e-12)
    blend = -math.expm1(-DT / STIFF.time_constant)
    np.testing.assert_allclose(target, speed + (SERVO_SPEED - speed) * blend)


def test_deadband_and_band():
    bank = ServoBank(3, STIFF, DT)
    bank.reset(np.array([0.0, 0.0, 0.0]))
    target, limit = bank.drive(np.array([-0.5 * STIFF.deadband, -STIFF.deadband - 0.5 * STIFF.band, -1.0]),
                               np.zeros(3))
    np.testing.assert_allclose(limit, SERVO_TORQUE * np.array([0.0, 0.5, 1.0]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0), st.floats(-1.0, 1.0)), min_size=1,
                max_size=40), st.sampled_from([0.0, math.radians(1.0), math.radians(3.0)]))
def test_no_command_sequence_drives_beyond_the_no_load_speed(sequence, backlash):
    """Whatever the targets, angles and speeds (within the no-load speed, which the solver's clamp
    holds), the motor aims at no speed beyond its no-load speed and no torque beyond its stall."""
    bank = ServoBank(1, ServoParameters(backlash=backlash), DT)
    bank.reset(np.zeros(1))
    for command, angle, speed_fraction in sequence:
        bank.command(np.array([command]))
        target, limit = bank.drive(np.array([angle]), np.array([speed_fraction * SERVO_SPEED]))
        assert abs(target[0]) <= SERVO_SPEED * (1 + 1e-12)
        assert 0.0 <= limit[0] <= SERVO_TORQUE * (1 + 1e-12)


def test_gears_part_on_a_reversal_and_drive_again_across_the_play():
    play = math.radians(2.0)
    bank = ServoBank(1, ServoParameters(backlash=play), DT)
    bank.reset(np.zeros(1))
    bank.command(np.array([1.0]))
    engaged = []
    speed = 0.0
    for _ in range(20):  # the motor runs up, crosses half the play and drives the output
        _, limit = bank.drive(np.zeros(1), np.array([speed]))
        engaged.append(limit[0] > 0)
    assert not engaged[0] and engaged[-1]
    assert bank.flank[0] == 1.0
    speed = 5.0  # the output turns on: now the target is behind it, the motor reverses
    bank.command(np.array([-1.0]))
    for _ in range(10):
        _, limit = bank.drive(np.zeros(1), np.array([speed]))
    assert bank.flank[0] in (0.0, -1.0)  # parted; the other flank is met only after the play


def _fixed_robot(params: ServoParameters):
    from soft_envs.envs.quadruped_base import QuadrupedBody

    client = BulletClient(pybullet.DIRECT)
    client.setTimeStep(DT)
    client.setGravity(0, 0, -9.81)
    robot = Quadruped()
    body = QuadrupedBody(client, robot, params, DT)
    client.createConstraint(body.id, -1, -1, -1, pybullet.JOINT_FIXED, [0, 0, 0], [0, 0, 0], [0, 0, 0.3])
    q0 = robot.standing_configuration().ravel().copy()
    body.reset(q0, position=(0, 0, 0.3))
    for _ in range(100):  # settle: 0.2 s, ends on a frame
        body.step()
    return client, body, q0


@pytest.mark.parametrize("amplitude", [math.radians(60.0), -math.radians(60.0)])
def test_a_60_degree_step_takes_about_the_data_sheets_time(amplitude):
    """MG90S: 0.1 s per 60° at no load. The modelled hip of a hanging leg gets within 2° in
    0.1–0.15 s (the no-load speed, then the motor's time constant and the proportional tail),
    never faster than the no-load speed."""
    client, body, q0 = _fixed_robot(ServoParameters())
    try:
        start = body.joint_state()[0][1]
        q = q0.copy()
        q[1] = start + amplitude
        body.command(q)
        angles, speeds = [], []
        for _ in range(200):
            body.step()
            a, w, _ = body.joint_state()
            angles.append(a[1] - start)
            speeds.append(w[1])
        angles = np.array(angles)
        within = np.flatnonzero(np.abs(angles - amplitude) <= math.radians(2.0))
        assert within.size and 0.1 <= (within[0] + 1) * DT <= 0.15
        assert np.max(np.abs(speeds)) <= SERVO_SPEED * (1 + 1e-9)
        assert np.max(np.abs(speeds)) > 0.95 * SERVO_SPEED  # it does reach its speed
    finally:
        client.disconnect()


def test_a_small_step_lags_by_tens_of_milliseconds():
    """A 3° step reaches 63 % in 10–40 ms (hobby servos: a lag of tens of milliseconds)."""
    client, body, q0 = _fixed_robot(ServoParameters())
    try:
        start = body.joint_state()[0][2]
        q = q0.copy()
        q[2] = start + 0.05
        body.command(q)
        angles = []
        for _ in range(100):
            body.step()
            angles.append(body.joint_state()[0][2] - start)
        t63 = (np.argmax(np.array(angles) >= 0.632 * 0.05) + 1) * DT
        assert 0.01 <= t63 <= 0.04
    finally:
        client.disconnect()
