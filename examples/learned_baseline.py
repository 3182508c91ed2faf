"""Train one of the learned baselines with ``soft-envs train-rl``'s recipes and evaluate it next to
the IK controllers, as BENCHMARKS.md's ``learned`` section does.

    python examples/learned_baseline.py peter-soft --minutes 30                # soft PETER, ideal
    python examples/learned_baseline.py peter-soft-realistic --minutes 60      # a new robot every episode
    python examples/learned_baseline.py pcc-realistic --minutes 60             # PCC spiral tracking
    python examples/learned_baseline.py quadruped-walk-ppo --minutes 60        # quadruped walk, PPO
    python examples/learned_baseline.py peter-soft --smoke                      # a few seconds: the plumbing

Needs the ``learn`` extra. The recipes (algorithm, hyper-parameters, env keywords) are data in
``soft_envs.rl_recipes.RECIPES``; the same run from the command line is
``soft-envs train-rl --recipe NAME --minutes M --output NAME.zip`` then
``soft-envs evaluate --tasks TASK --controllers IK sb3:ALGO:NAME.zip --presets ideal realistic``.
"""

from __future__ import annotations

import argparse

from soft_envs import evaluate as ev
from soft_envs.train_rl import recipe_for, train

#: recipe -> (evaluate task, the IK controllers it is compared with, presets)
BASELINES = {
    "peter-soft": ("peter-2", ["trr-feedback"], ["ideal"]),
    "peter-soft-realistic": ("peter-2", ["trr-feedback"], ["realistic"]),
    "pcc-realistic": ("pcc-spiral", ["pd-ff"], ["ideal", "realistic"]),
    "quadruped-walk-ppo": ("quadruped-walk", ["trot"], ["ideal"]),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", choices=sorted(BASELINES))
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--episodes", type=int, default=20, help="held-out evaluation episodes per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="policy file (default RECIPE.zip)")
    parser.add_argument("--smoke", action="store_true", help="a tiny budget and short episodes (a test)")
    args = parser.parse_args(argv)
    task, controllers, presets = BASELINES[args.recipe]
    recipe = recipe_for(args.recipe)
    budget = dict(minutes=args.minutes)
    if args.smoke:  # the plumbing only: a small network, 64 steps, 8-step episodes
        recipe = recipe.replace(net_arch=(16,), batch_size=16, learning_starts=16, standardize_samples=32,
                                n_steps=32, env_kwargs={"max_episode_steps": 8})
        budget = dict(minutes=None, timesteps=64)
    output = args.output or f"{args.recipe}.zip"
    result = train(recipe, seed=args.seed, eval_every=10**9, eval_episodes=2, output=output, **budget)
    spec = f"sb3:{recipe.algo}:{result.path}"
    jobs = ev.jobs_for([task], controllers + [spec], presets=presets, episodes=args.episodes, seed=2_000_000)
    if args.smoke:
        task_ = ev.TASKS[task]
        jobs = [ev.Job(ev.Task(task_.name, task_.env_id, task_.kwargs, task_.metric, task_.unit,
                               task_.controllers, max_steps=8), j.controller, j.preset, j.seed) for j in jobs]
        print(ev.Evaluation([ev.run_episode(job) for job in jobs]).table())  # in this process
        return
    print(ev.evaluate(jobs, workers=2).table())


if __name__ == "__main__":
    main()
