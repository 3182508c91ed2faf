"""Learned baselines: SAC + HER trained by ``soft-envs train-rl`` on kinematic ``PeterReach-v0``
(2 modules), ideal and under ``realism="realistic"`` (a new random robot every episode: domain
randomisation), then evaluated through ``env.step`` next to the IK controllers on the same
seeded goals under both presets (:mod:`soft_envs.evaluate`). Needs the ``learn`` extra.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from soft_envs.bench import markdown_table

TITLE = "Learned baselines: SAC + HER from soft-envs train-rl next to the IK controllers (kinematic PETER)"
IK_CONTROLLERS = ("trr", "trr-feedback", "trr-paper-model", "nn", "hybrid")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    from soft_envs import evaluate as ev
    from soft_envs.learn.train import train

    minutes = 10.0 if full else 1.0
    episodes = 50 if full else 5
    rows, policies = [], {}
    with tempfile.TemporaryDirectory() as folder:
        for realism in (None, "realistic"):
            name = "ideal" if realism is None else realism
            path = Path(folder) / f"sac_her_{name}.zip"
            result = train(minutes=minutes, seed=seed, realism=realism, output=path, progress=True,
                           log=lambda *_: None)
            final = result.final.summary()
            rows.append([name, result.timesteps, f"{result.seconds / 60:.1f}",
                         f"{100 * final['within_5mm']:.0f} %", f"{100 * final['within_1mm']:.0f} %",
                         f"{1e3 * final['median_m']:.2f}"])
            policies[name] = f"sb3:SAC:{path}"
        jobs = ev.jobs_for(["peter-2-kinematic"], list(IK_CONTROLLERS) + list(policies.values()),
                           presets=tuple(ev.PRESETS), episodes=episodes, seed=seed)
        evaluation = ev.evaluate(jobs, workers=2)
        table = evaluation.table()
        for name, spec in policies.items():
            table = table.replace(spec, f"SAC + HER (trained {name})")
    text = markdown_table(["trained under", "env steps", "wall [min]", "held-out goals within 5 mm",
                           "within 1 mm", "median final distance [mm]"], rows)
    text += (f"\n\nTraining: `soft-envs train-rl --minutes {minutes:g} --seed {seed}` (and `--realism realistic`), "
             "one torch thread, 100 held-out goals (seeds from 10 000). Then every controller through "
             f"`env.step`, {episodes} seeded episodes per row:\n\n" + table)
    return text
