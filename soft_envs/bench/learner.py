"""``soft-envs bench learner``: how much of the vector env's own rate each learner consumes.

In one process and with the same threads (the vector env's ``num_threads`` and torch's), soft
PeterReach-v0 (ideal) at ``N`` sub-envs:

* the vector env alone, stepped with uniform random action batches (same-step autoreset) — the
  simulator's rate;
* the parallel learner (:class:`soft_envs.learn.parallel.ParallelPPO`: rsl_rl's PPO, rollouts of
  ``n_steps`` per env, then its update) — env-steps per second over whole iterations, the
  update included, and the share of the time that is the rollout;
* Stable-Baselines3's PPO through the SB3 adapter (:mod:`soft_envs.learn.sb3_vector`), the same rollout
  length, epochs and minibatch size, for comparison;
* the off-policy parallel learner (:class:`soft_envs.learn.offpolicy.ParallelSAC`: skrl's SAC, recipe
  :data:`SAC_RECIPE` at the same ``N``: every env one step, then its updates) — env-steps per second once
  its replay buffer has started, and the share of the time that is the env step and the actor.

Rates are env-steps per second of wall time and of this process's CPU time. The vector env alone
is measured before and after the learners (the mean is the reference; the machine's load may
change). ``--full``: N = 256, 1024, 4096, one thread and every core; and the time to goal
on soft PETER (:data:`GOALS`: ideal, and realistic — a new robot every episode): each
recipe trained on seeds 0, 1, 2 for its minutes of CPU time (one env thread, one torch thread; two
runs at a time), evaluated on 100 held-out goals (of its own env: the realistic ones on
realistic robots).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from soft_envs.learn.recipes import RECIPES
from soft_envs.report import markdown_table
from soft_envs.sim import threads

TITLE = "Learner throughput: the share of the vector env's rate the learners consume"
RECIPE = "peter-soft-parallel"
SAC_RECIPE = "peter-soft-parallel-sac"
QUICK = ((1024, 1),)
#: The time-to-goal goals on soft PETER: (what, recipe, CPU-minutes per seed); the goal is
#: ≥ 90 % of the held-out goals within 1 mm.
GOALS = (("ideal", RECIPE, 3.0), ("realistic", "peter-soft-realistic-parallel", 10.0))
GOAL_SEEDS = (0, 1, 2)
FULL = ((256, 1), (1024, 1), (4096, 1), (1024, 0))  # (N, threads; 0: every core of the process)


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def env_rate(n_envs: int, n_threads: int, steps: int, seed: int) -> tuple[float, float]:
    """Env-steps per second (wall, CPU) of the soft PeterReach vector env alone."""
    from soft_envs.learn.parallel import make_vector_env

    recipe = RECIPES[RECIPE].replace(n_envs=n_envs)
    venv = make_vector_env(recipe, recipe.make_kwargs(), n_threads or None)
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1.0, 1.0, (8, n_envs, venv.single_action_space.shape[0])).astype(np.float32)
    venv.reset(seed=seed)
    for k in range(3):  # compile and warm up
        venv.step(actions[k % 8])
    wall0, cpu0 = _clocks()
    for k in range(steps):
        venv.step(actions[k % 8])
    wall1, cpu1 = _clocks()
    venv.close()
    return n_envs * steps / (wall1 - wall0), n_envs * steps / (cpu1 - cpu0)


def rsl_rate(n_envs: int, n_threads: int, iterations: int, seed: int) -> dict[str, float]:
    """Env-steps per second (wall, CPU) of the parallel learner, and the rollout's share of the wall time."""
    import torch

    from soft_envs.learn.parallel import ParallelPPO

    recipe = RECIPES[RECIPE].replace(n_envs=n_envs)  # as `train-rl --n-envs N` runs it
    learner = ParallelPPO(recipe, recipe.make_kwargs(), seed, threads=n_threads or (threads.available_cores()),
                          env_threads=n_threads or None)
    learner.iterate()  # warm up
    wall0, cpu0 = _clocks()
    for _ in range(iterations):
        learner.iterate()
    wall1, cpu1 = _clocks()
    steps = iterations * n_envs * recipe.n_steps
    learner.close()
    torch.set_num_threads(1)
    return {"wall": steps / (wall1 - wall0), "cpu": steps / (cpu1 - cpu0),
            "rollout": learner.collect_seconds / (learner.collect_seconds + learner.update_seconds)}


