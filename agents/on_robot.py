"""Reach controllers that first learn on the env's own robot: collect, learn, then act open loop.

What a user of a real PETER does when the model misses by a centimetre: record the robot's
``(inflation times, measured tip)`` pairs (:func:`~soft_envs.agents.nn.collect_samples`, which
keeps the robot across its resets), learn from them, then plan once per goal and hold the plan:

* ``"trr-calibrated"`` — fit the nominal model's physical parameters
  (:func:`~soft_envs.robots.peter_calibration.calibrate`) and plan with TRR on the
  calibrated model (:class:`~soft_envs.agents.reach.TRRReachAgent`);
* ``"nn-finetuned"`` — fine-tune the shipped network on the samples
  (:meth:`NeuralIK.finetune <soft_envs.agents.nn.NeuralIK.finetune>`, PyTorch) and act with its
  prediction (:class:`~soft_envs.agents.nn.NeuralReachAgent`, unrefined).

Like every controller it reads only observations, ``env.unwrapped.model`` and the env's action
mapping, and drives the env through ``reset``/``step``.
"""

from __future__ import annotations

from typing import Any

from soft_envs.agents.nn.collect import collect_samples, episode_time
from soft_envs.exceptions import InvalidParameterError, check_integer

METHODS = ("trr-calibrated", "nn-finetuned")
MAX_SAMPLES = 100_000  # the largest collection budget (samples of the robot)


class OnRobotReachAgent:
    """Learn on the env's current robot (:meth:`learn`), then reach goals open loop (``act``).

    Args:
        env: a ``PeterReach-v0`` env (wrapped or not), reset on the robot to learn.
        method: ``"trr-calibrated"`` or ``"nn-finetuned"`` (module docstring).
        samples: the collection budget (samples of the robot), 10 to :data:`MAX_SAMPLES`.
        settle_time: when each sample's tip is read [s] after its command; default the episode's
            length — when the task judges the tip, so that leaks are learnt as they will act
            (``None``: when the arm has settled; :func:`collect_samples`).
        progress: progress bars while collecting and learning.
        **learn_options: passed to :func:`~soft_envs.robots.peter_calibration.calibrate` or :meth:`NeuralIK.finetune`.
    """

    def __init__(self, env, method: str, *, samples: int = 100, settle_time: float | None | str = "episode",
                 progress: bool = False, **learn_options: Any) -> None:
        if method not in METHODS:
            raise InvalidParameterError(f"method must be one of {METHODS}; got {method!r}")
        self.env = env
        self.method = method
        self.samples = check_integer("samples", samples, minimum=10, maximum=MAX_SAMPLES)
        self.settle_time = episode_time(env) if settle_time == "episode" else settle_time
        self.progress = bool(progress)
        self.learn_options = learn_options
        self.agent = None
        self.learned: Any = None  # the CalibratedPeter or the fine-tuned NeuralIK

    def learn(self, seed: int = 0) -> None:
        """Collect ``samples`` on the env's robot (kept: ``reset(options={"keep_robot": True})``)
        and learn from them; the env is left on the same robot, to be reset for the task."""
        times, tips = collect_samples(self.env, self.samples, seed=seed, settle_time=self.settle_time,
                                      progress=self.progress)
        model = self.env.unwrapped.model
        if self.method == "trr-calibrated":
            from soft_envs.agents.reach import TRRReachAgent
            from soft_envs.robots.peter_calibration import calibrate

            self.learned = calibrate(model, times, tips, **self.learn_options)
            self.agent = TRRReachAgent(self.env, self.learned)
        else:
            from soft_envs.agents.nn import NeuralIK, NeuralReachAgent

            self.learned = NeuralIK.pretrained(model.n_modules).finetune(times, tips, seed=seed,
                                                                         progress=self.progress,
                                                                         **self.learn_options)
            self.agent = NeuralReachAgent(self.env, self.learned, refine=False)

    def _learned_agent(self):
        if self.agent is None:
            raise InvalidParameterError("OnRobotReachAgent acts after learn(): call agent.learn(seed=…) on the "
                                        "robot first")
        return self.agent

    def reset(self, obs=None, info=None) -> None:
        """Forget the previous goal (the learned model is kept)."""
        self._learned_agent().reset(obs, info)

    def act(self, obs):
        """The normalised action of the learned plan for the observed goal (held: open loop)."""
        return self._learned_agent().act(obs)


__all__ = ["METHODS", "OnRobotReachAgent"]
