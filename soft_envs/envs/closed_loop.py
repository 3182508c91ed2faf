"""Delta and task-space actions and observation history as Gymnasium wrappers, for single and vector envs.

:class:`ClosedLoop` wraps a single env, :class:`ClosedLoopVector` a vector env (a native one, or
any Gymnasium vector env of soft_envs envs), with the options that let a policy close the loop:

* ``action_mode="delta"``: the action is a change of the normalised command,
  ``a_abs = clip(a_prev + delta_scale · a, low, high)``; the env sees ``a_abs``, and the
  observation gains the current command ``a_abs``;
* ``action_mode="task"``: the action moves the point the task is about (a reaching arm's tip) by
  ``Δx = task_step · a`` [m] in the nominal model's base frame, ``a`` in ``[−1, 1]`` per axis; the
  command changes by the damped least-squares solution ``Δc = Jᵀ (J Jᵀ + λ² I)⁻¹ Δx`` of the env's
  ``command_jacobian`` ``J = ∂x/∂c`` at the current normalised command ``c`` (the nominal model:
  what a controller knows, not the robot a realism draw made), ``λ =`` :data:`TASK_DAMPING`, on
  the commands free to move: one the solution would take out of its box is held at its bound and
  the others take its share of ``Δx`` (:func:`task_command_change`), so ``a_abs = c + Δc`` stays
  in the box (the observation gains ``a_abs`` as in delta mode). This is the relative
  differential-IK action of Isaac Lab's manipulation tasks: the policy learns a feedback in the
  task's own coordinates (near a linear map of the measured error) instead of the arm's inverse
  kinematics; the action space is ``Box(−1, 1, (m,))`` for ``J`` of ``m`` rows;
  ``task_feedback=k`` makes the action a residual on the proportional law on the measured error
  ``e`` (the env's ``task_error()``): ``a ← clip(a + k e / task_step, −1, 1)``; with
  ``task_residual_radius=r`` the residual's authority shrinks within ``r`` of the goal,
  ``a ← clip(min(1, |e| / r) a + k e / task_step, −1, 1)``, so the residual cannot move the law's
  equilibrium (``e = 0`` stays one whatever the policy outputs there: a bias of ``b`` in the
  residual would otherwise hold the tip ``b · task_step / k`` off the goal); and with
  ``task_residual_deadband=d`` it has none within ``d`` of the goal, ``clip((|e| − d) / r, 0, 1)`` of
  it (``r = 0``: all of it beyond ``d``), so the law alone makes the last approach and holds the
  goal (near ``e = 0`` the residual's share ``|e| / r`` of an action of 1 still outweighs the law's
  ``k |e| / task_step`` wherever ``r < task_step / k``: it need not move the equilibrium to unsettle it);
* ``history=k``: the observation gains the previous ``k`` observations and the ``k`` previous
  commands, oldest last; at a reset the history repeats the reset's observation and command.

A ``Dict`` observation extends its ``observation`` entry. ``a_prev`` and the commands are the
env's own ``previous_action`` (:attr:`SoftEnv.previous_action`; the vector env's per sub-env),
so a reset starts from the command the robot holds. This is what the envs' ``action_mode=`` and
``history=`` keywords do inside the single env (kept as shortcuts; the same observations and
rewards, ``tests/envs/test_closed_loop.py``); ``gym.make_vec`` of a soft arm with those keywords
returns the native vector env wrapped in :class:`ClosedLoopVector`. On a vector env the history
of a sub-env starts over wherever it resets (autoreset in either mode, or a ``reset_mask``); with
``autoreset_mode="SameStep"`` ``info["final_obs"]`` is extended with the ending episode's history.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorWrapper
from gymnasium.vector.utils import batch_space

from soft_envs.exceptions import InvalidParameterError, as_real_array, check_integer, check_positive

ACTION_MODES = ("absolute", "delta", "task")
#: The keywords of the options that close the loop (every env takes them; the native vector envs through
#: :class:`ClosedLoopVector`).
LOOP_KEYWORDS = ("action_mode", "delta_scale", "history", "task_step", "task_feedback", "task_residual_radius",
                 "task_residual_deadband")
MAX_HISTORY = 64
#: Default ``task_step`` [m]: a task action of 1 moves the tip 2 mm in a control period (soft PETER's 0.1 s:
#: 20 mm/s, about what legs filling at 10 mm/s give the tip; the arm's own rate limit acts beyond it).
TASK_STEP = 0.002
MAX_TASK_STEP = 0.1  # [m]
#: ``λ`` of the damped least squares [m per unit of the normalised command]: directions in which a whole
#: unit of command moves the point less than about 1 mm are damped rather than inverted (soft PETER's
#: Jacobian has singular values of 8-21 mm per unit over 20,000 random set-points: a 1-2 % damping).
TASK_DAMPING = 1e-3
#: Largest ``task_feedback`` gain: the set-point moved by the whole measured error a period (on soft PETER the
#: valves' delay makes the loop ring from about 0.4).
MAX_TASK_FEEDBACK = 1.0


def check_options(action_mode: str, delta_scale: float, history: int,
                  task_step: float = TASK_STEP) -> tuple[str, float, int, float]:
    """``(action_mode, delta_scale, history, task_step)`` checked (a ``ValueError`` names the bad one)."""
    if action_mode not in ACTION_MODES:
        raise InvalidParameterError(f"action_mode must be one of {ACTION_MODES}; got {action_mode!r}")
    return (action_mode, check_positive("delta_scale", delta_scale, 2.0),
            check_integer("history", history, minimum=0, maximum=MAX_HISTORY),
            check_positive("task_step [m]", task_step, MAX_TASK_STEP))


def check_feedback(action_mode: str, task_feedback: float) -> float:
    """``task_feedback`` checked: a gain in ``[0, MAX_TASK_FEEDBACK]``, nonzero only with ``action_mode="task"``."""
    if isinstance(task_feedback, bool) or not isinstance(task_feedback, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(task_feedback) <= MAX_TASK_FEEDBACK:
        raise InvalidParameterError(f"task_feedback must be a gain in [0, {MAX_TASK_FEEDBACK}]; got {task_feedback!r}")
    if task_feedback and action_mode != "task":
        raise InvalidParameterError(f"task_feedback needs action_mode='task'; got action_mode={action_mode!r}")
    return float(task_feedback)


def _residual_distance(name: str, value: float, task_feedback: float, why: str) -> float:
    """A residual option's distance ``value`` [m] checked: in ``[0, MAX_TASK_STEP]``, nonzero only with a
    ``task_feedback`` law (``why``: what the law is to the option)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(value) <= MAX_TASK_STEP:
        raise InvalidParameterError(f"{name} must be in [0, {MAX_TASK_STEP}] m; got {value!r}")
    if value and not task_feedback:
        raise InvalidParameterError(f"{name} needs task_feedback > 0 ({why})")
    return float(value)


