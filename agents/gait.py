"""Bézier trot (seed 001, section III) acting in ``QuadrupedWalk-v0`` through ``step``.

Each foot follows a closed path in the sagittal plane of its leg base frame, sampled at 100
points per cycle: 50 samples of *stance* — a straight line on the ground from ``+L/2`` to
``−L/2`` at constant speed, which pushes the body forward — and 50 samples of *swing* — a
Bézier curve with 5 control points from ``−L/2`` back to ``+L/2`` through the clearance
height — which closes the path. (A single closed degree-4 Bézier curve, ``P0 = P4``, has no
straight part, so its feet would drag the body up and down during stance; the ground chord is
what makes the stance flat.) Legs 1 and 4 (front-left, rear-right) share a phase, legs 2 and 3
are 50 samples (half a cycle) apart: a trot.

Every control step the foot targets (in the leg base frames) are turned into joint targets by
one batched Newton–Raphson solve of the four legs (:func:`~soft_envs.agents.ik.newton.legs_solve`,
5 iterations, moves split at 0.6 cm), warm-started from the previous solution as in the seed.

Optional heading feedback (on by default) uses only the observation: the yaw from the body
quaternion and the lateral position integrated from the body velocity; it lengthens the
stride of one side and shortens the other's to steer back onto the x axis.
"""

from __future__ import annotations

from math import comb

import numpy as np

from soft_envs.agents.ik.newton import legs_solve
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_yaw


def bezier(control_points: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Points of the Bézier curve of ``control_points`` (n+1, d) at parameters ``t`` (m,) -> (m, d)."""
    p = np.asarray(control_points, dtype=float)
    n = len(p) - 1
    t = np.asarray(t, dtype=float)[:, None]
    basis = [comb(n, i) * (1 - t) ** (n - i) * t**i for i in range(n + 1)]
    return sum(b * p[i] for i, b in enumerate(basis))


def swing_control_points(step_length: float, clearance: float, overshoot: float = 0.15) -> np.ndarray:
    """The 5 control points ``(x, z)`` [m] of the swing curve, apex height exactly ``clearance``.

    ``P0 = (−L/2, 0)``, ``P4 = (L/2, 0)``; ``P1``–``P3`` at height ``16/14 · clearance`` (the
    degree-4 curve reaches ``14/16`` of it at ``t = ½``), ``P1``/``P3`` pulled ``overshoot · L``
    beyond the ends so the foot lifts before it moves forward and lands vertically.
    """
    half, over, top = 0.5 * step_length, overshoot * step_length, clearance * 16.0 / 14.0
    return np.array([[-half, 0.0], [-half - over, top], [0.0, top], [half + over, top], [half, 0.0]])


def trot_cycle(step_length: float, clearance: float, samples: int = 100) -> np.ndarray:
    """``(samples, 2)`` foot offsets ``(x, z)`` [m] over one cycle: stance then swing (half each)."""
    if samples < 4 or samples % 2:
        raise InvalidParameterError(f"samples must be an even number >= 4; got {samples}")
    half = samples // 2
    stance_x = 0.5 * step_length - step_length * np.arange(half) / half
    stance = np.stack([stance_x, np.zeros(half)], axis=-1)
    swing = bezier(swing_control_points(step_length, clearance), np.arange(half) / half)
    return np.concatenate([stance, swing])


class TrotController:
    """Scripted trot for ``QuadrupedWalk-v0``: ``reset(obs, info)``, ``act(obs) -> action``.

    Args:
        env: the env (wrapped or not); reads ``env.unwrapped.model`` and its ``dt``.
        step_length: stride ``L`` [m] (foot travel per stance).
        clearance: swing apex height [m].
        period: cycle time [s] (one stance + one swing).
        samples: samples per cycle (seed: 100).
        height: height of the leg bases above the foot centres [m] (default: the model's).
        ramp_cycles: cycles over which the stride grows from 0 to ``L`` at the start.
        heading_gain: stride difference per radian of heading error (0: open loop).
        lateral_gain: heading correction [rad] per metre of lateral offset.
        iterations, max_step: Newton–Raphson settings (seed: 5, 0.006 m).
    """

    def __init__(self, env, *, step_length: float = 0.04, clearance: float = 0.02, period: float = 0.4,
                 samples: int = 100, height: float | None = None, ramp_cycles: float = 1.0,
                 heading_gain: float = 2.0, lateral_gain: float = 3.0, iterations: int = 5,
                 max_step: float = 0.006) -> None:
        if not (step_length >= 0 and clearance >= 0 and period > 0):
            raise InvalidParameterError("step_length, clearance >= 0 [m] and period > 0 [s] required")
        self.env = env.unwrapped
        self.robot = self.env.model
        self.dt = float(self.env.dt)
        self.step_length, self.clearance, self.period = float(step_length), float(clearance), float(period)
        self.samples = int(samples)
        self.cycle = trot_cycle(1.0, self.clearance, self.samples)  # x scaled by the stride later
        self.height = self.robot.stance_height if height is None else float(height)
        self.neutral = self.robot.neutral_feet(self.height)
        self.ramp_cycles = float(ramp_cycles)
        self.heading_gain, self.lateral_gain = float(heading_gain), float(lateral_gain)
        self.iterations, self.max_step = int(iterations), float(max_step)
        # Sample offsets of the legs: pair (1, 4) at 0, pair (2, 3) half a cycle later.
        self.leg_offsets = np.array([0, self.samples // 2, self.samples // 2, 0])
        self.reset()

    def reset(self, obs=None, info=None) -> None:
        """Start a new cycle from the standing pose."""
        self.time = 0.0
        self.lateral = 0.0
        self.q = self.robot.standing_configuration(self.height)
        self.last_iterations = np.zeros(4, dtype=int)

    def foot_targets(self, time: float, yaw_error: float = 0.0) -> np.ndarray:
        """``(4, 3)`` foot targets [m] in the leg base frames at ``time`` [s]."""
        position = (time / self.period) * self.samples
        ramp = 1.0 if self.ramp_cycles <= 0 else min(1.0, time / (self.ramp_cycles * self.period))
        correction = np.clip(self.heading_gain * yaw_error, -0.5, 0.5)
        strides = self.step_length * ramp * (1.0 + correction * self.robot.sides)  # left: +, right: −
        index = (position + self.leg_offsets) % self.samples
        k0 = np.floor(index).astype(int)
        k1 = (k0 + 1) % self.samples
        frac = (index - k0)[:, None]
        offsets = (1 - frac) * self.cycle[k0] + frac * self.cycle[k1]  # (x per unit stride, z)
        targets = self.neutral.copy()
        targets[:, 0] += offsets[:, 0] * strides
        targets[:, 2] += offsets[:, 1] * min(1.0, 4.0 * ramp)  # lift reaches full height early
        return targets

    def act(self, obs) -> np.ndarray:
        """Normalised joint targets for the next step (advances the gait by ``dt``)."""
        obs = np.asarray(obs, dtype=float)
        yaw = quaternion_yaw(obs[0:4])  # the body quaternion (x, y, z, w)
        # Lateral position from the body velocity rotated into the world (heading only).
        v_body = obs[7:10]
        self.lateral += (np.sin(yaw) * v_body[0] + np.cos(yaw) * v_body[1]) * self.dt
        desired_yaw = np.clip(-self.lateral_gain * self.lateral, -0.3, 0.3)
        self.time += self.dt
        targets = self.foot_targets(self.time, yaw - desired_yaw)
        self.q, self.last_iterations = legs_solve(self.robot, self.q, targets, iterations=self.iterations,
                                                  max_step=self.max_step)
        return self.env.model_to_action(self.q)
