"""The learned baselines' goals: policies trained by ``soft-envs train-rl`` evaluated with
``soft-envs evaluate`` next to the IK controllers, on held-out seeds.

The goals are data (:data:`soft_envs.learn.recipes.GOALS`): each names its policy file, recipe,
seed, budget, evaluation task, presets and IK controllers. The policies live in the folder
``SOFT_ENVS_POLICIES`` (default ``runs/learned``), ``STEM.zip`` + ``STEM.json`` (recipe, seed,
steps, wall and CPU time, load average) + ``STEM.log`` (the run's evaluations); a goal whose recipe
trains on a native vector env (rsl_rl, skrl) has a numpy policy, ``STEM.npz`` + its card
``STEM.json``. A goal with the ``task-feedback`` law among its controllers (a residual on it) is
judged against the law on the same episodes: ≥ 99 % within 1 mm, its mean and p95 no worse.

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
import re
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.learn.recipes import GOALS, PARALLEL_LEARNERS, Goal

TITLE = "Learned baselines (train-rl) next to the IK controllers: soft PETER, PCC spiral, quadruped walk"
FIRST_SEED = 2_000_000  # held out: training draws from its own seed's stream, its evaluations from 1 000 000
WORKERS = 3  # evaluation processes
TRAIN_WORKERS = 2  # training runs at a time (one per core of the 2-core machine the goals are stated for)
CHECKPOINT_MINUTES = 10.0
#: The proportional law on the measured tip, which a residual goal is judged against.
LAW = "task-feedback"
TRAIN_EVAL_EVERY = {"peter-2": 10_000, "pcc-spiral": 20_000, "quadruped-walk": 200_000}


def policies_folder() -> Path:
    """Where the goals' policies are: ``$SOFT_ENVS_POLICIES`` or ``runs/learned``."""
    return Path(os.environ.get("SOFT_ENVS_POLICIES", "runs/learned"))


def _as_recorded(recipe: Any) -> Any:
    """``recipe`` (a :class:`~soft_envs.learn.recipes.Recipe`) as a record holds it once through JSON
    (tuples become lists), for comparing a record or checkpoint with the recipe of today."""
    from soft_envs.learn.checkpoint import to_json_value

    return json.loads(json.dumps(dataclasses.asdict(recipe), default=to_json_value))


def _trained_as_asked(record: dict[str, Any], goal: Goal, budget_clock: str) -> bool:
    from soft_envs.learn.recipes import Recipe, recipe_for

    def settings(recipe: dict[str, Any]) -> dict[str, Any]:
        """What trains (the note only explains it; a field newer than the record has its default)."""
        return {key: value for key, value in (_as_recorded(Recipe()) | recipe).items() if key != "note"}

    return (settings(record.get("recipe") or {}) == settings(_as_recorded(recipe_for(goal.recipe)))
            and record.get("seed") == goal.seed
            and record.get("budget_minutes") == goal.minutes and record.get("budget_clock") == budget_clock)


def _train_goal(item: tuple[Goal, str, str]) -> dict[str, Any]:
    """Train one goal's policy (in a worker process); its log goes to ``STEM.log``."""
    from soft_envs.learn.checkpoint import Checkpoint
    from soft_envs.learn.recipes import recipe_for
    from soft_envs.learn.train import policy_record, train

    goal, folder, budget_clock = item
    recipe = recipe_for(goal.recipe)
    if recipe.learner in PARALLEL_LEARNERS:  # a numpy policy (.npz and its card)
        from soft_envs.learn.parallel import train_parallel

        output = Path(folder) / f"{goal.stem}.npz"
        if output.exists() and _trained_as_asked(goal_record(output), goal, budget_clock):
            return {"stem": goal.stem, "status": "kept (already trained with this recipe, seed and budget)"}
        with open(output.with_suffix(".log"), "a") as log_file:
            result = train_parallel(recipe, minutes=goal.minutes, seed=goal.seed, output=output, progress=False,
                                    log=lambda *parts: print(*parts, file=log_file, flush=True),
                                    budget_clock=budget_clock, eval_every=10**12)
        return {"stem": goal.stem, "status": "trained", "timesteps": result.timesteps, "seconds": result.seconds}
    output = Path(folder) / f"{goal.stem}.zip"
    if output.exists() and _trained_as_asked(policy_record(output), goal, budget_clock):
        return {"stem": goal.stem, "status": "kept (already trained with this recipe, seed and budget)"}
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


