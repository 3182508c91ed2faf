"""PPO over thousands of parallel envs: rsl_rl's algorithm on the native vector envs.

``soft-envs train-rl --n-envs N`` (``N ≥`` :data:`~soft_envs.learn.recipes.PARALLEL_MIN_ENVS`, an
env with a native vector env) trains here instead of through Stable-Baselines3. Why rsl_rl
(``rsl-rl-lib``, the learner of legged_gym and Isaac Lab): it is made for thousands of envs
stepping as one batch — short rollouts (``n_steps`` per env), a few large minibatches, a learning
rate adapted to a target KL divergence — and takes the batch as tensors, where SB3's ``VecEnv``
goes through per-env ``info`` dicts and per-env Python objects on every step. We use its ``PPO``
(actor, critic, rollout storage, update) and drive the loop ourselves: the budget (wall or CPU
time, as ``soft-envs train-rl``), the held-out evaluations and the saved policy are ours.

:class:`TorchVectorEnv` is the adapter: the vector env (same-step autoreset) stepped with the
actions' numpy view, its observations standardised (mean and standard deviation of a random-action
rollout) into one float32 array a step that torch wraps without a further copy, ``dones =
terminated | truncated`` and ``time_outs = truncated`` (rsl_rl bootstraps the value of an episode
cut by its time limit). With a recipe's ``privileged_critic`` the critic also reads the vector env's
``privileged_observation()`` (group :data:`PRIVILEGED_GROUP`, standardised the same way): the
asymmetric actor-critic of legged_gym and Isaac Lab, where the value of a randomised robot is
learnt from what the simulator knows of it and the policy keeps to what a real robot measures.
The trained actor is saved as a numpy
:class:`~soft_envs.agents.learned.MLPPolicy` (``PATH.npz`` and its model card ``PATH.json``), which
``soft-envs evaluate`` runs without PyTorch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs import __version__, clock
from soft_envs.agents.learned import MLPPolicy
from soft_envs.console import progress as progress_bar
from soft_envs.exceptions import InvalidParameterError, MissingDependencyError
from soft_envs.learn import recipes
from soft_envs.learn.train import (
    EVAL_SEED,
    METRICS,
    TrainResult,
    check_budget,
    evaluate_policy,
    load_average,
    print_flushed,
)
from soft_envs.learn.vector_rollouts import (  # noqa: F401 (the vector env helpers, re-exported)
    activation_name,
    has_native_vector_env,
    learner_device,
    learner_env,
    make_vector_env,
    numpy_weights,
    privileged_source,
    rollout_statistics,
)

OBS_GROUP = "policy"
#: The observation group of the vector env's privileged observation (a recipe's ``privileged_critic``).
PRIVILEGED_GROUP = "privileged"


def require_rsl_rl():
    """The rsl_rl package, or :class:`MissingDependencyError` naming the extra."""
    try:
        import rsl_rl.algorithms
    except ImportError as exc:
        raise MissingDependencyError("the parallel learner needs rsl-rl-lib: pip install 'soft_envs[learn]'") from exc
    return rsl_rl


class TorchVectorEnv:
    """A native vector env as rsl_rl's ``VecEnv`` (see the module docstring).

    Args:
        venv: the vector env (``autoreset_mode`` same-step, flat ``Box`` observations).
        obs_mean, obs_std: the standardisation of the observations.
        seed: the reset seed of the first episodes.
        metric: the ``info`` key recorded at every episode's end (with ``is_success``).
        privileged: ``(source, mean, std)``: the group :data:`PRIVILEGED_GROUP`, ``source()``
            standardised, beside the policy's (``None``: none).
        device: where the tensors it hands over live (the learner's device; the actions come back
            to the host for a CPU vector env).
    """

    def __init__(self, venv, obs_mean: np.ndarray, obs_std: np.ndarray, seed: int, metric: str,
                 privileged: tuple[Any, np.ndarray, np.ndarray] | None = None, device: str = "cpu") -> None:
        import torch

        self.venv = venv
        self.num_envs = int(venv.num_envs)
        self.num_actions = int(np.prod(venv.single_action_space.shape))
        self.max_episode_length = int(venv.spec.max_episode_steps or 10**9) if venv.spec else 10**9
        self.device = device
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=device)
        self.cfg: dict[str, Any] = {}
        self.metric = metric
        self.obs_mean = np.asarray(obs_mean, dtype=np.float32)
        self.obs_inv_std = (1.0 / np.asarray(obs_std, dtype=np.float64)).astype(np.float32)
        self.privileged = None if privileged is None else (
            privileged[0], np.asarray(privileged[1], np.float32), (1.0 / np.asarray(privileged[2])).astype(np.float32))
        self._returns = np.zeros(self.num_envs)
        self.episodes: dict[str, list[float]] = {"return": [], "success": [], metric: []}
        obs, _ = venv.reset(seed=seed)
        self._obs = self._standardised(obs)

    def _standardised(self, obs: np.ndarray):
        return self._tensor((np.asarray(obs, dtype=np.float32) - self.obs_mean) * self.obs_inv_std)

    def _tensor(self, array: np.ndarray):
        import torch

        return torch.from_numpy(array).to(self.device)

    def _group(self, obs):
        from tensordict import TensorDict

        groups = {OBS_GROUP: obs}
        if self.privileged is not None:
            source, mean, inv_std = self.privileged
            groups[PRIVILEGED_GROUP] = self._tensor((np.asarray(source(), np.float32) - mean) * inv_std)
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)

    def get_observations(self):
        return self._group(self._obs)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.venv.step(actions.cpu().numpy())
        done = terminated | truncated
        self._returns += reward
        self.episode_length_buf += 1
        if done.any():
            rows = np.flatnonzero(done)
            final = info.get("final_info", {})
            self.episodes["return"].extend(self._returns[rows].tolist())
            self.episodes["success"].extend(np.asarray(final.get("is_success", np.zeros(self.num_envs)))[rows]
                                            .astype(float).tolist())
            if self.metric in final:
                self.episodes[self.metric].extend(np.asarray(final[self.metric], dtype=float)[rows].tolist())
            self._returns[rows] = 0.0
            self.episode_length_buf[self._tensor(done)] = 0
        self._obs = self._standardised(obs)
        extras = {"time_outs": self._tensor(truncated & ~terminated)}
        return self._group(self._obs), self._tensor(np.asarray(reward, dtype=np.float32)), self._tensor(done), extras

    def take_episodes(self) -> dict[str, float]:
        """Means of the episodes ended since the last call (``{}`` if none), and forget them."""
        out = {key: float(np.mean(values)) for key, values in self.episodes.items() if values}
        if self.episodes["return"]:
            out["episodes"] = float(len(self.episodes["return"]))
        for values in self.episodes.values():
            values.clear()
        return out

    def close(self) -> None:
        self.venv.close()


def rsl_config(recipe: recipes.Recipe) -> dict[str, Any]:
    """rsl_rl's PPO configuration of ``recipe`` (``batch_size`` is the minibatch size)."""
    batch = recipe.n_envs * recipe.n_steps
    hidden = list(recipe.net_arch)
    return {
        "num_steps_per_env": recipe.n_steps,
        "obs_groups": {"actor": [OBS_GROUP],
                       "critic": [OBS_GROUP, PRIVILEGED_GROUP] if recipe.privileged_critic else [OBS_GROUP]},
        "multi_gpu": None,
        "algorithm": {"class_name": "PPO", "num_learning_epochs": recipe.n_epochs,
                      "num_mini_batches": max(1, batch // recipe.batch_size), "clip_param": recipe.clip_range,
                      "gamma": recipe.gamma, "lam": recipe.gae_lambda, "value_loss_coef": 1.0,
                      "entropy_coef": recipe.ent_coef, "learning_rate": recipe.learning_rate, "max_grad_norm": 1.0,
                      "schedule": "adaptive", "desired_kl": recipe.desired_kl},
        "actor": {"class_name": "MLPModel", "hidden_dims": hidden, "activation": recipe.activation,
                  "obs_normalization": False,
                  "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": recipe.init_std,
                                       "std_type": "scalar"}},
        "critic": {"class_name": "MLPModel", "hidden_dims": hidden, "activation": recipe.activation,
                   "obs_normalization": False},
    }


