"""The controllers ``soft-envs evaluate`` runs, by name: built from the env they act in.

A controller follows the agents' protocol (``reset(obs, info)``, ``act(obs)``, acting only
through ``env.step``): the IK agents open or closed loop, the network and the hybrid, the learning
controllers (:data:`LEARNING_CONTROLLERS`), PD + feed-forward, the quadruped's gait and body-pose
controllers, the hexapod's Jacobian agent, the proportional law in task space (``task-feedback``),
a saved Stable-Baselines3 policy (``sb3:ALGO:PATH``, :class:`SB3Policy`) and a numpy policy
(``policy:PATH.npz`` or a task's shipped ``learned``, :class:`NumpyPolicy`). Which controllers suit
which task is :data:`soft_envs.evaluate.TASKS`.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from soft_envs.agents.on_robot import MAX_SAMPLES as MAX_LEARN_SAMPLES
from soft_envs.envs.closed_loop import LOOP_KEYWORDS
from soft_envs.exceptions import InvalidParameterError

#: The controllers :func:`build_controller` knows by name (``NAME:N`` too for the learning ones).
CONTROLLERS = ("trr", "trr-feedback", "trr-paper-model", "nn", "hybrid", "trr-calibrated", "nn-finetuned", "pd-ff",
               "pd-ff-feedback", "trot", "body-pose", "hexapod-jacobian", "hexapod-jacobian-low-gain", "learned",
               "trr-obstacles", "trr-obstacles-feedback", "sqp-obstacles", "sqp-obstacles-feedback", "scripted-push",
               "task-feedback")


#: Controllers that learn on the episode's robot before acting (:mod:`soft_envs.agents.on_robot`):
#: ``NAME`` collects :data:`LEARN_SAMPLES` samples, ``NAME:N`` collects ``N`` (10 to :data:`MAX_LEARN_SAMPLES`).
LEARNING_CONTROLLERS = ("trr-calibrated", "nn-finetuned")
#: The controllers that plan around the env's obstacles (``env.unwrapped.obstacle_rows``): TRR with a
#: barrier and SQP with distance constraints, open loop or closed on the measured tip.
OBSTACLE_CONTROLLERS = ("trr-obstacles", "trr-obstacles-feedback", "sqp-obstacles", "sqp-obstacles-feedback")
LEARN_SAMPLES = 100


def learning_controller(name: str) -> tuple[str, int] | None:
    """``(method, samples)`` of a learning controller's name (``trr-calibrated:1000``), else ``None``."""
    method, _, budget = name.partition(":")
    if method not in LEARNING_CONTROLLERS:
        return None
    if not budget:
        return method, LEARN_SAMPLES
    if not budget.isdigit() or not 10 <= int(budget) <= MAX_LEARN_SAMPLES:
        raise InvalidParameterError(f"{method}:N takes a sample budget N from 10 to {MAX_LEARN_SAMPLES}; got {name!r}")
    return method, int(budget)


def build_controller(name: str, env, task: str = "") -> Any:
    """Build the controller called ``name`` for ``env`` (a ``gym.make`` env of ``task``)."""
    learning = learning_controller(name)
    if learning is not None:
        from soft_envs.agents.on_robot import OnRobotReachAgent

        return OnRobotReachAgent(env, learning[0], samples=learning[1])
    if name in ("trr", "trr-feedback", "trr-paper-model"):
        from soft_envs.agents.ik.smooth_view import StrainView
        from soft_envs.agents.pcc_reach import PCC_FEEDBACK
        from soft_envs.agents.reach import TRRReachAgent
        from soft_envs.robots.pcc_arm import PCCArm

        model = env.unwrapped.model.with_kinematics("tilted") if name == "trr-paper-model" else None
        arm = env.unwrapped.model
        options = PCC_FEEDBACK | {"ik_view": StrainView(arm)} if isinstance(arm, PCCArm) else {}
        return TRRReachAgent(env, model, feedback=name == "trr-feedback", **options)
    if name in OBSTACLE_CONTROLLERS:
        from soft_envs.agents.pcc_reach import PCCObstacleReachAgent, PCCTRRObstacleReachAgent
        from soft_envs.agents.reach import ObstacleReachAgent, SQPObstacleReachAgent
        from soft_envs.robots.pcc_arm import PCCArm

        sqp = name.startswith("sqp")
        if isinstance(env.unwrapped.model, PCCArm):  # routes in the smooth coordinates, at the command ramp
            agent = PCCObstacleReachAgent if sqp else PCCTRRObstacleReachAgent
        else:
            agent = SQPObstacleReachAgent if sqp else ObstacleReachAgent
        return agent(env, feedback=name.endswith("-feedback"))
    if name == "task-feedback":
        from soft_envs.agents.reach import TaskFeedbackAgent

        return TaskFeedbackAgent(env)
    if name == "scripted-push":
        from soft_envs.agents.pcc_push import ScriptedPushAgent

        return ScriptedPushAgent(env)
    if name in ("nn", "hybrid"):
        from soft_envs.agents.nn import NeuralReachAgent

        return NeuralReachAgent(env, refine=name == "hybrid")
    if name in ("pd-ff", "pd-ff-feedback"):
        from soft_envs.agents.pcc_control import PCCTrackingAgent

        return PCCTrackingAgent(env, feedback_gain=0.1 if name == "pd-ff-feedback" else 0.0)
    if name == "trot":
        from soft_envs.agents.gait import TrotController

        return TrotController(env)
    if name == "body-pose":
        from soft_envs.agents.body_pose import BodyPoseController

        return BodyPoseController(env)
    if name in ("hexapod-jacobian", "hexapod-jacobian-low-gain"):
        from soft_envs.agents.hexapod_control import HexapodJacobianAgent

        # gain 0.3: stable with the realistic preset's pose latency plus command delay (3 periods)
        return HexapodJacobianAgent(env, gain=0.3 if name.endswith("low-gain") else 0.8)
    if name.startswith("sb3:"):
        return SB3Policy.from_spec(name, env)
    if name.startswith("policy:") or name == "learned":
        return NumpyPolicy.from_spec(name, env, task)
    raise InvalidParameterError(f"unknown controller {name!r}; use one of {sorted(CONTROLLERS)} "
                                "or sb3:ALGO:PATH or policy:PATH.npz")


