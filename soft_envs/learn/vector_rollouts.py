"""What the parallel learners (:mod:`soft_envs.learn.parallel`, :mod:`soft_envs.learn.offpolicy`)
share: the native vector env of a recipe and the statistics its observations are standardised by."""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn import recipes


def has_native_vector_env(env_id: str) -> bool:
    """Whether ``env_id`` has a native vector env (``gym.make_vec`` with ``vector_entry_point``)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    return gym.spec(env_id).vector_entry_point is not None


def make_vector_env(recipe: recipes.Recipe, env_kwargs: dict[str, Any], num_threads: int | None = None):
    """The native vector env of ``recipe`` (``recipe.n_envs`` sub-envs, same-step autoreset)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    if not has_native_vector_env(recipe.env_id):
        raise InvalidParameterError(f"{recipe.env_id} has no native vector env: the parallel learner needs one")
    return gym.make_vec(recipe.env_id, num_envs=recipe.n_envs, vectorization_mode="vector_entry_point",
                        autoreset_mode="SameStep", num_threads=num_threads, **env_kwargs)


def rollout_statistics(venv, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of ``venv``'s observations under uniformly random actions
    (at least ``samples`` rows; a constant entry gets std 1)."""
    rng = np.random.default_rng(seed)
    obs, _ = venv.reset(seed=seed)
    rows = [np.asarray(obs, dtype=np.float64)]
    low, high = venv.single_action_space.low, venv.single_action_space.high
    while sum(len(r) for r in rows) < samples:
        action = rng.uniform(low, high, (venv.num_envs, low.shape[0])).astype(np.float32)
        obs, *_ = venv.step(action)
        rows.append(np.asarray(obs, dtype=np.float64))
    data = np.concatenate(rows)
    std = data.std(axis=0)
    return data.mean(axis=0), np.where(std > 1e-9, std, 1.0)