def sb3_rate(n_envs: int, n_threads: int, iterations: int, seed: int) -> tuple[float, float]:
    """Env-steps per second (wall, CPU) of SB3's PPO on the same vector env (SB3 adapter)."""
    import torch
    from stable_baselines3 import PPO

    from soft_envs.learn.sb3_vector import sb3_vec_env
    from soft_envs.learn.vector_rollouts import torch_activations

    recipe = RECIPES[RECIPE]
    torch.set_num_threads(n_threads or threads.available_cores())
    venv = sb3_vec_env(recipe.env_id, n_envs, seed=seed, vectorization_mode="vector_entry_point",
                       num_threads=n_threads or None, **recipe.make_kwargs())
    batch = n_envs * recipe.n_steps
    networks = {"net_arch": list(recipe.net_arch), "activation_fn": torch_activations()[recipe.activation]}
    model = PPO("MlpPolicy", venv, n_steps=recipe.n_steps, batch_size=recipe.batch_size, n_epochs=recipe.n_epochs,
                policy_kwargs=networks, seed=seed, device="cpu", verbose=0)
    model.learn(batch)  # warm up
    wall0, cpu0 = _clocks()
    model.learn(iterations * batch, reset_num_timesteps=False)
    wall1, cpu1 = _clocks()
    venv.close()
    torch.set_num_threads(1)
    return iterations * batch / (wall1 - wall0), iterations * batch / (cpu1 - cpu0)


def sac_rate(n_envs: int, n_threads: int, iterations: int, seed: int) -> dict[str, float]:
    """Env-steps per second (wall, CPU) of the off-policy parallel learner once it updates (its
    replay buffer past ``learning_starts``), and the collection's share of the wall time."""
    import torch

    from soft_envs.learn.offpolicy import ParallelSAC

    recipe = RECIPES[SAC_RECIPE].replace(n_envs=n_envs)
    learner = ParallelSAC(recipe, recipe.make_kwargs(), seed, threads=n_threads or threads.available_cores(),
                          env_threads=n_threads or None)
    while learner.timesteps <= recipe.learning_starts:  # random actions, no updates: not timed
        learner.iterate()
    learner.iterate()  # the first update (warm-up)
    learner.collect_seconds = learner.update_seconds = 0.0
    wall0, cpu0 = _clocks()
    for _ in range(iterations):
        learner.iterate()
    wall1, cpu1 = _clocks()
    learner.close()
    torch.set_num_threads(1)
    steps = iterations * n_envs
    return {"wall": steps / (wall1 - wall0), "cpu": steps / (cpu1 - cpu0),
            "rollout": learner.collect_seconds / (learner.collect_seconds + learner.update_seconds)}


def _train_goal(job: tuple[str, float, int]) -> dict[str, Any]:
    from soft_envs.learn.parallel import train_parallel

    recipe, minutes, seed = job
    result = train_parallel(RECIPES[recipe], minutes=minutes, seed=seed, eval_every=10**12, threads=1,
                            env_threads=1, progress=False, log=lambda _: None, budget_clock="cpu")
    assert result.final is not None
    return {"seed": seed, "timesteps": result.timesteps} | result.final.summary()


