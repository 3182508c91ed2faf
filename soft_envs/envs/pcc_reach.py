"""``soft_envs/PCCReach-v0``: reach a goal with the multi-segment PCC soft arm, around obstacles.

The arm, its physics, chambers, actions and realism are ``PCCTrack-v0``'s
(:class:`~soft_envs.envs.pcc_track.PCCTrackEnv`: soft by default, three chambers per segment driven
through pressure regulators, the paper's PD + feed-forward law at 200 Hz under a 20 Hz action, the
command ramp); the task is a reach: every reset draws a goal configuration ``c`` uniformly within
``goal_range`` of the bounds — elongation ``ΔL`` uniform in ``±goal_range · 10 % L``, the bend vector
``(θ cos φ, θ sin φ)`` uniform over the disk of radius ``goal_range · 140°`` — and the goal is the
nominal model's tip at ``c`` (reachable by construction). The arm starts straight and at rest,
upright at the origin (gravity along −z), held by its chambers.

Obstacles (``obstacles=M``, 1 to 8; soft physics on the batched core): every reset draws ``M``
spheres near the straight path from the start's tip to the goal, clear of the body at the start
and at the goal's configuration (:class:`~soft_envs.envs.obstacle_course.ObstacleCourse`; radii
6-12 mm, gaps from the body's straight sweep −8 to +5 mm: an assumption sized by the arm's 8.8 mm
body radius and its 130 mm length, as PETER's spheres are by its body). The body (capsules on its
backbone) touches them through the soft-arm core's contact (:mod:`soft_envs.sim.contact`);
``info`` has ``collisions`` (touches so far this episode), ``penetration`` [m] (the deepest in the
step's physics steps) and ``contact_force`` [N]; success is within ``success_threshold`` (1 mm) of
the goal without a collision this episode. ``env.unwrapped.obstacle_rows`` gives them as packed
shape rows (:mod:`soft_envs.collision`) for an obstacle-aware planner.

Observation (flat ``Box``, float32, the base frame, SI units; clipped into its bounds):

=====================  =========================================================
slice                  content
=====================  =========================================================
``[0:3]``              measured tip position [m]
``[3:6]``              goal [m]
``[6:9]``              goal − tip [m]
``[9:12]``             measured tip velocity [m/s]
``[12:12+n]``          the paper's state ``(ε, κx, κy)`` per segment [1, 1/m]
``[12+n:12+2n]``       its rate [1/s, 1/(m s)]
``[12+2n:]``           with ``obstacles=M``: each obstacle's centre [m] and radius [m] (0: none)
=====================  =========================================================

``goal_conditioned=True``: a ``Dict`` (``observation`` from ``[9:]``, ``achieved_goal``,
``desired_goal``). Reward terms: ``distance = −tracking_weight · ‖goal − tip‖`` [m],
``action_rate`` and, with obstacles and ``collision_weight > 0``, ``collision = −collision_weight ·
[an obstacle touched during the step]``. ``info``: ``distance`` [m], ``is_success``, ``setpoint``, the
chambers' ``pressures`` and, with obstacles, the contact entries above. Vector form:
``gym.make_vec("soft_envs/PCCReach-v0", num_envs=N, ...)`` (:mod:`soft_envs.envs.pcc_reach_vector`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.envs.base import SoftEnv
from soft_envs.envs.config import configured
from soft_envs.envs.obstacle_course import ObstacleCourse, sphere_rows
from soft_envs.envs.obstacle_markers import ObstacleMarkers
from soft_envs.envs.pcc_reach_arms import PCCReachArms
from soft_envs.envs.pcc_reach_config import PCCReachConfig
from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.pcc_track_config import PCCTrackConfig

#: The obstacles' radii and their gaps from the body's straight sweep [m] (module docstring).
PCC_OBSTACLE_RADII = (0.006, 0.012)
PCC_OBSTACLE_GAPS = (-0.008, 0.005)


class PCCReachEnv(PCCTrackEnv):
    """Reach a goal with a PCC arm, with ``obstacles`` in the way (module docstring).

    Keywords: ``PCCTrack-v0``'s arm, physics, actuation and reward keywords
    (:class:`~soft_envs.envs.pcc_track.PCCTrackEnv`; not ``action_type="residual"``), and

    Args:
        goal_range: the goals' configurations within this fraction of the bounds, in (0, 1].
        obstacles: spheres drawn near the path at every reset (0 to 8; soft physics, batched core).
        goal_conditioned: ``Dict`` observation with ``achieved_goal`` (tip) / ``desired_goal``.
        success_threshold: distance to the goal counted as success [m] (default 1 mm).
        collision_weight: the ``collision`` term's penalty per step in which the arm touched an
            obstacle (with ``obstacles``; default 0: no such term).
    """

    config_class: type[PCCTrackConfig] = PCCReachConfig
    __signature__ = PCCReachConfig.signature(SoftEnv.__init__)
    goal_range, obstacles, goal_conditioned = configured("task", 3)
    (collision_weight,) = configured("reward", 1, settable=True)
    arms: PCCReachArms

    def __init__(self, *args: Any, config: PCCReachConfig | None = None, **kwargs: Any) -> None:
        super().__init__(*args, config=config, **kwargs)
        #: The obstacles' draws (``None`` without ``obstacles``).
        self.course = ObstacleCourse(self.model, self.obstacles, radius_range=PCC_OBSTACLE_RADII,
                                     gap_range=PCC_OBSTACLE_GAPS) if self.obstacles else None
        self._markers = ObstacleMarkers()

    def _setup_task(self, config: PCCTrackConfig) -> None:
        self.planar_arm = False

    def _initial_goal(self) -> np.ndarray:
        return self.model.forward(np.zeros(self.model.n_dof))

    def make_arms(self, n_arms: int, body: Any) -> PCCReachArms:
        return PCCReachArms(self, n_arms, body)

    def _observation_bounds(self) -> None:
        super()._observation_bounds()
        reach = float(self.observation_high[0])
        obstacle = np.tile([reach, reach, reach, 0.2], self.obstacles)  # centres within reach, radii below 0.2 m
        self._set_observation_high(np.concatenate((self.observation_high[:-2], obstacle)))

    @property
    def obstacle_rows(self) -> np.ndarray:
        """This episode's obstacles as packed shape rows ``(M, 16)`` (:mod:`soft_envs.collision`) in the
        arm's base frame (empty without ``obstacles``): what an obstacle-aware controller plans around."""
        return sphere_rows(self.arms.obstacles[:1])[0]

    def draw_task(self, rng: np.random.Generator) -> np.ndarray:
        """A reset's task from ``rng``: the goal's configuration (module docstring), then with
        ``obstacles`` each obstacle's centre and radius [m]."""
        model, fraction = self.model, self.goal_range
        n = model.n_segments
        elongation = rng.uniform(-1.0, 1.0, n) * fraction * model.elongation * model.segment_lengths
        bend = fraction * model.max_bend * np.sqrt(rng.uniform(0.0, 1.0, n))
        direction = rng.uniform(-np.pi, np.pi, n)
        c = np.stack((elongation, bend, direction), axis=-1).ravel()
        return c if self.course is None else np.concatenate((c, self.course.draw(rng, c).ravel()))

    def goal_terms(self, achieved_goal, desired_goal) -> dict[str, Any]:
        return {"distance": -self.tracking_weight * self.distances(achieved_goal, desired_goal)}

    def _extra_info(self) -> dict[str, Any]:
        return self._first_row(self.arms.info(slice(None)))

    def tracking_error(self) -> float:
        """Current true tip-to-goal distance [m]."""
        return float(self.arms.tracking_error(slice(None))[0])

    def _render_scene(self):
        client = super()._render_scene()
        arms, row = self._shown
        if self.obstacles:
            self._markers.draw(client, arms.obstacles[row], arms.touching[row])
        return client
