"""The action, command and observation spaces of a single env and the closed-loop options that
change them (``action_mode``, ``history``; :mod:`soft_envs.envs.closed_loop` holds the arithmetic,
shared with the wrappers): :class:`LoopSpaces`, the Gymnasium env :class:`~soft_envs.envs.base.SoftEnv` builds on.

A subclass sets ``action_space`` to its command's box (set-points, joint targets, ...) and
``observation_space`` to its task's observation; it serves ``command_space`` (that box),
``action_space`` (the command's box, or with ``action_mode="task"`` the task's) and
``observation_space`` (the task's, extended by the command and the history where those are on).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from soft_envs.envs.closed_loop import (
    History,
    extended_space,
    next_commands,
    residual_terms,
    task_space,
)


class LoopSpaces(gym.Env):
    """The spaces of a single env with the closed-loop options (module docstring); the base of
    :class:`~soft_envs.envs.base.SoftEnv`."""

    action_mode: str
    delta_scale: float
    history: int
    task_step: float
    _history: History | None

    @property
    def command_space(self) -> spaces.Box:
        """The normalised command's box (the set-points, joint targets, ...): the action space but
        with ``action_mode="task"``, whose actions move the tip instead."""
        space = self.__dict__.get("_command_space")
        if space is None:
            raise AttributeError("command_space is not set yet")
        return space

    @property  # type: ignore[override]
    def action_space(self) -> spaces.Box:
        """The actions' box: every env acts through a normalised box (the command's, or with
        ``action_mode="task"`` one entry in ``[−1, 1]`` per task coordinate)."""
        command = self.command_space
        if self.__dict__.get("action_mode") != "task":
            return command
        cached = self.__dict__.get("_task_action_cache")
        if cached is None or cached[0] is not command:
            cached = (command, task_space(self))
            self._task_action_cache = cached
        return cached[1]

    @action_space.setter
    def action_space(self, space: spaces.Box) -> None:  # subclasses set the command's box
        self._command_space = space

    @property
    def observation_space(self):
        """The observation space (with the ``action_mode``/``history`` entries when they are on)."""
        space = self.__dict__.get("_task_observation_space")
        cached = self.__dict__.get("_extended_cache")
        if space is None:
            raise AttributeError("observation_space is not set yet")
        if cached is None or cached[0] is not space:
            cached = (space, self._extended_space(space))
            self._extended_cache = cached
        return cached[1]

    @observation_space.setter
    def observation_space(self, space) -> None:
        self._task_observation_space = space
        self._extended_cache = None

    def _extended_space(self, space):
        return extended_space(space, self.command_space, getattr(self, "action_mode", "absolute") != "absolute",
                              getattr(self, "history", 0))

    def _extend_observation(self, obs, command: np.ndarray, reset: bool):
        """``obs`` with the current command (delta mode) and the history (module docstring; the same
        arithmetic as :class:`~soft_envs.envs.closed_loop.ClosedLoop`)."""
        delta = self.action_mode != "absolute"
        if not delta and not self.history:
            return obs
        part = np.asarray(obs["observation"] if isinstance(obs, dict) else obs, dtype=np.float32).reshape(1, -1)
        command = np.asarray(command, dtype=np.float32).reshape(1, -1)
        if reset or self._history is None:
            self._history = History(1, part.shape[1], command.shape[1], self.history)
            self._history.start(slice(None), part, command)
        else:
            self._history.push(part, command)
        out = self._history.extended(slice(None), delta)[0]
        return {**obs, "observation": out} if isinstance(obs, dict) else out

    def _next_command(self, action: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """The command a (validated) delta or task ``action`` leads to from ``previous`` (float64)."""
        feedback, authority = residual_terms(self, getattr(self, "task_feedback", 0.0), self.task_step,
                                             getattr(self, "task_residual_radius", 0.0),
                                             getattr(self, "task_residual_deadband", 0.0))
        return next_commands(action[None], previous[None], self.command_space, self.action_mode, self.delta_scale,
                             self.task_step, getattr(self, "command_jacobian", None), feedback, authority)[0]