def goal_policy(folder: Path, stem: str) -> Path:
    """A goal's policy file in ``folder``: ``STEM.zip`` (Stable-Baselines3) or ``STEM.npz`` (a numpy
    policy of the parallel learners); the ``.zip`` name when neither exists."""
    npz = folder / f"{stem}.npz"
    return npz if npz.exists() and not (folder / f"{stem}.zip").exists() else folder / f"{stem}.zip"


def goal_record(path: Path) -> dict[str, Any]:
    """What a goal's policy file records: ``PATH.json`` (a ``.zip``'s record, a ``.npz``'s card)."""
    from soft_envs.learn.train import policy_record

    if path.suffix == ".npz":
        card = path.with_suffix(".json")
        return json.loads(card.read_text()) if card.exists() else {}
    return policy_record(path)


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


def _verdict(goal: Goal, metrics: dict[tuple, Any], spec: str, rms=None) -> tuple[str, bool]:
    """What the policy reached on its goal's measure, and whether the goal is met."""
    if goal.task == "peter-2" and LAW in goal.ik:  # against the law it is a residual on, on the same goals
        preset = goal.presets[0]
        d, law = metrics[spec, preset], metrics[LAW, preset]
        w1, law_w1 = float(np.mean(d < 1e-3)), float(np.mean(law < 1e-3))
        mean, p95 = 1e3 * float(np.mean(d)), 1e3 * float(np.percentile(d, 95))
        law_mean, law_p95 = 1e3 * float(np.mean(law)), 1e3 * float(np.percentile(law, 95))
        met = w1 >= 0.99 and mean <= law_mean and p95 <= law_p95
        return (f"{100 * w1:.0f} % within 1 mm, mean {mean:.3f} mm, p95 {p95:.3f} mm; the law "
                f"{100 * law_w1:.0f} %, {law_mean:.3f} mm, {law_p95:.3f} mm"), met
    if goal.task == "peter-2":
        d = metrics[spec, goal.presets[0]]
        w1, w5 = float(np.mean(d < 1e-3)), float(np.mean(d < 5e-3))
        met = w1 >= 0.9 if goal.presets == ("ideal",) else (w5 >= 0.9 and w1 >= 0.5)
        return f"{100 * w5:.0f} % within 5 mm, {100 * w1:.0f} % within 1 mm", met
    if goal.task.endswith("-obstacles"):  # success without a collision, against the obstacle-aware IK's
        preset = goal.presets[0]
        success = {c: float(np.mean(~metrics[c, preset, "fell"])) for c in (*goal.ik, spec)}
        rivals = [c for c in goal.ik if "obstacles" in c]
        met = success[spec] >= max(success[c] for c in rivals)
        others = ", ".join(f"{c} {100 * success[c]:.0f} %" for c in goal.ik)
        return f"success without a collision {100 * success[spec]:.0f} %; {others}", met
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
        return _walk_verdict(goal, metrics, spec)
    return "—", False


#: What a learned walk must hold on its gait: at most this many command reversals per
#: second on any joint; joints within the servos' no-load speed; stance feet slipping no more
#: than the Bézier trot's on the same seeds.
MAX_REVERSALS_PER_SECOND = 10.0


def _walk_verdict(goal: Goal, metrics: dict[tuple, Any], spec: str) -> tuple[str, bool]:
    """The walk's goal: faster than the trot on the same seeds, no falls, and a servo gait
    (:data:`MAX_REVERSALS_PER_SECOND`, the servos' speed, the trot's stance slip)."""
    from soft_envs import evaluate as ev
    from soft_envs.robots.quadruped import SERVO_SPEED

    preset, trot = goal.presets[0], goal.ik[0]
    seconds = ev.TASKS[goal.task].max_steps * 0.01  # 100 Hz control
    x, x_trot = metrics[spec, preset], metrics[trot, preset]
    falls = metrics[spec, preset, "fell"]

    def figure(controller: str, key: str, reduce) -> float:
        values = np.array([f.get(key, np.nan) for f in metrics[controller, preset, "figures"]], dtype=float)
        return float(reduce(values))

    slip, slip_trot = (figure(c, "gait_stance_slip_speed", np.median) for c in (spec, trot))
    reversals = figure(spec, "gait_command_reversals_per_second", np.max)
    peak = figure(spec, "gait_peak_joint_speed", np.max)
    checks = {"faster than the trot": x.mean() > x_trot.mean(), "no falls": not falls.any(),
              "slip ≤ the trot's": slip <= slip_trot, f"reversals ≤ {MAX_REVERSALS_PER_SECOND:g}/s": reversals
              <= MAX_REVERSALS_PER_SECOND, "joints within the servos' speed": peak <= SERVO_SPEED * (1 + 1e-9)}
    failed = [name for name, ok in checks.items() if not ok]
    text = (f"{x.mean() / seconds:.3f} m/s (trot {x_trot.mean() / seconds:.3f}), {int(falls.sum())} falls of {x.size}; "
            f"stance slip {1e3 * slip:.1f} mm/s (trot {1e3 * slip_trot:.1f}), reversals ≤ {reversals:.1f}/s, "
            f"peak joint speed {peak:.2f} rad/s" + (f" — fails: {', '.join(failed)}" if failed else ""))
    return text, not failed


