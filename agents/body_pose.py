"""Body roll / pitch / yaw (and height) with the feet fixed (seed 001, eq. 5), through ``step``.

The feet stay where they stand. Moving the body by a rotation ``R = Rz(yaw) Ry(pitch) Rx(roll)``
about its centre and a translation ``d`` moves every leg base; seen from a leg base, its foot
moves the opposite way. Foot ``i``, standing at ``p_i`` in the initial body frame, has the
target ``R^T (p_i − d) − b_i`` in its moved leg base frame (``b_i`` the leg base in the body
frame): the seed's eq. 5, solved with the same batched Newton–Raphson IK as the gait (moves
split at 0.6 cm).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from soft_envs.agents.ik.newton import legs_solve
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import rpy_to_matrix
from soft_envs.robots.quadruped import Quadruped


def body_pose_foot_targets(robot: Quadruped, rpy: np.ndarray, translation: ArrayLike = (0.0, 0.0, 0.0),
                           height: float | None = None) -> np.ndarray:
    """``(4, 3)`` foot targets [m] in the leg base frames for a body pose (eq. 5).

    Args:
        robot: the quadruped model.
        rpy: body roll, pitch, yaw [rad] relative to the standing pose.
        translation: body displacement ``d`` [m] in the standing body frame (``+z`` raises it).
        height: standing height the feet were placed at (default the model's).
    """
    rot = rpy_to_matrix(*np.asarray(rpy, dtype=float))
    standing = robot.bases + robot.neutral_feet(height)  # feet in the standing body frame
    return (standing - np.asarray(translation, dtype=float)) @ rot - robot.bases


def _rotation_x(angles: np.ndarray) -> np.ndarray:
    c, s = np.cos(angles), np.sin(angles)
    out = np.zeros(np.shape(angles) + (3, 3))
    out[..., 0, 0] = 1.0
    out[..., 1, 1], out[..., 1, 2], out[..., 2, 1], out[..., 2, 2] = c, -s, s, c
    return out


def _rotation_y(angles: np.ndarray) -> np.ndarray:
    c, s = np.cos(angles), np.sin(angles)
    out = np.zeros(np.shape(angles) + (3, 3))
    out[..., 1, 1] = 1.0
    out[..., 0, 0], out[..., 0, 2], out[..., 2, 0], out[..., 2, 2] = c, s, -s, c
    return out


def foot_orientations(robot: Quadruped, q: np.ndarray, rpy: ArrayLike = (0.0, 0.0, 0.0)) -> np.ndarray:
    """``(4, 3, 3)`` orientation of each foot (rigid with its shin) for body ``rpy`` [rad] and
    joints ``q`` (4, 3): ``R_body · Rx(−side · q0) · Ry(q1 + q2)`` (the URDF's joint axes)."""
    q = np.asarray(q, dtype=float).reshape(4, 3)
    legs = _rotation_x(-robot.sides * q[:, 0]) @ _rotation_y(q[:, 1] + q[:, 2])
    return rpy_to_matrix(*np.asarray(rpy, dtype=float)) @ legs


def rolling_offsets(robot: Quadruped, q: np.ndarray, rpy: np.ndarray, q_ref: np.ndarray) -> np.ndarray:
    """``(4, 3)`` displacement [m] of each spherical foot's centre, in the standing body frame,
    when the foot rolls without sliding from orientation ``(q_ref, 0)`` to ``(q, rpy)``.

    A sphere of radius ``r`` rolling on the ground by the rotation vector ``φ`` moves its centre
    by ``r (φ_y, −φ_x, 0)``; holding the centre still instead would make the contact slide by
    that much (the seed's point feet have no radius)."""
    delta = foot_orientations(robot, q, rpy) @ np.swapaxes(foot_orientations(robot, q_ref), -1, -2)
    vee = np.stack([delta[:, 2, 1] - delta[:, 1, 2], delta[:, 0, 2] - delta[:, 2, 0],
                    delta[:, 1, 0] - delta[:, 0, 1]], axis=-1)
    cos = np.clip(0.5 * (np.trace(delta, axis1=1, axis2=2) - 1.0), -1.0, 1.0)
    angle = np.arccos(cos)
    scale = np.where(angle < 1e-8, 0.5, angle / (2.0 * np.sin(np.maximum(angle, 1e-8))))
    phi = vee * scale[:, None]
    r = robot.foot_radius
    return np.stack([r * phi[:, 1], -r * phi[:, 0], np.zeros(4)], axis=-1)


class BodyPoseController:
    """Track the goal roll, pitch, yaw of ``QuadrupedPose-v0`` with the feet fixed.

    The commanded orientation moves toward the goal at most ``rate`` [rad/s] per axis (the
    servos are fast, the feet must not slip); with ``integral_gain`` > 0 the measured
    orientation error (from the observation) is integrated into the command, which removes the
    steady-state error left by servo compliance.

    Args:
        env: the env (wrapped or not); reads ``env.unwrapped.model`` and ``dt``.
        rate: largest change of the commanded angles [rad/s].
        integral_gain: integral feedback on the measured roll/pitch/yaw error [1/s].
        translation: constant body displacement [m] (height changes: ``(0, 0, dz)``).
        roll_feet: let the spherical feet roll (move their centres by :func:`rolling_offsets`)
            instead of pivoting in place, so that their contacts do not slide.
        iterations, max_step: Newton–Raphson settings (seed: 5, 0.006 m).
    """

    def __init__(self, env, *, rate: float = 0.4, integral_gain: float = 2.0,
                 translation: ArrayLike = (0.0, 0.0, 0.0), roll_feet: bool = True, iterations: int = 5,
                 max_step: float = 0.006) -> None:
        if not (rate > 0 and integral_gain >= 0):
            raise InvalidParameterError("rate must be > 0 [rad/s] and integral_gain >= 0")
        self.env = env.unwrapped
        self.robot = self.env.model
        self.dt = float(self.env.dt)
        self.rate, self.integral_gain = float(rate), float(integral_gain)
        self.translation = np.asarray(translation, dtype=float)
        self.roll_feet = bool(roll_feet)
        self.iterations, self.max_step = int(iterations), float(max_step)
        self.reset()

    def reset(self, obs=None, info=None) -> None:
        self.command = np.zeros(3)
        self.correction = np.zeros(3)
        self.q = self.robot.standing_configuration()
        self.q_standing = self.q.copy()

    @staticmethod
    def split_observation(obs) -> tuple[np.ndarray, np.ndarray]:
        """``(goal rpy, measured rpy)`` [rad] from either observation form."""
        if isinstance(obs, dict):
            return np.asarray(obs["desired_goal"], dtype=float), np.asarray(obs["achieved_goal"], dtype=float)
        obs = np.asarray(obs, dtype=float)
        return obs[39:42], obs[42:45]

    def act(self, obs) -> np.ndarray:
        goal, measured = self.split_observation(obs)
        wanted = goal + self.correction
        self.command += np.clip(wanted - self.command, -self.rate * self.dt, self.rate * self.dt)
        if self.integral_gain > 0 and np.all(np.abs(goal - self.command + self.correction) < 1e-9):
            error = (goal - measured + np.pi) % (2 * np.pi) - np.pi
            self.correction += np.clip(self.integral_gain * error * self.dt, -0.01, 0.01)
            self.correction = np.clip(self.correction, -0.1, 0.1)
        targets = body_pose_foot_targets(self.robot, self.command, self.translation)
        if self.roll_feet:  # one fixed-point pass: the rolling depends on the solution
            rot = rpy_to_matrix(*self.command)
            q_guess, _ = legs_solve(self.robot, self.q, targets, iterations=self.iterations, max_step=self.max_step)
            targets = targets + rolling_offsets(self.robot, q_guess, self.command, self.q_standing) @ rot
        self.q, _ = legs_solve(self.robot, self.q, targets, iterations=self.iterations, max_step=self.max_step)
        return self.env.model_to_action(self.q)
