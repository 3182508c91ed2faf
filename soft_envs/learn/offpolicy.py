"""SAC over parallel envs: skrl's agent on the native vector envs (the off-policy parallel learner).

``soft-envs train-rl`` trains here a recipe with ``learner="skrl"`` (e.g. ``peter-soft-parallel-sac``).
FastTD3 showed that off-policy learners scale with parallel envs when every vector step feeds a
large replay buffer and is followed by several updates on large minibatches; rsl_rl has no
off-policy algorithm, so we use skrl's ``SAC`` (``skrl``, in the ``learn`` extra: maintained,
made for vectorised envs, tensors in and out, its update loop and its replay memory) and drive the
loop ourselves, as :mod:`soft_envs.learn.parallel` does for PPO: the budget, the held-out
evaluations and the saved policy are ours.

Each :meth:`ParallelSAC.iterate` is one step of the ``n_envs`` arms (the vector env, same-step
autoreset; the transition of an arm whose episode ended holds its final observation, and only a
termination, never a time limit, stops the bootstrap) and ``gradient_steps`` updates of
``batch_size`` transitions. Observations are standardised as the PPO learner's (a random-action
rollout). The recipe's ``ent_coef`` is SAC's initial entropy coefficient (0: skrl's 0.2; it is
then learnt towards the target entropy). The actor is a Gaussian whose mean is ``tanh`` of an
MLP (the recipe's activation, ELU by default), its standard deviation a learnt vector; the
deterministic policy, the mean, is saved as a numpy :class:`~soft_envs.agents.learned.MLPPolicy`
(``output="tanh"``) with its model card.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from soft_envs.agents.learned import MLPPolicy
from soft_envs.exceptions import MissingDependencyError
from soft_envs.learn import recipes
from soft_envs.learn.train import METRICS
from soft_envs.learn.vector_rollouts import learner_device, learner_env, numpy_weights, torch_activations


def require_skrl():
    """The skrl package, or :class:`MissingDependencyError` naming the extra."""
    try:
        import skrl.agents.torch.sac
    except ImportError as exc:
        raise MissingDependencyError("the off-policy parallel learner needs skrl: pip install 'soft_envs[learn]'") \
            from exc
    return skrl


def _mlp(n_in: int, hidden: tuple[int, ...], activation: str):
    import torch

    layer = torch_activations()[activation]
    layers: list[Any] = []
    for width in hidden:
        layers += [torch.nn.Linear(n_in, width), layer()]
        n_in = width
    return torch.nn.Sequential(*layers), n_in


def _models(observation_space, action_space, hidden: tuple[int, ...], activation: str, device: str) -> dict[str, Any]:
    """skrl's actor (a Gaussian, tanh mean, learnt log std), two critics and their targets."""
    import torch
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model

    n_actions = int(np.prod(action_space.shape))

    class Actor(GaussianMixin, Model):
        def __init__(self) -> None:
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
            GaussianMixin.__init__(self, clip_actions=True, clip_log_std=True, min_log_std=-5.0, max_log_std=1.0)
            self.net, width = _mlp(self.num_observations, hidden, activation)
            self.mean = torch.nn.Linear(width, n_actions)
            self.log_std = torch.nn.Parameter(torch.full((n_actions,), math.log(0.3)))

        def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[Any, dict[str, Any]]:
            return torch.tanh(self.mean(self.net(inputs["observations"]))), {"log_std": self.log_std}

    class Critic(DeterministicMixin, Model):
        def __init__(self) -> None:
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
            DeterministicMixin.__init__(self)
            self.net, width = _mlp(self.num_observations + n_actions, hidden, activation)
            self.value = torch.nn.Linear(width, 1)

        def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[Any, dict[str, Any]]:
            features = torch.cat([inputs["observations"], inputs["taken_actions"]], dim=-1)
            return self.value(self.net(features)), {}

    return {"policy": Actor(), "critic_1": Critic(), "critic_2": Critic(), "target_critic_1": Critic(),
            "target_critic_2": Critic()}


