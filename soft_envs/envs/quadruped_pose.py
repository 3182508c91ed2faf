"""``soft_envs/QuadrupedPose-v0``: track a body roll / pitch / yaw goal with the feet fixed.

Action, physics and the first 39 observation values: see :mod:`soft_envs.envs.quadruped_base`
(12 normalised joint targets; 100 Hz control over 500 Hz physics). An episode is 200 steps
(2 s). The robot starts standing, level, facing +x; the goal ``(roll, pitch, yaw)`` [rad] is
drawn uniformly in ``±goal_range`` per axis (10° by default: every combination is within the
legs' reach; at ±15° per axis about 20 % of the combinations are not) from the env's seeded
RNG, as ``R_goal = Rz(yaw) Ry(pitch) Rx(roll)`` in the world. ``reset(options={"goal": (roll,
pitch, yaw)})`` sets the goal instead (any angles: the observation shows the canonical roll, pitch,
yaw of that orientation, e.g. a yaw of 4 rad as 4 − 2π; with ``"keep_robot": True`` as well: the
same robot under ``realism=``, see :class:`~soft_envs.envs.base.SoftEnv`).

Observation (flat, float32): ``[0:39]`` the base observation, ``[39:42]`` goal roll, pitch, yaw
[rad], ``[42:45]`` current roll, pitch, yaw [rad]. With ``goal_conditioned=True`` a ``Dict`` with
``observation`` (the 39 values), ``achieved_goal`` (current roll, pitch, yaw) and
``desired_goal`` (goal roll, pitch, yaw); then ``compute_reward`` recomputes the reward for
relabelled goals (the orientation term from the goals, the other terms from ``info``; see
:class:`~soft_envs.envs.env_goals.GoalConditionedMixin`) and the orientation term is computed from the
float32 goals so that both agree bit for bit.

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):

* ``orientation = −orientation_weight · θ`` — ``θ`` the angle of ``R_goalᵀ R_body`` [rad];
* ``slip = −slip_weight · mean_i ‖s_i‖`` — ``s_i`` the net sliding of foot ``i``'s contact
  point since reset [m] (the contact-point velocity ``v + ω × (−r ẑ)`` integrated over the
  physics steps; rolling of the 8 mm spherical foot is not slip);
* ``action_rate = −action_rate_weight · ‖a − a_prev‖²``.

``info``: ``orientation_error`` [rad], ``rpy_error`` (3,) [rad], ``foot_slip`` (largest foot's
sliding [m]), ``foot_displacement`` (largest horizontal displacement of a foot centre, rolling
included [m]), ``is_success`` (error below ``success_threshold``, 1°),
``fallen`` and the episode's gait figures so far (:mod:`soft_envs.envs.gait_meter`). Terminates
on a fall (as in ``QuadrupedWalk-v0``).

Realism (``realism=``; the table and its effects: :mod:`soft_envs.envs.quadruped_base`): the
observation's current roll, pitch, yaw (``[42:45]``, ``achieved_goal``) come from the measured
(noisy, delayed) orientation, and so does the ``orientation`` reward term (as the measured tip
does in ``PeterReach-v0``); ``info["orientation_error"]``, ``rpy_error`` and ``is_success`` stay
the true ones. The goals are drawn from the env's RNG exactly as without realism.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.env_goals import GoalConditionedMixin
from soft_envs.envs.quadruped_base import QuadrupedBaseEnv
from soft_envs.exceptions import InvalidParameterError, check_finite, check_nonnegative, check_positive
from soft_envs.geometry import (
    matrix_to_quaternion,
    quaternion_to_matrix,
    quaternion_to_rpy,
    rotation_angle,
    rpy_to_matrix,
)


class QuadrupedPoseEnv(GoalConditionedMixin, QuadrupedBaseEnv, EzPickle):
    """Body orientation control with the feet on the ground (see the module docstring).

    Args:
        goal_range: half-width of the uniform goal distribution per axis [rad].
        goal_conditioned: ``Dict`` observation with ``achieved_goal``/``desired_goal``.
        orientation_weight, slip_weight: reward weights (>= 0).
        success_threshold: orientation error counted as success [rad].
        **kwargs: :class:`~soft_envs.envs.quadruped_base.QuadrupedBaseEnv` keywords
            (``reset_noise_scale`` = 0, ``ground_friction``, ``solver_iterations``, ``time_step``,
            ``frame_skip``) and :class:`~soft_envs.envs.base.SoftEnv` keywords (``render_mode``,
            ``width``, ``height``, ``action_rate_weight`` = 0, ``realism``).
    """

    env_id = "soft_envs/QuadrupedPose-v0"

    def __init__(self, *, goal_range: float = np.radians(10.0), goal_conditioned: bool = False,
                 orientation_weight: float = 1.0, slip_weight: float = 10.0,
                 success_threshold: float = np.radians(1.0), **kwargs: Any) -> None:
        EzPickle.__init__(self, goal_range=goal_range, goal_conditioned=goal_conditioned,
                          orientation_weight=orientation_weight, slip_weight=slip_weight,
                          success_threshold=success_threshold, **kwargs)
        if not 0 <= check_finite("goal_range [rad]", goal_range) <= np.radians(30.0):
            raise InvalidParameterError(f"goal_range must be in [0, 30°] (radians); got {goal_range!r}")
        check_nonnegative(orientation_weight=orientation_weight, slip_weight=slip_weight)
        self.goal_range = float(goal_range)
        self.goal_conditioned = bool(goal_conditioned)
        self.orientation_weight = float(orientation_weight)
        self.slip_weight = float(slip_weight)
        self.success_threshold = check_positive("success_threshold [rad]", success_threshold)
        super().__init__(**kwargs)
        angle_high = np.full(3, np.pi, dtype=np.float32)
        base = spaces.Box(self.observation_low, self.observation_high, dtype=np.float32)
        if self.goal_conditioned:
            angles = spaces.Box(-angle_high, angle_high, dtype=np.float32)
            self.observation_space = spaces.Dict({"observation": base, "achieved_goal": angles,
                                                  "desired_goal": angles})
        else:
            self.observation_space = spaces.Box(np.concatenate([self.observation_low, -angle_high, -angle_high]),
                                                np.concatenate([self.observation_high, angle_high, angle_high]),
                                                dtype=np.float32)
        self.goal = np.zeros(3)
        self._goal_rotation = np.eye(3)
        self._feet_reference = np.zeros((4, 3))
        self._sliding = np.zeros((4, 2))

    def reset_option_names(self) -> tuple[str, ...]:
        return ("goal",)

    def _reset_model(self, options: dict[str, Any]) -> None:
        goal_option = self._goal_option(options["goal"]) if "goal" in options else None  # refused before any change
        noise = None
        if self.reset_noise_scale > 0:
            noise = self.np_random.uniform(-self.reset_noise_scale, self.reset_noise_scale, 12)
        self._stand(noise)
        self.goal = self.np_random.uniform(-self.goal_range, self.goal_range, 3)
        if goal_option is not None:
            self.goal = goal_option
        self._goal_rotation = rpy_to_matrix(*self.goal)
        self.client.performCollisionDetection()
        self._read_state(reset=True)
        self._feet_reference = self._cache["feet"].copy()
        self._sliding = np.zeros((4, 2))

    @staticmethod
    def _goal_option(value: Any) -> np.ndarray:
        """``options["goal"]`` as the canonical ``(roll, pitch, yaw)`` [rad] of the same orientation
        (roll and yaw in [−π, π], pitch in [−π/2, π/2]: inside the observation's bounds, e.g. a yaw of
        4 rad becomes 4 − 2π); :class:`InvalidParameterError` unless three finite numbers."""
        try:
            goal = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            goal = None
        if goal is None or goal.shape != (3,) or not np.all(np.isfinite(goal)):
            raise InvalidParameterError(f"options['goal'] must be three finite numbers (roll, pitch, yaw) [rad]; "
                                        f"got {value!r}")
        return quaternion_to_rpy(matrix_to_quaternion(rpy_to_matrix(*goal)))

    def _after_physics_step(self) -> None:
        """Integrate each foot's contact-point sliding at every physics step."""
        self._sliding += self.body.contact_slip_velocity() * self.time_step

    # ------------------------------------------------------------------ measures
    def rpy(self) -> np.ndarray:
        """Current body roll, pitch, yaw [rad]."""
        return quaternion_to_rpy(self._cache["quaternion"])

    def orientation_error(self) -> float:
        """Angle between the body's and the goal orientation [rad]."""
        return rotation_angle(self._goal_rotation, self._cache["rotation"])

    def foot_slip(self) -> np.ndarray:
        """``(4,)`` net sliding of each foot's contact point on the ground since reset [m].

        The integral of the contact-point velocity ``v_centre + ω × (−r ẑ)`` over the physics
        steps: rolling of the spherical foot (which moves its centre by ``r · Δφ``) is not
        slip. :meth:`foot_displacement` gives the centre's displacement."""
        return np.linalg.norm(self._sliding, axis=-1)

    def foot_displacement(self) -> np.ndarray:
        """``(4,)`` horizontal displacement of each foot centre since reset [m] (slip + rolling)."""
        return np.linalg.norm(self._cache["feet"][:, :2] - self._feet_reference[:, :2], axis=-1)

    # ------------------------------------------------------------------ hooks
    def measured_rpy(self) -> np.ndarray:
        """Body roll, pitch, yaw [rad] as the observation shows them (the IMU's under realism;
        :meth:`rpy` is the true one)."""
        return quaternion_to_rpy(self._observed_quaternion())

    def _observation(self):
        base = self._base_observation()
        rpy = self.measured_rpy().astype(np.float32)
        goal = self.goal.astype(np.float32)
        if self.goal_conditioned:
            return {"observation": base, "achieved_goal": rpy, "desired_goal": goal}
        return np.concatenate([base, goal, rpy]).astype(np.float32)

    def _orientation_term(self, achieved_rpy: np.ndarray, desired_rpy: np.ndarray) -> float:
        return -self.orientation_weight * rotation_angle(rpy_to_matrix(*np.asarray(desired_rpy, dtype=float)),
                                                         rpy_to_matrix(*np.asarray(achieved_rpy, dtype=float)))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.measured_rpy().astype(np.float32), self.goal.astype(np.float32)

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        achieved, desired = np.broadcast_arrays(np.asarray(achieved_goal), np.asarray(desired_goal))
        if achieved.ndim == 1:
            return {"orientation": self._orientation_term(achieved, desired)}
        flat = [self._orientation_term(a, d) for a, d in zip(achieved.reshape(-1, 3), desired.reshape(-1, 3))]
        return {"orientation": np.reshape(flat, achieved.shape[:-1])}

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        if self.goal_conditioned:  # from the observed (float32) goals, exactly as compute_reward
            terms = self._step_goal_terms()
        elif self.realism.is_ideal():
            terms = {"orientation": -self.orientation_weight * self.orientation_error()}
        else:  # the measured orientation
            measured = quaternion_to_matrix(self._observed_quaternion())
            terms = {"orientation": -self.orientation_weight * rotation_angle(self._goal_rotation, measured)}
        terms["slip"] = -self.slip_weight * float(np.mean(self.foot_slip()))
        return terms

    def _terminated(self) -> bool:
        return self.fallen()

    def _extra_info(self) -> dict[str, Any]:
        error = self.orientation_error()
        rpy_error = self.rpy() - self.goal
        rpy_error = (rpy_error + np.pi) % (2 * np.pi) - np.pi
        return {"orientation_error": error, "rpy_error": rpy_error, "foot_slip": float(self.foot_slip().max()),
                "foot_displacement": float(self.foot_displacement().max()),
                "is_success": bool(error < self.success_threshold), "fallen": self.fallen(),
                "goal": self.goal.copy()} | self.gait.figures()

