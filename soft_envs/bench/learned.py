"""The learned baselines' goals (issue 20): policies trained by ``soft-envs train-rl`` evaluated with
``soft-envs evaluate`` next to the IK controllers, on held-out seeds.

The goals are data (:data:`soft_envs.rl_recipes.GOALS`): each names its policy file, recipe,
seed, budget, evaluation task, presets and IK controllers. The policies live in the folder
``SOFT_ENVS_POLICIES`` (default ``runs/learned``), ``STEM.zip`` + ``STEM.json`` (recipe, seed,
steps, wall and CPU time, load average) + ``STEM.log`` (the run's evaluations).

``soft-envs bench learned --full --train --update BENCHMARKS.md`` regenerates the section end to
end: it trains every goal's policy (:func:`train_goals`: two runs at a time, one per core, the
longest first; each budget counts the run's own CPU time, what an idle core gives, and the wall
time is recorded next to it; a checkpoint every 10 min, so that the same command after an
interruption resumes the runs, and a policy already trained with the same recipe, seed and
budget is kept), then evaluates each over 50 held-out seeded episodes next to its IK
controllers. Without ``--train`` it evaluates the policies in the folder (a missing one is
skipped). PCCTrack is also measured by its RMS tracking error over each episode (the goal's
measure), next to the paper's PD + feed-forward law.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.rl_recipes import GOALS, Goal

TITLE = "Learned baselines (train-rl) next to the IK controllers: soft PETER, PCC spiral, quadruped walk"
FIRST_SEED = 2_000_000  # held out: training draws from its own seed's stream, its evaluations from 1 000 000
WORKERS = 3  # evaluation processes
TRAIN_WORKERS = 2  # training runs at a time (one per core of the 2-core machine the goals are stated for)
CHECKPOINT_MINUTES = 10.0
TRAIN_EVAL_EVERY = {"peter-2": 10_000, "pcc-spiral": 20_000, "quadruped-walk": 200_000}


def policies_folder() -> Path:
    """Where the goals' policies are: ``$SOFT_ENVS_POLICIES`` or ``runs/learned``."""
    return Path(os.environ.get("SOFT_ENVS_POLICIES", "runs/learned"))


def _as_recorded(recipe: Any) -> Any:
    """``recipe`` (a :class:`~soft_envs.rl_recipes.Recipe`) as a record holds it once through JSON
    (tuples become lists), for comparing a record or checkpoint with the recipe of today."""
    from soft_envs.rl_checkpoint import to_json_value

    return json.loads(json.dumps(dataclasses.asdict(recipe), default=to_json_value))


def _trained_as_asked(record: dict[str, Any], goal: Goal, budget_clock: str) -> bool:
    from soft_envs.rl_recipes import recipe_for

    return (record.get("recipe") == _as_recorded(recipe_for(goal.recipe)) and record.get("seed") == goal.seed
            and record.get("budget_minutes") == goal.minutes and record.get("budget_clock") == budget_clock)


def _train_goal(item: tuple[Goal, str, str]) -> dict[str, Any]:
    """Train one goal's policy (in a worker process); its log goes to ``STEM.log``."""
    from soft_envs.rl_checkpoint import Checkpoint
    from soft_envs.rl_recipes import recipe_for
    from soft_envs.train_rl import policy_record, train

    goal, folder, budget_clock = item
    output = Path(folder) / f"{goal.stem}.zip"
    if output.exists() and _trained_as_asked(policy_record(output), goal, budget_clock):
        return {"stem": goal.stem, "status": "kept (already trained with this recipe, seed and budget)"}
    recipe = recipe_for(goal.recipe)
    ckpt = Checkpoint(output.with_suffix(".ckpt"))
    resume = ckpt.exists() and ckpt.state().get("recipe") == _as_recorded(recipe) \
        and ckpt.state().get("seed") == goal.seed and ckpt.state().get("budget_clock", "wall") == budget_clock
    with open(output.with_suffix(".log"), "a") as log_file:
        def log(*parts: Any) -> None:
            print(*parts, file=log_file, flush=True)

        result = train(recipe, minutes=goal.minutes, seed=goal.seed, output=output,
                       eval_every=TRAIN_EVAL_EVERY.get(goal.task, 10_000), eval_episodes=20, progress=False, log=log,
                       checkpoint_every=CHECKPOINT_MINUTES, resume=resume, budget_clock=budget_clock)
    status = "interrupted (checkpointed)" if result.interrupted else "trained"
    return {"stem": goal.stem, "status": status, "timesteps": result.timesteps, "seconds": result.seconds}


