"""``soft_envs/PCCTrack-v0``: follow a tip trajectory with a multi-segment PCC soft arm in physics.

The arm (:class:`~soft_envs.robots.PCCArm`, or :class:`~soft_envs.robots.PlanarPCCArm` for a
planar trajectory) is simulated with elastic joints, Rayleigh damping and gravity
(:class:`~soft_envs.sim.pcc_body.PCCBody`); the goal at every step is the point of a named
trajectory (:mod:`soft_envs.trajectories`) at the current time.

Action (``Box(-1, 1, (n,))``, ``n = 3N`` or ``2N`` planar):

* ``action_type="configuration"`` (default): the set-point ``c = (ΔL, θ, φ)`` per segment,
  normalised to the model's bounds (``c = low + (a + 1)/2 · (high − low)``). Within the
  control period the set-point moves linearly (in the smooth coordinates) from the previous
  one to the new one and the paper's PD + feed-forward law
  (:class:`~soft_envs.sim.pcc_body.PDFeedforward`, ``kp``, ``kv``) runs at every physics step.
* ``action_type="torque"``: the generalised actuation on ``(ΔL, a, b)`` per segment (axial
  force [N], bending moments [N m]), normalised by :attr:`PCCTrackEnv.torque_limits`
  (1.5 × the elastic force at the bounds), held over the control period.

Out-of-box actions are clipped (``info["action_clipped"]``). :meth:`~SoftEnv.action_to_model`
and :meth:`~SoftEnv.model_to_action` convert between the action and the set-point (``φ``
wrapped into its bounds) or the generalised forces, as ``action_type`` says.

Observation (flat ``Box``, float32, base frame, SI units; clipped into its bounds):

=====================  =========================================================
slice                  content
=====================  =========================================================
``[0:3]``              tip position [m]
``[3:6]``              goal: the trajectory point at the current time [m]
``[6:9]``              goal − tip [m]
``[9:12]``             tip linear velocity [m/s]
``[12:12+n]``          the paper's state ``(ε, κx, κy)`` per segment (planar ``(ε, κ)``) [1, 1/m]
``[12+n:12+2n]``       its rate [1/s, 1/(m s)]
``[12+2n:14+2n]``      trajectory phase ``(sin, cos)(2π t / period)``
=====================  =========================================================

With ``goal_conditioned=True`` the observation is a ``Dict``: ``observation`` (the flat one
from ``[9:]``), ``achieved_goal`` (tip) and ``desired_goal`` (goal), and
``env.compute_reward`` recomputes the reward for relabelled goals (the tracking term from the
goals, the action-rate term from ``info``; see :class:`~soft_envs.envs.base.GoalConditionedMixin`).

Reward terms (``info["reward_<name>"]``, summing exactly to the reward):
``tracking = −tracking_weight · ‖goal − tip‖`` [m] and
``action_rate = −action_rate_weight · ‖a − a_prev‖²``. ``info`` also carries
``tracking_error`` [m], ``is_success`` (error below ``success_threshold``), ``time`` [s] and
``setpoint`` (the configuration set-point).

Reset: the trajectory starts at a random phase (``random_start``, from the env's seeded RNG;
otherwise at ``t = 0``) with the arm at rest on that point (Gauss–Newton continuation along the
trajectory from the straight arm, :class:`~soft_envs.trajectories.TrajectoryStarts`; the
trajectory's tip angle held on a planar arm) — the paper started from the straight arm;
``start_straight=True`` does that.

Timing: ``time_step = 2 ms`` physics steps, ``frame_skip = 25`` (20 Hz control).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pybullet
from gymnasium import spaces
from gymnasium.utils import EzPickle

from soft_envs.envs.base import GoalConditionedMixin, SoftEnv, check_positive
from soft_envs.exceptions import InvalidParameterError, check_nonnegative
from soft_envs.robots.pcc_arm import PCCArm, PlanarPCCArm
from soft_envs.sim.pcc_body import PCCBody, PDFeedforward
from soft_envs.trajectories import TrajectoryStarts, get_trajectory

ACTION_TYPES = ("configuration", "torque")
_STARTS: dict[tuple, TrajectoryStarts] = {}  # start configurations per arm and trajectory, per process


class PCCTrackEnv(GoalConditionedMixin, SoftEnv, EzPickle):
    """Track a trajectory with a PCC arm (see the module docstring for spaces and rewards).

    Args:
        n_segments: segments of the arm.
        links_per_segment: rigid links per segment.
        segment_length: relaxed segment length [m].
        trajectory: a name of :data:`soft_envs.trajectories.TRAJECTORIES`.
        time_scale: slow the trajectory down by this factor.
        trajectory_scale: override the trajectory's workspace scale.
        action_type: ``"configuration"`` or ``"torque"``.
        kp, kv: gains of the PD + feed-forward law [1/s², 1/s] (the paper: 80, 3).
        compensate_damping: the law's ``+D q̇`` term.
        stiffness_error: relative error of the controller's stiffness model (feed-forward
            ``(1 + e) K``); 0 is the exact model.
        gravity: gravity on.
        rayleigh_stiffness: ``β`` of the Rayleigh damping ``D = β K`` [s].
        random_start: random start phase on the trajectory.
        start_straight: start from the straight, relaxed arm instead of the IK start.
        tracking_weight: weight of the tracking term.
        success_threshold: tracking error counted as success [m].
        goal_conditioned: ``Dict`` observation with ``achieved_goal`` (tip) / ``desired_goal``.
        time_step: physics time step [s]; frame_skip: physics steps per ``env.step``.
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``width``, ``height``,
            ``action_rate_weight`` = 0).
    """

    def __init__(
        self,
        n_segments: int = 2,
        *,
        links_per_segment: int = 6,
        segment_length: float = 0.065,
        trajectory: str = "spiral",
        time_scale: float = 1.0,
        trajectory_scale: float | None = None,
        action_type: str = "configuration",
        kp: float = 80.0,
        kv: float = 3.0,
        compensate_damping: bool = True,
        stiffness_error: float = 0.0,
        gravity: bool = True,
        rayleigh_stiffness: float = 8e-4,
        random_start: bool = True,
        start_straight: bool = False,
        tracking_weight: float = 1.0,
        success_threshold: float = 3e-3,
        goal_conditioned: bool = False,
        time_step: float = 2e-3,
        frame_skip: int = 25,
        **kwargs: Any,
    ) -> None:
        EzPickle.__init__(
            self, n_segments, links_per_segment=links_per_segment, segment_length=segment_length,
            trajectory=trajectory, time_scale=time_scale, trajectory_scale=trajectory_scale,
            action_type=action_type, kp=kp, kv=kv, compensate_damping=compensate_damping,
            stiffness_error=stiffness_error, gravity=gravity, rayleigh_stiffness=rayleigh_stiffness,
            random_start=random_start, start_straight=start_straight, tracking_weight=tracking_weight,
            success_threshold=success_threshold, goal_conditioned=goal_conditioned, time_step=time_step,
            frame_skip=frame_skip, **kwargs)
        if action_type not in ACTION_TYPES:
            raise InvalidParameterError(f"action_type must be one of {ACTION_TYPES}; got {action_type!r}")
        check_nonnegative(tracking_weight=tracking_weight, rayleigh_stiffness=rayleigh_stiffness)
        self.tracking_weight = float(tracking_weight)
        self.success_threshold = check_positive("success_threshold [m]", success_threshold)
        self.trajectory = get_trajectory(trajectory, time_scale=time_scale, scale=trajectory_scale)
        arm_class = PlanarPCCArm if self.trajectory.planar else PCCArm
        self.model = arm_class(n_segments, links_per_segment, segment_length)
        self.controller = PDFeedforward(self.model, kp, kv, compensate_damping=compensate_damping,
                                        stiffness_error=stiffness_error)
        self.action_type = action_type
        self.random_start = bool(random_start)
        self.start_straight = bool(start_straight)
        self.gravity = bool(gravity)
        super().__init__(time_step=time_step, frame_skip=frame_skip, use_physics=True, **kwargs)
        self.body = PCCBody(self.client, self.model, gravity=9.81 if gravity else 0.0,
                            rayleigh_stiffness=rayleigh_stiffness)
        marker = self.client.createVisualShape(pybullet.GEOM_SPHERE, radius=0.003, rgbaColor=[1.0, 0.1, 0.1, 0.9])
        self._goal_marker = self.client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=marker,
                                                        basePosition=[0.0, 0.0, -1.0])
        n = self.model.n_dof
        self.action_space = spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float32)
        per = self.model.per_segment
        spans = np.stack([self.model.elongation * self.model.segment_lengths] +
                         [np.full(self.model.n_segments, self.model.max_bend)] * (per - 1), axis=-1).ravel()
        #: Generalised-force scale of a torque action of 1 (axial [N], bending [N m]).
        self.torque_limits = 1.5 * self.body.stiffness * spans
        reach = 1.2 * self.model.total_length * (1 + self.model.elongation) + 0.05
        kappa = 2 * self.model.max_bend / (self.model.segment_lengths.min() * (1 - self.model.elongation))
        state_high = np.tile([1.0] + [kappa] * (per - 1), self.model.n_segments)
        high = np.concatenate((np.full(6, reach), np.full(3, 2 * reach), np.full(3, 10.0), state_high,
                               np.full(n, 1e3), np.ones(2))).astype(np.float32)
        self._obs_high = high.astype(np.float64)
        self.goal_conditioned = bool(goal_conditioned)
        if self.goal_conditioned:
            point = spaces.Box(-high[:3], high[:3], dtype=np.float32)
            rest = high[9:]
            self.observation_space = spaces.Dict({"observation": spaces.Box(-rest, rest, dtype=np.float32),
                                                  "achieved_goal": point, "desired_goal": point})
        else:
            self.observation_space = spaces.Box(-high, high, dtype=np.float32)
        self.time = 0.0
        self.stop_reason: str | None = None
        self.setpoint = np.zeros(n)
        self._previous_setpoint = np.zeros(n)
        self._torque = np.zeros(n)
        self.goal = self.trajectory.position(0.0)
        self.tip, self.tip_velocity = self.body.tip_state()

    def _physics_parameters(self) -> dict[str, Any]:
        # PCCBody integrates the arm itself; the client's gravity enters its inverse dynamics.
        return {"gravity": 9.81 if self.gravity else 0.0}

    # ------------------------------------------------------------------ conversions

    def _action_to_model(self, action: np.ndarray) -> np.ndarray:
        if self.action_type == "torque":
            return action * self.torque_limits
        return super()._action_to_model(action)

    def _model_to_action(self, q: np.ndarray) -> np.ndarray:
        if self.action_type == "torque":
            return q / self.torque_limits
        c = np.array(q, dtype=float)
        if not self.model.planar:  # φ wrapped into its bounds
            c[..., 2::3] = np.angle(np.exp(1j * c[..., 2::3]))
        return super()._model_to_action(c)

    # ------------------------------------------------------------------ start configurations

    def _start_configuration(self, t0: float) -> np.ndarray:
        """The arm at rest on the trajectory point at ``t0`` (Gauss–Newton continuation along the
        trajectory from the straight arm, :class:`~soft_envs.trajectories.TrajectoryStarts`; a
        planar trajectory's tip angle is held). Deterministic; shared by the instances of a process."""
        key = (repr(self.model), self.trajectory.name, self.trajectory.scale, self.trajectory.period)
        if key not in _STARTS:
            _STARTS[key] = TrajectoryStarts(self.model, self.trajectory)
        return _STARTS[key].configuration(t0)[0]

    # ------------------------------------------------------------------ hooks

    def _reset_model(self, options: dict[str, Any]) -> None:
        t0 = float(self.np_random.uniform(0.0, self.trajectory.period)) if self.random_start else 0.0
        c0 = np.zeros(self.model.n_dof) if self.start_straight else self._start_configuration(t0)
        self.body.reset(c0)
        self.stop_reason = None
        self.time = t0
        self.setpoint = self.body.configuration
        self._previous_setpoint = self.setpoint.copy()
        self._torque = np.zeros(self.model.n_dof)
        self.goal = self.trajectory.position(self.time)

    def _command(self) -> np.ndarray:
        return self.setpoint if self.action_type == "configuration" else self._torque

    def _apply_action(self, action: np.ndarray) -> None:
        if self.action_type == "configuration":
            self._previous_setpoint = self.setpoint
            self.setpoint = self.action_to_model(action)
        else:
            self._torque = self.action_to_model(action)

    def simulate(self, n_steps: int | None = None) -> None:
        """Advance ``n_steps`` (default ``frame_skip``) physics steps under the current action.

        An arm driven out of the PCC model's validity (:meth:`model_violation`) is stopped at
        its last valid state, at rest, and the episode terminates with the reason in ``info``.
        """
        steps = self.frame_skip if n_steps is None else n_steps
        if self.action_type == "configuration":
            u_from = self.model.to_smooth(self._previous_setpoint)
            u_to = self.model.to_smooth(self.setpoint)
        for k in range(steps):
            if self.stop_reason is not None:
                break
            last_valid = self.body.configuration
            with np.errstate(over="ignore", invalid="ignore"):
                if self.action_type == "configuration":
                    s = (k + 1) / steps
                    tau = self.controller.torque_smooth(self.body, (1 - s) * u_from + s * u_to)
                    self.body.step(self.time_step, tau, cancel_damping=self.controller.compensate_damping)
                else:
                    self.body.step(self.time_step, self._torque)
            self.stop_reason = self.model_violation(self.body.u, self.body.w)
            if self.stop_reason is not None:
                self.body.reset(last_valid)
        self.time += steps * self.time_step
        self.goal = self.trajectory.position(self.time)

    def model_violation(self, u: np.ndarray, w: np.ndarray) -> str | None:
        """Why the smooth state ``(u, u̇)`` is outside the PCC model's validity, or ``None``.

        Valid: finite, every segment bent by at most π (beyond it the arc folds through
        itself) and stretched by at most half its relaxed length, rates below 1e4 per second.
        """
        if not (np.all(np.isfinite(u)) and np.all(np.isfinite(w))):
            return "the state is not finite"
        seg = u.reshape(self.model.n_segments, self.model.per_segment)
        bend = np.abs(seg[:, 1]) if self.model.planar else np.hypot(seg[:, 1], seg[:, 2])
        if np.any(bend > np.pi):
            return f"a segment bent by {np.degrees(bend.max()):.0f}° > 180°: beyond the PCC model"
        if np.any(np.abs(seg[:, 0]) > 0.5 * self.model.segment_lengths):
            return "a segment stretched by more than half its length: beyond the PCC model"
        if np.max(np.abs(w)) > 1e4:
            return "a rate above 1e4 /s: the arm is driven beyond its model"
        return None

    def _observation(self) -> np.ndarray:
        self.tip, self.tip_velocity = self.body.tip_state()
        state = self.controller.state(self.body.u)
        rate = self.controller.state_jacobian(self.body.u) @ self.body.w
        phase = 2 * np.pi * self.time / self.trajectory.period
        obs = np.concatenate((self.tip, self.goal, self.goal - self.tip, self.tip_velocity, state, rate,
                              [np.sin(phase), np.cos(phase)]))
        obs = np.clip(obs, -self._obs_high, self._obs_high).astype(np.float32)
        if self.goal_conditioned:
            return {"observation": obs[9:], "achieved_goal": obs[0:3], "desired_goal": obs[3:6]}
        return obs

    def tracking_error(self) -> float:
        """Current tip-to-goal distance [m] (goal-conditioned: from the float32 goals of the observation,
        so that :meth:`compute_reward` reproduces the reward exactly)."""
        if self.goal_conditioned:
            return float(self._distances(*self._observed_goals()))
        return float(np.linalg.norm(self.goal - self.tip))

    @staticmethod
    def _distances(achieved_goal, desired_goal) -> np.ndarray:
        d = np.asarray(desired_goal, dtype=float) - np.asarray(achieved_goal, dtype=float)
        return np.sqrt(np.sum(d * d, axis=-1))

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tip.astype(np.float32), self.goal.astype(np.float32)

    def _goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        return {"tracking": -self.tracking_weight * self._distances(achieved_goal, desired_goal)}

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        if self.goal_conditioned:
            return self._step_goal_terms()
        return {"tracking": -self.tracking_weight * self.tracking_error()}

    def _terminated(self) -> bool:
        return self.stop_reason is not None

    def _extra_info(self) -> dict[str, Any]:
        err = self.tracking_error()
        info = {"tracking_error": err, "is_success": bool(err < self.success_threshold), "time": self.time,
                "setpoint": self.setpoint.copy()}
        if self.stop_reason is not None:
            info["termination_reason"] = self.stop_reason
        return info

    # ------------------------------------------------------------------ rendering

    def _render_scene(self):
        self.client.resetBasePositionAndOrientation(self._goal_marker, self.goal.tolist(), [0, 0, 0, 1])
        self.body.sync_bullet()
        return self.client

    def _camera(self) -> dict[str, Any]:
        length = self.model.total_length
        return {"target": (0.0, 0.0, 0.5 * length), "distance": 1.6 * length + 0.05, "yaw": 40.0, "pitch": -20.0}
