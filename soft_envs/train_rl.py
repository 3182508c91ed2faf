"""``soft-envs train-rl``: train a Stable-Baselines3 policy on kinematic ``PeterReach-v0``.

Trains on the analytic 2-module PETER arm (``kinematic=True``, no PyBullet) within a wall-clock
budget and/or a number of environment steps, evaluates the deterministic policy every
``eval_every`` steps on held-out goals (those of the env's seeds ``EVAL_SEED, EVAL_SEED + 1, …``;
training draws its goals from the stream of its own ``seed``), and saves the policy
(``PATH.zip``) with the env keywords it was trained with (``PATH.json``, read by
:func:`policy_record`; :func:`load_model` loads the policy), which is what
``soft-envs evaluate --controllers sb3:ALGO:PATH.zip`` needs. It prints the final figures: the
fraction of evaluation episodes that end within 5 mm and within 1 mm of the goal, and the
median and mean final distance.

The recipe (defaults of :class:`Recipe`; the experiments behind it are in the README):

* the networks see the observation standardised (:class:`~soft_envs.policy_layers.StandardizedInput`,
  mean and standard deviation of the env's observations under random actions, saved with the
  policy). This matters most: the observation is in metres, the goals vary by millimetres about
  a height of 0.12 m, and on raw inputs SAC, TD3 and HER alike first learn the horizontal
  position and sit for 10–40 thousand steps at ~70 % within 5 mm with the height unlearned;
* the reward is the env's default scale (distance in centimetres, O(1) a step); in metres
  the same recipe learns about twice as slowly;
* the kinematic env is a goal-conditioned contextual bandit with feedback — the tip is a
  function of the action alone, so the best action of any step is the IK solution of the goal,
  whatever the past. A short horizon (``gamma = 0.5``) keeps the critic's target close to the
  step's own reward; the learning rate is 1e-3 (SB3's 3e-4 learns the last millimetre slower);
* the goal-conditioned form (``goal_conditioned=True``) with hindsight relabelling (SB3's
  ``HerReplayBuffer``): every step also teaches where its action leads;
* torch runs on ``threads`` threads (default 1), so that the environment and the learner share
  the cores instead of oversubscribing them.

Needs the ``learn`` extra (PyTorch, stable-baselines3).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError, MissingDependencyError, check_integer, check_positive

ENV_ID = "soft_envs/PeterReach-v0"
ALGORITHMS = ("SAC", "TD3")
EVAL_SEED = 1_000_000  # first seed of the held-out evaluation goals
MAX_MINUTES = 24 * 60.0
DEFAULT_MINUTES = 10.0  # the wall-clock budget of `soft-envs train-rl`


@dataclass
class Recipe:
    """Algorithm and hyper-parameters (Stable-Baselines3 names).

    ``net_arch`` is the hidden layers of the actor and of the critic; ``her`` selects the
    goal-conditioned env with SB3's ``HerReplayBuffer`` (``n_sampled_goal`` relabelled goals per
    real one, ``goal_selection_strategy``); ``action_noise`` is the standard deviation of TD3's
    Gaussian exploration noise (normalised actions).
    """

    algo: str = "SAC"
    gamma: float = 0.5
    net_arch: tuple[int, ...] = (256, 256)
    learning_rate: float = 1e-3
    batch_size: int = 256
    buffer_size: int = 1_000_000
    learning_starts: int = 1000
    train_freq: int = 1
    gradient_steps: int = 1
    her: bool = True
    n_sampled_goal: int = 4
    goal_selection_strategy: str = "future"
    action_noise: float = 0.1
    standardize: bool = True

    def validate(self) -> Recipe:
        """Raise :class:`InvalidParameterError` on a bad value; return ``self``."""
        if self.algo.upper() not in ALGORITHMS:
            raise InvalidParameterError(f"algo must be one of {ALGORITHMS}; got {self.algo!r}")
        if not 0.0 <= self.gamma < 1.0:
            raise InvalidParameterError(f"gamma must be in [0, 1); got {self.gamma!r}")
        if not self.net_arch:
            raise InvalidParameterError("net_arch needs at least one hidden layer")
        for width in self.net_arch:
            check_integer("net_arch width", width, minimum=1, maximum=65_536)
        check_positive("learning_rate", self.learning_rate, 1.0)
        for name in ("batch_size", "buffer_size", "train_freq", "gradient_steps", "n_sampled_goal"):
            check_integer(name, getattr(self, name), minimum=1)
        check_integer("learning_starts", self.learning_starts, minimum=0)
        if self.goal_selection_strategy not in ("future", "final", "episode"):
            raise InvalidParameterError("goal_selection_strategy must be 'future', 'final' or 'episode'; "
                                        f"got {self.goal_selection_strategy!r}")
        check_positive("action_noise", self.action_noise, 10.0)
        return self


@dataclass
class EvalResult:
    """Final tip distances [m] of deterministic evaluation episodes and their summary."""

    distances: np.ndarray

    @property
    def episodes(self) -> int:
        return int(self.distances.size)

    def within(self, radius: float) -> float:
        """Fraction of episodes that ended within ``radius`` [m] of the goal."""
        return float(np.mean(self.distances < radius))

    def summary(self) -> dict[str, float]:
        """``within_5mm``, ``within_1mm`` (fractions), ``median_m``, ``mean_m`` [m], ``episodes``."""
        return {"episodes": self.episodes, "within_5mm": self.within(5e-3), "within_1mm": self.within(1e-3),
                "median_m": float(np.median(self.distances)), "mean_m": float(np.mean(self.distances))}

    def line(self) -> str:
        s = self.summary()
        return (f"within 5 mm {100 * s['within_5mm']:.0f} %, within 1 mm {100 * s['within_1mm']:.0f} %, "
                f"median {1e3 * s['median_m']:.2f} mm, mean {1e3 * s['mean_m']:.2f} mm ({s['episodes']} episodes)")


@dataclass
class TrainResult:
    """What :func:`train` did: steps, wall time [s], the evaluations along the way
    (``(steps, seconds, summary)``) and the final one, and the files written."""

    timesteps: int
    seconds: float
    final: EvalResult
    history: list[tuple[int, float, dict[str, float]]] = field(default_factory=list)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    path: str | None = None


def observation_statistics(env_kwargs: dict[str, Any], samples: int = 2000,
                           seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the flattened observations of ``env_kwargs``'s env under
    uniformly random actions (a constant entry gets std 1)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    env = gym.make(ENV_ID, **env_kwargs)
    env.action_space.seed(seed)
    rows = []
    try:
        obs, _ = env.reset(seed=seed)
        for _ in range(int(samples)):
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            rows.append(gym.spaces.flatten(env.observation_space, obs))
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    data = np.asarray(rows, dtype=np.float64)
    std = data.std(axis=0)
    return data.mean(axis=0), np.where(std > 1e-9, std, 1.0)


def env_kwargs_for(recipe: Recipe, *, n_modules: int = 2, realism: str | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``gym.make`` keywords of the training env (kinematic; the Dict form with HER)."""
    kwargs: dict[str, Any] = {"n_modules": n_modules, "kinematic": True, "goal_conditioned": bool(recipe.her)}
    if realism is not None:
        kwargs["realism"] = realism
    return kwargs | dict(extra or {})


