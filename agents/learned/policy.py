"""A learned policy as numpy arrays: input standardisation, an MLP, bounded actions.

``MLPPolicy`` computes ``a = clip(g(W_k · f(… f(W_1 · (o − μ) / σ + b_1) …) + b_k), −1, 1)`` on a
flat observation ``o`` (``f`` the hidden layers' activation, ELU, ReLU or tanh; ``g`` the output's, the
identity or tanh), the deterministic action of a Gaussian policy trained with PPO
(:mod:`soft_envs.learn.parallel`) or SAC (:mod:`soft_envs.learn.offpolicy`, a tanh output). It needs neither
PyTorch nor the learning library: a fresh install runs it. Its file is an ``.npz`` read with
``allow_pickle=False`` (the arrays and a JSON string of the model card), so loading one runs no
code. The model card (``card``) names what the policy was trained on and how well it did: env id
and keywords, recipe, seed, env steps, budget, held-out results, package version.

It answers Stable-Baselines3's ``predict(obs, deterministic=True) -> (action, None)`` too, so
``soft_envs.learn.train.evaluate_policy`` and ``soft-envs evaluate`` run it as they run an SB3
policy.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError, as_real_array

FORMAT_VERSION = 1
ACTIVATIONS = ("elu", "relu", "tanh")
OUTPUTS = ("linear", "tanh")


def checked_layers(weights: Any, dtype: Any, what: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Dense layers ``[(W, b), …]`` (``y = x W + b``, ``W`` of shape ``(inputs, outputs)``) as
    arrays of ``dtype``, ``b`` flat; :class:`InvalidParameterError` (naming the ``what``: network,
    policy) for no layer, a weight and bias that do not fit, layers that do not chain, NaN/inf."""
    if not weights:
        raise InvalidParameterError(f"a {what} needs at least one layer")
    layers = [(np.asarray(W, dtype=dtype), np.asarray(b, dtype=dtype).reshape(-1)) for W, b in weights]
    for k, (W, b) in enumerate(layers):
        if W.ndim != 2 or b.shape != (W.shape[1],):
            raise InvalidParameterError(f"layer {k}: weight {W.shape} and bias {b.shape} do not fit")
        if k and W.shape[0] != layers[k - 1][0].shape[1]:
            raise InvalidParameterError(f"layer {k} takes {W.shape[0]} inputs; layer {k - 1} gives "
                                        f"{layers[k - 1][0].shape[1]}")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
            raise InvalidParameterError(f"layer {k} has NaN/inf weights: not a usable {what}")
    return layers


def _activation(name: str, x: np.ndarray) -> np.ndarray:
    if name == "elu":
        return np.where(x > 0.0, x, np.expm1(np.minimum(x, 0.0)))
    if name == "relu":
        return np.maximum(x, 0.0)
    return np.tanh(x)


