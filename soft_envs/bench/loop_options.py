"""Options that let a policy close the loop, an ablation: SAC + HER on kinematic
``PeterReach-v0`` (2 modules) under ``realism="realistic"`` (a new robot every episode: gains,
offsets, leaks, valve delay, tip noise and latency, tilt, radius), with one option added at a time,
each for the same CPU budget and seed, judged on the same held-out goals. The kinematic arm makes
the sample cheap, so the budget buys the learning, not the physics. Needs the ``learn`` extra.

The variants (:data:`VARIANTS`): absolute set-points (the kinematic recipe, γ = 0.5: one step
decides the tip, a bandit); ``action_mode="delta"`` (the action moves the set-points; γ = 0.9, the
task now takes several steps); ``history=2`` on top; the ``success_reward`` bonus on top; and
sb3-contrib's RecurrentPPO with delta actions on 4 native vector sub-envs (memory instead of a
history window).
"""

from __future__ import annotations

from typing import Any

from soft_envs.bench import markdown_table
from soft_envs.console import progress

TITLE = "Options that close the loop: an ablation on realistic kinematic PETER"
BUDGET_MINUTES = 10.0  # CPU minutes per variant (--full)
SMALL_MINUTES = 0.3
EVAL_EPISODES = 100  # held-out goals (seeds from train_rl.EVAL_SEED), the same for every variant

#: label -> (recipe changes, env keyword changes) on the kinematic PeterReach recipe under realism.
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "absolute set-points (γ 0.5)": ({}, {}),
    "delta actions (γ 0.9)": ({"gamma": 0.9}, {"action_mode": "delta"}),
    "delta + history 2": ({"gamma": 0.9}, {"action_mode": "delta", "history": 2}),
    "delta + history 2 + success bonus 1": ({"gamma": 0.9},
                                            {"action_mode": "delta", "history": 2, "success_reward": 1.0}),
    "RecurrentPPO, delta (4 envs)": ({"algo": "RecurrentPPO", "her": False, "gamma": 0.9, "learning_rate": 3e-4,
                                      "n_envs": 4, "n_steps": 256, "batch_size": 256, "net_arch": (128, 128)},
                                     {"action_mode": "delta"}),
}


def variant_recipe(label: str):
    """The recipe of variant ``label``: the kinematic PeterReach recipe, realistic, with its changes."""
    from soft_envs.learn.recipes import recipe_for

    changes, env_changes = VARIANTS[label]
    base = recipe_for("soft_envs/PeterReach-v0")
    return base.replace(**changes, env_kwargs={"realism": "realistic", **env_changes})


def ablation_rows(minutes: float | None, seed: int, *, timesteps: int | None = None,
                  labels: tuple[str, ...] | None = None, eval_episodes: int = EVAL_EPISODES) -> list[list]:
    """Train every variant (``labels``, default all) for ``minutes`` of CPU time (and/or ``timesteps``)
    with ``seed``; one table row each: steps, CPU minutes, held-out goals within 5 and 1 mm, median."""
    from soft_envs.learn.train import train

    rows = []
    for label in progress(labels or tuple(VARIANTS), desc="loop options", leave=False):
        result = train(variant_recipe(label), minutes=minutes, timesteps=timesteps, seed=seed,
                       eval_every=10**9, eval_episodes=eval_episodes, progress=False, log=lambda *_: None,
                       budget_clock="cpu")
        final = result.final.summary()
        rows.append([label, result.timesteps, f"{100 * final['within_5mm']:.0f} %",
                     f"{100 * final['within_1mm']:.0f} %", f"{1e3 * final['median_m']:.2f}",
                     f"{1e3 * final['mean_m']:.2f}"])
    return rows


HEADERS = ["variant", "env steps", "held-out goals within 5 mm", "within 1 mm", "median [mm]", "mean [mm]"]


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    """The ablation section."""
    from soft_envs.learn.train import EVAL_SEED

    minutes = BUDGET_MINUTES if full else SMALL_MINUTES
    rows = ablation_rows(minutes, seed, eval_episodes=EVAL_EPISODES if full else 20)
    return (f"Each variant: {minutes:g} CPU-minutes, seed {seed}, one torch thread, the kinematic PeterReach "
            "recipe (`soft_envs.learn.recipes`) under `realism=\"realistic\"` with the variant's changes "
            "(module `soft_envs.bench.loop_options`); the final policy on the same "
            f"{EVAL_EPISODES if full else 20} held-out goals (seeds from {EVAL_SEED:,}), each judged at the episode's "
            "end by the true distance (the policy sees the measured tip, with the realistic noise and latency)."
            "\n\n"
            + markdown_table(HEADERS, rows))
