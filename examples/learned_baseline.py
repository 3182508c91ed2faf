"""Train one of the learned baselines of BENCHMARKS.md's ``learned`` section with its goal's recipe,
seed and budget, and evaluate it next to the IK controllers, as that section does.

    python examples/learned_baseline.py quadruped_walk                  # PPO modulating the trot, 25 min
    python examples/learned_baseline.py pcc_residual --minutes 20       # PCC spiral, residual on PD + FF
    python examples/learned_baseline.py pcc_residual_ideal              # the same on the ideal arm, 10 min
    python examples/learned_baseline.py peter_soft                      # soft PETER, ideal, 30 min
    python examples/learned_baseline.py peter_real                      # soft PETER, a new robot every episode, 60 min
    python examples/learned_baseline.py peter_soft --smoke              # a few seconds: the plumbing

Needs the ``learn`` extra. The goals (recipe, seed, budget, evaluation task, presets, IK
controllers) are data in ``soft_envs.learn.recipes.GOALS``, the recipes in ``RECIPES``; the same
run from the command line is ``soft-envs train-rl --recipe RECIPE --seed S --minutes M
--budget-clock cpu --output STEM.zip`` then ``soft-envs evaluate --tasks TASK --controllers IK
sb3:ALGO:STEM.zip --presets …``; every goal at once: ``soft-envs bench learned --full --train``.
"""

from __future__ import annotations

import argparse

from soft_envs import evaluate as ev
from soft_envs.learn.recipes import GOALS
from soft_envs.learn.train import recipe_for, train


def main(argv: list[str] | None = None) -> None:
    goals = {goal.stem: goal for goal in GOALS}
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("goal", choices=sorted(goals))
    parser.add_argument("--minutes", type=float, help="budget [min of CPU time] (default: the goal's)")
    parser.add_argument("--episodes", type=int, default=20, help="held-out evaluation episodes per row")
    parser.add_argument("--output", help="policy file (default STEM.zip)")
    parser.add_argument("--smoke", action="store_true", help="a tiny budget and short episodes (a test)")
    args = parser.parse_args(argv)
    goal = goals[args.goal]
    recipe = recipe_for(goal.recipe)
    budget = dict(minutes=args.minutes or goal.minutes, budget_clock="cpu")
    if args.smoke:  # the plumbing only: a small network, 64 steps, 8-step episodes
        recipe = recipe.replace(net_arch=(16,), batch_size=16, learning_starts=16, standardize_samples=32,
                                n_steps=32, env_kwargs={"max_episode_steps": 8})
        budget = dict(minutes=None, timesteps=64)
    output = args.output or f"{goal.stem}.zip"
    result = train(recipe, seed=goal.seed, eval_every=10**9, eval_episodes=2, output=output, **budget)
    jobs = ev.jobs_for([goal.task], [*goal.ik, f"sb3:{recipe.algo}:{result.path}"], presets=goal.presets,
                       episodes=args.episodes, seed=2_000_000)
    if args.smoke:
        task = ev.TASKS[goal.task]
        short = ev.Task(task.name, task.env_id, task.kwargs, task.metric, task.unit, task.controllers, max_steps=8)
        jobs = [ev.Job(short, j.controller, j.preset, j.seed) for j in jobs]
        print(ev.Evaluation([ev.run_episode(job) for job in jobs]).table())  # in this process
        return
    print(f"goal: {goal.target}")
    result = ev.evaluate(jobs, workers=2)
    print(result.table())
    gait = ev.gait_table(result)  # the walk is judged on its gait too
    if gait:
        print(gait)


if __name__ == "__main__":
    main()
