"""The quadruped's controllers (seed 001): Bézier trot cycle and body pose with the feet fixed."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.agents.body_pose import body_pose_foot_targets, rolling_offsets
from soft_envs.agents.gait import bezier, swing_control_points, trot_cycle
from soft_envs.agents.ik.newton import legs_solve
from soft_envs.geometry import rpy_to_matrix
from soft_envs.robots import Quadruped
from soft_envs.robots.quadruped import LEG_NAMES

ROBOT = Quadruped()


def test_bezier_swing_and_closed_trot_cycle():
    pts = swing_control_points(0.04, 0.02)
    curve = bezier(pts, np.linspace(0, 1, 201))
    np.testing.assert_allclose(curve[0], pts[0])
    np.testing.assert_allclose(curve[-1], pts[-1])
    assert abs(curve[:, 1].max() - 0.02) < 1e-12  # apex = clearance
    cycle = trot_cycle(0.04, 0.02, 100)
    assert cycle.shape == (100, 2)
    assert np.all(cycle[:50, 1] == 0) and np.all(np.diff(cycle[:50, 0]) < 0)  # flat stance, backward
    steps = np.linalg.norm(np.diff(np.vstack([cycle, cycle[:1]]), axis=0), axis=1)
    assert steps.max() < 0.006  # closed, and every sample-to-sample move below the 0.6 cm split
    with pytest.raises(ValueError):
        trot_cycle(0.04, 0.02, 99)


def test_body_pose_targets_keep_the_feet_fixed():
    np.testing.assert_allclose(body_pose_foot_targets(ROBOT, np.zeros(3)), ROBOT.neutral_feet(), atol=1e-15)
    rpy, d = np.radians([8.0, -6.0, 10.0]), np.array([0.005, -0.003, -0.005])
    targets = body_pose_foot_targets(ROBOT, rpy, d)
    assert all(ROBOT.legs[n].reachable(t) for n, t in zip(LEG_NAMES, targets))
    rot = rpy_to_matrix(*rpy)
    feet = (ROBOT.bases + targets) @ rot.T + d  # back into the standing body frame
    np.testing.assert_allclose(feet, ROBOT.bases + ROBOT.neutral_feet(), atol=1e-15)
    q, _ = legs_solve(ROBOT, ROBOT.standing_configuration(), targets)
    np.testing.assert_allclose(ROBOT.legs_forward(q), targets, atol=1e-14)
    # Pure pitch: feet roll about y only; the offsets are r·Δφ along x.
    pitch = np.array([0.0, np.radians(10.0), 0.0])
    q_p, _ = legs_solve(ROBOT, ROBOT.standing_configuration(), body_pose_foot_targets(ROBOT, pitch))
    offsets = rolling_offsets(ROBOT, q_p, pitch, ROBOT.standing_configuration())
    assert np.all(np.abs(offsets[:, 1:]) < 1e-12) and np.all(np.abs(offsets[:, 0]) < ROBOT.foot_radius * 1.0)