def actor_policy(alg, obs_mean: np.ndarray, obs_std: np.ndarray, card: dict[str, Any]) -> MLPPolicy:
    """The deterministic actor of rsl_rl's ``alg`` as a numpy :class:`MLPPolicy`."""
    import torch

    modules = list(alg.get_policy().mlp)
    layers = [m for m in modules if isinstance(m, torch.nn.Linear)]
    activations = {type(m) for m in modules if not isinstance(m, torch.nn.Linear)}
    return MLPPolicy(numpy_weights(layers), obs_mean, obs_std, activation_name(activations.pop()), card)


class ParallelPPO:
    """rsl_rl's PPO on a :class:`TorchVectorEnv`: :meth:`iterate` collects one rollout and updates."""

    NAME = "rsl_rl PPO"

    def __init__(self, recipe: recipes.Recipe, env_kwargs: dict[str, Any], seed: int, *, threads: int = 1,
                 env_threads: int | None = None, device: str = "cpu") -> None:
        require_rsl_rl()
        from rsl_rl.algorithms import PPO

        device = learner_device(device)

        self.recipe, self.env_kwargs, self.seed = recipe, env_kwargs, seed
        venv, self.obs_mean, self.obs_std = learner_env(recipe, env_kwargs, seed, threads, env_threads)
        privileged = None
        if recipe.privileged_critic:
            source = privileged_source(venv)
            statistics = rollout_statistics(venv, recipe.standardize_samples, seed + 2, lambda _: source())
            privileged = (source, *statistics)
        self.env = TorchVectorEnv(venv, self.obs_mean, self.obs_std, seed, METRICS.get(recipe.env_id, "distance"),
                                  privileged, device)
        with contextlib.redirect_stdout(io.StringIO()):  # (it prints the configuration and the networks)
            self.alg = PPO.construct_algorithm(self.env.get_observations(), self.env, rsl_config(recipe), device)
        if recipe.zero_output:  # the actor's mean starts at 0: a residual policy starts as the law it corrects
            import torch

            last = [m for m in self.alg.get_policy().mlp if isinstance(m, torch.nn.Linear)][-1]
            with torch.no_grad():
                last.weight.zero_()
                last.bias.zero_()
        self.timesteps = 0
        self.iterations = 0
        self.collect_seconds = 0.0  # [s] wall time in rollouts (env steps and the actor's sampling)
        self.update_seconds = 0.0  # [s] wall time in PPO's updates

    def iterate(self) -> dict[str, float]:
        """One rollout of ``n_steps`` per env and one PPO update; the losses and the episodes ended."""
        import torch

        obs = self.env.get_observations()
        self.alg.train_mode()
        start = time.perf_counter()
        with torch.inference_mode():
            for _ in range(self.recipe.n_steps):
                actions = self.alg.act(obs)
                obs, rewards, dones, extras = self.env.step(actions)
                self.alg.process_env_step(obs, rewards, dones, extras)
            self.alg.compute_returns(obs)
        middle = time.perf_counter()
        losses = self.alg.update()
        self.collect_seconds += middle - start
        self.update_seconds += time.perf_counter() - middle
        self.timesteps += self.recipe.n_steps * self.env.num_envs
        self.iterations += 1
        std = float(self.alg.get_policy().output_std.detach().mean())
        return losses | {"learning_rate": float(self.alg.learning_rate), "action_std": std} | self.env.take_episodes()

    def policy(self, card: dict[str, Any] | None = None) -> MLPPolicy:
        return actor_policy(self.alg, self.obs_mean, self.obs_std, dict(card or {}))

    def close(self) -> None:
        self.env.close()


