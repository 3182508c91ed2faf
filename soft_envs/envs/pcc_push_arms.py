"""``PCCPush-v0``'s arms, row-wise: :class:`~soft_envs.envs.pcc_arms.PCCArms` (the chambers, the
paper's PD + feed-forward law, the validity check, the sensor) hung above a table, each pushing its
own free box (:class:`~soft_envs.sim.rigid_object.BatchedBoxes` coupled to the arm's contact by
:class:`~soft_envs.sim.arm_objects.ArmBoxCoupling`), the single env one row, the vector env ``N``.

The arm's scene: slot 0 the box (moving), slot 1 the table top (a plane). A reset's task
(``PCCPushEnv.draw_task``) is ``(box x, box y, box yaw, goal x, goal y)`` [m, rad, world frame].
Positions reported here are in the world frame (z up, the table top at ``z = 0``); the arm's base is
at ``(0, 0, mount_height)``, turned 180° about x (its z axis down).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.collision import PLANE, SHAPE_WIDTH
from soft_envs.envs.contact_tally import ContactTally
from soft_envs.envs.pcc_arms import PCCArms
from soft_envs.envs.pcc_parts import clipped
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.sim.arm_objects import ArmBoxCoupling
from soft_envs.sim.rigid_object import BatchedBoxes, BoxParameters

BOX_SLOT, TABLE_SLOT = 0, 1


def table_row(mount_height: float) -> np.ndarray:
    """The table top ``z = 0`` as a packed plane row (:mod:`soft_envs.collision`) in the hanging arm's
    base frame (at ``(0, 0, mount_height)``, turned 180° about x): the solid below it."""
    row = np.zeros(SHAPE_WIDTH)
    row[0] = PLANE
    row[1:4] = (0.0, 0.0, mount_height)  # the world's origin, in the base frame
    row[4:13] = np.diag([1.0, -1.0, -1.0]).ravel()  # the plane's z (world up) is the base's −z
    return row


class PCCPushArms(PCCArms):
    """``n_arms`` hanging PCC arms with a box each (module docstring).

    Args:
        env: the :class:`~soft_envs.envs.pcc_push.PCCPushEnv` whose keywords the arms take.
        n_arms: number of arms.
        body: the arms on the batched core (hung by the env's ``base_orientation``).
    """

    def __init__(self, env: Any, n_arms: int, body: Any) -> None:
        super().__init__(env, n_arms, body)
        n = self.n_arms
        self.scene = body.add_scene(2)
        self.scene.set_shapes(None, np.stack([np.zeros(SHAPE_WIDTH), table_row(env.mount_height)]))
        size = env.box_size
        self.box_parameters = BoxParameters(mass=env.box_mass, half_extents=(0.5 * size,) * 3,
                                            friction=env.box_friction)
        self.boxes = BatchedBoxes(n, self.box_parameters)
        self.base_position = np.array([0.0, 0.0, env.mount_height])
        self.coupling = ArmBoxCoupling(body, self.boxes, BOX_SLOT, self.base_position, horizon=env.time_step)
        self.base_rotation = quaternion_to_matrix(np.asarray(env.base_orientation, dtype=float))
        #: The arm's touches of the table this episode (``info``'s ``collisions``), its deepest
        #: penetration and the normal force on it (box and table).
        self.tally = ContactTally(n, 1, first=TABLE_SLOT)
        self.object_goal = np.zeros((n, 3))  # [m], world
        self.object_position = np.zeros((n, 3))
        self.object_velocity = np.zeros((n, 3))

    def _apply_realism(self, rows: np.ndarray, drawn: dict[str, np.ndarray],
                       realism_rngs: list[np.random.Generator | None]) -> None:
        """The arm's perturbations (:class:`PCCArms`) and the box's: its mass, friction and size."""
        super()._apply_realism(rows, drawn, realism_rngs)
        env, nominal = self.env, self.box_parameters
        for k, row in enumerate(rows.tolist()):
            half = 0.5 * env.box_size * (1.0 + float(drawn["box_size_error"][k]))
            self.boxes.parameters[row] = BoxParameters(
                mass=nominal.mass * (1.0 + float(drawn["box_mass_error"][k])), half_extents=(half,) * 3,
                friction=nominal.friction * (1.0 + float(drawn["box_friction_error"][k]))).row()

    # ------------------------------------------------------------------ frames
    def to_world(self, points: np.ndarray) -> np.ndarray:
        """Base-frame points ``(…, 3)`` in the world."""
        return points @ self.base_rotation.T + self.base_position

    # ------------------------------------------------------------------ reset and steps
    def start_times(self, tasks: list) -> np.ndarray:
        return np.zeros(len(tasks))

    def start_configurations(self, tasks: list) -> np.ndarray:
        """The straight, relaxed arm, hanging (held there, at rest, by its command)."""
        return np.zeros((len(tasks), self.model.n_dof))

    def reset_task(self, rows: np.ndarray, tasks: list) -> None:
        """The boxes of ``rows`` at rest on the table at their drawn poses, and their goals."""
        task = np.atleast_2d(np.asarray(tasks, dtype=float))
        half = 0.5 * self.env.box_size
        depth = self.box_parameters.resting_penetration
        position = np.column_stack((task[:, 0], task[:, 1], np.full(len(task), half - depth)))
        yaw = task[:, 2]
        orientation = np.column_stack((np.zeros(len(task)), np.zeros(len(task)), np.sin(0.5 * yaw), np.cos(0.5 * yaw)))
        self.coupling.reset(rows, position, orientation)
        self.object_goal[rows] = np.column_stack((task[:, 3], task[:, 4], np.full(len(task), half - depth)))
        self.goal[rows] = self.object_goal[rows]
        self.tally.reset(rows)
        self._read_object()

    def simulate(self, n_steps: int) -> None:
        self.tally.start_period()
        super().simulate(n_steps)
        self._read_object()

    def per_step_hooks(self) -> bool:
        """The box moves with the arm at every physics step (its reaction, its step): the numpy loop."""
        return True

    def external_torque(self) -> np.ndarray:
        """The box's carried-over reaction (:attr:`~soft_envs.sim.arm_objects.ArmBoxCoupling.reaction`: the
        impulse the box took beyond what the arm's step assumed, passed back so momentum is exchanged)."""
        return self.coupling.reaction

    def after_physics_step(self) -> None:
        self.coupling.step(self.env.time_step, active=self.stop_code == 0)
        # The scene measured the box at its free step's pose with the yielding law: the true depths are
        # the box's where both bodies are now and the body's below the table top.
        box_depth = self.coupling.contact_state()[2]
        points = self.to_world(self.body.backbone()[0])
        table_depth = self.model.body_radius - points[..., 2].min(axis=-1)
        self.tally.record(self.scene, np.maximum(np.maximum(box_depth, table_depth), 0.0))

    def advance_goal(self) -> None:
        """The goal is held for the episode."""

    def _read_object(self) -> None:
        self.object_position[:] = self.boxes.position
        self.object_velocity[:] = self.boxes.velocity

    # ------------------------------------------------------------------ readings
    def object_distance(self, rows) -> np.ndarray:
        """The boxes' distances [m] to their goals on the table (x, y)."""
        return np.linalg.norm((self.object_goal[rows] - self.object_position[rows])[:, :2], axis=-1)

    def observation(self, rows, on_clip=None):
        """The observations of ``rows`` (``PCCPushEnv``'s layout, world frame; the sensor advances)."""
        self.read_tips(rows)
        u, w = self.body.state.u[rows], self.body.state.w[rows]
        tip = self.to_world(self.measured_tip[rows])
        velocity = self.measured_velocity[rows] @ self.base_rotation.T
        box, goal = self.object_position[rows], self.object_goal[rows]
        q = self.boxes.orientation[rows]
        yaw = 2.0 * np.arctan2(q[:, 2], q[:, 3])  # (about z; the box stays flat)
        raw = np.concatenate((tip, box, goal, goal - box, box - tip, velocity, self.object_velocity[rows],
                              np.sin(4 * yaw)[:, None], np.cos(4 * yaw)[:, None], self.controller.state(u),
                              self.controller.state_rate(u, w)), axis=-1)
        obs = clipped(raw, self.env.observation_high, on_clip)
        if self.env.goal_conditioned:
            return {"observation": np.concatenate((obs[..., 0:3], obs[..., 9:]), axis=-1),
                    "achieved_goal": obs[..., 3:6], "desired_goal": obs[..., 6:9]}
        return obs

    def reward_terms(self) -> dict[str, np.ndarray]:
        env = self.env
        tip = self.to_world(self.measured_tip)
        terms = env.goal_terms(self.object_position.astype(np.float32), self.object_goal.astype(np.float32))
        terms["reach"] = -env.reach_weight * np.linalg.norm(self.push_point() - tip, axis=-1)
        return terms

    def push_point(self) -> np.ndarray:
        """``(n, 3)`` [m, world]: the reach term's point, ``reach_behind`` behind the box's centre on the line
        from its goal through it (in the table's plane, at the centre's height; the centre itself at 0 or
        with the box on its goal)."""
        line = self.object_goal[:, :2] - self.object_position[:, :2]
        length = np.linalg.norm(line, axis=-1, keepdims=True)
        unit = np.divide(line, length, out=np.zeros_like(line), where=length > 1e-9)
        point = self.object_position.copy()
        point[:, :2] -= self.env.reach_behind * unit
        return point

    def tracking_error(self, rows) -> np.ndarray:
        return self.object_distance(rows)

    def info(self, rows) -> dict[str, Any]:
        """``info`` of ``rows``: ``object_position`` [m, world], ``object_distance`` [m] and
        ``is_success`` (within ``success_threshold``), the contact's ``collisions`` (the arm's touches
        of the table), ``penetration`` [m] and ``contact_force`` [N], the set-point, the chambers."""
        info = super().info(rows)
        del info["tracking_error"], info["time"]
        distance = self.object_distance(rows)
        info["object_position"] = self.object_position[rows].copy()
        info["object_distance"] = distance
        info["is_success"] = distance < self.env.success_threshold
        info["collisions"] = self.tally.collisions[rows].copy()
        info["penetration"] = self.tally.penetration[rows].copy()
        info["contact_force"] = self.tally.contact_force[rows].copy()
        return info