class MLPPolicy:
    """A deterministic MLP policy on numpy (see the module docstring).

    Args:
        weights: ``[(W, b), …]`` per layer, ``W`` of shape ``(inputs, outputs)``.
        obs_mean, obs_std: the standardisation of the flat observation (``obs_std > 0``).
        activation: of the hidden layers, one of :data:`ACTIVATIONS`.
        card: the model card (JSON-serialisable).
        output: the output layer's activation, one of :data:`OUTPUTS` (``"linear"``: none).
    """

    def __init__(self, weights: list[tuple[np.ndarray, np.ndarray]], obs_mean: np.ndarray, obs_std: np.ndarray,
                 activation: str = "elu", card: dict[str, Any] | None = None, output: str = "linear") -> None:
        if activation not in ACTIVATIONS:
            raise InvalidParameterError(f"activation must be one of {ACTIVATIONS}; got {activation!r}")
        if output not in OUTPUTS:
            raise InvalidParameterError(f"output must be one of {OUTPUTS}; got {output!r}")
        self.output = output
        self.weights = checked_layers(weights, np.float64, "policy")
        self.obs_mean = np.asarray(obs_mean, dtype=np.float64).reshape(-1)
        self.obs_std = np.asarray(obs_std, dtype=np.float64).reshape(-1)
        n_in = self.weights[0][0].shape[0]
        if self.obs_mean.shape != (n_in,) or self.obs_std.shape != (n_in,):
            raise InvalidParameterError(f"obs_mean and obs_std must have shape ({n_in},)")
        if not (np.all(np.isfinite(self.obs_mean)) and np.all(np.isfinite(self.obs_std)) and np.all(self.obs_std > 0)):
            raise InvalidParameterError("obs_mean must be finite and obs_std finite and > 0")
        self.activation = activation
        self.card: dict[str, Any] = dict(card or {})

    @property
    def n_inputs(self) -> int:
        return int(self.weights[0][0].shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.weights[-1][0].shape[1])

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The action(s) in ``[−1, 1]`` of an observation ``(n_inputs,)`` or a batch ``(B, n_inputs)``."""
        x = as_real_array(obs, "observation", InvalidParameterError)
        if x.shape[-1:] != (self.n_inputs,) or x.ndim > 2:
            raise InvalidParameterError(f"observation must have shape ({self.n_inputs},) or (B, {self.n_inputs}); "
                                        f"got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise InvalidParameterError("observation has NaN/inf entries")
        h = (x - self.obs_mean) / self.obs_std
        for k, (W, b) in enumerate(self.weights):
            h = h @ W + b
            if k < len(self.weights) - 1:
                h = _activation(self.activation, h)
        if self.output == "tanh":
            h = np.tanh(h)
        return np.clip(h, -1.0, 1.0).astype(np.float32)

    def predict(self, obs: np.ndarray, state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Stable-Baselines3's call: ``(action, None)`` (the policy is deterministic and stateless)."""
        return self.act(obs), None

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike) -> Path:
        """Write ``PATH.npz`` (arrays and the card, no pickle) and ``PATH.json`` (the card, to read)."""
        path = Path(path).with_suffix(".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"format_version": FORMAT_VERSION, "n_layers": len(self.weights), "activation": self.activation,
                  "output": self.output}
        arrays: dict[str, Any] = {"obs_mean": self.obs_mean, "obs_std": self.obs_std,
                                  "header": np.array(json.dumps(header)), "card": np.array(json.dumps(self.card))}
        for k, (W, b) in enumerate(self.weights):
            arrays[f"weight_{k}"], arrays[f"bias_{k}"] = W.astype(np.float32), b.astype(np.float32)
        np.savez_compressed(path, **arrays)
        path.with_suffix(".json").write_text(json.dumps(self.card, indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> MLPPolicy:
        """Read a file written by :meth:`save` (``allow_pickle=False``)."""
        path = Path(path)
        if not path.exists() and path.with_suffix(".npz").exists():
            path = path.with_suffix(".npz")
        with np.load(path, allow_pickle=False) as data:
            try:
                header = json.loads(str(data["header"]))
                if header.get("format_version") != FORMAT_VERSION:
                    raise InvalidParameterError(f"{path}: unknown policy format {header.get('format_version')!r}")
                weights = [(data[f"weight_{k}"], data[f"bias_{k}"]) for k in range(int(header["n_layers"]))]
                card = json.loads(str(data["card"]))
                mean, std = data["obs_mean"], data["obs_std"]
            except (KeyError, json.JSONDecodeError) as exc:
                raise InvalidParameterError(f"{path} is not an MLPPolicy file (missing {exc})") from exc
        return cls(weights, mean, std, str(header.get("activation", "elu")), card, str(header.get("output", "linear")))


def _folder():
    return resources.files("soft_envs.agents.learned").joinpath("policies")


def shipped_names() -> list[str]:
    """The names of the policies shipped with the package (``policies/NAME.npz``)."""
    return sorted(entry.name[:-4] for entry in _folder().iterdir() if entry.name.endswith(".npz"))


def shipped(name: str) -> MLPPolicy:
    """The shipped policy ``name`` (one of :func:`shipped_names`)."""
    names = shipped_names()
    if name not in names:
        raise InvalidParameterError(f"no shipped policy {name!r}; shipped: {names}")
    with resources.as_file(_folder().joinpath(f"{name}.npz")) as path:
        return MLPPolicy.load(path)