def _carried(previous: str, stems: list[str]) -> tuple[list[str], list[str], list[str]]:
    """From a ``previous`` section of this bench, the goals table's rows, the policies table's rows
    and the evaluation parts (each from its ``soft-envs evaluate`` line to the next) of ``stems``."""
    lines = previous.splitlines()
    goals_table = lines[:next((i for i, line in enumerate(lines) if line.startswith("| policy | recipe")), len(lines))]
    verdicts = [line for line in goals_table for stem in stems if line.startswith(f"| **{stem}** |")]
    policies = [line for line in lines for stem in stems if line.startswith(f"| **{stem}**: ")]
    parts: list[str] = []
    current: list[str] = []
    for paragraph in previous.split("\n\n"):
        if paragraph.startswith("Shipped policies ("):  # regenerated every run, never carried
            if current:
                parts.append("\n\n".join(current))
            current = []
        elif paragraph.startswith("`soft-envs evaluate"):
            if current:
                parts.append("\n\n".join(current))
            current = [paragraph]
        elif current and not paragraph.startswith("<!--"):
            current.append(paragraph.split("\n<!--")[0])
    if current:
        parts.append("\n\n".join(current))
    return verdicts, policies, [part for part in parts if any(f"**{stem}**" in part for stem in stems)]


def _shown(path: Path) -> str:
    """``path`` (the policies folder or a file in it) as a report names it: under
    ``$SOFT_ENVS_POLICIES``, since the folder is no part of the repository (a relative folder is
    one a working tree ignores, an absolute one a path of one machine)."""
    folder, path = policies_folder().resolve(), path.resolve()
    if path == folder:
        return "$SOFT_ENVS_POLICIES"
    try:
        return f"$SOFT_ENVS_POLICIES/{path.relative_to(folder)}"
    except ValueError:
        return f"$SOFT_ENVS_POLICIES/{path.name}"