def train_goals(folder: str | Path | None = None, goals: tuple[Goal, ...] = GOALS, workers: int = TRAIN_WORKERS,
                budget_clock: str = "cpu", log=print) -> list[dict[str, Any]]:
    """Train every goal's policy into ``folder`` (module docstring), ``workers`` runs at a time,
    the longest budgets first; one status row per goal."""
    import multiprocessing as mp

    folder = Path(folder) if folder is not None else policies_folder()
    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(goals, key=lambda g: -g.minutes)
    log(f"training {len(order)} policies into {folder}, {workers} at a time (budgets: "
        + ", ".join(f"{g.stem} {g.minutes:g} min" for g in order) + f" of {budget_clock} time)")
    rows = []
    with mp.get_context("spawn").Pool(workers) as pool:
        for row in pool.imap_unordered(_train_goal, [(g, str(folder), budget_clock) for g in order]):
            log(f"{row['stem']}: {row['status']}")
            rows.append(row)
    return rows


def _rms_episode(item: tuple[str, str, int]) -> float:
    """RMS tracking error [m] of one PCC spiral episode (the evaluate task's env and length)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401
    from soft_envs import evaluate as ev

    controller, preset, seed = item
    task = ev.TASKS["pcc-spiral"]
    kwargs = dict(task.kwargs) | ev.PRESETS[preset] | {"max_episode_steps": task.max_steps}
    if controller.startswith("sb3:"):
        kwargs |= ev.SB3Policy.env_keywords(controller)
    env = gym.make(task.env_id, **kwargs)
    try:
        agent = ev._controller(controller, env)
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        errors, done = [], False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            errors.append(info["tracking_error"])
            done = terminated or truncated
        return float(np.sqrt(np.mean(np.square(errors))))
    finally:
        env.close()


def pcc_rms(controllers: list[str], presets: tuple[str, ...], episodes: int,
            seed: int) -> dict[tuple[str, str], np.ndarray]:
    """``(controller, preset) -> RMS tracking errors [m]`` over ``episodes`` seeded episodes."""
    import multiprocessing as mp

    out = {}
    with mp.get_context("spawn").Pool(WORKERS) as pool:
        for controller in controllers:
            for preset in presets:
                out[controller, preset] = np.array(pool.map(_rms_episode, [(controller, preset, seed + k)
                                                                            for k in range(episodes)]))
    return out


def _verdict(goal: Goal, metrics: dict[tuple[str, str], np.ndarray], spec: str, rms=None) -> tuple[str, bool]:
    """What the policy reached on its goal's measure, and whether the goal is met."""
    if goal.task == "peter-2":
        d = metrics[spec, goal.presets[0]]
        w1, w5 = float(np.mean(d < 1e-3)), float(np.mean(d < 5e-3))
        met = w1 >= 0.9 if goal.presets == ("ideal",) else (w5 >= 0.9 and w1 >= 0.5)
        return f"{100 * w5:.0f} % within 5 mm, {100 * w1:.0f} % within 1 mm", met
    if goal.task == "pcc-spiral" and rms is not None:
        parts, met = [], True
        for preset, factor in (("ideal", 2.0), ("realistic", 1.0)):
            if preset not in goal.presets:
                continue
            mine, law = rms[spec, preset].mean(), rms[goal.ik[0], preset].mean()
            judged = preset in goal.judged_presets
            parts.append(f"{preset}: RMS {1e3 * mine:.2f} mm vs the law's {1e3 * law:.2f} mm"
                         + ("" if judged else " (shown, not judged)"))
            met &= bool(mine <= factor * law) or not judged
        return "; ".join(parts), met
    if goal.task == "quadruped-walk":
        from soft_envs import evaluate as ev

        x = metrics[spec, goal.presets[0]]
        seconds = ev.TASKS[goal.task].max_steps * 0.01  # 100 Hz control
        falls = metrics[spec, goal.presets[0], "fell"]
        return (f"{x.mean() / seconds:.3f} m/s mean, {int(falls.sum())} falls of {x.size}",
                bool(x.mean() / seconds > 0.098 and not falls.any()))
    return "—", False


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None, train: bool = False) -> str:
    from soft_envs import evaluate as ev
    from soft_envs.clock import now
    from soft_envs.train_rl import policy_record

    folder = policies_folder()
    if train:
        train_goals(folder)
    episodes = 50 if full else 5
    first = FIRST_SEED + seed
    trained, parts, verdicts = [], [], []
    for goal in GOALS:
        path = folder / f"{goal.stem}.zip"
        if not path.exists():  # said, not left out: the table lists every goal
            verdicts.append([f"**{goal.stem}**", goal.target, f"{goal.minutes:g} min",
                             f"not trained (no {path.name} in the policies folder)", "—"])
            continue
        record = policy_record(path)
        algo = record.get("algo", "SAC")
        spec = f"sb3:{algo}:{path}"
        recipe = record.get("recipe", {})
        load = record.get("load_average") or ["?", "?"]
        cpu = record.get("cpu_seconds")
        trained.append([f"**{goal.stem}**: {goal.label}", f"`{goal.recipe}`, seed {record.get('seed')}",
                        f"{algo}{' + HER' if recipe.get('her') else ''}", record.get("timesteps"),
                        f"{record.get('budget_minutes', '?')} ({record.get('budget_clock', 'wall')})",
                        f"{record.get('seconds', float('nan')) / 60:.1f}", "?" if cpu is None else f"{cpu / 60:.1f}",
                        f"{_fmt(load[0])} → {_fmt(load[1])} ({_fmt(record.get('load_average_15min'))})",
                        f"`{record.get('env_kwargs')}`"])
        controllers = list(goal.ik) + [spec]
        start = now()
        result = ev.evaluate(ev.jobs_for([goal.task], controllers, presets=goal.presets, episodes=episodes, seed=first),
                             workers=WORKERS, progress=True)
        cols = result.columns()
        metrics: dict[tuple, np.ndarray] = {}
        for c in controllers:
            for p in goal.presets:
                sel = (cols["controller"] == c) & (cols["preset"] == p)
                metrics[c, p] = cols["metric"][sel]
                metrics[c, p, "fell"] = ~cols["success"][sel]
        parts.append(f"`soft-envs evaluate --tasks {goal.task} --controllers {' '.join(controllers)} "
                     f"--presets {' '.join(goal.presets)} --episodes {episodes} --seed {first}` "
                     f"({now() - start:.0f} s):"
                     f"\n\n{result.table().replace(spec, f'**{goal.stem}**')}")
        rms = None
        if goal.task == "pcc-spiral":
            rms = pcc_rms(controllers, goal.presets, episodes, first)
            rows = [[c.replace(spec, f"**{goal.stem}**"), p, f"{1e3 * v.mean():.2f}",
                     f"{1e3 * np.percentile(v, 95):.2f}"] for (c, p), v in rms.items()]
            parts.append(f"RMS tracking error over each {ev.TASKS[goal.task].max_steps}-step episode, the same "
                         "seeds:\n\n" + markdown_table(["controller", "preset", "mean RMS [mm]", "p95 RMS [mm]"], rows))
        reached, met = _verdict(goal, metrics, spec, rms)
        verdicts.append([f"**{goal.stem}**", goal.target, f"{goal.minutes:g} min", reached, "yes" if met else "**no**"])
    if not trained:
        from soft_envs.exceptions import MissingDependencyError

        raise MissingDependencyError(f"no trained policies in {folder} (set SOFT_ENVS_POLICIES, or train them: "
                                     "soft-envs bench learned --full --train)")
    head = markdown_table(["policy", "recipe", "algorithm", "env steps", "budget [min]", "wall [min]", "CPU [min]",
                           "load 1-min start → end (15-min)", "env keywords"], trained)
    goals = markdown_table(["policy", "goal (issue 20)", "budget", f"reached ({episodes} held-out episodes)", "met"],
                           verdicts)
    return (f"Regenerate: `soft-envs bench learned --full --train --update BENCHMARKS.md` (module "
            f"`soft_envs.bench.learned`; the goals, recipes and seeds are data in `soft_envs.rl_recipes.GOALS`). "
            f"Policies from `{folder}`; each `PATH.json` holds its recipe, seed, steps, wall and CPU time and the "
            f"load; budgets count the run's CPU time (the wall time of an idle core; `--train` runs {TRAIN_WORKERS} "
            f"at a time, and the wall and load columns show what each run shared). "
            f"Evaluated over {episodes} held-out seeded episodes (seeds from {first}) per row, next to the IK "
            f"controllers, in {WORKERS} worker processes.\n\n{goals}\n\n{head}\n\n" + "\n\n".join(parts))


def _fmt(value) -> str:
    return "?" if value is None else (f"{value:.1f}" if isinstance(value, float) else str(value))
