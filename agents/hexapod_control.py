"""A pose controller for ``HexapodPose-v0``: damped least squares on the Cosserat model's input Jacobian."""

from __future__ import annotations

import numpy as np

from soft_envs.geometry import rotation_vector_error
from soft_envs.robots.cosserat import Hexapod6PFS, HexapodSolution


class HexapodJacobianAgent:
    """Move the guides along the damped-least-squares step of the model's input Jacobian.

    Every ``act`` reads the platform pose, goal and guide inputs from the observation, solves
    the model (``env.unwrapped.model``) at those inputs warm-started from its own previous
    solution (so it follows the same branch as the robot), and commands

        ρ ← ρ + gain · (SᵀWS + λ² I)⁻¹ SᵀW e,        e = (Δp, Δθ),

    with ``S = ∂(p, θ)/∂ρ`` (:meth:`Hexapod6PFS.input_jacobian`) and ``W`` weighting rotation by
    ``length_scale²`` [m²/rad²]; the step is limited to ``max_step`` [m] per guide. The step is
    added to the agent's own last command ``ρ`` (the observed inputs only seed it at the first
    ``act``), so a command still in flight is not corrected twice when the robot's commands
    act late. Nothing of the env's private state is read.
    """

    def __init__(self, env, *, gain: float = 0.8, damping: float = 1e-3, length_scale: float = 0.05,
                 max_step: float = 0.004) -> None:
        self.env = env.unwrapped
        self.model: Hexapod6PFS = self.env.model
        self.gain, self.damping, self.length_scale, self.max_step = gain, damping, length_scale, max_step
        self._solution: HexapodSolution | None = None
        self._command: np.ndarray | None = None  # the last commanded inputs [m]

    def reset(self, obs=None, info=None) -> None:
        """Forget the tracked branch and the last command (the next ``act`` starts again from the
        reference and the observed inputs)."""
        self._solution = None
        self._command = None

    @staticmethod
    def parse(obs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pose (7,), goal pose (7,), normalised inputs (6,))`` from either observation form; a pose
        is position [m] then quaternion ``(x, y, z, w)``."""
        if isinstance(obs, dict):
            o = np.asarray(obs["observation"], float)
            return np.asarray(obs["achieved_goal"], float), np.asarray(obs["desired_goal"], float), o[25:31]
        o = np.asarray(obs, float)
        return o[0:7], o[7:14], o[38:44]

    def act(self, obs) -> np.ndarray:
        pose, goal, a = self.parse(obs)
        rho = a * self.model.input_limit
        self._solution = self.model.solve(rho, self._solution)
        S = self.model.input_jacobian(self._solution)
        e = np.concatenate((goal[:3] - pose[:3], rotation_vector_error(goal[3:], pose[3:])))
        w = np.concatenate((np.ones(3), np.full(3, self.length_scale**2)))
        A = S.T @ (w[:, None] * S) + self.damping**2 * np.eye(6) * np.max(np.abs(S)) ** 2
        step = self.gain * np.linalg.solve(A, S.T @ (w * e))
        big = np.max(np.abs(step))
        if big > self.max_step:
            step *= self.max_step / big
        if self._command is None:
            self._command = rho
        self._command = np.clip(self._command + step, self.model.lower, self.model.upper)
        return self.env.model_to_action(self._command)
