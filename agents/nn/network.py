"""The network of :mod:`soft_envs.agents.nn` (its docstring: the weights format, the hybrid):
:class:`NeuralIK`, numpy inference, the shipped weights."""

from __future__ import annotations

import json
import os
from importlib import resources
from typing import Any

import numpy as np

from soft_envs import clock
from soft_envs.agents.ik.result import (
    BatchIKResult,
    IKResult,
    budget_message,
    check_one_target,
    check_targets,
    check_timeout,
    check_tol,
    is_success,
)
from soft_envs.agents.ik.trust_region import trr_batch
from soft_envs.agents.learned.policy import checked_layers
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.base import check_target
from soft_envs.robots.peter import Peter

FORMAT_VERSION = 1
_CHUNK = 32768  # rows per inference chunk (few BLAS calls: multithreaded BLAS on a busy machine)
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
TOL = 1e-6  # default success threshold of the hybrid on the position error [m] (trr's default)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form (the form the networks are trained with): ``x/2 (1 + tanh(c (x + 0.044715 x³)))``."""
    x = np.asarray(x)
    t = x * x
    t *= 0.044715 * _SQRT_2_OVER_PI
    t += _SQRT_2_OVER_PI
    t *= x
    np.tanh(t, out=t)
    t += 1.0
    t *= 0.5
    t *= x
    return t


def weights_path(n_modules: int, variant: str | None = None) -> str:
    """Path of the shipped weights for an ``n_modules`` arm (tilted-plane model); ``variant``
    names one of the shipped training-recipe ablations (``peter_<n>_<variant>.npz``)."""
    name = f"peter_{n_modules}.npz" if variant is None else f"peter_{n_modules}_{variant}.npz"
    return str(resources.files("soft_envs.agents.nn") / "weights" / name)