def _without_machine_paths(previous: str) -> str:
    """``previous`` with its policies folder (``Policies from `FOLDER```) written as
    ``$SOFT_ENVS_POLICIES`` wherever it names another one."""
    match = re.search(r"Policies from `([^`]+)`", previous)
    if match and match.group(1) != "$SOFT_ENVS_POLICIES":
        previous = previous.replace(match.group(1).rstrip("/"), "$SOFT_ENVS_POLICIES")
    return previous


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None, train: bool = False,
        goals: list[str] | None = None, previous: str | None = None) -> str:
    """The section (module docstring). ``goals``: evaluate (and train) only the goals of these
    stems; the others' rows and tables are carried, as they are and said so, from ``previous``
    (this bench's section as it stands, e.g. in BENCHMARKS.md)."""
    from soft_envs import evaluate as ev
    from soft_envs.clock import now

    stems = [g.stem for g in GOALS]
    chosen = tuple(g for g in GOALS if goals is None or g.stem in goals)
    unknown = sorted(set(goals or ()) - set(stems))
    if unknown:
        from soft_envs.exceptions import InvalidParameterError

        raise InvalidParameterError(f"unknown goals {unknown}; choose from {stems}")
    folder = policies_folder()
    if train:
        train_goals(folder, chosen)
    shipped_part = _shipped_table(50 if full else 10)
    episodes = 50 if full else 5
    first = FIRST_SEED + seed
    trained, parts, verdicts = [], [], []
    for goal in chosen:
        path = goal_policy(folder, goal.stem)
        if not path.exists():  # said, not left out: the table lists every goal
            verdicts.append([f"**{goal.stem}**", goal.target, f"{goal.minutes:g} min",
                             f"not trained (no {path.name} in the policies folder)", "—"])
            continue
        record = goal_record(path)
        recipe = record.get("recipe", {})
        algo = record.get("algo") or recipe.get("algo", "SAC")
        spec = f"policy:{path}" if path.suffix == ".npz" else f"sb3:{algo}:{path}"
        load = record.get("load_average") or ["?", "?"]
        cpu = record.get("cpu_seconds")
        trained.append([f"**{goal.stem}**: {goal.label}", f"`{goal.recipe}`, seed {record.get('seed')}",
                        f"{algo}{' + HER' if recipe.get('her') else ''}", record.get("timesteps"),
                        f"{record.get('budget_minutes', '?')} ({record.get('budget_clock', 'wall')})",
                        f"{record.get('seconds', record.get('wall_seconds', float('nan'))) / 60:.1f}",
                        "?" if cpu is None else f"{cpu / 60:.1f}",
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
                metrics[c, p, "figures"] = [e.figures for e in result.episodes if e.controller == c and e.preset == p]
        shown = [c.replace(str(path), _shown(path)) for c in controllers]
        parts.append(f"`soft-envs evaluate --tasks {goal.task} --controllers {' '.join(shown)} "
                     f"--presets {' '.join(goal.presets)} --episodes {episodes} --seed {first}` "
                     f"({now() - start:.0f} s):"
                     f"\n\n{result.table().replace(spec, f'**{goal.stem}**')}")
        gait = ev.gait_table(result)
        if gait:
            parts.append("Gait figures, the same episodes (median over them; `soft_envs.envs.gait_meter`):\n\n"
                         + gait.replace(spec, f"**{goal.stem}**"))
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
    table = markdown_table(["policy", "goal", "budget", f"reached ({episodes} held-out episodes)",
                            "met"], verdicts)
    others = [g.stem for g in GOALS if g not in chosen]
    carried = ""
    if others and previous:
        old_verdicts, old_policies, old_parts = _carried(_without_machine_paths(previous), others)
        table = "\n".join(table.splitlines() + old_verdicts)
        head = "\n".join(head.splitlines() + old_policies)
        parts += old_parts
        carried = (f" Carried unchanged from this section's previous run (not re-evaluated now): "
                   f"{', '.join(others)}.")
    return (f"Regenerate: `soft-envs bench learned --full --train --update BENCHMARKS.md` (module "
            f"`soft_envs.bench.learned`; the goals, recipes and seeds are data in `soft_envs.learn.recipes.GOALS`). "
            f"Policies from `{_shown(folder)}`; each `PATH.json` holds its recipe, seed, steps, wall and CPU time and "
            f"the load; budgets count the run's CPU time (the wall time of an idle core; `--train` runs "
            f"{TRAIN_WORKERS} at a time, and the wall and load columns show what each run shared). "
            f"Evaluated over {episodes} held-out seeded episodes (seeds from {first}) per row, next to the IK "
            f"controllers, in {WORKERS} worker processes.{carried}\n\n{table}\n\n{head}\n\n" + "\n\n".join(parts)
            + shipped_part)


def _shipped_table(episodes: int) -> str:
    """The policies shipped in the package against their cards on fresh episodes (refused if one fails)."""
    from soft_envs.learn.shipped import FRESH_SEED, verify_all

    verdicts = verify_all(episodes)
    if not verdicts:
        return ""
    rows = []
    for v in verdicts:
        figure = {"within_1mm": "within 1 mm", "success": "success", "rms_m": "RMS tracking error",
                  "mean_m": "distance walked (mean)"}[v.key]
        law = v.law_value if v.law is not None else None
        rows.append([f"`{v.name}`", figure, v.show(v.card), v.show(v.fresh_value),
                     "" if law is None else v.show(law), "holds" if v.holds else "**fails**"])
    return ("\n\nShipped policies (`soft_envs/agents/learned/policies/`, the `learned` controller of their task) "
            f"against their model cards, on {episodes} fresh held-out episodes (seeds from {FRESH_SEED}; "
            "`soft_envs.learn.shipped.verify`: a fraction may fall 3 binomial σ below its card, at least 5 points; "
            "an RMS error may exceed its card by 3 standard errors, at least 10 %, and a residual policy must beat "
            "the law it corrects on the same episodes; a walk's distance may fall 3 standard errors below its card, "
            "at least 10 %, with no more falls than its card's allow):\n\n"
            + markdown_table(["policy", "figure", "card", "fresh", "the law it corrects (fresh)", "verdict"], rows))


def _fmt(value) -> str:
    return "?" if value is None else (f"{value:.1f}" if isinstance(value, float) else str(value))