def evaluate_policy(model, env_kwargs: dict[str, Any], episodes: int = 100, seed: int = EVAL_SEED) -> EvalResult:
    """Run ``model`` deterministically through ``env.step`` on the goals of seeds
    ``seed … seed + episodes − 1``; the final distances [m]."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    env = gym.make(ENV_ID, **env_kwargs)
    out = np.empty(int(episodes))
    try:
        for k in range(int(episodes)):
            obs, info = env.reset(seed=seed + k)
            done = False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            out[k] = info["distance"]
    finally:
        env.close()
    return EvalResult(out)


def _sidecar(path: str | Path) -> Path:
    path = Path(path)
    return path.with_suffix(".json") if path.suffix == ".zip" else path.with_name(path.name + ".json")


def save_policy(model, path: str | Path, env_kwargs: dict[str, Any], metadata: dict[str, Any] | None = None) -> Path:
    """Save ``model`` to ``PATH.zip`` and its env keywords (and ``metadata``) to ``PATH.json``;
    returns the zip's path."""
    path = Path(path)
    zip_path = path if path.suffix == ".zip" else path.with_name(path.name + ".zip")
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(zip_path)
    record = {"env_id": ENV_ID, "algo": type(model).__name__, "env_kwargs": env_kwargs} | dict(metadata or {})
    _sidecar(zip_path).write_text(json.dumps(record, indent=2, default=_jsonable) + "\n")
    return zip_path


def policy_record(path: str | Path) -> dict[str, Any]:
    """The ``PATH.json`` written next to a saved policy (``{}`` if there is none)."""
    sidecar = _sidecar(path)
    return json.loads(sidecar.read_text()) if sidecar.exists() else {}


def load_model(path: str | Path, algo: str | None = None):
    """The Stable-Baselines3 model saved at ``path``, for prediction (CPU, no env needed, even
    for a model trained with HER). ``algo`` (``"SAC"``, ``"TD3"``, any SB3 algorithm) defaults
    to the one in ``PATH.json``."""
    sb3 = _require_sb3()
    name = (algo or policy_record(path).get("algo", "")).upper()
    algorithm = getattr(sb3, name, None) if name else None
    if algorithm is None or not hasattr(algorithm, "load"):
        raise InvalidParameterError(f"unknown Stable-Baselines3 algorithm {name!r} for {path}; "
                                    f"use one of {ALGORITHMS} or another algorithm of stable_baselines3")
    # A replay buffer is only for training: loading without one needs no env (HER's does).
    return algorithm.load(str(path), device="cpu", custom_objects={
        "replay_buffer_class": None, "replay_buffer_kwargs": {}, "buffer_size": 1})


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def _require_sb3():
    try:
        import stable_baselines3
        import torch  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingDependencyError("Stable-Baselines3 policies need the 'learn' extra: "
                                     "pip install 'soft_envs[learn]'") from exc
    return stable_baselines3