class NeuralIK:
    """A trained dense network ``target [m] -> inflation times [s]``, numpy inference.

    Args:
        weights: dense layers ``[(W_0, b_0), …]`` with ``W_k`` of shape ``(n_in, n_out)``;
            GELU between layers, linear output.
        x_mean, x_std: input standardisation [m], shape ``(3,)``.
        t_low, t_high: output bounds [s], shape ``(3N,)``.
        metadata: model parameters (key ``"model"``: keyword arguments of :class:`Peter`)
            and training information.
    """

    def __init__(
        self,
        weights: list[tuple[np.ndarray, np.ndarray]],
        x_mean: np.ndarray,
        x_std: np.ndarray,
        t_low: np.ndarray,
        t_high: np.ndarray,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.weights = checked_layers(weights, np.float32, "network")
        self.x_mean = np.asarray(x_mean, dtype=np.float64).reshape(-1)
        self.x_std = np.asarray(x_std, dtype=np.float64).reshape(-1)
        self.t_low = np.asarray(t_low, dtype=np.float64).reshape(-1)
        self.t_high = np.asarray(t_high, dtype=np.float64).reshape(-1)
        if self.x_mean.shape != (3,) or self.x_std.shape != (3,) or not np.all(self.x_std > 0):
            raise InvalidParameterError("x_mean and x_std must have shape (3,), x_std > 0")
        scalers = (self.x_mean, self.x_std, self.t_low, self.t_high)
        if not all(np.all(np.isfinite(a)) for a in scalers):
            raise InvalidParameterError("the input scaler and output bounds must be finite")
        n_out = self.weights[-1][0].shape[1]
        if self.weights[0][0].shape[0] != 3 or self.t_low.shape != (n_out,) or self.t_high.shape != (n_out,):
            raise InvalidParameterError(f"the network maps 3 inputs to {n_out} outputs; scalers do not match")
        if np.any(self.t_high <= self.t_low):
            raise InvalidParameterError("t_high must exceed t_low")
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._mid = (0.5 * (self.t_low + self.t_high)).astype(np.float32)
        self._half = (0.5 * (self.t_high - self.t_low)).astype(np.float32)
        self._model: Peter | None = None

    # ------------------------------------------------------------------ files
    @classmethod
    def pretrained(cls, n_modules: int = 2) -> NeuralIK:
        """The shipped network for an ``n_modules`` PETER arm (2, 3 or 4; tilted-plane model)."""
        if n_modules not in (2, 3, 4):
            raise InvalidParameterError(f"shipped networks exist for 2, 3 and 4 modules; got {n_modules!r}")
        return cls.load(weights_path(n_modules))

    @classmethod
    def load(cls, path: str | os.PathLike) -> NeuralIK:
        """Read a weights file written by :meth:`save` (or ``soft-envs train-ik``)."""
        with np.load(path, allow_pickle=False) as data:
            try:
                metadata = json.loads(str(data["metadata"]))
                if metadata.get("format_version") != FORMAT_VERSION:
                    raise InvalidParameterError(f"{path}: unknown weights format {metadata.get('format_version')!r}")
                n_layers = int(metadata["n_layers"])
                weights = [(data[f"weight_{k}"], data[f"bias_{k}"]) for k in range(n_layers)]
                x_mean, x_std, t_low, t_high = (data[k] for k in ("x_mean", "x_std", "t_low", "t_high"))
            except (KeyError, json.JSONDecodeError) as exc:
                raise InvalidParameterError(f"{path} is not a NeuralIK weights file (missing {exc})") from exc
        return cls(weights, x_mean, x_std, t_low, t_high, metadata)

    def save(self, path: str | os.PathLike) -> None:
        """Write the network, its scalers and metadata to an ``.npz`` file (no pickle).

        numpy appends ``.npz`` to a ``path`` without that suffix."""
        metadata = dict(self.metadata, format_version=FORMAT_VERSION, n_layers=len(self.weights))
        arrays: dict[str, Any] = {"x_mean": self.x_mean, "x_std": self.x_std,
                                  "t_low": self.t_low, "t_high": self.t_high,
                                  "metadata": np.array(json.dumps(metadata))}
        for k, (W, b) in enumerate(self.weights):
            arrays[f"weight_{k}"], arrays[f"bias_{k}"] = W, b
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        np.savez_compressed(path, **arrays)

    # ------------------------------------------------------------------ inference
    @property
    def n_outputs(self) -> int:
        """Number of inflation times predicted (``3N``)."""
        return int(self.t_low.shape[0])

    @property
    def model(self) -> Peter:
        """The kinematic model the network was trained on (from the metadata)."""
        if self._model is None:
            params = dict(self.metadata.get("model", {}))
            params.setdefault("n_modules", self.n_outputs // 3)
            n_modules = params.pop("n_modules")
            self._model = Peter(n_modules, **params)
        return self._model

    def predict(self, targets: np.ndarray) -> np.ndarray:
        """Inflation times [s] for target tip positions [m]: ``(3,) -> (3N,)``, ``(B, 3) -> (B, 3N)``.

        Always inside ``[t_low, t_high]``; float64 output. A target that is not finite, or more
        than 100 arm lengths away (millimetres for metres), raises :class:`ValueError`.
        """
        with np.errstate(over="ignore"):  # an absurd target (1e300 m) is rejected, not warned about
            x = check_target(targets, reach=self.model.reach)
        single = x.ndim == 1
        x2 = np.atleast_2d(x)
        out = np.empty((x2.shape[0], self.n_outputs))
        for lo in range(0, x2.shape[0], _CHUNK):  # large chunks: few BLAS calls
            out[lo:lo + _CHUNK] = self._forward(x2[lo:lo + _CHUNK])
        np.clip(out, self.t_low, self.t_high, out=out)
        return out[0] if single else out

    def _forward(self, x: np.ndarray) -> np.ndarray:
        h = ((x - self.x_mean) / self.x_std).astype(np.float32)
        last = len(self.weights) - 1
        for k, (W, b) in enumerate(self.weights):
            h = h @ W
            h += b
            if k < last:
                h = gelu(h)
        np.clip(h, -1.0, 1.0, out=h)
        h *= self._half
        h += self._mid
        return h

    # ------------------------------------------------------------------ learning on a robot
    def finetune(self, times: np.ndarray, tips: np.ndarray, *, seed: int = 0, recipe=None, threads: int | None = 1,
                 progress: bool = True) -> NeuralIK:
        """A new network fine-tuned from this one on a robot's own samples (PyTorch, the ``learn``
        extra; the result runs on numpy).

        ``times`` ``(n, 3N)`` [s] and ``tips`` ``(n, 3)`` [m] are what
        :func:`~soft_envs.agents.nn.collect_samples` returns. The network learns through a
        forward model of the robot (its own kinematic model plus a residual fitted to the
        samples), so it stays on one branch of the redundant arm's solutions; ``recipe`` is a
        :class:`~soft_envs.agents.nn.finetune.FinetuneRecipe`. See :mod:`soft_envs.agents.nn.finetune`.
        """
        from soft_envs.agents.nn.finetune import finetune

        return finetune(self, times, tips, seed=seed, recipe=recipe, threads=threads, progress=progress)

    # ------------------------------------------------------------------ hybrid
    def solve(self, target: np.ndarray, *, refine: bool = True, tol: float = TOL, timeout: float = 1.0) -> IKResult:
        """IK of one target: the network's answer, refined by TRR when ``refine`` (the hybrid).

        Refinement runs :func:`~soft_envs.agents.ik.trr_batch` from the prediction (vectorised
        bounded Levenberg–Marquardt, then ``trr`` when that does not reach ``tol``).

        Args:
            target: tip position ``(3,)`` [m] in the arm's base frame.
            refine: refine the network's answer with TRR.
            tol: success threshold on the position error [m].
            timeout: wall-clock budget of the refinement [s] (``math.inf``: none).
        """
        start = clock.now()
        target = check_one_target(self.model, target, "NeuralIK.solve")
        res = self.solve_batch(target[None], refine=refine, tol=tol, timeout=timeout)
        message = "network + TRR" if refine else "network"
        if res.timed_out is not None and res.timed_out[0]:
            message += f"; {budget_message(timeout)}"
        return res.item(0, seconds=clock.now() - start, message=message)

    def solve_batch(self, targets: np.ndarray, *, refine: bool = True, tol: float = TOL,
                    timeout: float = 60.0) -> BatchIKResult:
        """IK of ``(B, 3)`` targets [m]: network prediction, TRR-refined when ``refine`` (within
        ``timeout`` [s] for the whole batch)."""
        start = clock.now()
        targets = check_targets(self.model, targets, "NeuralIK.solve_batch")
        tol = check_tol(tol)
        timeout = check_timeout(timeout)
        model = self.model
        guess = self.predict(targets)
        if refine:
            res = trr_batch(model, targets, guess, tol=tol, timeout=max(timeout - (clock.now() - start), 1e-9))
            return BatchIKResult(res.solutions, res.errors, res.success, res.iterations,
                                 clock.now() - start, dict(res.extra, refined=True), timed_out=res.timed_out)
        errors = np.linalg.norm(model.forward(guess) - targets, axis=-1)
        success = is_success(errors, tol)
        return BatchIKResult(guess, errors, success, np.zeros(len(errors), dtype=int),
                             clock.now() - start, {"refined": False}, timed_out=np.zeros(len(errors), dtype=bool))