def check_residual_radius(task_feedback: float, radius: float) -> float:
    """``task_residual_radius`` [m] checked (:func:`_residual_distance`)."""
    return _residual_distance("task_residual_radius", radius, task_feedback, "the law the action is a residual on")


def check_residual_deadband(task_feedback: float, deadband: float) -> float:
    """``task_residual_deadband`` [m] checked (:func:`_residual_distance`)."""
    return _residual_distance("task_residual_deadband", deadband, task_feedback, "the law that acts alone within it")


def residual_terms(env: Any, gain: float, task_step: float, radius: float = 0.0,
                   deadband: float = 0.0) -> tuple[np.ndarray | None, np.ndarray | None]:
    """What ``task_feedback``, ``task_residual_radius`` and ``task_residual_deadband`` add to a task action,
    from ``env``'s measured error ``e`` in the task's coordinates (its ``task_error()`` [m], read once):
    the proportional law's action ``gain · e / task_step`` ``(N, m)`` (``None`` for a gain of 0) and the
    share ``clip((|e| − deadband) / radius, 0, 1)`` ``(N, 1)`` of the policy's action that acts (a radius
    of 0: 1 beyond the deadband, 0 within it; ``None`` where both are 0: all of it; module docstring)."""
    if not gain:
        return None, None
    error = np.atleast_2d(np.asarray(env.task_error(), dtype=np.float64))
    authority = None
    if radius or deadband:
        beyond = np.linalg.norm(error, axis=1, keepdims=True) - deadband
        authority = np.clip(beyond / radius, 0.0, 1.0) if radius else (beyond > 0.0).astype(np.float64)
    return gain * error / task_step, authority


