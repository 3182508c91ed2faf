"""Goals the episode's arm can reach (``PeterReach-v0`` under realism; :meth:`PeterReachEnv.draw_episode_task`).

A goal is the nominal model's tip for inflation times drawn uniformly in ``[0, t_max]^{3N}``; under
realism the episode's arm is another one. Its legs fill at ``gain`` (``leg_gain x supply_gain``)
times the nominal rate, but the valves open for at most ``t_max`` (the nominal full fill), so a leg
with ``gain < 1`` cannot reach the nominal full length; a leaking leg loses ``leak_rate`` for the
whole episode and a valve held at its cap cannot top it up; a leg with an offset cannot be shorter
than its offset. About 2 % of the realistic draws are goals that arm cannot hold (seeded Monte Carlo
of the statics: they are exactly the proportional law's misses); the check below, with its margin,
redraws 3-4 % of them.

:class:`ReachCheck` tests a goal against the episode's arm kinematically: the drawn arm (its leg
radius, its base tilt) on the PCC model without gravity, each leg's inflation time (the nominal
leg extension over the nominal rate, [s]) bounded by what that leg can hold at the end of the
episode,

    ``off_i / v  <=  t_i  <=  off_i / v + gain_i * t_max - leak_i * tau / v - REACH_MARGIN``

(``v`` the nominal fill rate, ``tau`` the episode's duration: the leak is counted over the whole
episode, a little more than it can take while the leg is still filling), and the goal passes when
damped Gauss-Newton steps projected onto those bounds (from the goal's own inflation times, clipped,
then from three other points of the box; :func:`_projected_fit`) bring the tip within
:data:`REACH_TOLERANCE` of it. :data:`REACH_MARGIN` is what the kinematic
model leaves out: the sag of the legs under gravity and the payload (a few tenths of a mm of leg at
the top of the stroke) and the law's approach from below; 0.05 s is 0.5 mm of leg.

With obstacles (``obstacles=M``) the obstacle course keeps the *nominal* arm clear at the start and at
the goal's configuration; the drawn arm (tilted, its legs longer by their offsets, its radius) may
touch one already at rest, or only reach the goal through one. The task then also needs the drawn
arm's backbone, in the simulated envelope, at rest and at the fit to keep :data:`OBSTACLE_CLEARANCE`
from every obstacle (the fit from the next start is tried when one touches).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.envs.obstacle_course import body_clearance
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix

#: Most redraws of a reset's task (the last draw is kept if none passes; at ~5 % rejected per draw
#: the cap is never met in practice).
GOAL_REDRAWS = 20
#: Stroke kept in reserve on every leg [s of nominal fill] (module docstring).
REACH_MARGIN = 0.05
#: The kinematic test's tolerance on the tip [m] (half the env's 1 mm success distance).
REACH_TOLERANCE = 0.5e-3
#: Steps of each projected Gauss-Newton fit, and its damping [m^2] (on 1,200 realistic draws the fit, from four
#: starts, gives scipy's bounded least squares' verdict on every one, in 0.5 ms a draw).
FIT_STEPS, FIT_DAMPING = 30, 1e-6
#: The least distance [m] between the drawn arm's body and an obstacle at the start and at the goal (an
#: assumption: the kinematic body leaves out the sag, tenths of a millimetre at the legs).
OBSTACLE_CLEARANCE = 1e-3
#: The perturbations that change what the arm can reach.
REACH_PERTURBATIONS = ("leg_gain", "supply_gain", "leg_offset", "leak_rate", "radius_error", "base_tilt")
#: Episode length [steps] when the env has no ``spec`` (``PeterReach-v0``'s registration).
DEFAULT_EPISODE_STEPS = 50


def reach_perturbed(realism: Any) -> bool:
    """Whether ``realism`` perturbs what the arm can reach (else the goals are drawn as ever)."""
    return any(name in realism.table and not realism.is_ideal(name) for name in REACH_PERTURBATIONS)


class ReachCheck:
    """Whether a goal's inflation times lie within reach of an episode's arm (module docstring)."""

    def __init__(self, env: Any) -> None:
        model = env.model
        self.model = model
        self.t_max, self.rate = model.max_inflation_time, model.leg_rate
        steps = getattr(getattr(env, "spec", None), "max_episode_steps", None) or DEFAULT_EPISODE_STEPS
        self.duration = steps * env.dt

    def bounds(self, perturbations: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Each leg's lowest and highest inflation time the episode's arm holds ``(3N,)`` [s]."""
        n = self.model.n_dof
        value = lambda name, ideal: np.broadcast_to(  # noqa: E731
            np.asarray(perturbations.get(name, ideal), dtype=float), (n,))
        gain = value("leg_gain", 1.0) * float(perturbations.get("supply_gain", 1.0))
        low = value("leg_offset", 0.0) / self.rate
        high = low + gain * self.t_max - value("leak_rate", 0.0) * self.duration / self.rate - REACH_MARGIN
        return low, np.maximum(high, low + 1e-6)

    def reachable(self, times: np.ndarray, perturbations: dict[str, Any], obstacles: np.ndarray | None = None) -> bool:
        """Whether the arm of ``perturbations`` reaches the nominal tip of ``times`` (module docstring);
        with ``obstacles`` ``(M, 4)`` (centre, radius [m], goals' frame; radius 0: none), also without a
        touch: its body at the start (every leg at its offset) and at the fit keeps
        :data:`OBSTACLE_CLEARANCE` from each."""
        low, high = self.bounds(perturbations)
        goal = self.model.forward(times)
        tilt = np.asarray(perturbations.get("base_tilt", (0.0, 0.0)), dtype=float)
        rotation = quaternion_to_matrix(quaternion_from_rotation_vector(np.array([[*tilt, 0.0]])))[0]
        goal = rotation.T @ goal  # into the tilted base's frame
        arm = self._arm(float(perturbations.get("radius_error", 0.0)))
        spheres = None if obstacles is None else np.asarray(obstacles, dtype=float).reshape(-1, 4)
        if spheres is not None:
            spheres = spheres[spheres[:, 3] > 0]
            if spheres.size and self._touches(arm, low, rotation, spheres):
                return False  # the drawn arm at rest already touches an obstacle
        nominal = arm is self.model and not np.any(tilt)
        for start in (times, 0.5 * (low + high), high, low + 0.75 * (high - low)):
            if nominal and start is times and np.all((times >= low) & (times <= high)):
                fit: np.ndarray | None = np.array(times, dtype=float)  # the nominal arm, its own times in bounds
            else:
                fit = _projected_fit(arm, goal, start, low, high)
            if fit is not None and (spheres is None or not spheres.size
                                    or not self._touches(arm, fit, rotation, spheres)):
                return True
        return False

    def _touches(self, arm: Any, times: np.ndarray, rotation: np.ndarray, spheres: np.ndarray) -> bool:
        """Whether ``arm``'s backbone at ``times`` (its base turned by ``rotation``), in the simulated
        envelope (capsules of the nominal model's ``body_radius``, as the scene's), comes closer than
        :data:`OBSTACLE_CLEARANCE` to any of ``spheres`` ``(M, 4)`` (goals' frame)."""
        body = arm.backbone(times) @ rotation.T
        radius = self.model.body_radius
        return min(body_clearance(body, radius, c[:3], c[3]) for c in spheres) < OBSTACLE_CLEARANCE

    def _arm(self, radius_error: float) -> Any:
        """The nominal model with the drawn leg radius (built per call: the draws never repeat)."""
        if radius_error == 0.0:
            return self.model
        return self.model.with_parameters(radius=self.model.radius * (1.0 + radius_error),
                                          kinematics=self.model.kinematics)


def _projected_fit(arm: Any, goal: np.ndarray, start: np.ndarray, low: np.ndarray,
                   high: np.ndarray) -> np.ndarray | None:
    """The inflation times ``(3N,)`` [s] to which damped Gauss-Newton steps, projected onto the box
    ``[low, high]`` (legs held at a bound the error pushes them past are left out of the step), bring
    ``arm``'s tip within :data:`REACH_TOLERANCE` of ``goal`` in :data:`FIT_STEPS` steps from ``start``;
    ``None`` if they do not."""
    t = np.clip(start, low, high)
    for _ in range(FIT_STEPS):
        error = arm.forward(t) - goal
        if np.linalg.norm(error) < REACH_TOLERANCE:
            return t
        jac = arm.jacobian(t)
        descent = jac.T @ error
        free = ~(((t <= low) & (descent > 0)) | ((t >= high) & (descent < 0)))
        jf = jac[:, free]
        t[free] -= jf.T @ np.linalg.solve(jf @ jf.T + FIT_DAMPING * np.eye(3), error)
        t = np.clip(t, low, high)
    return None
