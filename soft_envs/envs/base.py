"""The base environment: owns the PyBullet client, validates actions, sums named reward terms.

Subclasses fill the hooks (in the style of Gymnasium's ``MujocoEnv``):

* ``_apply_action(action)`` — send the (validated, clipped) action to the robot;
* ``_observation()`` — the observation, built in one place;
* ``_reward_terms(action)`` — ``{name: value}``; the reward is their sum and each appears in
  ``info`` as ``reward_<name>``;
* ``_terminated()`` and ``_extra_info()``;
* ``_camera()`` — orbit-camera parameters for ``rgb_array`` rendering;
* ``_reset_model()`` — put the robot and task in their initial state using ``self.np_random``.

A subclass that runs without physics (``use_physics=False``) has ``self.client = None`` and
advances its own state in ``_apply_action``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from soft_envs.exceptions import InvalidActionError, InvalidParameterError
from soft_envs.sim.bullet import connect, disconnect, has_display, render_rgb


class SoftEnv(gym.Env):
    """Base class of every soft_envs environment (see the module docstring for the hooks).

    Args:
        render_mode: ``None``, ``"human"`` (GUI window) or ``"rgb_array"`` (headless images).
        time_step: physics time step [s].
        frame_skip: physics steps per ``env.step`` (control period ``time_step * frame_skip``).
        use_physics: create a PyBullet client (False for analytic/kinematic variants).
        width, height: size of ``rgb_array`` images [px].
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 20}

    def __init__(
        self,
        *,
        render_mode: str | None = None,
        time_step: float = 1.0 / 240.0,
        frame_skip: int = 12,
        use_physics: bool = True,
        width: int = 320,
        height: int = 240,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidParameterError(
                f"render_mode must be None or one of {self.metadata['render_modes']}; got {render_mode!r}")
        if not (np.isfinite(time_step) and time_step > 0) or int(frame_skip) != frame_skip or frame_skip < 1:
            raise InvalidParameterError("time_step must be > 0 [s] and frame_skip a positive integer")
        self.render_mode = render_mode
        self.time_step = float(time_step)
        self.frame_skip = int(frame_skip)
        self.width, self.height = int(width), int(height)
        self.use_physics = bool(use_physics)
        gui = render_mode == "human" and has_display()
        self.client = connect(gui=gui) if use_physics else None
        self._render_client = None  # for rendering a physics-free env
        if self.client is not None:
            self.client.setTimeStep(self.time_step)
        self.metadata = dict(self.metadata, render_fps=int(round(1.0 / self.dt)))

    @property
    def dt(self) -> float:
        """Control period [s]."""
        return self.time_step * self.frame_skip

    # ------------------------------------------------------------------ hooks
    def _apply_action(self, action: np.ndarray) -> None:
        raise NotImplementedError

    def _observation(self) -> Any:
        raise NotImplementedError

    def _reward_terms(self, action: np.ndarray) -> dict[str, float]:
        raise NotImplementedError

    def _terminated(self) -> bool:
        return False

    def _extra_info(self) -> dict[str, Any]:
        return {}

    def _camera(self) -> dict[str, Any]:
        return {"target": (0.0, 0.0, 0.1), "distance": 0.6}

    def _reset_model(self) -> None:
        raise NotImplementedError

    def _render_scene(self):
        """The client to render from (subclasses without physics override it)."""
        return self.client

    # ------------------------------------------------------------------ gym API
    def validate_action(self, action: Any) -> tuple[np.ndarray, bool]:
        """``(action clipped into the box, was it clipped)``; ``ValueError`` on bad shape or NaN."""
        arr = np.asarray(action, dtype=float)
        if arr.shape != self.action_space.shape:
            raise InvalidActionError(f"action must have shape {self.action_space.shape}; got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise InvalidActionError(f"action has NaN/inf: {arr}")
        low, high = self.action_space.low, self.action_space.high
        clipped = np.clip(arr, low, high)
        return clipped, bool(np.any(clipped != arr))

    def simulate(self, n_steps: int | None = None) -> None:
        """Advance the physics by ``n_steps`` (default ``frame_skip``) steps."""
        if self.client is None:
            return
        step = self.client.stepSimulation  # BulletClient wraps on every attribute access
        for _ in range(self.frame_skip if n_steps is None else n_steps):
            step()

    def step(self, action):
        action, clipped = self.validate_action(action)
        self._apply_action(action)
        self.simulate()
        obs = self._observation()
        terms = self._reward_terms(action)
        reward = float(sum(terms.values()))
        info = {f"reward_{name}": float(value) for name, value in terms.items()}
        info["action_clipped"] = clipped
        info.update(self._extra_info())
        terminated = bool(self._terminated())
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, False, info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._reset_model()
        obs = self._observation()
        info = self._extra_info()
        if self.render_mode == "human":
            self.render()
        return obs, info

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode= to gym.make")
            return None
        if self.render_mode == "human":
            if not has_display() and not getattr(self, "_warned_no_display", False):
                gym.logger.warn("render_mode='human' needs a display; none is set, nothing is shown")
                self._warned_no_display = True
            return None  # the GUI window (when there is one) shows the scene
        client = self._render_scene()
        cam = self._camera()
        return render_rgb(client, width=self.width, height=self.height, **cam)

    def close(self) -> None:
        # (No __del__: a BulletClient disconnects itself when garbage-collected, and
        # EzPickle's unpickling shares the client of a temporary instance.)
        disconnect(self.client)
        disconnect(self._render_client)
        self.client = None
        self._render_client = None
        super().close()