def check_task_env(env: Any, task_feedback: float = 0.0) -> Any:
    """``env``'s ``command_jacobian``; a ``ValueError`` for an env without one (no task-space action), or
    without ``task_error`` where ``task_feedback`` asks for it."""
    jacobian = getattr(env, "command_jacobian", None)
    if jacobian is None:
        raise InvalidParameterError(f"{type(env).__name__} has no task-space action (action_mode='task' needs "
                                    "the env's command_jacobian: PeterReach-v0 has one, the PCC envs with "
                                    "action_type='smooth')")
    if task_feedback and getattr(env, "task_error", None) is None:
        raise InvalidParameterError(f"{type(env).__name__} has no measured task error (task_feedback needs the "
                                    "env's task_error: PeterReach-v0 and the PCC reach and track envs have one)")
    return jacobian


def task_space(env: Any) -> gym.spaces.Box:
    """The action space of ``action_mode="task"`` on ``env`` (one with ``command_jacobian``): one
    entry in ``[−1, 1]`` per row of its Jacobian; a ``ValueError`` for an env without one."""
    jacobian = check_task_env(env)
    box = env.command_space if hasattr(env, "command_space") else env.single_action_space  # single or vector env
    n_act = int(np.prod(box.shape))
    rows = np.asarray(jacobian(np.zeros((1, n_act)))).shape[1]
    return gym.spaces.Box(-1.0, 1.0, shape=(rows,), dtype=np.float32)


def task_command_change(jacobian: np.ndarray, displacement: np.ndarray, command: np.ndarray | None = None,
                        low: np.ndarray | None = None, high: np.ndarray | None = None) -> np.ndarray:
    """``Δc = Jᵀ (J Jᵀ + λ² I)⁻¹ Δx`` per row: ``jacobian`` ``(N, m, n)`` [m per unit command],
    ``displacement`` ``(N, m)`` [m] → ``(N, n)`` (``λ =`` :data:`TASK_DAMPING`).

    With the current ``command`` ``(N, n)`` and its box ``low``, ``high`` ``(n,)`` (all three) the change keeps
    ``c + Δc`` in the box by an active set, as a differential IK with joint limits does: a command
    the solution would take out of its box is held at its bound and the rest of ``Δx`` is solved
    again with the others (at most ``n`` passes). Clipping the unbounded solution instead would lose
    the bound command's share of ``Δx`` at every step, and a task-space feedback would stall with
    one leg at its limit while the others could still move the tip."""
    jacobian = np.asarray(jacobian, dtype=np.float64)
    displacement = np.asarray(displacement, dtype=np.float64)
    if command is None or low is None or high is None:
        return _damped_least_squares(jacobian, displacement)
    command = np.asarray(command, dtype=np.float64)
    low_b, high_b = np.broadcast_to(low, command.shape), np.broadcast_to(high, command.shape)
    free = np.ones(command.shape, dtype=bool)
    change = np.zeros(command.shape)
    for _ in range(command.shape[1]):
        held = np.where(free, 0.0, change)
        solved = _damped_least_squares(jacobian * free[:, None, :],
                                       displacement - np.einsum("nmi,ni->nm", jacobian, held))
        change = np.where(free, solved, change)
        target = command + change
        out = free & ((target > high_b) | (target < low_b))
        if not out.any():
            break
        change = np.where(out, np.clip(target, low_b, high_b) - command, change)
        free &= ~out
    return change