def make_model(recipe: Recipe, env, env_kwargs: dict[str, Any], seed: int):
    """The SB3 model of ``recipe`` on ``env`` (made from ``env_kwargs``; CPU)."""
    sb3 = _require_sb3()
    from stable_baselines3.common.noise import NormalActionNoise

    algo = recipe.algo.upper()
    kwargs: dict[str, Any] = dict(
        gamma=recipe.gamma, learning_rate=recipe.learning_rate, batch_size=recipe.batch_size,
        buffer_size=recipe.buffer_size, learning_starts=recipe.learning_starts, train_freq=recipe.train_freq,
        gradient_steps=recipe.gradient_steps, policy_kwargs={"net_arch": list(recipe.net_arch)},
        seed=seed, device="cpu", verbose=0)
    if recipe.standardize:
        mean, std = observation_statistics(env_kwargs, seed=seed + 1)
        from soft_envs.policy_layers import StandardizedInput

        kwargs["policy_kwargs"] |= {"features_extractor_class": StandardizedInput,
                                    "features_extractor_kwargs": {"mean": mean, "std": std}}
    if recipe.her:
        kwargs["replay_buffer_class"] = sb3.HerReplayBuffer
        kwargs["replay_buffer_kwargs"] = {"n_sampled_goal": recipe.n_sampled_goal,
                                          "goal_selection_strategy": recipe.goal_selection_strategy}
    if algo == "TD3":
        n = env.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(n), np.full(n, recipe.action_noise))
    policy = "MultiInputPolicy" if recipe.her else "MlpPolicy"
    return getattr(sb3, algo)(policy, env, **kwargs)


def train(recipe: Recipe | None = None, *, minutes: float | None = 20.0, timesteps: int | None = None,
          seed: int = 0, n_modules: int = 2, realism: str | None = None, eval_every: int = 10_000,
          eval_episodes: int = 100, threads: int = 1, output: str | Path | None = None,
          env_extra: dict[str, Any] | None = None, progress: bool = True, log=print) -> TrainResult:
    """Train ``recipe`` on kinematic ``PeterReach-v0`` until ``minutes`` of wall time or
    ``timesteps`` env steps (whichever comes first; at least one of them), evaluating every
    ``eval_every`` steps on ``eval_episodes`` held-out goals; save to ``output`` if given."""
    recipe = (recipe or Recipe()).validate()
    if minutes is None and timesteps is None:
        raise InvalidParameterError("give a budget: minutes and/or timesteps")
    if minutes is not None:
        check_positive("minutes", minutes, MAX_MINUTES)
    if timesteps is not None:
        check_integer("timesteps", timesteps, minimum=1)
    check_integer("eval_every", eval_every, minimum=1)
    check_integer("eval_episodes", eval_episodes, minimum=1)
    check_integer("threads", threads, minimum=1, maximum=1024)
    _require_sb3()
    import gymnasium as gym
    import torch

    import soft_envs  # noqa: F401  (registers the environments)

    torch.set_num_threads(int(threads))
    env_kwargs = env_kwargs_for(recipe, n_modules=n_modules, realism=realism, extra=env_extra)
    env = gym.make(ENV_ID, **env_kwargs)  # checks the keywords before anything is trained
    model = make_model(recipe, env, env_kwargs, seed)
    callback = _budget_callback(None if minutes is None else 60.0 * minutes, timesteps, eval_every,
                                lambda m: evaluate_policy(m, env_kwargs, eval_episodes), progress, log)
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps or 10**12, callback=callback)
    seconds = time.perf_counter() - start
    env.close()
    final = evaluate_policy(model, env_kwargs, eval_episodes)
    log(f"final, {model.num_timesteps} steps, {seconds / 60:.1f} min: {final.line()}")
    result = TrainResult(model.num_timesteps, seconds, final, callback.history, env_kwargs)
    if output is not None:
        result.path = str(save_policy(model, output, env_kwargs, {
            "recipe": dataclasses.asdict(recipe), "seed": seed, "timesteps": model.num_timesteps,
            "seconds": seconds, "evaluation": final.summary() | {"first_seed": EVAL_SEED}}))
        log(f"saved {result.path} (+ {_sidecar(result.path).name})")
    return result