def learner_class(recipe: recipes.Recipe) -> Any:
    """The parallel learner of ``recipe``: :class:`ParallelPPO` (rsl_rl) or
    :class:`~soft_envs.learn.offpolicy.ParallelSAC` (skrl)."""
    if recipe.learner == "skrl":
        from soft_envs.learn.offpolicy import ParallelSAC

        return ParallelSAC
    return ParallelPPO


def train_parallel(recipe: recipes.Recipe, *, minutes: float | None = 10.0, timesteps: int | None = None, seed: int = 0,
                   eval_every: int = 500_000, eval_episodes: int = 100, threads: int = 1,
                   env_threads: int | None = None, output: str | Path | None = None, progress: bool = True,
                   log=print_flushed, budget_clock: str = "wall", device: str = "cpu") -> TrainResult:
    """Train ``recipe`` (``learner="rsl_rl"``) until ``minutes`` (of wall time, or with
    ``budget_clock="cpu"`` of this process's CPU time, evaluations included) or ``timesteps``
    env steps; evaluate the deterministic policy every ``eval_every`` steps on ``eval_episodes``
    held-out episodes (seeds ``EVAL_SEED …``, single env); save ``output`` (``.npz`` + card).
    ``device``: where the networks and the batches live (``"cuda"``: a GPU; the vector env stays
    where it is, its arrays cross to the device once a step)."""
    recipe = recipe.validate()
    if recipe.learner not in recipes.PARALLEL_LEARNERS:
        raise InvalidParameterError(f"train_parallel trains {recipes.PARALLEL_LEARNERS} recipes; got learner "
                                    f"{recipe.learner!r}")
    check_budget(minutes, timesteps, eval_every, eval_episodes, threads, budget_clock)
    env_kwargs = recipe.make_kwargs()
    use = clock.use_clock(clock.process_time) if budget_clock == "cpu" else contextlib.nullcontext()
    history: list[tuple[int, float, dict[str, float]]] = []
    curve: list[dict[str, float]] = []
    wall0, cpu0, load_start = time.perf_counter(), clock.process_time(), load_average()
    with use:
        start = clock.now()
        learner = learner_class(recipe)(recipe, env_kwargs, seed, threads=threads, env_threads=env_threads,
                                        device=device)
        log(f"training {learner.NAME} on {recipe.env_id} {env_kwargs}, {recipe.n_envs} envs, seed {seed}")

        def evaluate():
            return evaluate_policy(learner.policy(), env_kwargs, eval_episodes, env_id=recipe.env_id,
                                   progress=progress)

        budget = None if minutes is None else 60.0 * minutes
        bar = progress_bar(total=timesteps, desc="train-rl (parallel)", unit="steps", time_budget=budget,
                           enabled=progress, dynamic_ncols=True)
        next_eval = eval_every
        try:
            while True:
                row = learner.iterate()
                used = clock.now() - start
                curve.append({"timesteps": learner.timesteps, "seconds": used} | row)
                if learner.timesteps >= next_eval:
                    next_eval += eval_every
                    result = evaluate()
                    used = clock.now() - start
                    history.append((learner.timesteps, used, result.summary()))
                    log(f"{learner.timesteps} steps, {used / 60:.1f} min: {result.line()}")
                    bar.set_postfix_str(f"last evaluation ({learner.timesteps:,} steps): {result.line()}")
                bar.update_to(learner.timesteps, used=used)
                if (budget is not None and used >= budget) or (timesteps is not None
                                                              and learner.timesteps >= timesteps):
                    break
        finally:
            bar.close()
        seconds = clock.now() - start
    final = evaluate()
    wall, cpu = time.perf_counter() - wall0, clock.process_time() - cpu0
    learner.close()
    result = TrainResult(learner.timesteps, seconds, final, history, env_kwargs, env_id=recipe.env_id)
    log(f"final, {learner.timesteps} steps, {seconds / 60:.1f} min ({budget_clock}): {final.line()}")
    if output is not None:
        card = {"env_id": recipe.env_id, "env_kwargs": env_kwargs, "learner": learner.NAME,
                "recipe": dataclasses.asdict(recipe), "seed": seed, "timesteps": learner.timesteps,
                "budget_clock": budget_clock, "budget_minutes": minutes, "wall_seconds": wall, "cpu_seconds": cpu,
                "evaluation": final.summary() | {"first_seed": EVAL_SEED}, "soft_envs_version": __version__,
                "threads": {"torch": threads, "env": env_threads or "every core"}, "device": device,
                "load_average": [load_start, load_average()], "load_average_15min": load_average(15),
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}"}
        path = learner.policy(card).save(output)
        Path(path).with_suffix(".curve.json").write_text(json.dumps(curve) + "\n")
        result.path = str(path)
        log(f"saved {path} (+ {path.with_suffix('.json').name}, learning curve {path.with_suffix('.curve.json').name})")
    result.curve = curve
    return result