def _damped_least_squares(jacobian: np.ndarray, displacement: np.ndarray) -> np.ndarray:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹ Δx`` per row (``λ =`` :data:`TASK_DAMPING`)."""
    gram = jacobian @ np.swapaxes(jacobian, 1, 2) + TASK_DAMPING ** 2 * np.eye(jacobian.shape[1])
    return np.einsum("nmi,nm->ni", jacobian, np.linalg.solve(gram, displacement[..., None])[..., 0])


def next_commands(action: np.ndarray, previous: np.ndarray, command_box: gym.spaces.Box, action_mode: str,
                  delta_scale: float, task_step: float, jacobian: Any = None,
                  feedback: np.ndarray | None = None, authority: np.ndarray | None = None) -> np.ndarray:
    """The commands ``(N, n)`` a delta or task action batch (clipped into its box) leads to from
    ``previous`` ``(N, n)``, clipped into ``command_box``; ``jacobian``: the env's ``command_jacobian``
    (task mode); ``feedback`` ``(N, m)``: the proportional law's task action the action is a residual
    on (:func:`residual_terms`; the sum clipped into ``[−1, 1]``); ``authority`` ``(N, 1)``: the share
    of the action that acts beside the law (:func:`residual_terms`; ``None``: all of it)."""
    if action_mode == "task":
        if authority is not None:
            action = authority * action
        if feedback is not None:
            action = np.clip(action + feedback, -1.0, 1.0)
        change = task_command_change(jacobian(previous), task_step * action, previous,
                                     command_box.low.astype(np.float64), command_box.high.astype(np.float64))
    else:
        change = delta_scale * action
    return np.clip(previous + change, command_box.low, command_box.high)  # (float64, as the env computes it)


def extended_space(space: Any, action_space: Any, delta: bool, history: int) -> Any:
    """A single env's observation space with the command (``delta``) and ``history`` entries."""
    if not delta and not history:
        return space
    part: Any = space["observation"] if isinstance(space, gym.spaces.Dict) else space
    n_act = int(np.prod(action_space.shape))
    lows = [part.low.ravel()] + [-np.ones(n_act)] * delta + [part.low.ravel(), -np.ones(n_act)] * history
    highs = [part.high.ravel()] + [np.ones(n_act)] * delta + [part.high.ravel(), np.ones(n_act)] * history
    box = gym.spaces.Box(np.concatenate(lows).astype(np.float32), np.concatenate(highs).astype(np.float32),
                         dtype=np.float32)
    return gym.spaces.Dict({**space.spaces, "observation": box}) if isinstance(space, gym.spaces.Dict) else box


class History:
    """The last ``history + 1`` observations and commands of ``N`` envs, newest first (float32)."""

    def __init__(self, n: int, obs_size: int, n_act: int, history: int) -> None:
        self.obs = np.zeros((n, history + 1, obs_size), dtype=np.float32)
        self.commands = np.zeros((n, history + 1, n_act), dtype=np.float32)

    def start(self, rows, obs: np.ndarray, commands: np.ndarray) -> None:
        """``rows`` start over: every entry is ``obs``, ``commands`` (``(len(rows), …)``)."""
        self.obs[rows] = np.asarray(obs, dtype=np.float32)[:, None]
        self.commands[rows] = np.asarray(commands, dtype=np.float32)[:, None]

    def push(self, obs: np.ndarray, commands: np.ndarray) -> None:
        """Every env's new observation and command."""
        self.obs = np.concatenate((np.asarray(obs, dtype=np.float32)[:, None], self.obs[:, :-1]), axis=1)
        self.commands = np.concatenate((np.asarray(commands, dtype=np.float32)[:, None], self.commands[:, :-1]),
                                       axis=1)

    def extended(self, rows, delta: bool) -> np.ndarray:
        """The extended observation parts of ``rows``: the newest observation, the command (``delta``),
        then each earlier observation and its command."""
        obs, commands = self.obs[rows], self.commands[rows]
        pieces = [obs[:, 0]] + [commands[:, 0]] * delta
        for k in range(1, obs.shape[1]):
            pieces += [obs[:, k], commands[:, k]]
        return np.concatenate(pieces, axis=1)