def _budget_callback(seconds: float | None, steps: int | None, eval_every: int, evaluate, progress: bool, log):
    """An SB3 callback that stops at the budget (``seconds`` of wall time or ``steps``),
    evaluates every ``eval_every`` steps (``evaluate(model) -> EvalResult``) and drives the
    progress bar (in seconds with a time budget, else in steps). Its ``history`` lists the
    evaluations as ``(steps, seconds, summary)``."""
    from stable_baselines3.common.callbacks import BaseCallback

    from soft_envs.console import progress as progress_bar

    class BudgetCallback(BaseCallback):
        history: list[tuple[int, float, dict[str, float]]] = []

        def _on_training_start(self) -> None:
            self.history = []
            self.start = time.perf_counter()
            self.next_eval = eval_every
            self.bar = progress_bar(total=round(seconds) if seconds is not None else steps, desc="train-rl",
                                    unit="s" if seconds is not None else "step", enabled=progress,
                                    dynamic_ncols=True)

        def _on_step(self) -> bool:
            elapsed = time.perf_counter() - self.start
            if self.num_timesteps >= self.next_eval:
                self.next_eval += eval_every
                result = evaluate(self.model)
                self.history.append((self.num_timesteps, elapsed, result.summary()))
                self.bar.set_postfix_str(f"{self.num_timesteps} steps, within 5 mm {100 * result.within(5e-3):.0f} %")
                log(f"{self.num_timesteps} steps, {elapsed / 60:.1f} min: {result.line()}")
            done = seconds is not None and elapsed >= seconds
            position = min(round(elapsed), self.bar.total) if seconds is not None else self.num_timesteps
            self.bar.update(position - self.bar.n)
            return not done

        def _on_training_end(self) -> None:
            self.bar.close()

    return BudgetCallback()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``soft-envs train-rl`` options."""
    default = Recipe()
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help=f"wall-clock budget [min] (default {DEFAULT_MINUTES:g}; 0: none, then --timesteps)")
    parser.add_argument("--timesteps", type=int, help="env-step budget (whichever budget ends first)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="peter_reach_policy.zip",
                        help="policy file (.zip; the env keywords go to the same name with .json)")
    parser.add_argument("--realism", help="the env's realism preset to train and test under (e.g. realistic)")
    parser.add_argument("--modules", type=int, default=2)
    parser.add_argument("--algo", choices=ALGORITHMS, type=str.upper, default=default.algo)
    parser.add_argument("--gamma", type=float, default=default.gamma, help="discount")
    parser.add_argument("--her", action=argparse.BooleanOptionalAction, default=default.her,
                        help="goal-conditioned env + hindsight relabelling (HerReplayBuffer)")
    parser.add_argument("--standardize", action=argparse.BooleanOptionalAction, default=default.standardize,
                        help="standardise the networks' input (StandardizedInput)")
    parser.add_argument("--net", default=",".join(map(str, default.net_arch)),
                        help="hidden layers of actor and critic, e.g. 256,256")
    parser.add_argument("--learning-rate", type=float, default=default.learning_rate)
    parser.add_argument("--batch-size", type=int, default=default.batch_size)
    parser.add_argument("--train-freq", type=int, default=default.train_freq)
    parser.add_argument("--gradient-steps", type=int, default=default.gradient_steps)
    parser.add_argument("--eval-every", type=int, default=10_000, help="env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")


def main(args: argparse.Namespace) -> int:
    """``soft-envs train-rl``: train, print the evaluations and the final figures, save."""
    try:
        net = tuple(int(w) for w in str(args.net).split(",") if w.strip())
        recipe = Recipe(algo=args.algo, gamma=args.gamma, her=args.her, standardize=args.standardize, net_arch=net,
                        learning_rate=args.learning_rate,
                        batch_size=args.batch_size, train_freq=args.train_freq,
                        gradient_steps=args.gradient_steps).validate()
        minutes = args.minutes if args.minutes and args.minutes > 0 else None
        result = train(recipe, minutes=minutes, timesteps=args.timesteps, seed=args.seed, n_modules=args.modules,
                       realism=args.realism, eval_every=args.eval_every, eval_episodes=args.eval_episodes,
                       threads=args.threads, output=args.output)
    except ValueError as exc:
        print(f"train-rl: {exc}", file=sys.stderr)
        return 2
    s = result.final.summary()
    print(f"{recipe.algo} on {ENV_ID} {result.env_kwargs}, seed {args.seed}: {result.timesteps} steps in "
          f"{result.seconds / 60:.1f} min; {s['episodes']} held-out goals: within 5 mm {100 * s['within_5mm']:.1f} %, "
          f"within 1 mm {100 * s['within_1mm']:.1f} %, final distance median {1e3 * s['median_m']:.2f} mm, "
          f"mean {1e3 * s['mean_m']:.2f} mm")
    return 0
