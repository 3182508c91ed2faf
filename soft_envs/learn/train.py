"""``soft-envs train-rl``: train a Stable-Baselines3 policy on any soft_envs env, within a budget.

Trains the recipe of the env (:mod:`soft_envs.learn.recipes`; SAC + HER on the goal-conditioned
forms, PPO on parallel envs, sb3-contrib's RecurrentPPO) until a wall-clock budget and/or a
number of env steps, evaluates the deterministic policy every ``eval_every`` steps on held-out
episodes (the env's seeds ``EVAL_SEED, EVAL_SEED + 1, …``; training draws from the stream of its
own ``seed``), and saves the policy (``PATH.zip``) with the env id and keywords it was trained
with (``PATH.json``, read by :func:`policy_record`; :func:`load_model` loads the policy), which
is what ``soft-envs evaluate --controllers sb3:ALGO:PATH.zip`` needs.

Long runs lose nothing (:mod:`soft_envs.learn.checkpoint`): every ``checkpoint_every`` minutes and
on SIGTERM the run writes ``PATH.ckpt/`` (the model with its optimiser, the replay buffer, the
RNG states, the step count and the elapsed budget); ``resume=True`` continues from it to the
same total budget. ``tensorboard`` logs SB3's own scalars; :func:`train_seeds` runs several
seeds in parallel processes or on Ray (as ``soft-envs evaluate --ray`` does).

The kinematic PeterReach recipe (the experiments behind it are on the docs page "Learning"): standardised
network input (goals vary by millimetres about 0.12 m; on raw inputs SAC first learns the
horizontal position and sits for 10–40 thousand steps at ~70 % within 5 mm), the env's default
reward scale (centimetres), ``gamma = 0.5`` (the kinematic env is a contextual bandit with
feedback), learning rate 1e-3, HER; torch on ``threads`` threads (default 1) so that the env and
the learner share the cores. Needs the ``learn`` extra (PyTorch, stable-baselines3, sb3-contrib).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs import clock
from soft_envs.exceptions import InvalidParameterError, MissingDependencyError, check_integer, check_positive
from soft_envs.learn.checkpoint import to_json_value
from soft_envs.learn.recipes import ALGORITHMS, RECIPES, Recipe, recipe_for
from soft_envs.sim.threads import MAX_THREADS

ENV_ID = "soft_envs/PeterReach-v0"
EVAL_SEED = 1_000_000  # first seed of the held-out evaluation episodes
MAX_MINUTES = 24 * 60.0
MAX_TIMESTEPS = 10**12  # the most env steps a run's budget (and eval_every) may name
MAX_EVAL_EPISODES = 100_000  # the most held-out episodes of one evaluation
MAX_SEEDS = 10_000  # the most seeds of one train_seeds (--seeds)
DEFAULT_MINUTES = 10.0  # the wall-clock budget of `soft-envs train-rl`
#: What a ``minutes`` budget counts: wall time, or the training process's CPU time
#: (:func:`soft_envs.clock.process_time`).
BUDGET_CLOCKS = ("wall", "cpu")
#: The ``info`` key each env is measured by (an error [m or rad], the walk's distance [m]).
METRICS = {"soft_envs/PeterReach-v0": "distance", "soft_envs/PCCTrack-v0": "tracking_error",
           "soft_envs/PCCReach-v0": "distance", "soft_envs/PCCPush-v0": "object_distance",
           "soft_envs/QuadrupedWalk-v0": "x", "soft_envs/QuadrupedPose-v0": "orientation_error",
           "soft_envs/HexapodPose-v0": "position_error"}

__all__ = ["ALGORITHMS", "EVAL_SEED", "EvalResult", "RECIPES", "Recipe", "TrainResult", "evaluate_policy",
           "load_model", "policy_record", "recipe_for", "save_policy", "train", "train_seeds"]


@dataclass
class EvalResult:
    """Deterministic evaluation episodes: the metric at the end of each (``distances``, [m] or
    [rad]; the walk: distance walked), its RMS over each episode's steps, success at the end,
    whether the episode terminated early (a fall, a folded arm), the returns, and in an env with
    obstacles the collisions of each episode (``collisions``; empty otherwise)."""

    distances: np.ndarray
    rms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    success: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    terminated: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    returns: np.ndarray = field(default_factory=lambda: np.zeros(0))
    metric: str = "distance"
    collisions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def episodes(self) -> int:
        return int(self.distances.size)

    def within(self, radius: float) -> float:
        """Fraction of episodes whose final metric is below ``radius``."""
        return float(np.mean(self.distances < radius))

    def summary(self) -> dict[str, float]:
        """``within_5mm``, ``within_1mm``, ``median_m``, ``mean_m`` (the final metric), ``rms_m``
        (mean of the episodes' RMS), ``success``, ``terminated``, ``return``, ``episodes``, and with
        obstacles ``collision_free`` (the fraction of episodes without a collision)."""
        mean = lambda a: float(np.mean(a)) if np.size(a) else float("nan")  # noqa: E731
        summary = {"episodes": self.episodes, "within_5mm": self.within(5e-3), "within_1mm": self.within(1e-3),
                   "median_m": float(np.median(self.distances)), "mean_m": float(np.mean(self.distances)),
                   "rms_m": mean(self.rms), "success": mean(self.success), "terminated": mean(self.terminated),
                   "return": mean(self.returns)}
        if self.collisions.size:
            summary["collision_free"] = float(np.mean(self.collisions == 0))
        return summary

    def line(self) -> str:
        s = self.summary()
        if self.metric == "x":
            return (f"distance walked mean {s['mean_m']:.3f} m, falls {100 * s['terminated']:.0f} %, "
                    f"return {s['return']:.1f} ({s['episodes']} episodes)")
        if self.metric == "tracking_error":
            return (f"RMS tracking error {1e3 * s['rms_m']:.2f} mm, final {1e3 * s['mean_m']:.2f} mm, stopped "
                    f"{100 * s['terminated']:.0f} % ({s['episodes']} episodes)")
        if self.metric == "orientation_error":
            return (f"final error mean {np.degrees(s['mean_m']):.2f}°, success {100 * s['success']:.0f} %, "
                    f"falls {100 * s['terminated']:.0f} % ({s['episodes']} episodes)")
        contact = "" if "collision_free" not in s else \
            f", collision-free {100 * s['collision_free']:.0f} %, success (no collision) {100 * s['success']:.0f} %"
        return (f"within 5 mm {100 * s['within_5mm']:.0f} %, within 1 mm {100 * s['within_1mm']:.0f} %, "
                f"median {1e3 * s['median_m']:.2f} mm, mean {1e3 * s['mean_m']:.2f} mm{contact} "
                f"({s['episodes']} episodes)")


@dataclass
class TrainResult:
    """What :func:`train` did: steps, wall time [s] (over every resumed part), the evaluations
    along the way (``(steps, seconds, summary)``) and the final one, the files written, and
    whether a SIGTERM stopped it (then ``PATH.ckpt`` holds the run)."""

    timesteps: int
    seconds: float
    final: EvalResult | None
    history: list[tuple[int, float, dict[str, float]]] = field(default_factory=list)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    env_id: str = ENV_ID
    interrupted: bool = False
    curve: list[dict[str, float]] = field(default_factory=list)  # per update (the parallel learner's)


def _require_sb3():
    try:
        import stable_baselines3
        import torch  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingDependencyError("Stable-Baselines3 policies need the 'learn' extra: "
                                     "pip install 'soft_envs[learn]'") from exc
    return stable_baselines3


def algorithm_class(name: str):
    """The SB3 (or sb3-contrib) class called ``name`` (case-insensitive)."""
    sb3 = _require_sb3()
    key = name.upper()
    if key == "RECURRENTPPO":
        try:
            from sb3_contrib import RecurrentPPO
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise MissingDependencyError("RecurrentPPO needs sb3-contrib (the 'learn' extra)") from exc
        return RecurrentPPO
    algorithm = next((getattr(sb3, n) for n in dir(sb3) if n.upper() == key), None)
    if algorithm is None or not hasattr(algorithm, "load"):
        raise InvalidParameterError(f"unknown Stable-Baselines3 algorithm {name!r}; use one of {ALGORITHMS}")
    return algorithm


def make_env(env_id: str, env_kwargs: dict[str, Any], base_gait: str = ""):
    """``gym.make(env_id, **env_kwargs)``, as a modulation of ``base_gait`` if one is named
    (:mod:`soft_envs.learn.gait_residual`)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)
    from soft_envs.learn.gait_residual import wrap

    return wrap(gym.make(env_id, **env_kwargs), base_gait)


