"""Stable-Baselines3 on a Gymnasium vector env: :class:`SB3VecEnv` (and :func:`sb3_vec_env`).

SB3 trains on its own ``VecEnv`` API, not on Gymnasium's ``VectorEnv``; this adapter lets it
consume any Gymnasium 1.x vector env — the native ones (``gym.make_vec("soft_envs/PeterReach-v0",
num_envs=1024, kinematic=True)``, all sub-envs in one numpy call) as well as ``SyncVectorEnv``/
``AsyncVectorEnv`` — with what SB3's ``DummyVecEnv`` + ``Monitor`` give a learner:

* observations as numpy arrays (a dict of arrays for ``Dict`` spaces, as HER needs), rewards
  float32, ``dones = terminated | truncated``;
* ``infos``: one dict per sub-env (Gymnasium's dict of arrays split by its ``_key`` masks) with
  ``"TimeLimit.truncated"`` (truncated and not terminated: SB3 bootstraps those), and at an
  episode's end ``"terminal_observation"`` (the last observation; the returned one is the next
  episode's first) and ``"episode"`` ``{"r": return, "l": length, "t": seconds}`` (SB3's logger
  and ``ep_info_buffer`` read it); the reset's info goes to ``reset_infos``;
* either autoreset mode of the vector env: ``SAME_STEP`` (the final observation comes from
  ``info["final_obs"]``) or ``NEXT_STEP``/``DISABLED`` (the adapter resets the finished sub-envs at
  once with ``reset(options={"reset_mask": dones})``, so SB3 sees its own same-step semantics);
* ``get_attr``/``set_attr``/``env_method``/``env_is_wrapped`` through the vector env's
  ``get_attr``/``set_attr``/``call``: per sub-env for ``SyncVectorEnv`` (only the sub-envs asked
  for) and ``AsyncVectorEnv``; a native vector env's attributes and methods are shared by its
  sub-envs (:class:`~soft_envs.envs.vector_base.SoftVectorEnv`), so ``env_method("compute_reward",
  …)`` (HER) calls the vectorised ``compute_reward`` once, and ``env_is_wrapped`` is ``False``;
* ``render_mode`` is known before ``VecEnv.__init__`` asks for it; ``render()`` is the vector
  env's (sub-env 0 for the native ones).

Seeds: ``venv.seed(s)`` then ``reset()`` resets sub-env ``i`` with ``s + i``, as SB3's own vec envs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from soft_envs import clock
from soft_envs.exceptions import InvalidParameterError, MissingDependencyError

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices
except ImportError as _exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("soft_envs.learn.sb3_vector needs Stable-Baselines3: pip install 'soft_envs[learn]'") \
        from _exc


def info_rows(info: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's vector ``info`` (a dict of ``(N, …)`` arrays with ``_key`` masks) as one dict per
    sub-env holding the keys its masks set (nested dicts too; rows of arrays are views)."""
    every_keys, every_columns, some = [], [], []
    for key, value in info.items():
        if key.startswith("_") and key[1:] in info:
            continue
        mask = info.get(f"_{key}")
        if isinstance(value, dict):
            value = info_rows(value, num_envs)
        elif isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype != object:
            value = value.tolist()  # Python scalars, as a single env's info has them
        if mask is None or mask.all():
            every_keys.append(key)
            every_columns.append(value)
        else:
            some.append((key, value, np.flatnonzero(mask).tolist()))
    if every_keys:  # one dict per sub-env built in C (this runs every step for thousands of sub-envs)
        rows = [dict(zip(every_keys, values, strict=True)) for values in zip(*every_columns, strict=True)]
    else:
        rows = [{} for _ in range(num_envs)]
    for key, value, ids in some:
        for i in ids:
            rows[i][key] = value[i]
    return rows


def _obs_row(obs, i: int):
    return {k: np.array(v[i]) for k, v in obs.items()} if isinstance(obs, dict) else np.array(obs[i])


