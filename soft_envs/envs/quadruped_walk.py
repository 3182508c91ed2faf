"""``soft_envs/QuadrupedWalk-v0``: walk forward (world +x) without falling.

Action, observation and physics: see :mod:`soft_envs.envs.quadruped_base` (12 normalised joint
targets; a 39-value observation; 100 Hz control over 500 Hz physics). An episode is 1000 steps
(10 s). The robot starts standing at the origin facing +x, joint angles perturbed by
``reset_noise_scale`` (uniform, from the env's seeded RNG).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward), per step:

* ``forward = forward_weight · Δx / dt`` — forward progress of the body [m/s];
* ``healthy = healthy_reward`` while standing;
* ``lateral = −lateral_weight · |Δy| / dt`` — sideways drift [m/s];
* ``orientation = −orientation_weight · (roll² + pitch²)`` [rad²];
* ``torque = −torque_weight · mean((τ / τ_max)²)`` — servo effort;
* ``fall = −fall_weight`` on the step the robot falls (else 0) — the episode's end priced;
* ``slip = −slip_weight · mean |v_slip|`` over the feet in contact [m/s] — stance feet skating
  (Isaac Lab's ``feet_slide``; default 0);
* ``reversal = −reversal_weight · n_rev`` — ``n_rev`` the joint targets that turned back this step
  (summed over the 12 joints; the gait figures' counter and hysteresis): the judged command
  reversals priced where they are made (default 0);
* ``action_rate = −action_rate_weight · ‖a − a_prev‖²``.

Terminates on a fall: body below 4 cm, tilted more than 50°, or body/legs (not feet) touching
the ground. ``info`` carries ``x``, ``y`` [m], ``yaw`` [rad], ``fallen``, ``forward_velocity`` and
the episode's gait figures so far (:mod:`soft_envs.envs.gait_meter`: stance-foot slip,
touchdowns and command reversals per second, peak joint speed, cost of transport).

Realism (``realism=``; the table and its effects: :mod:`soft_envs.envs.quadruped_base`): ground
friction, servo strength and zero offsets, trunk mass and payload, command delay, noise and
latency of the measured state. The observation is the measured state; the reward terms, the
fall test and ``info`` use the true state. ``reset_noise_scale`` draws the initial joint angles
from the env's RNG as without realism.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.quadruped_base import QuadrupedBaseEnv
from soft_envs.exceptions import check_nonnegative
from soft_envs.geometry import quaternion_to_rpy


class QuadrupedWalkEnv(QuadrupedBaseEnv, EzPickle):
    """Walk forward with the quadruped (see the module docstring for spaces and rewards).

    Args:
        forward_weight, healthy_reward, lateral_weight, orientation_weight, torque_weight, action_rate_weight: reward
            weights (all >= 0).
        fall_weight: price of a fall (the ``fall`` term, >= 0; default 0: no term's worth).
        slip_weight: price of the stance feet's slip speed (the ``slip`` term, >= 0; default 0).
        reversal_weight: price of one joint target's reversal (the ``reversal`` term, >= 0; default 0).
        reset_noise_scale: initial joint-angle noise half-width [rad].
        **kwargs: :class:`~soft_envs.envs.quadruped_base.QuadrupedBaseEnv` keywords
            (``ground_friction``, ``solver_iterations``, ``time_step``, ``frame_skip``) and
            :class:`~soft_envs.envs.base.SoftEnv` keywords (``render_mode``, ``width``, ``height``,
            ``realism``).
    """

    def __init__(self, *, forward_weight: float = 1.0, healthy_reward: float = 0.05, lateral_weight: float = 0.5,
                 orientation_weight: float = 0.1, torque_weight: float = 0.005, action_rate_weight: float = 0.01,
                 fall_weight: float = 0.0, slip_weight: float = 0.0, reversal_weight: float = 0.0,
                 reset_noise_scale: float = 0.02,
                 **kwargs: Any) -> None:
        EzPickle.__init__(self, forward_weight=forward_weight, healthy_reward=healthy_reward, fall_weight=fall_weight,
                          slip_weight=slip_weight, reversal_weight=reversal_weight,
                          lateral_weight=lateral_weight, orientation_weight=orientation_weight,
                          torque_weight=torque_weight, action_rate_weight=action_rate_weight,
                          reset_noise_scale=reset_noise_scale, **kwargs)
        check_nonnegative(
            forward_weight=forward_weight,
            healthy_reward=healthy_reward,
            lateral_weight=lateral_weight,
            orientation_weight=orientation_weight,
            torque_weight=torque_weight,
            fall_weight=fall_weight,
            slip_weight=slip_weight,
            reversal_weight=reversal_weight,
        )
        self.forward_weight = float(forward_weight)
        self.healthy_reward = float(healthy_reward)
        self.lateral_weight = float(lateral_weight)
        self.orientation_weight = float(orientation_weight)
        self.torque_weight = float(torque_weight)
        self.fall_weight = float(fall_weight)
        self.slip_weight = float(slip_weight)
        self.reversal_weight = float(reversal_weight)
        super().__init__(action_rate_weight=action_rate_weight, reset_noise_scale=reset_noise_scale, **kwargs)
        self.observation_space = spaces.Box(self.observation_low, self.observation_high, dtype=np.float32)
        self._previous_xy = np.zeros(2)

    def _reset_model(self, options: dict[str, Any]) -> None:
        noise = self.np_random.uniform(-self.reset_noise_scale, self.reset_noise_scale, 12)
        self._stand(noise)
        self.client.performCollisionDetection()
        self._read_state(reset=True)
        self._previous_xy = self._cache["position"][:2].copy()

    def _apply_action(self, action: np.ndarray) -> None:
        self._previous_xy = self._cache["position"][:2].copy()
        super()._apply_action(action)

    def _observation(self) -> np.ndarray:
        return self._base_observation()

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        s = self._cache
        dx, dy = (s["position"][:2] - self._previous_xy) / self.dt
        roll, pitch, _ = quaternion_to_rpy(s["quaternion"])
        torque = s["torque"] / self.model.servo_torque
        fallen = self.fallen()
        return {
            "forward": self.forward_weight * float(dx),
            "healthy": 0.0 if fallen else self.healthy_reward,
            "lateral": -self.lateral_weight * abs(float(dy)),
            "orientation": -self.orientation_weight * float(roll**2 + pitch**2),
            "torque": -self.torque_weight * float(np.mean(torque**2)),
            "fall": -self.fall_weight if fallen else 0.0,
            "slip": -self.slip_weight * self.gait.step_slip,
            "reversal": -self.reversal_weight * float(self.gait.step_reversals),
        }

    def _terminated(self) -> bool:
        return self.fallen()

    def _extra_info(self) -> dict[str, Any]:
        s = self._cache
        return {"x": float(s["position"][0]), "y": float(s["position"][1]),
                "yaw": float(quaternion_to_rpy(s["quaternion"])[2]), "fallen": self.fallen(),
                "forward_velocity": float(s["linear"][0])} | self.gait.figures()
