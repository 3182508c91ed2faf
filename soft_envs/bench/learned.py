"""The learned baselines' goals (issue 20): policies trained by ``soft-envs train-rl`` evaluated with
``soft-envs evaluate`` next to the IK controllers, on held-out seeds, ideal and realistic.

The policies are read from the folder ``SOFT_ENVS_POLICIES`` (default ``runs/learned``):
``peter_soft.zip`` (soft PeterReach, ideal), ``peter_real_abs.zip`` and ``peter_real_delta.zip``
(realistic, absolute actions vs ``action_mode="delta"`` with ``history=2``: the ablation),
``pcc_real.zip`` (PCCTrack spiral, realistic) and ``quadruped_ppo.zip`` (QuadrupedWalk); a
missing one is skipped. Each ``PATH.json`` says how it was trained (recipe, steps, minutes).
PCCTrack is also measured by its RMS tracking error over each episode (the goal's measure),
next to the paper's PD + feed-forward law.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from soft_envs.bench import markdown_table

TITLE = "Learned baselines (train-rl) next to the IK controllers: soft PETER, PCC spiral, quadruped walk"
FIRST_SEED = 2_000_000  # held out: training draws from its own seed's stream, its evaluations from 1 000 000
#: file stem -> what it was trained for
POLICIES = {
    "peter_soft": "soft PeterReach, ideal",
    "peter_real_abs": "soft PeterReach, realistic, absolute actions",
    "peter_real_delta": "soft PeterReach, realistic, delta actions + history 2",
    "pcc_real": "PCCTrack spiral, trained realistic (delta actions + history 2)",
    "quadruped_ppo": "QuadrupedWalk, PPO",
}
#: (evaluate task, presets, IK controllers, policy stems) evaluated together
GROUPS = (
    ("peter-2", ("ideal",), ("trr-feedback",), ("peter_soft",)),
    ("peter-2", ("realistic",), ("trr-feedback",), ("peter_real_abs", "peter_real_delta")),
    ("pcc-spiral", ("ideal", "realistic"), ("pd-ff",), ("pcc_real",)),
    ("quadruped-walk", ("ideal",), ("trot",), ("quadruped_ppo",)),
)
WORKERS = 3
GOALS = ("Goals (issue 20): soft PeterReach ideal ≥ 90 % within 1 mm in ≤ 30 min; realistic ≥ 90 % within 5 mm and "
         "≥ 50 % within 1 mm in ≤ 60 min; PCC spiral RMS ≤ 2× the PD + feed-forward law's under ideal and ≤ the "
         "law's under realistic; QuadrupedWalk faster than the trot (0.098 m/s) with no falls, in ≤ 60 min, on 2 "
         "cores. The wall time is the budget; the CPU time is what the run got of the shared machine.\n\n")


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


def pcc_rms(controllers: list[str], presets: tuple[str, ...], episodes: int, seed: int) -> list[list]:
    """Rows ``[controller, preset, mean RMS mm, p95 RMS mm]`` over ``episodes`` seeded episodes."""
    import multiprocessing as mp

    rows = []
    with mp.get_context("spawn").Pool(WORKERS) as pool:
        for controller in controllers:
            for preset in presets:
                rms = np.array(pool.map(_rms_episode, [(controller, preset, seed + k) for k in range(episodes)]))
                rows.append([controller, preset, f"{1e3 * rms.mean():.2f}", f"{1e3 * np.percentile(rms, 95):.2f}"])
    return rows


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    from soft_envs import evaluate as ev
    from soft_envs.clock import now
    from soft_envs.train_rl import policy_record

    folder = Path(os.environ.get("SOFT_ENVS_POLICIES", "runs/learned"))
    episodes = 50 if full else 5
    first = FIRST_SEED + seed
    trained, parts, specs = [], [], {}
    for stem, label in POLICIES.items():
        path = folder / f"{stem}.zip"
        if not path.exists():
            continue
        record = policy_record(path)
        algo = record.get("algo", "SAC")
        specs[stem] = f"sb3:{algo}:{path}"
        recipe = record.get("recipe", {})
        load = record.get("load_average") or ["?", "?"]
        cpu = record.get("cpu_seconds")
        trained.append([f"**{stem}**: {label}", f"{algo}{' + HER' if recipe.get('her') else ''}",
                        record.get("timesteps"), f"{record.get('seconds', float('nan')) / 60:.1f}",
                        "?" if cpu is None else f"{cpu / 60:.1f}", f"{load[0]} → {load[1]}",
                        f"`{record.get('env_kwargs')}`"])
    if not specs:
        from soft_envs.exceptions import MissingDependencyError

        raise MissingDependencyError(f"no trained policies in {folder} (set SOFT_ENVS_POLICIES; train them with "
                                     "examples/learned_baseline.py)")
    for task, presets, ik, stems in GROUPS:
        mine = [specs[s] for s in stems if s in specs]
        if not mine:
            continue
        controllers = list(ik) + mine
        start = now()
        result = ev.evaluate(ev.jobs_for([task], controllers, presets=presets, episodes=episodes, seed=first),
                             workers=WORKERS, progress=True)
        table = result.table()
        for stem in stems:
            if stem in specs:
                table = table.replace(specs[stem], f"**{stem}**")
        parts.append(f"`soft-envs evaluate --tasks {task} --controllers {' '.join(controllers)} "
                     f"--presets {' '.join(presets)} --episodes {episodes} --seed {first}` ({now() - start:.0f} s):"
                     f"\n\n{table}")
        if task == "pcc-spiral":
            rows = pcc_rms(controllers, presets, episodes, first)
            for stem in stems:
                rows = [[r[0].replace(specs.get(stem, "\0"), f"**{stem}**")] + r[1:] for r in rows]
            parts.append("RMS tracking error over each 100-step (5 s) episode, the same seeds:\n\n" + markdown_table(
                ["controller", "preset", "mean RMS [mm]", "p95 RMS [mm]"], rows))
    head = markdown_table(["policy", "algorithm", "env steps", "wall [min]", "CPU [min]", "load (1-min) start → end",
                           "env keywords"], trained)
    return (GOALS + f"Policies from `{folder}` (`PATH.json` holds each one's recipe, seed, steps, wall and CPU time). "
            f"Evaluated over {episodes} held-out seeded episodes (seeds from {first}) per row, next to the IK "
            f"controllers, in {WORKERS} worker processes.\n\n{head}\n\n" + "\n\n".join(parts))