def _part(obs) -> np.ndarray:
    """The flat observation part of a batch: the array or the ``observation`` entry, ``(N, size)``."""
    part = obs["observation"] if isinstance(obs, dict) else obs
    part = np.asarray(part, dtype=np.float32)
    return part.reshape(part.shape[0], -1)


def _with_part(obs, part: np.ndarray):
    return {**obs, "observation": part} if isinstance(obs, dict) else part


def _delta_action(action: Any, previous: np.ndarray, box: gym.spaces.Box, command_box: gym.spaces.Box,
                  loop: Any, jacobian: Any = None) -> tuple[np.ndarray, Any]:
    """``(a_abs, clipped)``: the absolute action of a delta or task action batch ``(N, k)`` and which
    rows were clipped into ``box`` (a ``ValueError`` for a wrong shape, NaN or a non-real dtype); ``loop``:
    the wrapper, whose ``action_mode``, ``delta_scale`` and ``task_step`` apply."""
    arr = as_real_array(action, "action")
    if arr.shape != (previous.shape[0], *box.shape):
        raise InvalidParameterError(f"action must have shape {box.shape} per env; got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"action has NaN/inf: {arr}")
    clipped = np.clip(arr, box.low, box.high)
    feedback, authority = residual_terms(loop.env.unwrapped, loop.task_feedback, loop.task_step,
                                         loop.task_residual_radius, loop.task_residual_deadband)
    absolute = next_commands(clipped, previous, command_box, loop.action_mode, loop.delta_scale, loop.task_step,
                             jacobian, feedback, authority)
    return absolute, (clipped != arr).reshape(arr.shape[0], -1).any(axis=1)


class ClosedLoop(gym.Wrapper):
    """A single env with delta or task-space actions and/or observation history (module docstring).

    Args:
        env: a soft_envs env (its unwrapped env has ``previous_action``), with a ``Box`` action space
            (and ``command_jacobian`` for ``action_mode="task"``).
        action_mode: ``"absolute"``, ``"delta"`` or ``"task"``.
        delta_scale: a delta action of 1 moves the normalised command by this much.
        history: previous observations and commands appended (0 to 64).
        task_step: a task action of 1 moves the tip by this much [m] (default :data:`TASK_STEP`).
        task_feedback: the gain ``k`` of a proportional law the task action is a residual on: the
            tip moves by ``task_step · clip(a + k (goal − measured tip) / task_step, −1, 1)``
            (``action_mode="task"``, envs with ``task_error``; 0: none).
        task_residual_radius: within this distance [m] of the goal the action acts in proportion to the
            measured error, ``min(1, |e| / r)`` of it (with ``task_feedback``; 0: all of it).
        task_residual_deadband: within this distance [m] of the goal the action does not act (the law
            alone), beyond it ``clip((|e| − d) / r, 0, 1)`` of it (with ``task_feedback``; default 0).
    """

    def __init__(self, env: gym.Env, *, action_mode: str = "delta", delta_scale: float = 0.1, history: int = 0,
                 task_step: float = TASK_STEP, task_feedback: float = 0.0, task_residual_radius: float = 0.0,
                 task_residual_deadband: float = 0.0):
        super().__init__(env)
        self.action_mode, self.delta_scale, self.history, self.task_step = check_options(
            action_mode, delta_scale, history, task_step)
        self.task_feedback = check_feedback(self.action_mode, task_feedback)
        self.task_residual_radius = check_residual_radius(self.task_feedback, task_residual_radius)
        self.task_residual_deadband = check_residual_deadband(self.task_feedback, task_residual_deadband)
        self.delta = self.action_mode != "absolute"  # the command is carried over and observed
        if not isinstance(env.action_space, gym.spaces.Box):
            raise InvalidParameterError("ClosedLoop needs a Box action space")
        self._command_box: gym.spaces.Box = env.action_space
        if self.action_mode == "task":
            check_task_env(env.unwrapped, self.task_feedback)
            self.action_space = task_space(env.unwrapped)
        self.observation_space = extended_space(env.observation_space, env.action_space, self.delta, self.history)
        self._memory: History | None = None

    def _command(self) -> np.ndarray:
        previous: Any = getattr(self.env.unwrapped, "previous_action")  # noqa: B009  (a SoftEnv's)
        return np.asarray(previous, dtype=np.float64)[None]

    def _extend(self, obs, reset: bool):
        part, command = _part(_batch(obs)), self._command()
        if self._memory is None:
            self._memory = History(1, part.shape[1], command.shape[1], self.history)
        if reset:
            self._memory.start(slice(None), part, command)
        else:
            self._memory.push(part, command)
        return _unbatch(_with_part(_batch(obs), self._memory.extended(slice(None), self.delta)))

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return self._extend(obs, reset=True), info

    def step(self, action):
        clipped = False
        if self.delta:
            absolute, rows = _delta_action(np.asarray(action)[None] if np.ndim(action) else action, self._command(),
                                           self.action_space, self._command_box, self,
                                           getattr(self.env.unwrapped, "command_jacobian", None))
            action, clipped = absolute[0], bool(rows[0])
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.delta:
            info = {**info, "action_clipped": clipped or bool(info.get("action_clipped", False))}
        return self._extend(obs, reset=False), reward, terminated, truncated, info


def _batch(obs):
    return {k: np.asarray(v)[None] for k, v in obs.items()} if isinstance(obs, dict) else np.asarray(obs)[None]


def _unbatch(obs):
    return {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]


class ClosedLoopVector(VectorWrapper):
    """A vector env with delta actions and/or observation history, per sub-env (module docstring).

    Args:
        env: a vector env of soft_envs envs whose unwrapped env has ``previous_action`` ``(N, n)``
            (the native vector envs; ``command_jacobian`` too for ``action_mode="task"``) — or, for
            Gymnasium's ``SyncVectorEnv``/``AsyncVectorEnv``, of single envs each wrapped in
            :class:`ClosedLoop` instead.
        action_mode, delta_scale, history, task_step, task_feedback: as :class:`ClosedLoop`.
        task_residual_radius, task_residual_deadband: as :class:`ClosedLoop`.
    """

    def __init__(self, env: gym.vector.VectorEnv, *, action_mode: str = "delta", delta_scale: float = 0.1,
                 history: int = 0, task_step: float = TASK_STEP, task_feedback: float = 0.0,
                 task_residual_radius: float = 0.0, task_residual_deadband: float = 0.0):
        super().__init__(env)
        self.action_mode, self.delta_scale, self.history, self.task_step = check_options(
            action_mode, delta_scale, history, task_step)
        self.task_feedback = check_feedback(self.action_mode, task_feedback)
        self.task_residual_radius = check_residual_radius(self.task_feedback, task_residual_radius)
        self.task_residual_deadband = check_residual_deadband(self.task_feedback, task_residual_deadband)
        self.delta = self.action_mode != "absolute"  # the command is carried over and observed
        if not hasattr(env.unwrapped, "previous_action"):
            raise InvalidParameterError("ClosedLoopVector needs a vector env with previous_action (a native "
                                        "soft_envs vector env); wrap each single env in ClosedLoop instead")
        self._command_box: gym.spaces.Box = env.single_action_space  # type: ignore[assignment]
        if self.action_mode == "task":
            check_task_env(env.unwrapped, self.task_feedback)
            self.single_action_space = task_space(env.unwrapped)
            self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.single_observation_space = extended_space(env.single_observation_space, env.single_action_space,
                                                       self.delta, self.history)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.autoreset_mode = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        self._memory: History | None = None
        self._resets_next = np.zeros(self.num_envs, dtype=bool)

    def _commands(self) -> np.ndarray:
        previous: Any = getattr(self.env.unwrapped, "previous_action")  # noqa: B009  (a native vector env's)
        return np.asarray(previous, dtype=np.float64)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        rows = np.arange(self.num_envs) if mask is None else np.flatnonzero(mask)
        part, commands = _part(obs), self._commands()
        if self._memory is None:
            self._memory = History(self.num_envs, part.shape[1], commands.shape[1], self.history)
        self._memory.start(rows, part[rows], commands[rows])
        self._resets_next[rows] = False
        return _with_part(obs, self._memory.extended(slice(None), self.delta)), info

    def _final_observations(self, final_obs: np.ndarray, rows: np.ndarray, actions) -> np.ndarray:
        """``info["final_obs"]`` with each ending episode's history: its last observation and command
        (the clipped action of this step) pushed onto what the sub-env held."""
        box: Any = self._command_box
        assert self._memory is not None
        out = final_obs.copy()
        for i in rows.tolist():
            ending = _batch(final_obs[i])
            memory = History(1, 0, 0, self.history)
            memory.obs, memory.commands = self._memory.obs[i:i + 1], self._memory.commands[i:i + 1]
            command = np.clip(np.asarray(actions, dtype=np.float64)[i:i + 1], box.low, box.high)
            memory.push(_part(ending), command)
            out[i] = _unbatch(_with_part(ending, memory.extended(slice(None), self.delta)))
        return out

    def step(self, actions):
        if self._memory is None:
            raise gym.error.ResetNeeded("ClosedLoopVector.step() called before reset()")
        if self.delta:
            actions, clipped = _delta_action(actions, self._commands(), self.single_action_space, self._command_box,
                                             self, getattr(self.env.unwrapped, "command_jacobian", None))
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self.delta:
            info = dict(info)
            info["action_clipped"] = clipped | np.asarray(info.get("action_clipped", False), dtype=bool)
        part, commands = _part(obs), self._commands()
        done = np.asarray(terminated) | np.asarray(truncated)
        if self.autoreset_mode is AutoresetMode.SAME_STEP and done.any():
            info = {**info, "final_obs": self._final_observations(info["final_obs"], np.flatnonzero(done), actions)}
        self._memory.push(part, commands)
        started = np.flatnonzero(self._resets_next | (done if self.autoreset_mode is AutoresetMode.SAME_STEP
                                                      else np.zeros_like(done)))
        if started.size:
            self._memory.start(started, part[started], commands[started])
        self._resets_next = done if self.autoreset_mode is AutoresetMode.NEXT_STEP else np.zeros_like(done)
        return _with_part(obs, self._memory.extended(slice(None), self.delta)), reward, terminated, truncated, info


def native_with_closed_loop(make_native, kwargs: dict[str, Any]) -> gym.vector.VectorEnv:
    """``make_native(**kwargs)`` without the closed-loop keywords (:data:`LOOP_KEYWORDS`), wrapped in
    :class:`ClosedLoopVector` with them when they ask for anything: what a soft arm's ``vector_entry_point``
    returns."""
    options = {name: kwargs.pop(name) for name in LOOP_KEYWORDS if name in kwargs}
    options.setdefault("action_mode", "absolute")
    check_options(options["action_mode"], options.get("delta_scale", 0.1), options.get("history", 0),
                  options.get("task_step", TASK_STEP))
    feedback = check_feedback(options["action_mode"], options.get("task_feedback", 0.0))
    check_residual_radius(feedback, options.get("task_residual_radius", 0.0))
    check_residual_deadband(feedback, options.get("task_residual_deadband", 0.0))
    envs = make_native(**kwargs)
    if options["action_mode"] == "absolute" and not options.get("history", 0):
        return envs
    return ClosedLoopVector(envs, **options)
