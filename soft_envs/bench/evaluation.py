"""``soft-envs evaluate``'s default set as a bench: every task's controllers under every realism
preset, through ``env.step`` over seeded episodes in worker processes (:mod:`soft_envs.evaluate`).
"""

from __future__ import annotations

TITLE = "Every controller under every realism preset (soft-envs evaluate)"


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    from soft_envs import evaluate as ev

    episodes = 20 if full else 3
    result = ev.evaluate(ev.jobs_for(presets=tuple(ev.PRESETS), episodes=episodes, seed=seed), workers=2)
    text = result.table()
    text += (f"\n\n{episodes} seeded episodes per row (the same goals and starts under both presets, but for the "
             "realistic PETER goals its drawn arm cannot reach, ~3 %, redrawn), in 2 worker processes. "
             "Success: the env's `is_success` at the end (PETER 1 mm, the PCC spiral 3 mm, the PCC reach 1 mm; "
             "around obstacles also no collision; the push: the box within 1 cm; the quadruped pose 1°, "
             "the hexapod 1 mm and 1°; the walk: not fallen). Time to goal: mean first "
             "time `is_success` held, over the episodes that reached it. Same table: "
             f"`soft-envs evaluate --episodes {episodes}`. Trained SB3 policies (`sb3:ALGO:PATH`) join the "
             "`peter-2-kinematic` rows in the learned-baselines section (`soft-envs bench rl`).")
    if plot_dir is not None:
        text += f"\n\n![error CDFs per task]({ev.plot(result, plot_dir)})"
    return text
