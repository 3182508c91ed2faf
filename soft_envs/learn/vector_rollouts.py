"""What the parallel learners (:mod:`soft_envs.learn.parallel`, :mod:`soft_envs.learn.offpolicy`)
share: the native vector env of a recipe, the statistics its observations are standardised by
(:func:`learner_env` does both, with torch's threads and seed), and the layers of a trained
network as numpy arrays (:func:`numpy_weights`)."""

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


def learner_env(recipe: recipes.Recipe, env_kwargs: dict[str, Any], seed: int, threads: int,
                env_threads: int | None) -> tuple[Any, np.ndarray, np.ndarray]:
    """Torch on ``threads`` threads and seeded with ``seed``, then the native vector env of
    ``recipe`` and the mean and standard deviation its observations are standardised by (of a
    random-action rollout with ``recipe.standardize``, else 0 and 1)."""
    import torch

    torch.set_num_threads(int(threads))
    torch.manual_seed(seed)
    venv = make_vector_env(recipe, env_kwargs, env_threads)
    n_obs = int(venv.single_observation_space.shape[0])
    if recipe.standardize:
        mean, std = rollout_statistics(venv, recipe.standardize_samples, seed + 1)
        return venv, mean, std
    return venv, np.zeros(n_obs), np.ones(n_obs)


def numpy_weights(layers: list[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(W, b), …]`` of torch ``Linear`` layers, ``W`` of shape ``(inputs, outputs)`` as
    :class:`~soft_envs.agents.learned.MLPPolicy` takes them."""
    return [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in layers]
