"""Neural-network inverse kinematics for PETER (García-Samartín et al. 2025, section 3.3).

A dense network maps a target tip position [m] (base frame of the arm) to the ``3N``
inflation times [s]. Inference is numpy only (batched, float32); training lives in
:mod:`soft_envs.agents.nn.train` (PyTorch, the ``learn`` extra).

Weights files are ``.npz`` (no pickle): ``weight_k`` / ``bias_k`` per dense layer (``k`` from
0, layers ``y = x W + b``), the input scaler ``x_mean`` / ``x_std`` [m], the output bounds
``t_low`` / ``t_high`` [s] (the network's last layer gives ``y`` in ``[−1, 1]``,
``t = mid + half · y``, then clipped into the bounds), and ``metadata`` (a JSON string: the
robot model's parameters, the training recipe and its measured figures).

:class:`NeuralIK` also offers the hybrid the paper lacks: the network's answer refined by TRR
(:meth:`NeuralIK.solve`), and :class:`NeuralReachAgent` acts in ``PeterReach-v0``. On a robot
that is not the model (``realism=``), :func:`collect_samples` records the robot's own
``(inflation times, measured tip)`` pairs and :meth:`NeuralIK.finetune` adapts the network to
them (:mod:`soft_envs.agents.nn.finetune`).
"""

from __future__ import annotations

import numpy as np

from soft_envs import clock
from soft_envs.agents.ik.result import IKResult, is_success
from soft_envs.agents.ik.trust_region import trr_batch
from soft_envs.agents.nn.network import FORMAT_VERSION, TOL, NeuralIK, gelu, weights_path
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.peter import Peter


class NeuralReachAgent:
    """Act in ``PeterReach-v0`` with the network (optionally TRR-refined) through ``step``.

    Reads the goal from the observation and the env's spaces/model only. The network predicts
    for the paper's tilted-plane model; refinement runs on the model given (default the env's
    own, so that the hybrid corrects the model gap as well).

    Args:
        env: a ``PeterReach-v0`` env (wrapped or not).
        net: the network; default ``NeuralIK.pretrained`` for the env's module count.
        refine: refine the network's answer with TRR on ``model``.
        model: the model refined on; default ``env.unwrapped.model``.
    """

    def __init__(self, env, net: NeuralIK | None = None, *, refine: bool = True, model: Peter | None = None) -> None:
        self.env = env.unwrapped
        self.net = net if net is not None else NeuralIK.pretrained(self.env.model.n_modules)
        if self.net.n_outputs != self.env.model.n_dof:
            raise InvalidParameterError(f"the network gives {self.net.n_outputs} times; the env's arm takes "
                                        f"{self.env.model.n_dof}")
        self.model = model if model is not None else self.env.model
        self.refine = bool(refine)
        self.last_result: IKResult | None = None
        self._goal: np.ndarray | None = None
        self._solution: np.ndarray | None = None

    def reset(self, obs=None, info=None) -> None:
        """Forget the previous goal."""
        self._goal, self._solution, self.last_result = None, None, None

    def act(self, obs) -> np.ndarray:
        """The normalised action commanding the network's (refined) times for the observed goal."""
        goal = np.asarray(obs["desired_goal"] if isinstance(obs, dict) else np.asarray(obs)[3:6], dtype=float)
        if self._goal is None or not np.array_equal(goal, self._goal):
            start = clock.now()
            guess = self.net.predict(goal)
            if self.refine:
                res = trr_batch(self.model, goal[None], guess, tol=TOL)
                solution, error, iterations = res.solutions[0], float(res.errors[0]), int(res.iterations[0])
            else:
                solution, iterations = guess, 0
                error = float(np.linalg.norm(self.model.forward(guess) - goal))
            self.last_result = IKResult(solution, error, is_success(error, TOL), iterations,
                                        clock.now() - start)
            self._goal, self._solution = goal, solution
        return self.env.model_to_action(self._solution)


from soft_envs.agents.nn.collect import collect_samples  # noqa: E402  (needs nothing above; re-exported)

__all__ = ["FORMAT_VERSION", "NeuralIK", "NeuralReachAgent", "collect_samples", "gelu", "weights_path"]
