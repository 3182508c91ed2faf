"""``soft_envs/HexapodPose-v0``: bring the platform of the 6-PFS flexible hexapod to a goal pose.

The "physics" is quasi-static: after every action the Cosserat-rod forward kinematics
(:class:`~soft_envs.robots.cosserat.Hexapod6PFS`) is solved by continuation from the previous
equilibrium, so the robot stays on its branch (assembly mode) as a slow real robot would; the
solver runs in compiled kernels (:mod:`soft_envs.robots.cosserat.compiled`; ~2 ms per step under
uniform random actions on a lightly loaded core, ~20x the numpy path: ``soft-envs bench hexapod``).
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
:class:`~soft_envs.envs.env_goals.GoalConditionedMixin`).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):
``position = −position_weight · ‖Δp‖`` [m], ``orientation = −orientation_weight · angle``
[rad] and ``action_rate = −action_rate_weight · ‖a − a_prev‖²``. ``info`` carries
``position_error`` [m], ``angle_error`` [rad] and ``is_success``: the position error below
``success_threshold`` (1 mm) and the angle below ``success_angle_threshold`` (1°). Goals are
the poses of uniformly random inputs within ``goal_range · input_limit`` (always reachable on
the starting branch), from the env's RNG.
``info["solver_converged"]`` is False when the branch could not be followed to the commanded
inputs (the robot then rests at the last equilibrium reached, ``info["inputs"]``).

Realism (``realism=``, :mod:`soft_envs.sim.realism`; table :data:`HEXAPOD_REALISM`): the robot
the env solves (the *plant*) may differ from ``env.model``, the nominal model a controller plans
with — each guide's gain and offset (guide ``i`` sits at ``gain_i · ρ_i + offset_i`` and its
position counter reads ``ρ_i``), a command delay (whole control periods), errors of the rods'
length and stiffness and of the platform's joint circle, a payload on the platform (a load
``−m g ẑ`` at its centre; with rods of this stiffness it sinks the platform by tens of µm, and
the rods' stiffness only matters through it: a weightless platform's equilibrium depends on
their geometry alone), and noise and latency on the measured platform pose. The observation's
pose, goal − pose and orientation error, and the reward, come from the measured pose; the rod
forces are the plant's; the guide inputs are the guides' counters (the plant's inputs mapped
back through the nominal calibration). ``info["position_error"]``, ``angle_error``,
``is_success`` and ``inputs`` (the plant's guide positions) stay true. The goals are the nominal
model's poses of inputs drawn from the env's RNG, as without realism. ``info["realism"]`` of
the reset holds the values drawn. ``reset(options={"keep_robot": True})`` keeps them (a new goal, the same robot).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.base import SoftEnv
from soft_envs.envs.env_goals import GoalConditionedMixin
from soft_envs.exceptions import (
    InvalidParameterError,
    check_finite,
    check_integer,
    check_nonnegative,
    check_positive,
)
from soft_envs.geometry import rotation_vector_error
from soft_envs.robots.cosserat import Hexapod6PFS, HexapodSolution
from soft_envs.robots.cosserat.equations import FK_FREE, FK_ROWS, SINGLE_SEARCH
from soft_envs.sim.bullet import STANDARD_GRAVITY, connect, pybullet
from soft_envs.sim.realism import DelayedSensor, Perturbation

#: Most RK4 steps per rod (``n_steps``): 1000 already costs ~0.1 s a step; 10⁶ was accepted and took
#: minutes to construct and a minute and a half per step.
MAX_ROD_STEPS = 1000

#: The hexapod's sim-to-real perturbations (``realism=``).
HEXAPOD_REALISM: tuple[Perturbation, ...] = (
    Perturbation("guide_gain", "1", "travel of each guide per commanded metre", (0.98, 1.02),
                 "assumption: the paper gives no actuators; a lead-screw or belt guide whose steps per "
                 "millimetre are calibrated to ±2 %", ideal=1.0, valid=(0.5, 2.0), per_element=True),
    Perturbation("guide_offset", "m", "position of each carriage at a zero command", (-5e-4, 5e-4),
                 "assumption: homing on a limit switch and the rod's seat in its clamp, ±0.5 mm",
                 valid=(-0.005, 0.005), per_element=True),
    Perturbation("command_delay", "s", "age of the inputs the guides reach (whole control periods)", (0.0, 0.1),
                 "assumption: a serial link and the motion controller's planning, up to two 50 ms periods",
                 valid=(0.0, 60.0)),
    Perturbation("position_noise", "m", "standard deviation of the measured platform position, per axis",
                 (1e-4, 3e-4), "assumption: a motion-capture system with markers on the platform, "
                 "sub-millimetre (as for PETER's tip, seed 000 §4.2)", valid=(0.0, 0.01)),
    Perturbation("orientation_noise", "rad", "standard deviation of the measured platform orientation, "
                 "per axis", (1e-3, 3e-3), "assumption: the position noise over markers ~0.1 m apart "
                 "(0.2 mm / 87 mm ≈ 2.3 mrad)", valid=(0.0, 0.2)),
    Perturbation("observation_latency", "s", "age of the measured pose (whole control periods)", (0.0, 0.05),
                 "assumption: a motion-capture frame and its processing (10–20 ms) and the rods' settling "
                 "after a move, which the quasi-static model leaves out: up to one 50 ms period",
                 valid=(0.0, 60.0)),
    Perturbation("rod_length_error", "m", "error of the rods' free length (0.25 m)", (-1e-3, 1e-3),
                 "assumption: the free length is set by hand when a rod is clamped, ±1 mm",
                 valid=(-0.005, 0.005)),
    Perturbation("platform_radius_error", "m", "error of the radius of the platform's joint circle (87 mm)",
                 (-5e-4, 5e-4), "assumption: the spherical joints' centres on a machined plate, ±0.5 mm",
                 valid=(-0.005, 0.005)),
    Perturbation("rod_stiffness_error", "1", "relative error of the rods' bending and torsional stiffness",
                 (-0.1, 0.1), "assumption: spring steel's E of 190–210 GPa (±5 %) and a wire diameter within "
                 "±1 % (r⁴: ±4 %)", valid=(-0.5, 1.0)),
    Perturbation("payload", "kg", "mass on the platform's centre", (0.0, 0.1),
                 "assumption: a tool or sensor up to 0.1 kg; the paper's platform carries no stated load",
                 valid=(0.0, 0.5)),
)
_PLANT_REALISM = ("rod_length_error", "platform_radius_error", "rod_stiffness_error")


def perturbed_plant(model: Hexapod6PFS, rod_length_error: float, platform_radius_error: float,
                    rod_stiffness_error: float) -> tuple[Hexapod6PFS, HexapodSolution]:
    """A copy of ``model`` with rods ``rod_length_error`` [m] longer, a platform joint circle
    ``platform_radius_error`` [m] larger and rods ``1 + rod_stiffness_error`` times as stiff, and its
    zero-input equilibrium on the branch of ``model``'s reference: Newton from the nominal one (a
    few milliseconds; the from-scratch :meth:`~Hexapod6PFS.reference_solution` is the fallback)."""
    rod = model.rod
    plant = Hexapod6PFS(rod_length=rod.length + rod_length_error, rod_radius=rod.radius,
                        youngs_modulus=rod.youngs_modulus * (1.0 + rod_stiffness_error),
                        poisson_ratio=rod.youngs_modulus / (2.0 * rod.shear_modulus) - 1.0,
                        base_radius=model.base_radius, platform_radius=model.platform_radius + platform_radius_error,
                        base_half_angle=model.base_half_angle, platform_half_angle=model.platform_half_angle,
                        guide_tilt=model.guide_tilt, input_limit=model.input_limit, n_steps=model.n_steps)
    eq, zero = plant.equations, np.zeros(6)
    out = eq.newton(model.reference_solution().z[None], zero, FK_FREE, FK_ROWS, search=SINGLE_SEARCH,
                    keep_jacobian=True, max_iter=15)
    if not out.converged[0]:
        return plant, plant.reference_solution()
    return plant, eq.solution(out.x[0], zero, out.residual[0], True, int(out.iterations[0]), modes=(0,) * 6,
                              energy=float(out.aux[0]), jacobian=out.jacobian[0])


class HexapodPoseEnv(GoalConditionedMixin, SoftEnv, EzPickle):
    """Reach a platform pose with the 6-PFS hexapod (see the module docstring).

    Args:
        goal_conditioned: ``Dict`` observation with ``achieved_goal``/``desired_goal``.
        position_weight, orientation_weight: reward weights.
        success_threshold: position error counted as success [m].
        success_angle_threshold: angle error counted as success [rad] (both must hold).
        goal_range: goals come from inputs uniform in ``±goal_range · input_limit``.
        max_input_step: continuation step of the solver [m].
        n_steps: RK4 steps per rod in the solver, 2 to :data:`MAX_ROD_STEPS` (the error falls as
            ``n_steps⁻⁴``: 32 is well below the solver's tolerance; the cost grows linearly).
        time_step, frame_skip: their product is the nominal control period (0.05 s); no
            physics is stepped.
        rod_render_radius: drawn rod radius [m] (the real 0.65 mm would be invisible).
        realism: ``"ideal"`` (default), ``"realistic"`` or a dict (:data:`HEXAPOD_REALISM`).
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
        if not (0.0 < check_finite("goal_range", goal_range) <= 1.0):
            raise InvalidParameterError(f"goal_range must be in (0, 1]; got {goal_range!r}")
        self.goal_conditioned = bool(goal_conditioned)
        self.position_weight = float(position_weight)
        self.orientation_weight = float(orientation_weight)
        self.success_threshold = check_positive("success_threshold [m]", success_threshold)
        self.success_angle_threshold = check_positive("success_angle_threshold [rad]", success_angle_threshold)
        self.goal_range = float(goal_range)
        self.max_input_step = check_positive("max_input_step [m]", max_input_step)
        self.rod_render_radius = check_positive("rod_render_radius [m]", rod_render_radius)
        self.model = Hexapod6PFS(n_steps=check_integer("n_steps", n_steps, minimum=2, maximum=MAX_ROD_STEPS))
        super().__init__(time_step=time_step, frame_skip=frame_skip, use_physics=False, **kwargs)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(6,), dtype=np.float32)
        self.observation_space = self._observation_bounds()
        self.solution: HexapodSolution = self.model.reference_solution()
        self.goal = self.solution.pose.copy()
        self._converged = True
        self._render_ids: dict[str, Any] | None = None
        episode = ENVIRONMENTS["soft_envs/HexapodPose-v0"][1] * self.dt
        for name in ("command_delay", "observation_latency"):
            self.realism.limit(name, episode, "one episode")
        self.plant = self.model  # the robot solved (realism: a perturbed copy)
        self.load = np.zeros(6)  # [N, N m] on the platform (realism: the payload)
        self.sensor = DelayedSensor()  # the measured pose (realism)
        self.command_line = DelayedSensor()  # the guides' delayed inputs (realism)
        self.commanded = np.zeros(6)  # [m], the last command (realism)
        self.measured_pose = self.solution.pose.copy()

    def _observation_bounds(self) -> spaces.Space:
        """The observation space (flat or goal-conditioned): poses within 1 m, quaternions within
        ±1, errors within 2 m and π, forces within 1 kN, the normalised inputs within ±1."""
        pos_b, q_b, f_b = np.full(3, 1.0), np.ones(4), np.full(18, 1e3)
        err_b = np.concatenate((np.full(3, 2.0), np.full(3, np.pi)))
        if self.goal_conditioned:
            pose_high = np.concatenate((pos_b, q_b)).astype(np.float32)
            obs_high = np.concatenate((pos_b, q_b, f_b, np.ones(6))).astype(np.float32)
            return spaces.Dict({"observation": spaces.Box(-obs_high, obs_high, dtype=np.float32),
                                "achieved_goal": spaces.Box(-pose_high, pose_high, dtype=np.float32),
                                "desired_goal": spaces.Box(-pose_high, pose_high, dtype=np.float32)})
        flat_high = np.concatenate((pos_b, q_b, pos_b, q_b, err_b, f_b, np.ones(6))).astype(np.float32)
        return spaces.Box(-flat_high, flat_high, dtype=np.float32)

    # ------------------------------------------------------------------ conversions
    def _action_to_model(self, action: np.ndarray) -> np.ndarray:
        return action * self.model.input_limit  # guide inputs ρ = a · input_limit [m]

    def _model_to_action(self, q: np.ndarray) -> np.ndarray:
        return q / self.model.input_limit

    # ------------------------------------------------------------------ realism
    def _realism_table(self) -> tuple[Perturbation, ...]:
        return HEXAPOD_REALISM

    def realism_sizes(self) -> dict[str, int]:
        return {"guide_gain": 6, "guide_offset": 6}

    def _apply_realism(self) -> None:
        """Build this episode's plant, payload, sensor and delay line; put the plant at rest at a
        zero command (its guides at their offsets)."""
        drawn = self.perturbations
        if any(not self.realism.is_ideal(name) for name in _PLANT_REALISM):
            self.plant, start = perturbed_plant(self.model, drawn["rod_length_error"],
                                                drawn["platform_radius_error"], drawn["rod_stiffness_error"])
        else:
            self.plant, start = self.model, self.model.reference_solution()
        self.load = np.array([0.0, 0.0, -drawn["payload"] * STANDARD_GRAVITY, 0.0, 0.0, 0.0])
        steps = int(round(drawn["observation_latency"] / self.dt))
        noise = np.r_[np.full(3, drawn["position_noise"]), np.full(4, 0.5 * drawn["orientation_noise"])]
        self.sensor = DelayedSensor(noise, steps, rng=self.realism_rng)
        self.command_line = DelayedSensor(0.0, int(round(drawn["command_delay"] / self.dt)))
        self.commanded = np.zeros(6)
        self.command_line.reset(self.commanded)
        self.solution = self.plant.solve(self._guide_positions(self.commanded), start, load=self.load,
                                         max_input_step=self.max_input_step)
        self._converged = bool(self.solution.converged)
        self._measure(reset=True)

    def _guide_positions(self, rho: np.ndarray) -> np.ndarray:
        """Where the guides are [m] for commanded inputs ``rho`` [m]."""
        return self.perturbations["guide_gain"] * rho + self.perturbations["guide_offset"]

    def _measure(self, reset: bool = False) -> None:
        pose = self.sensor.reset(self.solution.pose) if reset else self.sensor.read(self.solution.pose)
        q = pose[3:] / np.linalg.norm(pose[3:])
        pose[3:] = -q if q[3] < 0 else q
        self.measured_pose = pose

    def _observed_pose(self) -> np.ndarray:
        """The platform pose the observation shows (true, or measured under realism)."""
        return self.solution.pose if self.realism.is_ideal() else self.measured_pose

    def _observed_inputs(self) -> np.ndarray:
        """The guide inputs the observation shows [m] (realism: the guides' counters)."""
        if self.realism.is_ideal():
            return self.solution.inputs
        return (self.solution.inputs - self.perturbations["guide_offset"]) / self.perturbations["guide_gain"]

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
        if not self.realism.is_ideal():
            self._apply_realism()

    def _command(self) -> np.ndarray:
        return self.solution.inputs if self.realism.is_ideal() else self.commanded

    def _apply_action(self, action: np.ndarray) -> None:
        rho = self.action_to_model(action)
        if self.realism.is_ideal():
            sol = self.model.solve(rho, self.solution, max_input_step=self.max_input_step)
        else:
            self.commanded = rho
            rho = self._guide_positions(self.command_line.read(rho))
            sol = self.plant.solve(rho, self.solution, load=self.load, max_input_step=self.max_input_step)
        self._converged = bool(sol.converged)
        self.solution = sol
        if not self.realism.is_ideal():
            self._measure()

    def pose_errors(self) -> tuple[float, float]:
        """``(position error [m], angle error [rad])`` to the goal."""
        dp = float(np.linalg.norm(self.goal[:3] - self.solution.position))
        ang = float(np.linalg.norm(rotation_vector_error(self.goal[3:], self.solution.quaternion)))
        return dp, ang

    def _observation(self):
        pose = self._observed_pose()
        forces = self.plant.tip_forces(self.solution).reshape(18)
        setpoints = self.model_to_action(self._observed_inputs())
        if self.goal_conditioned:
            return {"observation": np.concatenate((pose, forces, setpoints)).astype(np.float32),
                    "achieved_goal": pose.astype(np.float32), "desired_goal": self.goal.astype(np.float32)}
        return np.concatenate((pose[:3], pose[3:], self.goal[:3], self.goal[3:], self.goal[:3] - pose[:3],
                               rotation_vector_error(self.goal[3:], pose[3:]), forces, setpoints)).astype(np.float32)

    @staticmethod
    def _pose_distances(achieved: np.ndarray, desired: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.asarray(achieved, dtype=float)
        d = np.asarray(desired, dtype=float)
        return (np.linalg.norm(d[..., :3] - a[..., :3], axis=-1),
                np.linalg.norm(rotation_vector_error(d[..., 3:], a[..., 3:]), axis=-1))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self._observed_pose().astype(np.float32), self.goal.astype(np.float32)

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        dp, ang = self._pose_distances(achieved_goal, desired_goal)
        return {"position": -self.position_weight * dp, "orientation": -self.orientation_weight * ang}

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        if self.goal_conditioned:  # from the float32 goals, so that compute_reward reproduces it exactly
            return self._step_goal_terms()
        if not self.realism.is_ideal():  # the measured pose
            dp, ang = self._pose_distances(self.measured_pose, self.goal)
            return {"position": float(-self.position_weight * dp), "orientation": float(-self.orientation_weight * ang)}
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
        rods = self.plant.rod_states(s, n_steps=ids["n_seg"])
        for i, rod in enumerate(rods):
            for k, body in enumerate(ids["segments"][i]):
                p0, p1 = rod.positions[k], rod.positions[k + 1]
                q = rod.quaternions[k] + rod.quaternions[k + 1]  # mid-segment frame (x, y, z, w), z along the rod
                q = q / np.linalg.norm(q)
                client.resetBasePositionAndOrientation(body, (0.5 * (p0 + p1)).tolist(), q.tolist())
        client.resetBasePositionAndOrientation(ids["platform"], s.position.tolist(), s.quaternion.tolist())
        g = self.goal
        client.resetBasePositionAndOrientation(ids["goal"], g[:3].tolist(), g[3:7].tolist())