class SB3VecEnv(VecEnv):
    """Stable-Baselines3 ``VecEnv`` over the Gymnasium vector env ``venv`` (module docstring)."""

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        if not isinstance(venv.unwrapped, gym.vector.VectorEnv):
            raise InvalidParameterError(f"SB3VecEnv wraps a gymnasium.vector.VectorEnv; got {type(venv).__name__}")
        self.venv = venv
        self.render_mode = venv.render_mode  # VecEnv.__init__ asks get_attr("render_mode")
        mode = venv.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode.value if isinstance(mode, AutoresetMode) else mode)
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(self.num_envs)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._start = clock.now()

    # ------------------------------------------------------------------ stepping
    def reset(self):
        options = self._options
        if any(o != options[0] for o in options):
            raise InvalidParameterError("a Gymnasium vector env takes one options dict for every sub-env")
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, info = self.venv.reset(seed=seeds, options=dict(options[0]) or None)
        self.reset_infos = info_rows(info, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        done = np.logical_or(terminated, truncated)
        final_obs, final_info = info.pop("final_obs", None), info.pop("final_info", None)
        info.pop("_final_obs", None)
        info.pop("_final_info", None)
        infos = info_rows(info, self.num_envs)
        ended = np.flatnonzero(done).tolist()
        if ended and self.autoreset_mode == AutoresetMode.SAME_STEP:
            finals = info_rows(final_info or {}, self.num_envs)
            for i in ended:
                self.reset_infos[i], infos[i] = infos[i], finals[i]
                infos[i]["terminal_observation"] = final_obs[i]
        elif ended:  # the step's observations are the final ones: reset those sub-envs now
            for i in ended:
                infos[i]["terminal_observation"] = _obs_row(obs, i)
            obs, reset_info = self.venv.reset(options={"reset_mask": done})
            reset_rows = info_rows(reset_info, self.num_envs)
            for i in ended:
                self.reset_infos[i] = reset_rows[i]
        self._returns += reward
        self._lengths += 1
        elapsed = round(clock.now() - self._start, 6)
        for row, flag in zip(infos, (truncated & ~terminated).tolist(), strict=True):
            row["TimeLimit.truncated"] = flag
        for i in ended:
            infos[i]["episode"] = {"r": round(float(self._returns[i]), 6), "l": int(self._lengths[i]), "t": elapsed}
        self._returns[done] = 0.0
        self._lengths[done] = 0
        return obs, np.asarray(reward, dtype=np.float32), done, infos

    def close(self) -> None:
        self.venv.close()

    # ------------------------------------------------------------------ sub-env access
    def get_images(self) -> Sequence[np.ndarray | None]:
        frames: Any = self.venv.render()
        return list(frames) if isinstance(frames, (tuple, list)) else [frames]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        ids = self._get_indices(indices)
        if attr_name == "render_mode":
            return [self.venv.render_mode for _ in ids]
        unwrapped: Any = self.venv.unwrapped
        if not hasattr(unwrapped, "get_attr"):  # a vector env without SyncVectorEnv's attribute API
            return [getattr(unwrapped, attr_name) for _ in ids]
        values = unwrapped.get_attr(attr_name)
        return [values[i] for i in ids]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        unwrapped: Any = self.venv.unwrapped
        if not hasattr(unwrapped, "set_attr"):
            setattr(unwrapped, attr_name, value)
            return
        values = list(unwrapped.get_attr(attr_name))
        for i in self._get_indices(indices):
            values[i] = value
        unwrapped.set_attr(attr_name, values)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list:
        ids = list(self._get_indices(indices))
        unwrapped: Any = self.venv.unwrapped
        envs = getattr(unwrapped, "envs", None)
        if envs is not None:  # SyncVectorEnv: only the sub-envs asked for
            return [envs[i].get_wrapper_attr(method_name)(*method_args, **method_kwargs) for i in ids]
        if not hasattr(unwrapped, "call"):
            result = getattr(unwrapped, method_name)(*method_args, **method_kwargs)
            return [result for _ in ids]
        results = unwrapped.call(method_name, *method_args, **method_kwargs)
        return [results[i] for i in ids]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        ids = list(self._get_indices(indices))
        envs = getattr(self.venv.unwrapped, "envs", None)
        if envs is None:
            return [False for _ in ids]
        from stable_baselines3.common.env_util import is_wrapped

        return [is_wrapped(envs[i], wrapper_class) for i in ids]


def sb3_vec_env(env_id: str, num_envs: int, *, seed: int | None = None, **kwargs: Any) -> SB3VecEnv:
    """``SB3VecEnv(gym.make_vec(env_id, num_envs=num_envs, **kwargs))``, seeded for its first reset
    (sub-env ``i`` with ``seed + i``) when ``seed`` is given."""
    venv = SB3VecEnv(gym.make_vec(env_id, num_envs=num_envs, **kwargs))
    if seed is not None:
        venv.seed(seed)
    return venv