def observation_statistics(env_id: str, env_kwargs: dict[str, Any], samples: int = 2000,
                           seed: int = 0, base_gait: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the flattened observations of the env under uniformly
    random actions (a constant entry gets std 1)."""
    import gymnasium as gym

    env = make_env(env_id, env_kwargs, base_gait)
    env.action_space.seed(seed)
    rows = []
    try:
        obs, _ = env.reset(seed=seed)
        rows.append(gym.spaces.flatten(env.observation_space, obs))
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


def env_kwargs_for(recipe: Recipe, *, n_modules: int | None = None, realism: str | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``gym.make`` keywords of the training env (the recipe's; the Dict form with HER)."""
    kwargs = recipe.make_kwargs()
    if n_modules is not None:
        kwargs["n_modules"] = n_modules
    if realism is not None:
        kwargs["realism"] = realism
    return kwargs | dict(extra or {})


def evaluate_policy(model, env_kwargs: dict[str, Any], episodes: int = 100, seed: int = EVAL_SEED,
                    env_id: str = ENV_ID, base_gait: str = "", progress: bool = False) -> EvalResult:
    """Run ``model`` deterministically through ``env.step`` on the episodes of seeds ``seed …
    seed + episodes − 1`` and measure them (:data:`METRICS`); ``progress``: report the episodes
    (:func:`soft_envs.console.progress`)."""
    from soft_envs.console import progress as progress_bar

    metric = METRICS.get(env_id, "distance")
    env = make_env(env_id, env_kwargs, base_gait)
    recurrent = type(model).__name__ == "RecurrentPPO"
    n = int(episodes)
    final, rms, success, ended, returns = np.empty(n), np.empty(n), np.zeros(n, bool), np.zeros(n, bool), np.empty(n)
    collisions, touches = np.zeros(n, np.int64), False
    try:
        for k in progress_bar(range(n), desc=f"evaluation on {env_id.split('/')[-1]}", unit="episodes",
                              enabled=progress, leave=False):
            obs, info = env.reset(seed=seed + k)
            state, start, done, total, squares = None, np.ones((1,), bool), False, 0.0, []
            while not done:
                if recurrent:
                    action, state = model.predict(obs, state=state, episode_start=start, deterministic=True)
                    start = np.zeros((1,), bool)
                else:
                    action, _ = model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, info = env.step(action)
                total += float(reward)
                squares.append(float(info.get(metric, 0.0)) ** 2)
                done = terminated or truncated
            final[k], rms[k], returns[k] = info[metric], np.sqrt(np.mean(squares)), total
            success[k], ended[k] = bool(info.get("is_success", False)), bool(terminated)
            collisions[k] = int(info.get("collisions", 0))
            touches = "collisions" in info
    finally:
        env.close()
    return EvalResult(final, rms, success, ended, returns, metric, collisions if n and touches else collisions[:0])


def _sidecar(path: str | Path) -> Path:
    path = Path(path)
    return path.with_suffix(".json") if path.suffix == ".zip" else path.with_name(path.name + ".json")


def _zip_path(path: str | Path) -> Path:
    path = Path(path)
    return path if path.suffix == ".zip" else path.with_name(path.name + ".zip")


def save_policy(model, path: str | Path, env_kwargs: dict[str, Any], metadata: dict[str, Any] | None = None,
                env_id: str = ENV_ID) -> Path:
    """Save ``model`` to ``PATH.zip`` and its env id and keywords (and ``metadata``) to
    ``PATH.json``; returns the zip's path."""
    zip_path = _zip_path(path)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(zip_path)
    record = {"env_id": env_id, "algo": type(model).__name__, "env_kwargs": env_kwargs} | dict(metadata or {})
    _sidecar(zip_path).write_text(json.dumps(record, indent=2, default=to_json_value) + "\n")
    return zip_path


def policy_record(path: str | Path) -> dict[str, Any]:
    """The ``PATH.json`` written next to a saved policy (``{}`` if there is none)."""
    sidecar = _sidecar(path)
    return json.loads(sidecar.read_text()) if sidecar.exists() else {}


def load_model(path: str | Path, algo: str | None = None):
    """The model saved at ``path``, for prediction (CPU, no env needed, even for a model trained
    with HER). ``algo`` (``"SAC"``, ``"PPO"``, ``"RecurrentPPO"``, …) defaults to ``PATH.json``'s."""
    name = algo or policy_record(path).get("algo", "")
    if not name:
        raise InvalidParameterError(f"unknown Stable-Baselines3 algorithm for {path}: give one (sb3:ALGO:PATH)")
    algorithm = algorithm_class(name)
    # Policies saved before 0.4 name their input layer by its old module (soft_envs.policy_layers).
    sys.modules.setdefault("soft_envs.policy_layers", importlib.import_module("soft_envs.learn.layers"))
    objects: dict[str, Any] = {}
    if name.upper() in ("SAC", "TD3", "DDPG", "DQN"):
        # A replay buffer is only for training: loading without one needs no env (HER's does).
        objects = {"replay_buffer_class": None, "replay_buffer_kwargs": {}, "buffer_size": 1}
    return algorithm.load(str(path), device="cpu", custom_objects=objects)


def make_training_env(recipe: Recipe, env_kwargs: dict[str, Any], seed: int):
    """The env SB3 trains on: one env for the off-policy algorithms, ``n_envs`` in a vector env
    for PPO (the native vector env where the env has one, else SB3's ``DummyVecEnv``)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    if recipe.off_policy:
        return make_env(recipe.env_id, env_kwargs, recipe.base_gait)
    native = gym.spec(recipe.env_id).vector_entry_point is not None and not recipe.base_gait
    if native and env_kwargs.get("action_mode", "absolute") == "absolute" and not env_kwargs.get("history"):
        from soft_envs.learn.sb3_vector import sb3_vec_env

        return sb3_vec_env(recipe.env_id, recipe.n_envs, seed=seed, vectorization_mode="vector_entry_point",
                           **env_kwargs)
    from stable_baselines3.common.env_util import make_vec_env

    if recipe.base_gait:
        from soft_envs.learn.gait_residual import GaitResidualEnv

        return make_vec_env(recipe.env_id, n_envs=recipe.n_envs, seed=seed, env_kwargs=env_kwargs,
                            wrapper_class=GaitResidualEnv, wrapper_kwargs={"base": recipe.base_gait})
    return make_vec_env(recipe.env_id, n_envs=recipe.n_envs, seed=seed, env_kwargs=env_kwargs)


def make_model(recipe: Recipe, env, env_kwargs: dict[str, Any], seed: int, tensorboard: str | None = None):
    """The SB3 model of ``recipe`` on ``env`` (made from ``env_kwargs``; CPU)."""
    sb3 = _require_sb3()
    from stable_baselines3.common.noise import NormalActionNoise

    algo = recipe.algo.upper()
    policy_kwargs: dict[str, Any] = {"net_arch": list(recipe.net_arch)}
    if recipe.standardize:
        from soft_envs.learn.layers import StandardizedInput

        mean, std = observation_statistics(recipe.env_id, env_kwargs, recipe.standardize_samples, seed=seed + 1,
                                           base_gait=recipe.base_gait)
        policy_kwargs |= {"features_extractor_class": StandardizedInput,
                          "features_extractor_kwargs": {"mean": mean, "std": std}}
    common = dict(gamma=recipe.gamma, learning_rate=recipe.learning_rate, seed=seed, device="cpu", verbose=0,
                  tensorboard_log=tensorboard, policy_kwargs=policy_kwargs)
    dict_obs = hasattr(env.observation_space, "spaces")
    if recipe.off_policy:
        kwargs = common | dict(batch_size=recipe.batch_size, buffer_size=recipe.buffer_size,
                               learning_starts=recipe.learning_starts, train_freq=recipe.train_freq,
                               gradient_steps=recipe.gradient_steps)
        if recipe.her:
            kwargs["replay_buffer_class"] = sb3.HerReplayBuffer
            kwargs["replay_buffer_kwargs"] = {"n_sampled_goal": recipe.n_sampled_goal,
                                              "goal_selection_strategy": recipe.goal_selection_strategy}
        if algo == "TD3":
            n = env.action_space.shape[0]
            kwargs["action_noise"] = NormalActionNoise(np.zeros(n), np.full(n, recipe.action_noise))
        return algorithm_class(algo)("MultiInputPolicy" if dict_obs else "MlpPolicy", env, **kwargs)
    kwargs = common | dict(n_steps=recipe.n_steps, batch_size=recipe.batch_size, n_epochs=recipe.n_epochs,
                           gae_lambda=recipe.gae_lambda, ent_coef=recipe.ent_coef, clip_range=recipe.clip_range)
    if algo == "RECURRENTPPO":
        kwargs["policy_kwargs"] = {k: v for k, v in policy_kwargs.items() if k == "net_arch"}
        return algorithm_class(algo)("MultiInputLstmPolicy" if dict_obs else "MlpLstmPolicy", env, **kwargs)
    return algorithm_class(algo)("MultiInputPolicy" if dict_obs else "MlpPolicy", env, **kwargs)


def check_budget(minutes: float | None, timesteps: int | None, eval_every: int, eval_episodes: int, threads: int,
                 budget_clock: str) -> None:
    """:class:`InvalidParameterError` unless these are a training run's valid budget and settings:
    ``minutes`` up to :data:`MAX_MINUTES`, ``timesteps`` and ``eval_every`` up to
    :data:`MAX_TIMESTEPS`, ``eval_episodes`` up to :data:`MAX_EVAL_EPISODES`, ``threads`` up to
    :data:`~soft_envs.sim.threads.MAX_THREADS` — before anything is built."""
    if minutes is None and timesteps is None:
        raise InvalidParameterError("give a budget: minutes and/or timesteps")
    if minutes is not None:
        check_positive("minutes", minutes, MAX_MINUTES)
    if timesteps is not None:
        check_integer("timesteps", timesteps, minimum=1, maximum=MAX_TIMESTEPS)
    check_integer("eval_every", eval_every, minimum=1, maximum=MAX_TIMESTEPS)
    check_integer("eval_episodes", eval_episodes, minimum=1, maximum=MAX_EVAL_EPISODES)
    check_integer("threads", threads, minimum=1, maximum=MAX_THREADS)
    if budget_clock not in BUDGET_CLOCKS:
        raise InvalidParameterError(f"budget_clock must be one of {BUDGET_CLOCKS}; got {budget_clock!r}")


def train(recipe: Recipe | None = None, *, minutes: float | None = 20.0, timesteps: int | None = None,
          seed: int = 0, n_modules: int | None = None, realism: str | None = None, eval_every: int = 10_000,
          eval_episodes: int = 100, threads: int = 1, output: str | Path | None = None,
          env_extra: dict[str, Any] | None = None, progress: bool = True, log=None,
          checkpoint_every: float | None = None, resume: bool = False, tensorboard: str | None = None,
          budget_clock: str = "wall") -> TrainResult:
    """Train ``recipe`` (default: SAC + HER on kinematic ``PeterReach-v0``) until ``minutes`` of
    wall time (``budget_clock="cpu"``: of this process's CPU time, what an idle core would give
    however busy the machine is) or ``timesteps`` env steps (whichever comes first; at least one),
    evaluating every ``eval_every`` steps on ``eval_episodes`` held-out episodes; save to
    ``output`` if given. ``checkpoint_every`` [min] writes ``OUTPUT.ckpt/`` as it goes (and on
    SIGTERM, which stops the run); ``resume`` continues that checkpoint to the same budget.
    ``progress``: report it (:func:`soft_envs.console.progress`: a bar on a terminal, else a line
    every 30 s); ``log``: where the evaluations go (default: stdout, flushed line by line)."""
    from soft_envs.learn import checkpoint as rl_checkpoint

    log = log or print_flushed

    recipe = (recipe or Recipe()).validate()
    check_budget(minutes, timesteps, eval_every, eval_episodes, threads, budget_clock)
    if checkpoint_every is not None:
        check_positive("checkpoint_every [min]", checkpoint_every, MAX_MINUTES)
    if (checkpoint_every is not None or resume) and output is None:
        raise InvalidParameterError("checkpoints need an output path (the checkpoint is OUTPUT.ckpt)")
    _require_sb3()
    import torch

    torch.set_num_threads(int(threads))
    env_kwargs = env_kwargs_for(recipe, n_modules=n_modules, realism=realism, extra=env_extra)
    ckpt = rl_checkpoint.Checkpoint(_zip_path(output).with_suffix(".ckpt")) if output is not None else None
    env = make_training_env(recipe, env_kwargs, seed)  # checks the keywords before anything is trained
    state = None
    if resume:
        if ckpt is None or not ckpt.exists():
            raise InvalidParameterError(f"nothing to resume: no checkpoint at {ckpt.folder if ckpt else None}")
        model, state = ckpt.load(algorithm_class(recipe.algo), env, tensorboard)
        if state.get("budget_clock", "wall") != budget_clock:
            raise InvalidParameterError(f"the checkpoint's budget counts {state.get('budget_clock', 'wall')} time; "
                                        f"resume it with budget_clock={state.get('budget_clock', 'wall')!r}")
        log(f"resumed at {model.num_timesteps} steps, {state['elapsed'] / 60:.1f} min of the budget used")
    else:
        model = make_model(recipe, env, env_kwargs, seed, tensorboard)
    elapsed0 = 0.0 if state is None else float(state["elapsed"])
    history = [] if state is None else [tuple(h) for h in state.get("history", [])]

    def evaluate(m):
        return evaluate_policy(m, env_kwargs, eval_episodes, env_id=recipe.env_id, base_gait=recipe.base_gait,
                               progress=progress)

    cpu0, cpu_before = _cpu_time(), float(state.get("cpu_seconds", 0.0)) if state else 0.0
    wall0, wall_before = _wall_time(), float(state.get("wall_seconds", elapsed0)) if state else 0.0
    load_start = load_average()

    callback = rl_checkpoint.budget_callback(
        None if minutes is None else 60.0 * minutes, timesteps, eval_every, evaluate, progress, log,
        elapsed0=elapsed0, history=history, checkpoint=ckpt,
        checkpoint_seconds=None if checkpoint_every is None else 60.0 * checkpoint_every,
        run_state={"seed": seed, "recipe": dataclasses.asdict(recipe), "env_kwargs": env_kwargs,
                   "budget_clock": budget_clock},
        live_state=lambda: {"cpu_seconds": cpu_before + _cpu_time() - cpu0,
                            "wall_seconds": wall_before + _wall_time() - wall0})
    remaining = 10**12 if timesteps is None else max(0, timesteps - model.num_timesteps)
    log(f"training {recipe.algo} on {recipe.env_id} {env_kwargs} from step {model.num_timesteps}")
    budget = clock.use_clock(clock.process_time) if budget_clock == "cpu" else contextlib.nullcontext()
    with rl_checkpoint.StopOnSigterm() as stop, budget:
        callback.stop_flag = stop
        if remaining > 0 and (minutes is None or elapsed0 < 60.0 * minutes):
            model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=state is None,
                        tb_log_name=f"{recipe.algo}_{recipe.env_id.split('/')[-1]}_seed{seed}")
    seconds = elapsed0 + callback.elapsed if budget_clock == "wall" else wall_before + _wall_time() - wall0
    cpu_seconds = cpu_before + _cpu_time() - cpu0
    result = TrainResult(model.num_timesteps, seconds, None, callback.history, env_kwargs, env_id=recipe.env_id,
                         interrupted=callback.interrupted)
    env.close()
    if callback.interrupted:
        where = f"checkpoint {ckpt.folder} (resume with --resume)" if ckpt is not None else "no checkpoint (no output)"
        log(f"stopped by SIGTERM at {model.num_timesteps} steps; {where}")
        return result
    result.final = evaluate(model)
    log(f"final, {model.num_timesteps} steps, {seconds / 60:.1f} min: {result.final.line()}")
    if output is not None:
        result.path = str(save_policy(model, output, env_kwargs, {
            "recipe": dataclasses.asdict(recipe), "seed": seed, "timesteps": model.num_timesteps,
            "seconds": seconds, "cpu_seconds": cpu_seconds, "budget_clock": budget_clock, "budget_minutes": minutes,
            "load_average": [load_start, load_average()], "load_average_15min": load_average(15),
            "evaluation": result.final.summary() | {"first_seed": EVAL_SEED}},
            env_id=recipe.env_id))
        log(f"saved {result.path} (+ {_sidecar(result.path).name})")
    return result


def print_flushed(*values: Any) -> None:
    """``print`` that flushes: a run's log lines reach a log file as they are written."""
    print(*values, flush=True)


def _cpu_time() -> float:
    """CPU time [s] of this process and its finished children (a record of what a run got on a
    shared machine, next to its wall time; never a budget)."""
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _wall_time() -> float:
    """Wall time [s] for the record of a run whose budget counts CPU time (a report, not a budget)."""
    import time

    return time.perf_counter()


def load_average(minutes: int = 1) -> float | None:
    """The machine's 1- (or 5-, 15-) minute load average (``None`` where the OS has none)."""
    import os

    try:
        return float(os.getloadavg()[{1: 0, 5: 1, 15: 2}[minutes]])
    except (AttributeError, OSError):  # pragma: no cover - platform
        return None


def parse_seeds(text: str) -> list[int]:
    """``"0-7"``, ``"0,3,5"`` or ``"4"`` -> the seeds (at most :data:`MAX_SEEDS`)."""
    seeds: list[int] = []
    try:
        for part in str(text).split(","):
            if "-" in part.strip()[1:]:
                a, b = part.strip().split("-", 1) if not part.strip().startswith("-") else (part, part)
                if int(b) - int(a) + 1 > MAX_SEEDS - len(seeds):  # before the list is made
                    raise InvalidParameterError(f"at most {MAX_SEEDS} seeds; got {text!r}")
                seeds += list(range(int(a), int(b) + 1))
            elif part.strip():
                seeds.append(int(part))
    except InvalidParameterError:
        raise
    except ValueError as exc:
        raise InvalidParameterError(f"seeds are like 0-7 or 0,3,5; got {text!r}") from exc
    if len(seeds) > MAX_SEEDS:
        raise InvalidParameterError(f"at most {MAX_SEEDS} seeds; got {len(seeds)}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise InvalidParameterError(f"seeds must be distinct and at least one; got {text!r}")
    return seeds


def _train_one(item: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    seed, kwargs = item
    result = train(seed=seed, progress=False, log=lambda *_: None, **kwargs)
    summary = result.final.summary() if result.final is not None else {}
    return {"seed": seed, "timesteps": result.timesteps, "seconds": result.seconds, "path": result.path,
            "interrupted": result.interrupted} | summary


def train_seeds(seeds: list[int], *, output: str | Path, workers: int = 2, ray_address: str | None = None,
                **kwargs: Any) -> list[dict[str, Any]]:
    """Train one run per seed (``OUTPUT_seedK.zip``) in ``workers`` processes, or as Ray tasks at
    ``ray_address`` (the pool of :func:`soft_envs.evaluate.evaluate`); one summary per seed.
    ``progress=False`` (among ``kwargs``) hides the runs' progress (:func:`soft_envs.console.progress`)."""
    from soft_envs.console import progress as progress_bar
    from soft_envs.jobs import process_pool

    show = bool(kwargs.pop("progress", True))
    base = _zip_path(output)
    items = [(seed, kwargs | {"output": base.with_name(f"{base.stem}_seed{seed}.zip")}) for seed in seeds]
    with process_pool(int(workers), ray_address) as pool, \
            progress_bar(total=len(items), desc="train-rl seeds", unit="runs", enabled=show) as bar:
        out = []
        for item in pool.imap(_train_one, items):
            if isinstance(item, BaseException):  # Ray's pool hands a failed task back as its error
                raise item
            out.append(item)
            median = item.get("median_m")
            figure = "" if median is None else f", median final {METRICS.get(_env_id(kwargs), 'distance')} {median:.4g}"
            bar.set_postfix_str(f"last: seed {item['seed']}, {item['timesteps']:,} steps{figure}")
            bar.update()
    return out


def _env_id(kwargs: dict[str, Any]) -> str:
    recipe = kwargs.get("recipe")
    return recipe.env_id if recipe is not None else ENV_ID

