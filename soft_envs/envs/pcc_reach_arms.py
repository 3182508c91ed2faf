"""``PCCReach-v0``'s arms, row-wise: :class:`~soft_envs.envs.pcc_arms.PCCArms` (the chambers, the
paper's PD + feed-forward law, the validity check, the sensor) with a goal held per episode, the
straight arm at rest as the start, and the episode's obstacles in the arms' scene.

A reset's task (:meth:`PCCReachArms.reset`; ``PCCReachEnv.draw_task``) is the goal's configuration
``c`` (``(ΔL, θ, φ)`` per segment) followed by ``(x, y, z, radius)`` of each obstacle [m]
(:func:`~soft_envs.envs.obstacle_course.split_task` parts it); the goal is the nominal model's tip at
``c``. Arrays are ``(n, …)``, SI units, the arm's base frame (the world frame: the base is upright at
the origin).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.envs.contact_tally import ContactTally
from soft_envs.envs.obstacle_course import sphere_rows, split_task
from soft_envs.envs.pcc_arms import PCCArms
from soft_envs.envs.pcc_parts import clipped


class PCCReachArms(PCCArms):
    """``n_arms`` reaching PCC arms of ``env``'s configuration (module docstring).

    Args:
        env: the :class:`~soft_envs.envs.pcc_reach.PCCReachEnv` whose keywords the arms take.
        n_arms: number of arms.
        body: the arms' body (the batched core; PyBullet's reference without obstacles).
        slots: the scene's shape slots (default the env's obstacles; a task with other shapes gives more).
    """

    def __init__(self, env: Any, n_arms: int, body: Any, slots: int | None = None) -> None:
        super().__init__(env, n_arms, body)
        count = int(env.obstacles)
        slots = count if slots is None else int(slots)
        self.obstacles = np.zeros((n_arms, count, 4))  # centre [m], radius [m] (0: none)
        #: The contacts with the obstacles this episode (``info``'s ``collisions``, ...).
        self.tally = ContactTally(n_arms, count)
        self.scene = body.add_scene(slots) if slots else None

    @property
    def touching(self) -> np.ndarray:
        """``(n, M)``: the obstacles each arm touched at the last physics step."""
        return self.tally.touching

    def start_times(self, tasks: list) -> np.ndarray:
        return np.zeros(len(tasks))

    def start_configurations(self, tasks: list) -> np.ndarray:
        """The straight, relaxed arm (held there, at rest, by its command)."""
        return np.zeros((len(tasks), self.model.n_dof))

    def reset_task(self, rows: np.ndarray, tasks: list) -> None:
        """The goals (nominal tips of the tasks' configurations) and the obstacles of ``rows``."""
        configurations, obstacles = split_task(tasks, self.model.n_dof)
        self.goal[rows] = np.array([self.model.forward(c) for c in configurations])
        self.tally.reset(rows)
        if self.obstacles.shape[1]:
            self.obstacles[rows] = obstacles
            assert self.scene is not None
            self.scene.set_shapes(rows, sphere_rows(obstacles))

    def simulate(self, n_steps: int) -> None:
        if self.scene is not None:
            self.tally.start_period()
        super().simulate(n_steps)

    def after_physics_step(self) -> None:
        if self.scene is not None:
            self.tally.record(self.scene)

    def advance_goal(self) -> None:
        """The goal is held for the episode."""

    def observation(self, rows, on_clip=None):
        """The observations of ``rows`` (``PCCReachEnv``'s layout; the sensor advances one sample)."""
        self.read_tips(rows)
        u, w = self.body.state.u[rows], self.body.state.w[rows]
        tip, goal = self.measured_tip[rows], self.goal[rows]
        k = tip.shape[0]
        raw = np.concatenate((tip, goal, goal - tip, self.measured_velocity[rows], self.controller.state(u),
                              self.controller.state_rate(u, w), self.obstacles[rows].reshape(k, -1)), axis=-1)
        obs = clipped(raw, self.env.observation_high, on_clip)
        if self.env.goal_conditioned:
            return {"observation": obs[..., 9:], "achieved_goal": obs[..., 0:3], "desired_goal": obs[..., 3:6]}
        return obs

    def reward_terms(self) -> dict[str, np.ndarray]:
        """The task's reward terms of every arm, ``{name: (n,)}``, from the measured tips (and the
        touches of the last period: ``collision``)."""
        terms = self.env.goal_terms(self.measured_tip.astype(np.float32), self.goal.astype(np.float32))
        if self.env.collision_weight > 0.0:
            terms["collision"] = self.tally.collision_term(self.env.collision_weight)
        return terms

    def info(self, rows) -> dict[str, Any]:
        """``info`` entries of ``rows``: the true ``distance`` [m] to the goal and ``is_success`` (within
        ``success_threshold`` and, with obstacles, none touched this episode; ``collisions``,
        ``penetration`` [m], ``contact_force`` [N]), the set-point, the chambers' state and, for stopped
        arms, ``termination_reason``."""
        info = super().info(rows)
        info["distance"] = info.pop("tracking_error")
        info["is_success"] = info["distance"] < self.env.success_threshold
        del info["time"]
        if self.scene is not None:
            self.tally.add_info(rows, info)
        return info
