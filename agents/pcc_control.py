"""Trajectory tracking with the PCC arm (Keyvanara et al. 2023, Fig. 2): IK set-points through ``step``.

:class:`PCCTrackingAgent` is the paper's pipeline in ``PCCTrack-v0``: at every control step it
solves the IK (:func:`~soft_envs.agents.ik.sqp`, warm-started from its previous solution, with
the trajectory's tip-angle secondary task on the planar arm) for where the goal will be at the
end of the step, and sends that configuration as the set-point; the env's low-level
PD + feed-forward law (:class:`~soft_envs.sim.pcc_body.PDFeedforward`, the paper's eq. 10 with
``k_p = 80``, ``k_v = 3``) drives the elastic arm towards it every 5 ms through the chamber
pressures. (The law cannot run at the 20 Hz agent rate: the arm's bending modes reach
hundreds of rad/s.)
"""

from __future__ import annotations

import numpy as np

from soft_envs.agents.ik.result import IKResult
from soft_envs.agents.ik.sqp import sqp
from soft_envs.exceptions import InvalidParameterError


class PCCTrackingAgent:
    """IK set-points for ``PCCTrack-v0`` in ``action_type="configuration"``.

    The goal comes from the observation (``obs[3:6]``); the next goal is predicted by linear
    extrapolation of the last two (the trajectory moves on during the step). The agent reads
    the env's kinematic model (``env.unwrapped.model``) and, for the tip-angle task, its
    trajectory's ``tip_angle`` — nothing of the env's private state.

    With ``feedback_gain > 0`` it closes an outer loop on the measured tip (the paper's
    set-points are open loop): the IK aims at the goal plus a correction that integrates the
    observed miss ``goal − tip`` with that gain per control step (bounded by
    ``max_correction`` [m]) — it removes steady errors the PD + feed-forward leaves (a payload
    its model lacks, stiffness errors, pressure saturation).

    Args:
        env: a ``PCCTrack-v0`` env (wrapped or not).
        tip_angle: secondary-task tip angle [rad] (planar arms); default the trajectory's.
        predict: extrapolate the goal one control step ahead.
        feedback_gain: integral gain of the outer tip loop per control step (0: open loop).
        max_correction: bound of the aim correction [m].
        **sqp_options: passed to :func:`~soft_envs.agents.ik.sqp`.
    """

    def __init__(self, env, tip_angle: float | None = None, predict: bool = True, *, feedback_gain: float = 0.0,
                 max_correction: float = 0.02, **sqp_options) -> None:
        self.env = env.unwrapped
        if self.env.action_type != "configuration":
            raise InvalidParameterError("PCCTrackingAgent sends configuration set-points: use "
                                        "action_type='configuration'")
        self.model = self.env.model
        if tip_angle is None and self.model.planar:
            tip_angle = self.env.trajectory.tip_angle
        self.tip_angle = tip_angle
        self.predict = bool(predict)
        if not (np.isfinite(feedback_gain) and 0 <= feedback_gain <= 1):
            raise InvalidParameterError(f"feedback_gain must be in [0, 1]; got {feedback_gain!r}")
        if not (np.isfinite(max_correction) and max_correction >= 0):
            raise InvalidParameterError(f"max_correction must be >= 0 [m]; got {max_correction!r}")
        self.feedback_gain, self.max_correction = float(feedback_gain), float(max_correction)
        self.sqp_options = sqp_options
        self._correction = np.zeros(3)
        self.last_result: IKResult | None = None
        self._solution: np.ndarray | None = None
        self._goal: np.ndarray | None = None

    def reset(self, obs=None, info=None) -> None:
        """Start a new episode; the first set-point is warm-started from ``info["setpoint"]`` if given."""
        self._goal, self.last_result = None, None
        self._correction = np.zeros(3)
        self._solution = None if info is None or "setpoint" not in info else np.asarray(info["setpoint"], float)

    def act(self, obs) -> np.ndarray:
        """The normalised configuration set-point for the predicted goal."""
        obs = np.asarray(obs, dtype=float)
        goal = obs[3:6]
        target = goal if (self._goal is None or not self.predict) else 2 * goal - self._goal
        self._goal = goal
        if self.feedback_gain:
            self._correction = self._correction + self.feedback_gain * obs[6:9]
            size = np.linalg.norm(self._correction)
            if size > self.max_correction:
                self._correction *= self.max_correction / size
            target = target + self._correction
        options = dict(self.sqp_options)
        if self.tip_angle is not None:
            options.setdefault("tip_angle", self.tip_angle)
        result = sqp(self.model, target, self._solution, **options)
        self.last_result, self._solution = result, result.solution
        return self.env.model_to_action(self._solution)


def track(env, agent: PCCTrackingAgent, n_steps: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Run one episode; returns desired and tracked tip paths ``(T, 3)`` [m], errors [m], IK errors [m]."""
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    desired, tracked, errors, ik_errors = [], [], [], []
    for _ in range(n_steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        desired.append(obs[3:6].astype(float))
        tracked.append(obs[0:3].astype(float))
        errors.append(info["tracking_error"])
        ik_errors.append(agent.last_result.error if agent.last_result is not None else np.nan)
        if terminated or truncated:
            break
    return {"desired": np.array(desired), "tracked": np.array(tracked), "errors": np.array(errors),
            "ik_errors": np.array(ik_errors)}
