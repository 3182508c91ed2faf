"""What the parallel learners (:mod:`soft_envs.learn.parallel`, :mod:`soft_envs.learn.offpolicy`)
share: the native vector env of a recipe, the statistics its observations are standardised by
(:func:`learner_env` does both, with torch's threads and seed), a privileged observation for a
critic (:func:`privileged_source`, standardised by :func:`rollout_statistics` too), the device the learner's
networks and batches live on (:func:`learner_device`), and the layers of a trained
network as numpy arrays (:func:`numpy_weights`, :func:`activation_name`; :func:`torch_activations`)."""

from __future__ import annotations

import re
from collections.abc import Callable
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


def rollout_statistics(venv, samples: int, seed: int,
                       read: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of ``read(obs)`` (default: ``venv``'s observations themselves)
    after the reset and every step of uniformly random actions (at least ``samples`` rows; a
    constant entry gets std 1)."""
    read = read or (lambda obs: obs)
    rng = np.random.default_rng(seed)
    obs, _ = venv.reset(seed=seed)
    rows = [np.asarray(read(obs), dtype=np.float64)]
    low, high = venv.single_action_space.low, venv.single_action_space.high
    while sum(len(r) for r in rows) < samples:
        action = rng.uniform(low, high, (venv.num_envs, low.shape[0])).astype(np.float32)
        obs, *_ = venv.step(action)
        rows.append(np.asarray(read(obs), dtype=np.float64))
    data = np.concatenate(rows)
    std = data.std(axis=0)
    return data.mean(axis=0), np.where(std > 1e-9, std, 1.0)


def learner_device(device: str) -> str:
    """``device`` checked for the learners' networks and batches: ``"cpu"``, or ``"cuda"`` /
    ``"cuda:N"`` where torch sees that GPU (:class:`InvalidParameterError` otherwise)."""
    import torch

    if device == "cpu":
        return device
    if not isinstance(device, str) or not re.fullmatch(r"cuda(:\d+)?", device):
        raise InvalidParameterError(f"device must be 'cpu', 'cuda' or 'cuda:N'; got {device!r}")
    index = int(device.partition(":")[2] or 0)
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise InvalidParameterError(f"device {device!r}: torch sees no such CUDA GPU (a CPU build of torch, no "
                                    f"driver, or {torch.cuda.device_count()} GPUs)")
    return device


def privileged_source(venv) -> Callable[[], np.ndarray]:
    """``venv``'s privileged observation (``privileged_observation()`` of its unwrapped env, ``(N, k)``),
    or :class:`InvalidParameterError`: a privileged critic needs one."""
    source = getattr(venv.unwrapped, "privileged_observation", None)
    if source is None:
        name = venv.spec.id if venv.spec else type(venv.unwrapped).__name__
        raise InvalidParameterError(f"{name}'s vector env has no privileged observation: train it without "
                                    "privileged_critic")
    return source


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


def torch_activations() -> dict[str, Any]:
    """The torch activation class of each of :data:`~soft_envs.agents.learned.policy.ACTIVATIONS`."""
    import torch

    return {"elu": torch.nn.ELU, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}


def activation_name(module_type: Any) -> str:
    """The :class:`~soft_envs.agents.learned.MLPPolicy` name of a torch activation class (``torch.nn.ELU``:
    ``"elu"``, ``ReLU``: ``"relu"``, ``Tanh``: ``"tanh"``); :class:`InvalidParameterError` for another."""
    names = {cls: name for name, cls in torch_activations().items()}
    if module_type not in names:
        raise InvalidParameterError(f"activation {getattr(module_type, '__name__', module_type)} is not one of "
                                    "ELU, ReLU, tanh (what a numpy policy runs)")
    return names[module_type]


def numpy_weights(layers: list[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(W, b), …]`` of torch ``Linear`` layers, ``W`` of shape ``(inputs, outputs)`` as
    :class:`~soft_envs.agents.learned.MLPPolicy` takes them."""
    return [(m.weight.detach().cpu().numpy().T.copy(), m.bias.detach().cpu().numpy().copy()) for m in layers]