def time_to_goal() -> str:
    """Every goal of :data:`GOALS` on :data:`GOAL_SEEDS`: a table each and the median/worst."""
    from soft_envs.jobs import process_pool

    jobs = [(recipe, minutes, seed) for _, recipe, minutes in GOALS for seed in GOAL_SEEDS]
    with process_pool(2, None) as pool:
        runs = pool.map(_train_goal, jobs)
    parts = []
    for k, (what, recipe, minutes) in enumerate(GOALS):
        mine = runs[k * len(GOAL_SEEDS):(k + 1) * len(GOAL_SEEDS)]
        rows = [[r["seed"], f"{r['timesteps']:,}", f"{100 * r['within_1mm']:.0f} %", f"{100 * r['within_5mm']:.0f} %",
                 f"{1e3 * r['median_m']:.2f}"] for r in mine]
        within = sorted(100 * r["within_1mm"] for r in mine)
        parts.append(
            f"Time to goal, soft PETER {what} (goal: ≥ 90 % of held-out goals within 1 mm in ≤ {minutes:g} "
            f"CPU-min): recipe `{recipe}`, {minutes:g} min of CPU time per seed (one env thread, one torch thread), "
            f"100 held-out goals each; **median {within[len(within) // 2]:.0f} %, worst {within[0]:.0f} %** within "
            "1 mm.\n\n" + markdown_table(["seed", "env steps", "within 1 mm", "within 5 mm", "median [mm]"], rows)
            + "\n")
    return "\n".join(parts)


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    cases = FULL if full else QUICK
    recipe, sac_recipe = RECIPES[RECIPE], RECIPES[SAC_RECIPE]
    rows: list[list[Any]] = []
    for n_envs, n_threads in cases:
        steps = max(20, 40_960 // n_envs)
        before = env_rate(n_envs, n_threads, steps, seed)
        rsl = rsl_rate(n_envs, n_threads, 3, seed)
        sb3 = sb3_rate(n_envs, n_threads, 2, seed)
        sac = sac_rate(n_envs, n_threads, max(4, 2 * recipe.n_steps * 256 // n_envs), seed)
        after = env_rate(n_envs, n_threads, steps, seed)
        env_wall, env_cpu = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        label = str(n_threads) if n_threads else f"all ({threads.available_cores()})"
        rows.append([n_envs, label, f"{env_wall:,.0f}", f"{env_cpu:,.0f}",
                     f"{rsl['wall']:,.0f} ({100 * rsl['wall'] / env_wall:.0f} %)",
                     f"{rsl['cpu']:,.0f} ({100 * rsl['cpu'] / env_cpu:.0f} %)", f"{100 * rsl['rollout']:.0f} %",
                     f"{sb3[0]:,.0f} ({100 * sb3[0] / env_wall:.0f} %)",
                     f"{sb3[1]:,.0f} ({100 * sb3[1] / env_cpu:.0f} %)",
                     f"{sac['wall']:,.0f} ({100 * sac['wall'] / env_wall:.0f} %)",
                     f"{sac['cpu']:,.0f} ({100 * sac['cpu'] / env_cpu:.0f} %)", f"{100 * sac['rollout']:.0f} %"])
    table = markdown_table(["N", "threads", "env alone /s (wall)", "env alone /s (CPU)",
                            "rsl_rl PPO /s (wall, share)", "rsl_rl PPO /s (CPU, share)", "rsl_rl rollout share",
                            "SB3 PPO /s (wall, share)", "SB3 PPO /s (CPU, share)", "skrl SAC /s (wall, share)",
                            "skrl SAC /s (CPU, share)", "skrl SAC collection share"], rows)
    text = (f"Soft PeterReach-v0 (2 modules, ideal), recipe `{RECIPE}`: {recipe.n_steps} steps per env a rollout, "
            f"{recipe.n_epochs} epochs of minibatches of {recipe.batch_size:,} (both learners), networks "
            f"{list(recipe.net_arch)} ({recipe.activation}); env-steps per second "
            f"(the share of the vector env's own rate in brackets); skrl SAC: recipe `{SAC_RECIPE}` at the same N, "
            f"{sac_recipe.gradient_steps} updates of {sac_recipe.batch_size} transitions after every step of all "
            f"envs, networks {list(sac_recipe.net_arch)} ({sac_recipe.activation}), timed once it updates. "
            f"Process CPUs: {os.cpu_count()}."
            f"\n\n{table}\n")
    return text + ("\n" + time_to_goal() if full else "")