def task_action_keywords(env_id: str) -> dict[str, Any]:
    """The keywords that give the registered env ``env_id`` its task-space action: its class's
    ``TASK_ACTION_KEYWORDS`` (the PCC arms add their smooth set-point; ``{"action_mode": "task"}`` for
    an id it does not know)."""
    from soft_envs.envs import ENVIRONMENTS

    if env_id not in ENVIRONMENTS:
        return {"action_mode": "task"}
    module, _, name = ENVIRONMENTS[env_id][0].partition(":")
    return dict(getattr(importlib.import_module(module), name).TASK_ACTION_KEYWORDS)


def env_keywords(name: str, task: str = "", env_id: str = "") -> dict[str, Any]:
    """The env keywords the controller ``name`` needs for its observations (a saved policy's
    observation form, from its file; the task-space action of ``task-feedback`` on ``env_id``,
    :func:`task_action_keywords`; ``{}`` for the others)."""
    if name == "task-feedback":
        return task_action_keywords(env_id)
    if name.startswith("sb3:"):
        return SB3Policy.env_keywords(name)
    if name.startswith("policy:") or name == "learned":
        return NumpyPolicy.env_keywords(name, task)
    return {}


def controller_for(name: str, env, task: str = "") -> Any:
    """The controller called ``name`` (a task's controller, ``sb3:ALGO:PATH`` or ``policy:PATH.npz``)
    for ``env`` (of ``task``: ``learned`` is the policy shipped for it)."""
    return build_controller(name, env, task)


class SB3Policy:
    """A saved Stable-Baselines3 policy as a controller (deterministic actions).

    The policy acts through ``env.step`` on the env its task and preset make, in the observation
    and action form it was trained on: the keywords of :attr:`OBSERVATION_KEYWORDS`
    (``goal_conditioned``: the ``Dict`` form HER trains on; ``action_mode``, ``action_type``: what
    its action means) come from the ``PATH.json`` that ``soft-envs train-rl``
    writes next to the zip (:meth:`env_keywords`); everything else — the task, the realism
    preset — comes from the task and the preset, never from the policy. A policy saved without
    that file acts on the task's env as it is. A policy whose observation or action space is not
    the env's raises :class:`~soft_envs.exceptions.InvalidParameterError`. A policy trained as a
    modulation of a scripted gait (the recipe's ``base_gait``, :mod:`soft_envs.learn.gait_residual`)
    acts through that gait.
    """

    OBSERVATION_KEYWORDS = ("goal_conditioned", *LOOP_KEYWORDS, "action_type", "residual_limit")

    def __init__(self, policy, env=None, base_gait: str = "") -> None:
        self.policy = policy
        self.recurrent = type(policy).__name__ == "RecurrentPPO"
        self._state, self._start = None, np.ones((1,), bool)
        env, self.gait = _through_gait(env, base_gait)
        if env is not None:
            for kind in ("observation_space", "action_space"):
                if getattr(env, kind) != getattr(policy, kind):
                    raise InvalidParameterError(
                        f"the policy's {kind} {getattr(policy, kind)} is not the env's {getattr(env, kind)}: "
                        "was it trained on another task (e.g. another number of modules)?")

    @staticmethod
    def _parse(spec: str) -> tuple[str, str]:
        parts = spec.split(":", 2)
        if len(parts) != 3 or parts[0] != "sb3" or not parts[1] or not parts[2]:
            raise InvalidParameterError(f"an SB3 controller is 'sb3:ALGO:PATH'; got {spec!r}")
        return parts[1], parts[2]

    @classmethod
    def env_keywords(cls, spec: str) -> dict[str, Any]:
        """The env keywords the policy of ``spec`` needs for its observations (from ``PATH.json``)."""
        from soft_envs.learn.train import policy_record

        _, path = cls._parse(spec)
        saved = policy_record(path).get("env_kwargs", {})
        return {key: saved[key] for key in cls.OBSERVATION_KEYWORDS if key in saved}

    @classmethod
    def from_spec(cls, spec: str, env=None) -> SB3Policy:
        """``sb3:ALGO:PATH``, e.g. ``sb3:SAC:runs/peter_sac.zip`` (needs the ``learn`` extra);
        with ``env``, checks that the policy's spaces are the env's."""
        from soft_envs.learn.train import load_model, policy_record

        algo, path = cls._parse(spec)
        base_gait = str(policy_record(path).get("recipe", {}).get("base_gait", "") or "")
        return cls(load_model(path, algo), env, base_gait)

    def reset(self, obs=None, info=None) -> None:
        """A recurrent policy's memory starts afresh; the others are memoryless (a modulated gait
        starts its cycle)."""
        self._state, self._start = None, np.ones((1,), bool)
        if self.gait is not None:
            self.gait.reset(obs, info)

    def act(self, obs):
        if self.gait is not None:
            return self.gait.action(obs, self.policy.predict(self.gait.observation(obs), deterministic=True)[0])
        if self.recurrent:
            action, self._state = self.policy.predict(obs, state=self._state, episode_start=self._start,
                                                      deterministic=True)
            self._start = np.zeros((1,), bool)
            return action
        action, _ = self.policy.predict(obs, deterministic=True)
        return action


