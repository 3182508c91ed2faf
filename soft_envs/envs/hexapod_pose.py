"""``soft_envs/HexapodPose-v0``: bring the platform of the 6-PFS flexible hexapod to a goal pose.

The "physics" is quasi-static: after every action the Cosserat-rod forward kinematics
(:class:`~soft_envs.robots.cosserat.Hexapod6PFS`) is solved by continuation from the previous
equilibrium, so the robot stays on its branch (assembly mode) as a slow real robot would.
PyBullet is used only to draw it (rods as chains of capsules).

Action (``Box(-1, 1, (6,))``): guide inputs normalised, ``ρ = a · input_limit`` [m]
(``input_limit = 0.02`` m by default). Out-of-box actions are clipped (``info["action_clipped"]``).

Observation (flat ``Box``, float32, world frame, SI):

==============  ===========================================================
slice           content
==============  ===========================================================
``[0:3]``       platform position ``p_P`` [m]
``[3:7]``       platform quaternion ``(x, y, z, w)``, ``w ≥ 0``
``[7:10]``      goal position [m]
``[10:14]``     goal quaternion ``(x, y, z, w)``, ``w ≥ 0``
``[14:17]``     goal − platform position [m]
``[17:20]``     orientation error: rotation vector of ``goal ⊗ platform⁻¹`` [rad]
``[20:38]``     force of each rod on the platform ``(6 × 3)`` [N]
``[38:44]``     current guide inputs, normalised to [−1, 1]
==============  ===========================================================

With ``goal_conditioned=True``: a ``Dict`` with ``observation`` (pose, forces, inputs),
``achieved_goal`` and ``desired_goal`` (7-vectors: position [m], quaternion ``(x, y, z, w)``), and
``compute_reward`` recomputes the reward for relabelled goals (the position and orientation terms
from the goals, the action-rate term from ``info``; see
:class:`~soft_envs.envs.base.GoalConditionedMixin`).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):
``position = −position_weight · ‖Δp‖`` [m], ``orientation = −orientation_weight · angle``
[rad] and ``action_rate = −action_rate_weight · ‖a − a_prev‖²``. ``info`` carries
``position_error`` [m], ``angle_error`` [rad] and ``is_success``: the position error below
``success_threshold`` (1 mm) and the angle below ``success_angle_threshold`` (1°). Goals are
the poses of uniformly random inputs within ``goal_range · input_limit`` (always reachable on
the starting branch), from the env's RNG.
``info["solver_converged"]`` is False when the branch could not be followed to the commanded
inputs (the robot then rests at the last equilibrium reached, ``info["inputs"]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pybullet
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.base import GoalConditionedMixin, SoftEnv
from soft_envs.exceptions import InvalidParameterError, check_nonnegative, check_positive
from soft_envs.geometry import rotation_vector_error
from soft_envs.robots.cosserat import Hexapod6PFS, HexapodSolution
from soft_envs.sim.bullet import connect


class HexapodPoseEnv(GoalConditionedMixin, SoftEnv, EzPickle):
    """Reach a platform pose with the 6-PFS hexapod (see the module docstring).

    Args:
        goal_conditioned: ``Dict`` observation with ``achieved_goal``/``desired_goal``.
        position_weight, orientation_weight: reward weights.
        success_threshold: position error counted as success [m].
        success_angle_threshold: angle error counted as success [rad] (both must hold).
        goal_range: goals come from inputs uniform in ``±goal_range · input_limit``.
        max_input_step: continuation step of the solver [m].
        n_steps: RK4 steps per rod in the solver.
        time_step, frame_skip: their product is the nominal control period (0.05 s); no
            physics is stepped.
        rod_render_radius: drawn rod radius [m] (the real 0.65 mm would be invisible).
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``width``, ``height``,
            ``action_rate_weight`` = 0).
    """

    def __init__(
        self,
        *,
        goal_conditioned: bool = False,
        position_weight: float = 10.0,
        orientation_weight: float = 1.0,
        success_threshold: float = 1e-3,
        success_angle_threshold: float = np.deg2rad(1.0),
        goal_range: float = 0.5,
        max_input_step: float = 0.01,
        n_steps: int = 32,
        time_step: float = 0.05,
        frame_skip: int = 1,
        rod_render_radius: float = 0.003,
        **kwargs: Any,
    ) -> None:
        EzPickle.__init__(
            self, goal_conditioned=goal_conditioned, position_weight=position_weight,
            orientation_weight=orientation_weight, success_threshold=success_threshold,
            success_angle_threshold=success_angle_threshold, goal_range=goal_range, max_input_step=max_input_step,
            n_steps=n_steps, time_step=time_step, frame_skip=frame_skip, rod_render_radius=rod_render_radius,
            **kwargs)
        check_nonnegative(position_weight=position_weight, orientation_weight=orientation_weight)
        if not (0.0 < goal_range <= 1.0):
            raise InvalidParameterError(f"goal_range must be in (0, 1]; got {goal_range!r}")
        self.goal_conditioned = bool(goal_conditioned)
        self.position_weight = float(position_weight)
        self.orientation_weight = float(orientation_weight)
        self.success_threshold = check_positive("success_threshold [m]", success_threshold)
        self.success_angle_threshold = check_positive("success_angle_threshold [rad]", success_angle_threshold)
        self.goal_range = float(goal_range)
        self.max_input_step = check_positive("max_input_step [m]", max_input_step)
        self.rod_render_radius = check_positive("rod_render_radius [m]", rod_render_radius)
        self.model = Hexapod6PFS(n_steps=n_steps)
        super().__init__(time_step=time_step, frame_skip=frame_skip, use_physics=False, **kwargs)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(6,), dtype=np.float32)
        pos_b, q_b, f_b = np.full(3, 1.0), np.ones(4), np.full(18, 1e3)
        err_b = np.concatenate((np.full(3, 2.0), np.full(3, np.pi)))
        flat_high = np.concatenate((pos_b, q_b, pos_b, q_b, err_b, f_b, np.ones(6))).astype(np.float32)
        if self.goal_conditioned:
            pose_high = np.concatenate((pos_b, q_b)).astype(np.float32)
            obs_high = np.concatenate((pos_b, q_b, f_b, np.ones(6))).astype(np.float32)
            self.observation_space = spaces.Dict({
                "observation": spaces.Box(-obs_high, obs_high, dtype=np.float32),
                "achieved_goal": spaces.Box(-pose_high, pose_high, dtype=np.float32),
                "desired_goal": spaces.Box(-pose_high, pose_high, dtype=np.float32)})
        else:
            self.observation_space = spaces.Box(-flat_high, flat_high, dtype=np.float32)
        self.solution: HexapodSolution = self.model.reference_solution()
        self.goal = self.solution.pose.copy()
        self._converged = True
        self._render_ids: dict[str, Any] | None = None

    # ------------------------------------------------------------------ conversions
    def _action_to_model(self, action: np.ndarray) -> np.ndarray:
        return action * self.model.input_limit  # guide inputs ρ = a · input_limit [m]

    def _model_to_action(self, q: np.ndarray) -> np.ndarray:
        return q / self.model.input_limit

    # ------------------------------------------------------------------ hooks
    def _reset_model(self, options: dict[str, Any]) -> None:
        self.solution = self.model.reference_solution()
        self._converged = True
        limit = self.goal_range * self.model.input_limit
        for _ in range(10):  # goals on the starting branch (a failed path is re-drawn)
            rho_goal = self.np_random.uniform(-limit, limit, size=6)
            goal_sol = self.model.solve(rho_goal, self.solution, max_input_step=self.max_input_step)
            if goal_sol.converged:
                break
        self.goal = goal_sol.pose.copy()

    def _command(self) -> np.ndarray:
        return self.solution.inputs

    def _apply_action(self, action: np.ndarray) -> None:
        rho = self.action_to_model(action)
        sol = self.model.solve(rho, self.solution, max_input_step=self.max_input_step)
        self._converged = bool(sol.converged)
        self.solution = sol

    def pose_errors(self) -> tuple[float, float]:
        """``(position error [m], angle error [rad])`` to the goal."""
        dp = float(np.linalg.norm(self.goal[:3] - self.solution.position))
        ang = float(np.linalg.norm(rotation_vector_error(self.goal[3:], self.solution.quaternion)))
        return dp, ang

    def _observation(self):
        s = self.solution
        forces = self.model.tip_forces(s).reshape(18)
        setpoints = self.model_to_action(s.inputs)
        if self.goal_conditioned:
            return {"observation": np.concatenate((s.pose, forces, setpoints)).astype(np.float32),
                    "achieved_goal": s.pose.astype(np.float32), "desired_goal": self.goal.astype(np.float32)}
        return np.concatenate((s.position, s.quaternion, self.goal[:3], self.goal[3:], self.goal[:3] - s.position,
                               rotation_vector_error(self.goal[3:], s.quaternion), forces, setpoints)).astype(np.float32)

    @staticmethod
    def _pose_distances(achieved: np.ndarray, desired: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.asarray(achieved, dtype=float)
        d = np.asarray(desired, dtype=float)
        return (np.linalg.norm(d[..., :3] - a[..., :3], axis=-1),
                np.linalg.norm(rotation_vector_error(d[..., 3:], a[..., 3:]), axis=-1))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.solution.pose.astype(np.float32), self.goal.astype(np.float32)

    def _goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        dp, ang = self._pose_distances(achieved_goal, desired_goal)
        return {"position": -self.position_weight * dp, "orientation": -self.orientation_weight * ang}

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        if self.goal_conditioned:  # from the float32 goals, so that compute_reward reproduces it exactly
            return self._step_goal_terms()
        dp, ang = self.pose_errors()
        return {"position": float(-self.position_weight * dp), "orientation": float(-self.orientation_weight * ang)}

    def _extra_info(self) -> dict[str, Any]:
        dp, ang = self.pose_errors()
        return {"position_error": dp, "angle_error": ang,
                "is_success": bool(dp < self.success_threshold and ang < self.success_angle_threshold),
                "solver_converged": self._converged, "inputs": self.solution.inputs.copy()}

    # ------------------------------------------------------------------ rendering
    def _camera(self) -> dict[str, Any]:
        h = float(self.model.reference_solution().position[2])
        return {"target": (0.0, 0.0, 0.45 * h), "distance": 1.7 * h + 0.12, "yaw": 35.0, "pitch": -22.0}

    @property
    def render_bodies(self) -> dict[str, Any] | None:
        """PyBullet body ids of the drawn scene in :attr:`render_client` (``"platform"``, ``"goal"``,
        ``"segments"``: per rod, its capsules from base to tip); ``None`` before the first render."""
        return None if self._render_ids is None else dict(self._render_ids)

    def _render_scene(self):
        if self._render_client is None:
            self._render_client = connect(gui=False)
            self._build_render_scene(self._render_client)
        self._update_render_scene(self._render_client)
        return self._render_client

    def _build_render_scene(self, client) -> None:
        m = self.model
        n_seg = 10
        seg_len = m.L / n_seg
        ids: dict[str, Any] = {"n_seg": n_seg}
        base = client.createVisualShape(pybullet.GEOM_CYLINDER, radius=m.base_radius + 0.02, length=0.006,
                                        rgbaColor=[0.35, 0.35, 0.4, 1.0])
        client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=base, basePosition=[0, 0, -0.003])
        plat = client.createVisualShape(pybullet.GEOM_CYLINDER, radius=m.platform_radius + 0.01, length=0.006,
                                        rgbaColor=[0.2, 0.45, 0.85, 1.0])
        ids["platform"] = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=plat)
        ghost = client.createVisualShape(pybullet.GEOM_CYLINDER, radius=m.platform_radius + 0.01, length=0.002,
                                         rgbaColor=[0.1, 0.8, 0.2, 0.35])
        ids["goal"] = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=ghost)
        rail = client.createVisualShape(pybullet.GEOM_BOX, halfExtents=[0.003, 0.003, m.input_limit + 0.01],
                                        rgbaColor=[0.6, 0.6, 0.6, 1.0])
        for a in m.base_points:
            client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=rail, basePosition=a.tolist())
        cap = client.createVisualShape(pybullet.GEOM_CAPSULE, radius=self.rod_render_radius, length=seg_len,
                                       rgbaColor=[0.85, 0.55, 0.15, 1.0])
        ids["segments"] = [[client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=cap) for _ in range(n_seg)]
                           for _ in range(6)]
        self._render_ids = ids

    def _update_render_scene(self, client) -> None:
        ids = self._render_ids
        s = self.solution
        rods = self.model.rod_states(s, n_steps=ids["n_seg"])
        for i, rod in enumerate(rods):
            for k, body in enumerate(ids["segments"][i]):
                p0, p1 = rod.positions[k], rod.positions[k + 1]
                q = rod.quaternions[k] + rod.quaternions[k + 1]  # mid-segment frame (x, y, z, w), z along the rod
                q = q / np.linalg.norm(q)
                client.resetBasePositionAndOrientation(body, (0.5 * (p0 + p1)).tolist(), q.tolist())
        client.resetBasePositionAndOrientation(ids["platform"], s.position.tolist(), s.quaternion.tolist())
        g = self.goal
        client.resetBasePositionAndOrientation(ids["goal"], g[:3].tolist(), g[3:7].tolist())
