"""The base environment: owns the PyBullet client and the work every environment shares.

:class:`SoftEnv` (in the style of Gymnasium's ``MujocoEnv``) owns the physics client and its
settings, validates and clips actions, maps normalised actions to model units and back
(:meth:`SoftEnv.action_to_model`, :meth:`SoftEnv.model_to_action`), keeps the previous action
and adds the ``action_rate`` reward term, sums the named reward terms, and enforces the
reset / close order. Subclasses fill the hooks:

* ``_apply_action(action)`` — send the (validated, clipped) action to the robot;
* ``_observation()`` — the observation, built in one place;
* ``_reward_terms(action)`` — the task's ``{name: value}``; the base appends
  ``action_rate = −action_rate_weight · ‖a − a_prev‖²``, the reward is the sum of all terms
  in that order and each appears in ``info`` as ``reward_<name>``;
* ``_reset_model(options)`` — put the robot and task in their initial state using
  ``self.np_random`` (``options`` is ``reset``'s dict without the base's ``keep_robot``, empty
  when none was given); an env with a vector form draws the task through ``draw_task(rng)``,
  which its vector env calls per sub-env;
* ``reset_option_names()`` — the names of the ``reset`` options the env reads besides ``keep_robot``
  (any other name is a ``ValueError``);
* ``_command()`` — the command the robot holds, in model units (its normalised form is the
  previous action of an episode's first step);
* ``_terminated()``, ``_extra_info()``, ``_camera()`` (orbit-camera parameters, no side
  effects) and ``_render_scene()`` (brings the scene to draw up to date, returns its client);
* ``_physics_parameters()`` — gravity and solver settings of the client, applied once by the
  base constructor (so a subclass sets what it reads before calling ``super().__init__``);
* ``_action_to_model(a)`` / ``_model_to_action(q)`` — only where the mapping is not the plain
  box between the model's ``lower`` and ``upper`` bounds;
* ``_realism_table()`` / ``realism_sizes()`` — the env's sim-to-real perturbations
  (:mod:`soft_envs.sim.realism`) and the element count of the per-element ones.

Realism: the base resolves ``realism=`` (``"ideal"``, ``"realistic"`` or a dict of overrides)
against the env's table at construction and, at every ``reset``, draws the perturbations from a
generator spawned off ``np_random`` (:attr:`SoftEnv.realism_rng`, also the source of every
per-step noise; :meth:`SoftEnv.draw_realism`) before ``_reset_model`` runs; the values are
:attr:`SoftEnv.perturbations` and ``info["realism"]`` of the reset. With ``"ideal"`` nothing is drawn.
``reset(options={"keep_robot": True})`` keeps the previous reset's perturbations — the same robot,
a new task (goal, start) and new per-step noise — so that a controller can learn on one robot and
then act on it.

Options that let a policy close the loop (every env; defaults unchanged):
``action_mode="delta"`` makes the action a change of the normalised command,
``a_abs = clip(a_prev + delta_scale · a, −1, 1)`` (the env then sees ``a_abs``; the
observation gains the current normalised command ``a_abs``, entries in ``[−1, 1]``), and
``history=k`` appends the previous ``k`` observations (the flat one, or a ``Dict``'s
``observation`` entry) and the ``k`` previous normalised commands, oldest last; at reset the
history repeats the reset's observation and command. ``action_mode="task"`` (envs with a
``command_jacobian``, e.g. ``PeterReach-v0``) makes the action a displacement of the tip,
``task_step · a`` [m], which the nominal model's damped least-squares Jacobian turns into the
change of the command within its box (:mod:`soft_envs.envs.closed_loop`), and ``task_feedback=k``
makes that action a residual on the proportional law ``k (goal − measured tip) / task_step``
(``task_residual_radius=r``: within ``r`` of the goal, the residual scaled by ``|e| / r``;
``task_residual_deadband=d``: none of it within ``d``, ``clip((|e| − d) / r, 0, 1)`` of it beyond);
``action_space`` is then the task's box and :attr:`SoftEnv.command_space` the command's. The same options are wrappers
(:mod:`soft_envs.envs.closed_loop`: ``ClosedLoop``, ``ClosedLoopVector``, one arithmetic), which the
native vector envs take them through.

Goal-reaching environments also derive from :class:`~soft_envs.envs.env_goals.GoalConditionedMixin`,
which gives them the one ``compute_reward(achieved_goal, desired_goal, info)`` contract. The spaces
and the closed-loop options are :class:`~soft_envs.envs.env_spaces.LoopSpaces`.

A subclass that runs without physics (``use_physics=False``) has ``self.client = None`` and
advances its own state in ``_apply_action``.

A constructor that raises (a keyword combination refused after the base connected to PyBullet)
leaves no client behind: every subclass's ``__init__`` is wrapped (:meth:`SoftEnv.__init_subclass__`)
so that the clients are disconnected before the error propagates.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded

from soft_envs.envs.closed_loop import (
    TASK_STEP,
    History,
    check_feedback,
    check_options,
    check_residual_deadband,
    check_residual_radius,
    check_task_env,
)
from soft_envs.envs.env_goals import checked_reset_options
from soft_envs.envs.env_spaces import LoopSpaces
from soft_envs.exceptions import (
    ClosedEnvironmentError,
    InvalidActionError,
    InvalidConfigurationError,
    InvalidParameterError,
    as_real_array,
    check_integer,
    check_nonnegative,
    check_positive,
)
from soft_envs.sim.bullet import configure_physics, connect, disconnect, has_display, render_rgb
from soft_envs.sim.realism import Perturbation, Realism, spawn_generator
from soft_envs.sim.soft_arm import SoftArmBody

MAX_IMAGE_SIZE = 4096  # px, per side of an rgb_array image
MAX_FRAME_SKIP = 10_000  # physics steps per env.step
TIME_STEP_RANGE = (1e-6, 1.0)  # s, physics time step
MAX_SOLVER_ITERATIONS = 100_000


def render_fps(control_period: float) -> int:
    """``metadata["render_fps"]``: the control rate [Hz] of a ``control_period`` [s], rounded, at
    least 1 — a positive integer, as Gymnasium's ``RecordVideo``, ``HumanRendering`` and ``play``
    want it (a period of a second or more would round to 0)."""
    return max(1, int(round(1.0 / control_period)))


def check_time_step(value: Any) -> float:
    """A physics time step [s] in :data:`TIME_STEP_RANGE`, else :class:`InvalidParameterError`."""
    time_step = check_positive("time_step [s]", value, TIME_STEP_RANGE[1])
    if time_step < TIME_STEP_RANGE[0]:
        raise InvalidParameterError(f"time_step must be >= {TIME_STEP_RANGE[0]:g} s; got {value!r}")
    return time_step

class SoftEnv(LoopSpaces):
    """Base class of every soft_envs environment (see the module docstring for the hooks).

    Args:
        render_mode: ``None``, ``"human"`` (GUI window) or ``"rgb_array"`` (headless images).
        time_step: physics time step [s], in ``[1e-6, 1]``.
        frame_skip: physics steps per ``env.step`` (control period ``time_step * frame_skip``),
            1 to :data:`MAX_FRAME_SKIP` (10 000); ``metadata["render_fps"]`` is its rate
            (:func:`render_fps`: at least 1).
        width, height: size of ``rgb_array`` images [px], 1 to :data:`MAX_IMAGE_SIZE` (4096).
        action_rate_weight: weight of the ``action_rate`` reward term (>= 0).
        realism: ``"ideal"`` (default: no perturbation), ``"realistic"`` (the env's documented
            ranges) or a dict of overrides (:class:`~soft_envs.sim.realism.Realism`).
        action_mode: ``"absolute"`` (default), ``"delta"`` or ``"task"`` (module docstring).
        delta_scale: change of the normalised command per unit of a delta action (0, 2].
        history: previous observations and commands appended to the observation (0 to
            :data:`~soft_envs.envs.closed_loop.MAX_HISTORY`, 64).
        task_step: tip displacement of a task action of 1 [m] (``action_mode="task"``; default 2 mm).
        task_feedback: gain ``k`` in ``[0, 1]`` of the proportional law a task action is a residual on,
            ``clip(a + k (goal − measured tip) / task_step, −1, 1)`` (``action_mode="task"`` on envs with
            ``task_error``; default 0: the action alone).
        task_residual_radius: within this distance [m] of the goal a residual task action acts in
            proportion to the measured error, ``min(1, |e| / r)`` of it, so that it cannot hold the tip
            off the law's equilibrium (with ``task_feedback``; default 0: all of it).
        task_residual_deadband: within this distance [m] of the goal a residual task action does not act
            (the law alone makes the last approach), beyond it ``clip((|e| − d) / r, 0, 1)`` of it (with
            ``task_feedback``; default 0).
        use_physics: create a PyBullet client (False for analytic/kinematic variants); set by
            the subclass, not a user keyword.

    Subclasses pass their users' remaining keywords (``**kwargs``) on to this constructor, as
    Gymnasium's ``ant_v5`` does; the defaults of ``time_step`` and ``frame_skip`` are the
    subclass's.
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 20}
    #: The keywords that give this env its task-space action (``action_mode="task"``), what the
    #: ``task-feedback`` controller makes it with.
    TASK_ACTION_KEYWORDS: ClassVar[dict[str, Any]] = {"action_mode": "task"}
    model: Any  # the nominal robot model a controller plans with (set by the subclass)
    client: Any  # the env's BulletClient (PyBullet is untyped); None without physics and after close()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the subclass's ``__init__``: if it raises, disconnect the clients it opened."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_disconnects_on_error", False):
            return

        @functools.wraps(init)
        def guarded_init(self: SoftEnv, *args: Any, **kw: Any) -> None:
            try:
                init(self, *args, **kw)
            except BaseException:
                for name in ("client", "_render_client"):
                    disconnect(getattr(self, name, None))
                    if name in self.__dict__:
                        setattr(self, name, None)
                raise

        setattr(guarded_init, "_disconnects_on_error", True)  # noqa: B010 (a function attribute mypy cannot see)
        setattr(cls, "__init__", guarded_init)  # noqa: B010

    def __init__(
        self,
        *,
        render_mode: str | None = None,
        time_step: float = 1.0 / 240.0,
        frame_skip: int = 12,
        width: int = 320,
        height: int = 240,
        action_rate_weight: float = 0.0,
        realism: str | dict[str, Any] | None = "ideal",
        action_mode: str = "absolute",
        delta_scale: float = 0.1,
        history: int = 0,
        task_step: float = TASK_STEP,
        task_feedback: float = 0.0,
        task_residual_radius: float = 0.0,
        task_residual_deadband: float = 0.0,
        use_physics: bool = True,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidParameterError(
                f"render_mode must be None or one of {self.metadata['render_modes']}; got {render_mode!r}")
        self.time_step = check_time_step(time_step)
        self.frame_skip = check_integer("frame_skip", frame_skip, minimum=1, maximum=MAX_FRAME_SKIP)
        self.width = check_integer("width [px]", width, minimum=1, maximum=MAX_IMAGE_SIZE)
        self.height = check_integer("height [px]", height, minimum=1, maximum=MAX_IMAGE_SIZE)
        check_nonnegative(action_rate_weight=action_rate_weight)
        self.action_rate_weight = float(action_rate_weight)
        self.action_mode, self.delta_scale, self.history, self.task_step = check_options(
            action_mode, delta_scale, history, task_step)
        self.task_feedback = check_feedback(self.action_mode, task_feedback)
        self.task_residual_radius = check_residual_radius(self.task_feedback, task_residual_radius)
        self.task_residual_deadband = check_residual_deadband(self.task_feedback, task_residual_deadband)
        if self.action_mode == "task":
            check_task_env(self, self.task_feedback)
        self._history: History | None = None  # the observations and commands history=k appends
        self.realism = Realism(self._realism_table(), realism, env=type(self).__name__)
        self.perturbations: dict[str, Any] = self.realism.ideal_values(self.realism_sizes())
        self._robot_drawn = False  # True once a reset has drawn a robot that keep_robot can keep
        self.realism_rng: np.random.Generator | None = None  # spawned at every reset (non-ideal)
        self.render_mode = render_mode
        self.use_physics = bool(use_physics)
        self._closed = False
        #: Entries of the last observation that were clipped into the observation space's bounds.
        self.observation_clipped = 0
        self._previous_action: np.ndarray | None = None  # None until the first reset
        self._render_client = None  # for rendering a physics-free env
        gui = render_mode == "human" and has_display()
        self.client = connect(gui=gui) if use_physics else None
        if self.client is not None:
            configure_physics(self.client, time_step=self.time_step, **self._physics_parameters())
        self.metadata = dict(self.metadata, render_fps=render_fps(self.dt))

    @property
    def dt(self) -> float:
        """Control period [s]."""
        return self.time_step * self.frame_skip

    @property
    def render_client(self):
        """The client ``rgb_array`` pictures come from: the physics client, or (for an env without
        physics) a drawing-only client opened at the first ``render()``; ``None`` before that and
        after ``close()``."""
        return self.client if self.client is not None else self._render_client

    def _drawing_client(self):
        """The client an env without a physics client draws its pictures in, opened at the first
        picture (a GUI window for ``render_mode="human"`` where a display is set)."""
        if self._render_client is None:
            self._render_client = connect(gui=self.render_mode == "human" and has_display())
        return self._render_client

    @property
    def previous_action(self) -> np.ndarray | None:
        """The last step's clipped action (at reset: the action that holds the reset command),
        float64; ``None`` before the first reset."""
        return None if self._previous_action is None else self._previous_action.copy()

    # ------------------------------------------------------------------ hooks
    def _physics_parameters(self) -> dict[str, Any]:
        """Keywords of :func:`~soft_envs.sim.bullet.configure_physics` besides the time step
        (gravity [m/s²], solver iterations, direct solver). Called once, by the constructor."""
        return {}

    def _realism_table(self) -> tuple[Perturbation, ...]:
        """The env's sim-to-real perturbations (called once, by the constructor)."""
        return ()

    def realism_sizes(self) -> dict[str, int]:
        """Element counts of the per-element perturbations (legs, chambers, joints)."""
        return {}

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

    def _reset_model(self, options: dict[str, Any]) -> None:
        raise NotImplementedError

    def reset_option_names(self) -> tuple[str, ...]:
        """Names of the ``reset`` options the env reads besides the base's ``keep_robot``."""
        return ()

    def _command(self) -> np.ndarray:
        raise NotImplementedError

    def _render_scene(self):
        """The client to render from, brought up to date (subclasses without physics override it)."""
        return self.client

    def _action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Model units at the action box's low and high corners (default: the model's bounds)."""
        return self.model.lower, self.model.upper

    def _action_to_model(self, action: np.ndarray) -> np.ndarray:
        low, high = self._action_bounds()
        return low + (action + 1.0) * 0.5 * (high - low)

    def _model_to_action(self, q: np.ndarray) -> np.ndarray:
        low, high = self._action_bounds()
        return 2.0 * (q - low) / (high - low) - 1.0

    def _clip_observation(self, obs: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """``obs`` clipped into ``[low, high]`` as float32; the number of entries clipped goes to
        :attr:`observation_clipped` (bounds should hold what the robot does: tests watch it)."""
        clipped = np.clip(obs, low, high)
        self.observation_clipped = int(np.count_nonzero(clipped != obs))
        return clipped.astype(np.float32)

    # ------------------------------------------------------------------ conversions
    def action_to_model(self, action: Any) -> np.ndarray:
        """Normalised action (clipped into the action box) -> command in model units (float64).

        The units are the env's: inflation times [s], configuration set-point, joint targets
        [rad], guide inputs [m] or generalised forces; see the env's docstring."""
        low, high = self.command_space.low, self.command_space.high
        action = as_real_array(action, "action")
        if not np.all(np.isfinite(action)):
            raise InvalidActionError(f"action has NaN/inf: {action}")
        return self._action_to_model(np.clip(action, low, high))

    def model_to_action(self, q: Any) -> np.ndarray:
        """Command in model units -> normalised action, clipped into the action box (float32)."""
        low, high = self.command_space.low, self.command_space.high
        q = as_real_array(q, "command", InvalidConfigurationError)
        if not np.all(np.isfinite(q)):
            raise InvalidConfigurationError(f"command has NaN/inf: {q}")
        return np.clip(self._model_to_action(q), low, high).astype(np.float32)

    def draw_realism(self, rng: np.random.Generator) -> tuple[np.random.Generator | None, dict[str, Any]]:
        """A reset's realism draws from ``rng`` (the env's ``np_random``, not advanced): the
        generator of the episode's per-step noise (spawned off ``rng``) and the perturbations;
        ``(None, ideal values)`` under ``"ideal"``, where nothing is drawn. The vector envs call
        it once per sub-env being reset, with that sub-env's generator."""
        if self.realism.is_ideal():
            return None, self.realism.ideal_values(self.realism_sizes())
        realism_rng = spawn_generator(rng)
        return realism_rng, self.realism.draw(realism_rng, self.realism_sizes())

    def draw_task(self, rng: np.random.Generator) -> Any:
        """A reset's task draws from ``rng`` (goals, start phases): envs with a vector form draw
        their task here, in ``_reset_model`` and, per sub-env, in their vector env."""
        raise NotImplementedError(f"{type(self).__name__} has no vector form")

    def draw_episode_task(self, rng: np.random.Generator, perturbations: dict[str, Any]) -> Any:
        """A reset's task for the robot of ``perturbations`` (the episode's realism values, drawn
        before the task): :meth:`draw_task` unless the env refuses tasks that robot cannot do (it
        then redraws from ``rng``; e.g. ``PeterReachEnv``'s reachable goals)."""
        return self.draw_task(rng)

    # ------------------------------------------------------------------ gym API
    def validate_action(self, action: Any) -> tuple[np.ndarray, bool]:
        """``(action clipped into the box, was it clipped)``; ``ValueError`` on bad shape, NaN or a dtype
        that holds no real numbers."""
        arr = as_real_array(action, "action")
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

    def _check_open(self, method: str) -> None:
        if self._closed:
            raise ClosedEnvironmentError(f"{type(self).__name__}.{method}() called after close()")

    def step(self, action):
        self._check_open("step")
        if self._previous_action is None:
            raise ResetNeeded(f"{type(self).__name__}.step() called before reset() (or after a reset that raised)")
        action, clipped = self.validate_action(action)
        if self.action_mode != "absolute":
            action = self._next_command(action, self._previous_action)
        self._apply_action(action)
        self.simulate()
        obs = self._extend_observation(self._observation(), action, reset=False)
        terms = self._reward_terms(action)
        rate = action - self._previous_action
        terms["action_rate"] = -self.action_rate_weight * float(rate @ rate)
        reward = float(sum(terms.values()))
        info = {f"reward_{name}": float(value) for name, value in terms.items()}
        info["action_clipped"] = clipped
        info.update(self._extra_info())
        terminated = bool(self._terminated())
        self._previous_action = action
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, False, info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode: a new task from ``np_random`` (seeded by ``seed``) and, under realism,
        a new robot — unless ``options={"keep_robot": True}``, which keeps every perturbation drawn
        at the previous reset (``info["realism"]`` shows the same values). Unknown option names,
        a non-boolean ``keep_robot`` or ``keep_robot`` before any reset raise ``ValueError``."""
        self._check_open("reset")
        self._previous_action = None  # a reset that raises (e.g. bad options) leaves the env needing one
        options = self._check_reset_options(options)
        keep_robot = bool(options.pop("keep_robot", False))
        super().reset(seed=seed)
        realism_rng, drawn = self.draw_realism(self.np_random)
        self.realism_rng = realism_rng
        if not keep_robot:
            self.perturbations = drawn
            self._robot_drawn = True
        self._reset_model(options)
        self._previous_action = self.model_to_action(self._command()).astype(np.float64)
        obs = self._extend_observation(self._observation(), self._previous_action, reset=True)
        info = self._extra_info()
        info["realism"] = {name: np.copy(value) if isinstance(value, np.ndarray) else value
                           for name, value in self.perturbations.items()}
        if self.render_mode == "human":
            self.render()
        return obs, info

    def _check_reset_options(self, options: Any) -> dict[str, Any]:
        """``reset``'s ``options`` as a new dict, checked (:func:`checked_reset_options`)."""
        return checked_reset_options(options, ("keep_robot",) + tuple(self.reset_option_names()), type(self).__name__,
                                     robot_drawn=self._robot_drawn)

    def render(self):
        self._check_open("render")
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode= to gym.make")
            return None
        if self.render_mode == "human":
            if not has_display() and not getattr(self, "_warned_no_display", False):
                gym.logger.warn("render_mode='human' needs a display; none is set, nothing is shown")
                self._warned_no_display = True
            elif self.client is None:  # an env without physics poses its drawing client's window
                self._render_scene()
            return None  # the GUI window (when there is one) shows the scene
        client = self._render_scene()
        return render_rgb(client, width=self.width, height=self.height, **self._camera())

    def close(self) -> None:
        # (No __del__: a BulletClient disconnects itself when garbage-collected, and
        # EzPickle's unpickling shares the client of a temporary instance.)
        body = getattr(self, "body", None)
        if isinstance(body, SoftArmBody):  # its private dynamics client, if it made one
            body.close()
        disconnect(self.client)
        disconnect(self._render_client)
        self.client = None
        self._render_client = None
        self._closed = True
        super().close()

