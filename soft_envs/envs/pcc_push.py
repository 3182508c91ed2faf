"""``soft_envs/PCCPush-v0``: push a box across a table to a goal with the PCC soft arm hung above it.

The arm, its physics, chambers, actions and realism are ``PCCTrack-v0``'s
(:class:`~soft_envs.envs.pcc_track.PCCTrackEnv`: soft, three chambers per segment through pressure
regulators, the paper's PD + feed-forward law at 200 Hz under a 20 Hz action, the command ramp) with
three segments and the law's gains scaled for the regulators' dead time wherever they have one
(``delay_robust_gains``: the paper's let this hanging arm's first bending mode grow), mounted at
``(0, 0, mount_height)`` (0.21 m) above the table top ``z = 0``, pointing down (its base turned 180°
about x; gravity along it): straight, its tip hangs 15 mm above the table
and, bending and stretching, reaches the side of a box up to ~8 cm from the axis. The arm's body
(capsules of 8.8 mm on its backbone) touches the table (a plane) and the box through the soft-arm
core's contact (:mod:`soft_envs.sim.contact`); the box is a full 6-DOF rigid body with compliant
contact and Coulomb friction on the table (:mod:`soft_envs.sim.rigid_object`), pushed by the arm's
contact force (:class:`~soft_envs.sim.arm_objects.ArmBoxCoupling`: momentum passes between them).

The box: a cube of ``box_size`` (30 mm) and ``box_mass`` (30 g: a 3-D printed PLA cube of ~25 %
infill — an assumption), friction ``box_friction`` μ = 0.4 on the table (hard plastic on a dry
laminate: :mod:`~soft_envs.sim.rigid_object`'s default); the arm–box contact is the scene's (μ = 0.6
silicone). A reset puts the box at rest at a random yaw, its centre 40-60 mm from the arm's axis at a
random azimuth (clear of the hanging arm), and its goal ``push_range`` (20-40 mm) away in a random
direction that leads outwards or across (the push's start behind the box nearer the axis than the box:
the arm comes from inside), the goal within the arm's reach. Success (as
Gymnasium-Robotics' FetchPush, at a tighter threshold): the box's centre within ``success_threshold``
(1 cm) of its goal on the table.

Observation (flat ``Box``, float32, world frame, SI units; clipped into its bounds):

=====================  =========================================================
slice                  content
=====================  =========================================================
``[0:3]``              measured tip position [m]
``[3:6]``              box centre [m]
``[6:9]``              goal of the box's centre [m]
``[9:12]``             goal − box [m]
``[12:15]``            box − tip [m]
``[15:18]``            measured tip velocity [m/s]
``[18:21]``            box velocity [m/s]
``[21:23]``            ``(sin, cos)(4 yaw)`` of the box (a cube's yaw, modulo 90°)
``[23:23+n]``          the paper's state ``(ε, κx, κy)`` per segment [1, 1/m]
``[23+n:23+2n]``       its rate [1/s, 1/(m s)]
=====================  =========================================================

``goal_conditioned=True``: a ``Dict`` (``achieved_goal`` the box, ``desired_goal`` its goal,
``observation`` the rest). Reward terms: ``object = −object_weight · ‖goal − box‖`` [m],
``reach = −reach_weight · ‖p − tip‖`` [m] (shaping; ``p`` the box's centre, or with ``reach_behind = d``
the point ``d`` behind it on the line from its goal through it, where a push starts) and ``action_rate``. ``info``:
``object_position`` [m, world], ``object_distance`` [m, on the table], ``is_success``, ``collisions``
(the arm's touches of the table this episode), ``penetration`` [m] (the deepest in the step's physics
steps), ``contact_force`` [N] (the normal force on the arm from box and table), ``setpoint``,
``pressures``. Realism (``realism=``): the arm's (:data:`~soft_envs.envs.pcc_parts.PCC_REALISM`) and
the box's mass, friction and size (:data:`BOX_REALISM`).
Vector form: ``gym.make_vec("soft_envs/PCCPush-v0", num_envs=N, ...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from soft_envs.envs.base import SoftEnv
from soft_envs.envs.config import configured
from soft_envs.envs.pcc_push_arms import PCCPushArms
from soft_envs.envs.pcc_push_config import PCCPushConfig
from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.pcc_track_config import PCCTrackConfig
from soft_envs.sim.bullet import pybullet
from soft_envs.sim.realism import Perturbation

#: The box's start: its centre this far from the arm's axis [m] (clear of the hanging arm's body).
START_RADIUS = (0.04, 0.06)
#: The farthest from the axis [m] the push's start behind the box and the goal may be (the arm's reach
#: at the box's mid-height: ~80 mm from a 0.21 m mount).
REACH_RADIUS = 0.075
#: The push's start (behind the box) is at least this much nearer the axis than the box [m]: the arm
#: comes from inside, never sweeping its body over the box to get behind it.
INSIDE = 0.005
#: The arm's base: turned 180° about x, quaternion ``(x, y, z, w)``.
HANGING = (1.0, 0.0, 0.0, 0.0)


#: The box's perturbations (``realism=``), besides the arm's (:data:`~soft_envs.envs.pcc_parts.PCC_REALISM`).
BOX_REALISM: tuple[Perturbation, ...] = (
    Perturbation("box_mass_error", "1", "relative error of the box's mass (20 g)", (-0.3, 0.3),
                 "assumption: a printed cube's infill, 10-40 %, is rarely weighed", valid=(-0.9, 10.0)),
    Perturbation("box_friction_error", "1", "relative error of the box's friction on the table (μ = 0.4)",
                 (-0.25, 0.25), "assumption: dry plastic on wood or laminate, μ 0.3-0.5, varies with the "
                 "surface and its dust", valid=(-1.0, 10.0)),
    Perturbation("box_size_error", "1", "relative error of the box's edge (30 mm)", (-0.02, 0.02),
                 "assumption: a printer's tolerance and a cube's rounded edges, a few tenths of a mm",
                 valid=(-0.5, 0.5)),
)


class PCCPushEnv(PCCTrackEnv):
    """Push a box to a goal with a hanging PCC arm (module docstring).

    Keywords: ``PCCTrack-v0``'s arm, physics and actuation keywords
    (:class:`~soft_envs.envs.pcc_track.PCCTrackEnv`; three segments by default; soft physics on the
    batched core; not ``action_type="residual"``), and

    Args:
        mount_height: the arm's base above the table top [m].
        box_mass: the box's mass [kg]; box_size: its edge [m]; box_friction: its μ on the table.
        push_range: ``(low, high)`` the goal's distance from the box's start [m].
        goal_conditioned: ``Dict`` observation (``achieved_goal`` the box).
        object_weight, reach_weight: the reward terms' weights.
        reach_behind: the reach term's point, this far behind the box's centre on the line from its
            goal through it [m] (default 0: the centre; the arm's body touches the back face at
            ``box_size/2 + body_radius``).
        success_threshold: the box's distance to its goal counted as success [m] (1 cm).
    """

    config_class: type[PCCTrackConfig] = PCCPushConfig
    __signature__ = PCCPushConfig.signature(SoftEnv.__init__)
    mount_height, box_mass, box_size, box_friction, push_range, goal_conditioned = configured("task", 6)
    object_weight, reach_weight, success_threshold, reach_behind = configured("reward", 4, settable=True)
    base_orientation = HANGING
    arms: PCCPushArms

    def _setup_task(self, config: PCCTrackConfig) -> None:
        self.planar_arm = False

    @property
    def task_error(self) -> Callable[[], np.ndarray] | None:
        """``None``: the goal is the box's, not the tip's (no ``task_feedback``; ``action_mode="task"``
        with ``action_type="smooth"`` moves the tip in the world frame)."""
        return None

    def _realism_table(self) -> tuple[Perturbation, ...]:
        return super()._realism_table() + BOX_REALISM

    def _initial_goal(self) -> np.ndarray:
        return np.zeros(3)

    def make_arms(self, n_arms: int, body: Any) -> PCCPushArms:
        return PCCPushArms(self, n_arms, body)

    def _observation_bounds(self) -> None:
        super()._observation_bounds()
        n = self.model.n_dof
        reach = float(self.observation_high[0])
        rates = self.observation_high[9:12]  # the tip velocity's bound
        state, state_rate = self.observation_high[12:12 + n], self.observation_high[12 + n:12 + 2 * n]
        high = np.concatenate((np.full(9, reach), np.full(6, 2 * reach), rates, np.full(3, 2.0), np.ones(2),
                               state, state_rate))
        self._set_observation_high(high)
        if self.goal_conditioned:  # achieved/desired: the box and its goal; the rest: the observation
            high = high.astype(np.float32)
            point = spaces.Box(-high[3:6], high[3:6], dtype=np.float32)
            rest = np.concatenate((high[0:3], high[9:])).astype(np.float32)
            self.observation_space = spaces.Dict({"observation": spaces.Box(-rest, rest, dtype=np.float32),
                                                  "achieved_goal": point, "desired_goal": point})

    def draw_task(self, rng: np.random.Generator) -> np.ndarray:
        """A reset's task from ``rng``: ``(box x, box y, box yaw, goal x, goal y)`` [m, rad] (module
        docstring): rejection-sampled until the goal is within :data:`REACH_RADIUS` of the axis and the
        push's start behind the box is :data:`INSIDE` nearer the axis than the box (the push leads
        outwards or across, the arm comes from inside)."""
        half = 0.5 * self.box_size
        behind = half + self.model.body_radius + 0.005
        while True:
            radius, azimuth = rng.uniform(*START_RADIUS), rng.uniform(-np.pi, np.pi)
            box = radius * np.array([np.cos(azimuth), np.sin(azimuth)])
            heading = rng.uniform(-np.pi, np.pi)
            direction = np.array([np.cos(heading), np.sin(heading)])
            goal = box + rng.uniform(*self.push_range) * direction
            start = box - behind * direction
            if np.linalg.norm(goal) <= REACH_RADIUS and behind <= np.linalg.norm(start) <= radius - INSIDE:
                return np.array([box[0], box[1], rng.uniform(-np.pi, np.pi), goal[0], goal[1]])

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        return {"object": -self.object_weight * self.distances(achieved_goal, desired_goal)}

    def _extra_info(self) -> dict[str, Any]:
        return self._first_row(self.arms.info(slice(None)))

    def tracking_error(self) -> float:
        """The box's distance to its goal [m]."""
        return float(self.arms.object_distance(slice(None))[0])

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        arms = self.arms
        return arms.object_position[0].astype(np.float32), arms.object_goal[0].astype(np.float32)

    # ------------------------------------------------------------------ pictures
    def _render_scene(self):
        """The shown arm hung at its mount, its box and the box's goal."""
        client = super()._render_scene()
        arms, row = self._shown
        if self._box_marker is None:
            half = [0.5 * self.box_size] * 3
            box = client.createVisualShape(pybullet.GEOM_BOX, halfExtents=half, rgbaColor=[0.95, 0.55, 0.1, 1.0])
            self._box_marker = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=box)
            goal = client.createVisualShape(pybullet.GEOM_BOX, halfExtents=[half[0], half[1], 0.0005],
                                            rgbaColor=[0.1, 0.8, 0.2, 0.6])
            self._goal_pad = client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=goal)
            table = client.createVisualShape(pybullet.GEOM_BOX, halfExtents=[0.12, 0.12, 0.002],
                                             rgbaColor=[0.75, 0.7, 0.62, 1.0])
            client.createMultiBody(baseMass=0.0, baseVisualShapeIndex=table, basePosition=[0.0, 0.0, -0.002])
        client.resetBasePositionAndOrientation(self._box_marker, arms.object_position[row].tolist(),
                                               arms.boxes.orientation[row].tolist())
        goal = arms.object_goal[row].copy()
        goal[2] = 0.0006
        client.resetBasePositionAndOrientation(self._goal_pad, goal.tolist(), [0, 0, 0, 1])
        if self.goal_marker is not None:  # (the tracking env's goal sphere: not this task's)
            client.resetBasePositionAndOrientation(self.goal_marker, [0.0, 0.0, -1.0], [0, 0, 0, 1])
        return client

    _box_marker: int | None = None
    _goal_pad: int | None = None

    def _picture_mount(self) -> dict[str, Any]:
        return {"base_position": (0.0, 0.0, self.mount_height), "base_orientation": HANGING}

    def _camera(self) -> dict[str, Any]:
        return {"target": (0.0, 0.0, 0.06), "distance": 0.42, "yaw": 30.0, "pitch": -30.0}