class NumpyPolicy:
    """A numpy :class:`~soft_envs.agents.learned.MLPPolicy` as a controller: ``policy:PATH.npz``
    (a file ``soft-envs train-rl`` wrote with the parallel learner) or ``learned`` (the policy
    shipped for the task, ``soft_envs/agents/learned/policies/TASK.npz``). Its card's env id must
    be the env's and its input the env's observation; it acts in the observation form of the card's
    :attr:`SB3Policy.OBSERVATION_KEYWORDS` (:meth:`env_keywords`). A card naming a ``base_gait`` (the
    quadruped walk's) makes the policy a modulation of that scripted gait, as :class:`SB3Policy`."""

    def __init__(self, policy, env=None) -> None:
        self.policy = policy
        if env is not None:
            env_id = policy.card.get("env_id")
            if env_id is not None and env.spec is not None and env.spec.id != env_id:
                raise InvalidParameterError(f"the policy was trained on {env_id}, not {env.spec.id}")
        env, self.gait = _through_gait(env, str(policy.card.get("base_gait", "") or ""))
        if env is not None:
            shape = env.observation_space.shape
            if shape != (policy.n_inputs,) or env.action_space.shape != (policy.n_actions,):
                raise InvalidParameterError(f"the policy maps {policy.n_inputs} inputs to {policy.n_actions} actions; "
                                            f"the env observes {shape} and acts {env.action_space.shape}")

    @staticmethod
    def load(spec: str, task: str = ""):
        from soft_envs.agents.learned import MLPPolicy, shipped

        if spec == "learned":
            if not task:
                raise InvalidParameterError("the 'learned' controller needs its task (the shipped policy's name)")
            return shipped(task)
        path = spec.partition(":")[2]
        if not path:
            raise InvalidParameterError(f"a numpy policy controller is 'policy:PATH.npz'; got {spec!r}")
        return MLPPolicy.load(path)

    @classmethod
    def env_keywords(cls, spec: str, task: str = "") -> dict[str, Any]:
        """The env keywords of the policy's observation form (from its card)."""
        saved = cls.load(spec, task).card.get("env_kwargs", {})
        return {key: saved[key] for key in SB3Policy.OBSERVATION_KEYWORDS if key in saved}

    @classmethod
    def from_spec(cls, spec: str, env=None, task: str = "") -> NumpyPolicy:
        return cls(cls.load(spec, task), env)

    def reset(self, obs=None, info=None) -> None:
        """Memoryless (a modulated gait starts its cycle)."""
        if self.gait is not None:
            self.gait.reset(obs, info)

    def act(self, obs):
        if self.gait is not None:
            return self.gait.action(obs, self.policy.act(self.gait.observation(obs)))
        return self.policy.act(obs)


def _through_gait(env, base_gait: str) -> tuple[Any, Any]:
    """``(env, None)``, or for a policy that modulates a scripted gait (a recipe's ``base_gait``,
    :mod:`soft_envs.learn.gait_residual`) the env as that policy sees it and the gait's parts."""
    if not base_gait:
        return env, None
    if env is None:
        raise InvalidParameterError("a policy that modulates a gait needs the env")
    from soft_envs.learn.gait_residual import GaitResidualEnv

    wrapped = GaitResidualEnv(env, base_gait)
    return wrapped, wrapped.gait