class ParallelSAC:
    """skrl's SAC on a native vector env: :meth:`iterate` steps every env once and updates."""

    NAME = "skrl SAC"

    def __init__(self, recipe: recipes.Recipe, env_kwargs: dict[str, Any], seed: int, *, threads: int = 1,
                 env_threads: int | None = None, device: str = "cpu") -> None:
        require_skrl()
        import gymnasium as gym
        from skrl.agents.torch.sac import SAC
        from skrl.memories.torch import RandomMemory

        self.recipe, self.seed, self.device = recipe, seed, learner_device(device)
        self.venv, self.obs_mean, self.obs_std = learner_env(recipe, env_kwargs, seed, threads, env_threads)
        n_obs = self.obs_mean.size
        self._inv_std = (1.0 / self.obs_std).astype(np.float32)
        space = gym.spaces.Box(-np.inf, np.inf, (n_obs,), np.float32)  # the standardised observations
        self.num_envs = int(self.venv.num_envs)
        memory = RandomMemory(memory_size=max(1, math.ceil(recipe.buffer_size / self.num_envs)),
                              num_envs=self.num_envs, device=self.device, replacement=True)
        cfg = {"gradient_steps": recipe.gradient_steps, "batch_size": recipe.batch_size,
               "discount_factor": recipe.gamma, "learning_rate": recipe.learning_rate,
               "initial_entropy_value": recipe.ent_coef if recipe.ent_coef > 0 else 0.2,
               "random_timesteps": math.ceil(recipe.learning_starts / self.num_envs),
               "learning_starts": math.ceil(recipe.learning_starts / self.num_envs),
               "experiment": {"write_interval": 0, "checkpoint_interval": 0}}
        models = _models(space, self.venv.single_action_space, tuple(recipe.net_arch), recipe.activation, self.device)
        self.agent = SAC(models=models, memory=memory, observation_space=space,
                         action_space=self.venv.single_action_space, device=self.device, cfg=cfg)
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.metric = METRICS.get(recipe.env_id, "distance")
        self.episodes: dict[str, list[float]] = {"return": [], "success": [], self.metric: []}
        self._returns = np.zeros(self.num_envs)
        obs, _ = self.venv.reset(seed=seed)
        self._obs = self._standardised(obs)
        self.timesteps = 0
        self.iterations = 0
        self.collect_seconds = 0.0  # [s] wall time in env steps and the actor's sampling
        self.update_seconds = 0.0  # [s] wall time in SAC's updates

    def _standardised(self, obs: np.ndarray):
        import torch

        return torch.from_numpy((np.asarray(obs, dtype=np.float32) - self.obs_mean.astype(np.float32))
                                * self._inv_std).to(self.device)

    def _record_episodes(self, done: np.ndarray, info: dict[str, Any]) -> None:
        rows = np.flatnonzero(done)
        final = info.get("final_info", {})
        self.episodes["return"].extend(self._returns[rows].tolist())
        self.episodes["success"].extend(np.asarray(final.get("is_success", np.zeros(self.num_envs)))[rows]
                                        .astype(float).tolist())
        if self.metric in final:
            self.episodes[self.metric].extend(np.asarray(final[self.metric], dtype=float)[rows].tolist())
        self._returns[rows] = 0.0

    def iterate(self) -> dict[str, float]:
        """One step of every env, its transitions into the buffer, ``gradient_steps`` updates."""
        import time

        import torch

        start = time.perf_counter()
        step, total = self.iterations, 10**12
        with torch.no_grad():
            actions, _ = self.agent.act(self._obs, None, timestep=step, timesteps=total)
        obs, reward, terminated, truncated, info = self.venv.step(actions.cpu().numpy())
        done = terminated | truncated
        following = np.array(obs, dtype=np.float32, copy=True)
        if done.any():  # the transition ends at the final observation, not at the next episode's first
            rows = np.flatnonzero(done)
            following[rows] = np.stack([np.asarray(info["final_obs"][i], dtype=np.float32) for i in rows])
        self._returns += reward
        self.agent.record_transition(
            observations=self._obs, states=None, actions=actions,
            rewards=torch.from_numpy(np.asarray(reward, dtype=np.float32)).unsqueeze(-1).to(self.device),
            next_observations=self._standardised(following), next_states=None,
            terminated=torch.from_numpy(np.asarray(terminated)).unsqueeze(-1).to(self.device),
            truncated=torch.from_numpy(np.asarray(truncated)).unsqueeze(-1).to(self.device), infos={},
            timestep=step, timesteps=total)
        if done.any():
            self._record_episodes(done, info)
        self._obs = self._standardised(obs)
        middle = time.perf_counter()
        self.agent.post_interaction(timestep=step, timesteps=total)
        self.collect_seconds += middle - start
        self.update_seconds += time.perf_counter() - middle
        self.timesteps += self.num_envs
        self.iterations += 1
        row = {"entropy_coefficient": float(self.agent.log_entropy_coefficient.detach().exp())}
        if self.episodes["return"]:
            row |= {key: float(np.mean(values)) for key, values in self.episodes.items() if values}
            row["episodes"] = float(len(self.episodes["return"]))
            for values in self.episodes.values():
                values.clear()
        return row

    def policy(self, card: dict[str, Any] | None = None) -> MLPPolicy:
        """The actor's mean as a numpy :class:`MLPPolicy` (``output="tanh"``)."""
        import torch

        actor = self.agent.policy
        layers = [m for m in actor.net if isinstance(m, torch.nn.Linear)] + [actor.mean]
        return MLPPolicy(numpy_weights(layers), self.obs_mean, self.obs_std, self.recipe.activation, dict(card or {}),
                         output="tanh")

    def close(self) -> None:
        self.venv.close()
