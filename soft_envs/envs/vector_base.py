"""The base of the native vector environments: ``N`` sub-envs of one env advanced by batched calls.

:class:`SoftVectorEnv` is a Gymnasium 1.x :class:`~gymnasium.vector.VectorEnv` built around one
instance of the single env, its *prototype*, constructed with the user's keywords: it validates
them exactly as ``gym.make`` does (an unknown keyword raises the same error), owns the spaces,
the model, the realism table, the reward weights and the renderer, and its methods hold the code
the two forms share — the reset draws (:meth:`~soft_envs.envs.base.SoftEnv.draw_realism`,
``draw_task``), the action mapping, the observation, the reward terms and ``compute_reward``, all
vectorised over a leading axis. The vector env owns what a single env does once per instance,
as ``(N, …)`` arrays: the state of every sub-env, its own seeded generator, the step counter
(the time limit, from the ``max_episode_steps`` that ``gym.make_vec`` passes), the previous
action (the ``action_rate`` term). Subclasses fill the hooks (IsaacLab's names where they fit):

* ``_reset_arms(rows, tasks, options)`` — put the sub-envs ``rows`` (an index array) in their
  initial state from their draws (``tasks``: the prototype's ``draw_task`` results; the
  perturbations are already in :attr:`perturbations`, the generators in :attr:`realism_rngs`);
* ``_apply_actions(actions)`` and ``_simulate()`` — every sub-env steps (clipped ``(N, n)``
  actions; the soft arms' periods run compiled, block of arms by block in the core's threads:
  :mod:`soft_envs.sim.arm_period`, :mod:`soft_envs.sim.pcc_period`);
* ``_observe(rows)`` — the observations of ``rows`` (measuring: sensors advance);
* ``_reward_terms(actions)`` — the task's ``{name: (N,)}`` (the base appends ``action_rate``);
* ``_terminated()`` — ``(N,)`` bool; ``_extra_info(rows)`` — ``{name: (len(rows), …)}``;
* ``_commands(rows)`` — the commands held, in model units; ``_sync_render()`` — put sub-env 0's
  state into the prototype before it renders.

Behaviour (Gymnasium's vector API, ``tests/envs/test_vector_envs.py``):

* Sub-env ``i`` reset with ``seed=s`` runs the episode a single env reset with ``seed=s+i`` runs
  under the same actions (observations, rewards, terminations, ``info["realism"]``), through
  autoresets: each sub-env has its own generator, seeded as ``Env.reset`` seeds ``np_random``.
* ``metadata["autoreset_mode"]``: ``NEXT_STEP`` (default, as Gymnasium's own vector envs: the
  step after a sub-env's episode ended resets it, ignores its action and returns reward 0) or
  ``SAME_STEP`` (``autoreset_mode=`` keyword: the ending step resets it, with
  ``info["final_obs"]``/``info["final_info"]``) or ``DISABLED``. ``reset(options={"reset_mask":
  mask})`` resets the sub-envs of a bool mask only; ``"keep_robot": True`` keeps the sub-envs'
  perturbations (as the single env's option: a new task, the same robot).
* ``info`` is a dict of ``(N, …)`` arrays, each with its ``"_<key>"`` bool mask (Gymnasium's
  layout): the reward terms ``reward_<name>``, ``action_clipped`` and the env's own keys; the
  sub-envs reset in a step carry the reset's keys (``info["realism"]``, the draws) instead.
* A wrongly shaped or non-finite action batch raises :class:`~soft_envs.exceptions.InvalidActionError`
  (a ``ValueError``) naming the first bad sub-env; out-of-box actions are clipped.
* ``render()`` returns sub-env 0's picture (``rgb_array``, headless) — one frame, not ``N``.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from soft_envs.envs.base import SoftEnv
from soft_envs.envs.env_goals import checked_reset_options
from soft_envs.exceptions import (
    ClosedEnvironmentError,
    InvalidActionError,
    InvalidParameterError,
    as_real_array,
    check_integer,
)

#: The most sub-envs a native vector env takes.
MAX_NUM_ENVS = 1 << 20
#: The most sub-envs of a ``SyncVectorEnv`` of PyBullet envs (a client each; PyBullet connects at
#: most 1024 clients in one process).
MAX_PYBULLET_ENVS = 1000
#: The longest episode limit [steps] a vector env takes (``max_episode_steps``).
MAX_EPISODE_LIMIT = 10**9


def check_num_envs(num_envs: Any, pybullet: bool = False) -> int:
    """``num_envs`` checked before any env is built: 1 to :data:`MAX_NUM_ENVS` (``pybullet``: sub-envs
    that are PyBullet envs of their own, 1 to :data:`MAX_PYBULLET_ENVS`)."""
    return check_integer("num_envs", num_envs, minimum=1, maximum=MAX_PYBULLET_ENVS if pybullet else MAX_NUM_ENVS)


SingleEnv = TypeVar("SingleEnv", bound=SoftEnv)


def _take(obs, rows):
    """Rows of an observation batch (an array or a dict of arrays)."""
    return {k: v[rows] for k, v in obs.items()} if isinstance(obs, dict) else obs[rows]


def _with_rows(obs, rows, values):
    """A copy of the observation batch ``obs`` with ``rows`` replaced by ``values`` (never mutates
    an array already handed out)."""
    if isinstance(obs, dict):
        return {k: _with_rows(v, rows, values[k]) for k, v in obs.items()}
    out = obs.copy()
    out[rows] = values
    return out


def _put_rows(info: dict, rows: np.ndarray, values: dict, n: int) -> None:
    """Write ``values`` (``{key: (len(rows), …)}``, nested dicts allowed, ``"_key"``: which of the
    rows have the key, default all) into the vector info ``info`` at ``rows``, creating zero arrays
    and setting the ``_key`` masks."""
    for key, value in values.items():
        if key.startswith("_") and key[1:] in values:
            continue
        has = values.get(f"_{key}", True)
        if isinstance(value, dict):
            _put_rows(info.setdefault(key, {}), rows, value, n)
        else:
            value = np.asarray(value)
            if key not in info:
                info[key] = np.full(n, None, dtype=object) if value.dtype == object else \
                    np.zeros((n, *value.shape[1:]), dtype=value.dtype)
            info[key][rows] = value
        info.setdefault(f"_{key}", np.zeros(n, dtype=bool))[rows] = has


def _clear_rows(info: dict, rows: np.ndarray, keep) -> None:
    """Mask out ``rows`` of every key of ``info`` not in ``keep`` (values zeroed, as Gymnasium's
    vector envs leave the rows of a sub-env whose info lacks a key)."""
    for key in [k for k in info if not k.startswith("_") and k not in keep]:
        value = info[key]
        if isinstance(value, dict):
            _clear_rows(value, rows, ())
        else:
            value[rows] = None if value.dtype == object else 0
        info[f"_{key}"][rows] = False


class SoftVectorEnv(VectorEnv, Generic[SingleEnv]):
    """``num_envs`` sub-envs of the single env ``single`` (the prototype; see the module docstring).

    Args:
        single: the single env built with the user's keywords (owned: closed with this env).
        num_envs: number of sub-envs, 1 to :data:`MAX_NUM_ENVS` (2**20).
        max_episode_steps: episode length limit [steps] (``truncated``), 1 to
            :data:`MAX_EPISODE_LIMIT`; ``None``: no limit.
        autoreset_mode: an :class:`~gymnasium.vector.AutoresetMode` or its value.
    """

    metadata: dict[str, Any] = {"render_modes": ["human", "rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, single: SingleEnv, num_envs: int, *, max_episode_steps: int | None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP) -> None:
        self.single: SingleEnv = single
        try:
            self.num_envs = check_num_envs(num_envs)
            self.max_episode_steps = None if max_episode_steps is None else \
                check_integer("max_episode_steps", max_episode_steps, minimum=1, maximum=MAX_EPISODE_LIMIT)
            try:
                mode = AutoresetMode(autoreset_mode)
            except ValueError:
                raise InvalidParameterError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}; "
                                            f"got {autoreset_mode!r}") from None
        except BaseException:
            single.close()
            raise
        self.autoreset_mode = mode
        self.metadata = dict(type(self).metadata, autoreset_mode=mode, render_fps=single.metadata["render_fps"])
        self.render_mode = single.render_mode
        if not isinstance(single.action_space, spaces.Box):
            single.close()
            raise InvalidParameterError("SoftVectorEnv needs a Box action space")
        if getattr(single, "action_mode", "absolute") != "absolute" or getattr(single, "history", 0):
            single.close()
            raise InvalidParameterError("a native vector env takes action_mode='delta' and history through "
                                        "soft_envs.envs.closed_loop.ClosedLoopVector (gym.make_vec adds it)")
        self._action_box: spaces.Box = single.action_space
        self.single_observation_space = single.observation_space
        self.single_action_space = single.action_space
        self.observation_space = batch_space(single.observation_space, self.num_envs)
        self.action_space = batch_space(single.action_space, self.num_envs)
        self.goal_conditioned = bool(getattr(single, "goal_conditioned", False))
        n = self.num_envs
        #: Steps since each sub-env's reset (the time limit's counter).
        self.steps = np.zeros(n, dtype=np.int64)
        #: Each sub-env's generator (its ``np_random``), and the one of its per-step noise.
        self.sub_np_random: list[np.random.Generator | None] = [None] * n
        self.realism_rngs: list[np.random.Generator | None] = [None] * n
        ideal = single.realism.ideal_values(single.realism_sizes())
        #: This episode's perturbations of every sub-env, ``{name: (N, …)}``.
        self.perturbations = {k: np.repeat(np.asarray(v, dtype=float)[None], n, axis=0) for k, v in ideal.items()}
        self._previous_action: np.ndarray | None = None
        self._reset_refused = False  # a reset that raised leaves the env needing one (as the single env)
        self._needs_reset = np.zeros(n, dtype=bool)  # NEXT_STEP: reset at the next step
        self._obs = None

    # ------------------------------------------------------------------ hooks
    def _reset_arms(self, rows: np.ndarray, tasks: list, options: dict[str, Any]) -> None:
        raise NotImplementedError

    def _apply_actions(self, actions: np.ndarray) -> None:
        raise NotImplementedError

    def _simulate(self) -> None:
        raise NotImplementedError

    def _observe(self, rows):
        raise NotImplementedError

    def _reward_terms(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _terminated(self) -> np.ndarray:
        return np.zeros(self.num_envs, dtype=bool)

    def _extra_info(self, rows) -> dict[str, Any]:
        return {}

    def _commands(self, rows) -> np.ndarray:
        raise NotImplementedError

    def _sync_render(self) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ API
    @property
    def dt(self) -> float:
        """Control period [s]."""
        return self.single.dt

    @property
    def model(self):
        """The nominal model every sub-env's controller plans with (the prototype's)."""
        return self.single.model

    @property
    def previous_action(self) -> np.ndarray | None:
        """Every sub-env's last clipped action ``(N, n)`` (float64); ``None`` before the first reset."""
        return None if self._previous_action is None else self._previous_action.copy()

    @property
    def compute_reward(self):
        """The prototype's vectorised ``compute_reward(achieved_goal, desired_goal, info)``
        (``goal_conditioned=True`` only; ``info`` a dict of arrays, a list of dicts or ``None``)."""
        if not self.goal_conditioned:
            raise AttributeError("compute_reward exists only with goal_conditioned=True")
        return self.single.compute_reward

    def _check_open(self, method: str) -> None:
        if self.closed:
            raise ClosedEnvironmentError(f"{type(self).__name__}.{method}() called after close()")

    def _seeds(self, seed) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise InvalidParameterError(f"seed must be None, an int or a list of num_envs={self.num_envs} "
                                        f"seeds; got {len(seeds)} seeds")
        return seeds

    def _reset_mask(self, mask) -> np.ndarray:
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
            raise InvalidParameterError(f"options['reset_mask'] must be a bool numpy array of shape "
                                        f"({self.num_envs},); got {mask!r}")
        if not mask.any():
            raise InvalidParameterError("options['reset_mask'] must select at least one sub-env")
        return np.flatnonzero(mask)

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every sub-env (or those of ``options["reset_mask"]``); ``seed``: an int ``s``
        (sub-env ``i`` gets ``s + i``), a list of per-sub-env seeds, or ``None``."""
        self._check_open("reset")
        self._reset_refused = True  # until this reset has succeeded
        options = self._check_reset_options(options)
        keep_robot = bool(options.pop("keep_robot", False))
        seeds = self._seeds(seed)
        partial = "reset_mask" in options
        rows = self._reset_mask(options.pop("reset_mask")) if partial else np.arange(self.num_envs)
        if partial and self._previous_action is None:
            raise ResetNeeded(f"{type(self).__name__}: reset every sub-env once before a reset_mask reset")
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            super().reset(seed=int(seed))
        for i in rows.tolist():
            if seeds[i] is not None or self.sub_np_random[i] is None:
                self.sub_np_random[i] = seeding.np_random(seeds[i])[0]
        if self._previous_action is None:
            self._previous_action = np.zeros((self.num_envs, *self._action_box.shape))
        obs, info = self._reset_rows(rows, options, keep_robot=keep_robot)
        self._obs = obs if not partial else _with_rows(self._obs, rows, obs)
        self._needs_reset[rows] = False
        self._reset_refused = False
        full: dict[str, Any] = {}
        _put_rows(full, rows, info, self.num_envs)
        return self._obs, full

    def _check_reset_options(self, options: Any) -> dict[str, Any]:
        """``reset``'s ``options`` as a new dict: ``reset_mask``, ``keep_robot`` (every sub-env of
        the reset keeps its robot, as the single env's option) and the single env's own options;
        any other name is a ``ValueError``."""
        return checked_reset_options(options, ("reset_mask", "keep_robot") + tuple(self.single.reset_option_names()),
                                     type(self).__name__, robot_drawn=self._previous_action is not None)

    def _reset_rows(self, rows: np.ndarray, options: dict[str, Any], keep_robot: bool = False):
        """Draw, reset and observe the sub-envs ``rows`` (``keep_robot``: their perturbations kept):
        their observations and info rows."""
        single, tasks = self.single, []
        realism = not single.realism.is_ideal()
        drawn = []
        rngs, realism_rngs = self.sub_np_random, self.realism_rngs
        for i in rows.tolist():
            if realism:  # (under "ideal" nothing is drawn: no generator, the ideal values stay)
                realism_rngs[i], perturbation = single.draw_realism(rngs[i])
                drawn.append(perturbation)
                if keep_robot:  # the task is for the robot the sub-env keeps
                    perturbation = {name: values[i] for name, values in self.perturbations.items()}
                tasks.append(single.draw_episode_task(rngs[i], perturbation))
            else:
                tasks.append(single.draw_task(rngs[i]))
        if realism and not keep_robot:
            for name, values in self.perturbations.items():
                values[rows] = [d[name] for d in drawn]
        self._reset_arms(rows, tasks, options)
        self.steps[rows] = 0
        previous = self._previous_action
        if previous is None:
            raise ResetNeeded(f"{type(self).__name__}: sub-envs are reset after the first reset")
        previous[rows] = single.model_to_action(self._commands(rows)).astype(np.float64)
        obs = self._observe(rows)
        info = self._extra_info(rows)
        info["realism"] = {name: values[rows].copy() for name, values in self.perturbations.items()}
        return obs, info

    def _validate(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """``(actions clipped into the box, which sub-envs were clipped)``; ``ValueError`` naming the
        first sub-env whose action has the wrong shape or is not finite."""
        shape = (self.num_envs, *self._action_box.shape)
        try:
            arr = np.asarray(actions)
        except (TypeError, ValueError):
            arr = None
        if arr is not None:
            arr = as_real_array(arr, "actions")
        if arr is None or arr.shape != shape:
            try:
                rows = actions if len(actions) == self.num_envs else ()
            except TypeError:  # a scalar
                rows = ()
            for i, row in enumerate(rows):
                if np.shape(row) != shape[1:]:
                    raise InvalidActionError(f"sub-env {i}: action must have shape {shape[1:]}; got {np.shape(row)}")
            raise InvalidActionError(f"actions must have shape {shape} (num_envs, action size); "
                                     f"got {np.shape(actions) if arr is None else arr.shape}")
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            bad = np.flatnonzero(~finite)
            more = f" (and {bad.size - 1} more sub-envs)" if bad.size > 1 else ""
            raise InvalidActionError(f"sub-env {bad[0]}: action has NaN/inf: {arr[bad[0]]}{more}")
        clipped = np.clip(arr, self._action_box.low, self._action_box.high)
        return clipped, (clipped != arr).any(axis=1)

    def step(self, actions):
        self._check_open("step")
        if self._previous_action is None or self._reset_refused:
            raise ResetNeeded(f"{type(self).__name__}.step() called before reset() (or after a reset that raised)")
        actions, clipped = self._validate(actions)
        n = self.num_envs
        resetting = np.flatnonzero(self._needs_reset)
        self._apply_actions(actions)
        self._simulate()
        obs = self._observe(slice(None))
        terms = self._reward_terms(actions)
        rate = actions - self._previous_action
        terms["action_rate"] = -self.single.action_rate_weight * np.einsum("ij,ij->i", rate, rate)
        reward = sum(terms.values())
        info: dict[str, Any] = {f"reward_{name}": value for name, value in terms.items()}
        info["action_clipped"] = clipped
        info.update(self._extra_info(slice(None)))
        for key in [k for k in info if not k.startswith("_")]:
            info.setdefault(f"_{key}", np.ones(n, dtype=bool))  # (a hook may give a key to some sub-envs only)
        terminated = np.array(self._terminated(), dtype=bool)
        self.steps += 1
        truncated = self.steps >= self.max_episode_steps if self.max_episode_steps is not None \
            else np.zeros(n, dtype=bool)
        self._previous_action = actions
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            resetting = np.flatnonzero(terminated | truncated)
            if resetting.size:
                final_obs = np.full(n, None, dtype=object)
                for i in resetting.tolist():
                    final_obs[i] = _take(obs, i)
                info["final_obs"], info["_final_obs"] = final_obs, np.zeros(n, dtype=bool)
                info["_final_obs"][resetting] = True
                final_info = {k: v.copy() for k, v in info.items() if not k.startswith("_") and k != "final_obs"}
                done = info["_final_obs"].copy()
                final_info.update({f"_{k}": done & info[f"_{k}"] for k in list(final_info)})
                info["final_info"], info["_final_info"] = final_info, done
        if resetting.size:
            reset_obs, reset_info = self._reset_rows(resetting, {})
            obs = _with_rows(obs, resetting, reset_obs)
            _clear_rows(info, resetting, keep=set(reset_info) | {"final_obs", "final_info"})
            _put_rows(info, resetting, reset_info, n)
            if self.autoreset_mode == AutoresetMode.NEXT_STEP:
                reward[resetting] = 0.0
                terminated[resetting] = False
                truncated[resetting] = False
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._needs_reset = terminated | truncated
        self._obs = obs
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ attributes (SyncVectorEnv's API)
    def _owner(self, name: str):
        if hasattr(self, name):
            return self
        if hasattr(self.single, name):
            return self.single
        raise AttributeError(f"{type(self).__name__} and its sub-envs have no attribute {name!r}")

    def get_attr(self, name: str) -> tuple:
        """The attribute ``name`` of every sub-env: the vector env's own, else the prototype's
        (the keywords and parameters every sub-env shares)."""
        value = getattr(self._owner(name), name)
        return tuple(value for _ in range(self.num_envs))

    def set_attr(self, name: str, values: Any) -> None:
        """Set a shared attribute: one value, or a list of ``num_envs`` equal values."""
        if isinstance(values, list | tuple):
            if len(values) != self.num_envs or any(v is not values[0] and v != values[0] for v in values):
                raise InvalidParameterError(f"{name!r} is shared by the sub-envs of {type(self).__name__}: "
                                            "give one value")
            values = values[0]
        setattr(self._owner(name), name, values)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple:
        """Call the shared (vectorised) method ``name`` once; its result for every sub-env."""
        result = getattr(self._owner(name), name)(*args, **kwargs)
        return tuple(result for _ in range(self.num_envs))

    def render(self):
        """Sub-env 0's picture (``rgb_array``: an ``(H, W, 3)`` uint8 array; ``human``: the prototype's
        window); ``None`` without a render mode."""
        self._check_open("render")
        if self.render_mode is not None and self._previous_action is not None:
            self._sync_render()
        return self.single.render()

    def close_extras(self, **kwargs: Any) -> None:
        self.single.close()


class ArmsVectorEnv(SoftVectorEnv[SingleEnv]):
    """A soft arm's native vector env: its hooks are the rows of :attr:`arms` (the env logic the single
    env runs with one row: :class:`~soft_envs.envs.peter_arms.PeterArms`,
    :class:`~soft_envs.envs.pcc_arms.PCCArms`). A subclass builds ``self.arms`` after ``__init__``."""

    arms: Any

    def _reset_arms(self, rows: np.ndarray, tasks: list, options: dict[str, Any]) -> None:
        drawn = {name: values[rows] for name, values in self.perturbations.items()}
        self.arms.reset(rows, tasks, drawn, [self.realism_rngs[i] for i in rows.tolist()])

    def _apply_actions(self, actions: np.ndarray) -> None:
        self.arms.command(self.single.action_to_model(actions))

    def _simulate(self) -> None:
        self.arms.simulate(self.single.frame_skip)

    def _observe(self, rows):
        return self.arms.observation(rows)

    def _reward_terms(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        return self.arms.reward_terms()

    def _terminated(self) -> np.ndarray:
        return self.arms.terminated()

    def _extra_info(self, rows) -> dict[str, Any]:
        return self.arms.info(rows)

    def _commands(self, rows) -> np.ndarray:
        return self.arms.commands(rows)

    def _sync_render(self) -> None:
        show: Any = getattr(self.single, "show")  # noqa: B009  (the soft arms' single envs have it)
        show(self.arms, 0)
