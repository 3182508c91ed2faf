"""Learning on the robot: closing PETER's real-robot gap with the robot's own samples.

The realism bench reproduces seed 000's real-robot column: planned on a model, TRR and the
network miss the ``realism="realistic"`` arm by about 10 mm open loop. Here each robot (a
seeded realistic draw of the soft ``PeterReach-v0``, 2 modules) is sampled with
:func:`~soft_envs.agents.nn.collect_samples` (random inflation times, the tip read when the
task judges it: 5 s after the command) and two learners use the first 100 / 300 / 1000 / 3000
samples: TRR on the nominal model calibrated on them
(:func:`~soft_envs.robots.peter_calibration.calibrate`) and the shipped
network fine-tuned on them (:meth:`NeuralIK.finetune`). Every plan runs open loop — planned
once, commanded, held for the 5 s episode — on goals of that robot (``keep_robot``), next to the
shipped network and TRR on the nominal and on the paper's model. Then what both learners are left
with is decomposed by switching perturbations off one at a time on the same robots.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.bench import markdown_table, pyplot, save_figure
from soft_envs.clock import now
from soft_envs.console import progress

TITLE = "Learning on the robot: calibrated TRR and the fine-tuned network against samples (realistic PETER)"
ENV_ID = "soft_envs/PeterReach-v0"
WORKERS = 2  # processes over the robots (as soft-envs evaluate; each robot's run is seeded: the same results)
BASELINES = ("network (shipped)", "TRR, nominal model", "TRR, paper's model")
LEARNERS = ("TRR, calibrated", "network, fine-tuned")

#: The decomposition: what the calibration is left with when one perturbation group is off
#: (``realism`` overrides on the realistic preset), or the samples are read when settled.
DECOMPOSITION: tuple[tuple[str, dict[str, Any], str | None], ...] = (
    ('"realistic" (every perturbation)', {}, "episode"),
    ("samples read when settled, not at 5 s (leaks drift until the task judges)", {}, None),
    ("no leaks", {"leak_rate": 0.0}, "episode"),
    ("no payload", {"payload": 0.0}, "episode"),
    ("no tip noise or latency", {"observation_noise": 0.0, "observation_latency": 0.0}, "episode"),
    ("ideal (the calibrated model's own structure)", None, "episode"),
)


def _realism(overrides: dict[str, Any] | None) -> str | dict[str, Any]:
    return "ideal" if overrides is None else {"preset": "realistic", **overrides}


def execute(env, plan: np.ndarray, goal_seed: int) -> float:
    """Open loop: command ``plan`` [s] from rest for a whole episode of the goal of ``goal_seed`` on
    the env's robot; the final true distance [m]."""
    env.reset(seed=goal_seed, options={"keep_robot": True})
    action = env.unwrapped.model_to_action(plan)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    return float(info["distance"])


def robot_run(realism, robot_seed: int, goal_seeds: list[int], sizes: tuple[int, ...], *, learners=LEARNERS,
              baselines=BASELINES, settle_time: str | None = "episode", seed: int = 0) -> dict[str, Any]:
    """Collect on one robot, learn with each size, execute every plan: final distances [m] per
    method (learners per size) and the collection's and the learners' times [s]."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)
    from soft_envs.agents.ik import trr_batch
    from soft_envs.agents.nn import NeuralIK, collect_samples
    from soft_envs.agents.nn.collect import episode_time
    from soft_envs.robots import calibrate

    env = gym.make(ENV_ID, n_modules=2, realism=realism)
    try:
        env.reset(seed=robot_seed)
        model = env.unwrapped.model
        goals = np.array([env.reset(seed=s, options={"keep_robot": True})[0][3:6] for s in goal_seeds], dtype=float)
        network = NeuralIK.pretrained(2)
        plans: dict[str, np.ndarray] = {}
        if "network (shipped)" in baselines:
            plans["network (shipped)"] = network.predict(goals)
        if "TRR, nominal model" in baselines:
            plans["TRR, nominal model"] = trr_batch(model, goals).solutions
        if "TRR, paper's model" in baselines:
            plans["TRR, paper's model"] = trr_batch(model.with_kinematics("tilted"), goals).solutions
        read_at = episode_time(env) if settle_time == "episode" else settle_time
        start = now()
        times, tips = collect_samples(env, max(sizes), seed=seed + robot_seed, settle_time=read_at, progress=False)
        collect_seconds = now() - start
        learn_seconds: dict[str, list[float]] = {name: [] for name in learners}
        fitted = None
        for n in sizes:
            if "TRR, calibrated" in learners:
                start = now()
                calibrated = calibrate(model, times[:n], tips[:n])
                plans[f"TRR, calibrated|{n}"] = trr_batch(calibrated, goals).solutions
                learn_seconds["TRR, calibrated"].append(now() - start)
                fitted = calibrated.parameters()
            if "network, fine-tuned" in learners:
                start = now()
                tuned = network.finetune(times[:n], tips[:n], seed=seed + robot_seed, progress=False)
                plans[f"network, fine-tuned|{n}"] = tuned.predict(goals)
                learn_seconds["network, fine-tuned"].append(now() - start)
        errors = {name: np.array([execute(env, t, s) for t, s in zip(plan, goal_seeds, strict=True)])
                  for name, plan in plans.items()}
        steps = len(times) * (int(round(read_at / env.unwrapped.dt)) if read_at else 0)
        truth = effective_parameters(env.unwrapped, read_at)
        return {"errors": errors, "collect_seconds": collect_seconds, "samples": len(times),
                "steps": steps, "learn_seconds": learn_seconds, "fitted": fitted, "truth": truth}
    finally:
        env.close()


def effective_parameters(env, read_at: float | None) -> dict[str, np.ndarray] | None:
    """What the calibration should find on ``env``'s robot (the env's drawn perturbations, as the
    calibrated model's parameters): gains times the supply's; offsets; what the leaks take by
    ``read_at`` [s] after the valves act; the radius; the tilt; the loads at the nominal stiffness
    (module masses lumped as :func:`nominal_loads`, plus the payload). ``None`` when read when settled."""
    from soft_envs.robots.peter_calibration import nominal_loads

    if read_at is None:
        return None
    drawn, model = env.perturbations, env.model
    mass = model.with_parameters(module_mass=model.module_mass * (1.0 + drawn["mass_error"]))
    loads = nominal_loads(mass) + np.r_[np.zeros(model.n_modules - 1), env.payload + drawn["payload"]]
    return {"leg_gain": drawn["leg_gain"] * drawn["supply_gain"],
            "leg_offset": drawn["leg_offset"], "leak_loss": drawn["leak_rate"] * (read_at - drawn["command_delay"]),
            "radius": np.array([model.radius * (1.0 + drawn["radius_error"])]),
            "base_tilt": drawn["base_tilt"], "loads": loads / (1.0 + drawn["leg_stiffness_error"])}


def _stats(values_m: np.ndarray, digits: int = 2) -> str:
    mm = np.asarray(values_m) * 1e3
    return f"{mm.mean():.{digits}f} / {np.percentile(mm, 95):.{digits}f}"


def _plot(sizes, curves: dict[str, tuple[np.ndarray, np.ndarray]], flat: dict[str, float], plot_dir: str) -> str:
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, ax = plt.subplots(figsize=(7.4, 3.9))
    for (name, (mean, p95)), colour in zip(curves.items(), ("C0", "C1"), strict=False):
        ax.plot(sizes, mean * 1e3, "o-", color=colour, label=f"{name}: mean")
        ax.plot(sizes, p95 * 1e3, "s--", color=colour, alpha=0.6, label=f"{name}: p95")
    for (name, value), colour in zip(flat.items(), ("C2", "C3", "C4"), strict=False):
        ax.axhline(value * 1e3, color=colour, lw=1, ls=":", label=f"{name}: mean")
    ax.axhline(2.0, color="0.4", lw=0.8, label="target: 2 mm mean")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.set_xlabel("samples of the robot")
    ax.set_ylabel("open-loop error [mm]")
    ax.set_title('PETER, realism="realistic": learning on the robot')
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return save_figure(fig, plot_dir, "learn_on_robot_errors.png")


def _identification_table(runs: list[dict[str, Any]], size: int) -> str:
    """Fitted against drawn parameters (:func:`effective_parameters`) over the robots."""
    rows = []
    units = {"leg_gain": (1.0, "1"), "leg_offset": (1e3, "mm"), "leak_loss": (1e3, "mm"), "radius": (1e3, "mm"),
             "base_tilt": (1e3, "mrad"), "loads": (1.0, "kg")}
    for name, (scale, unit) in units.items():
        fitted = np.concatenate([np.atleast_1d(r["fitted"][name]) for r in runs]) * scale
        truth = np.concatenate([np.atleast_1d(r["truth"][name]) for r in runs]) * scale
        spread = truth.std()
        rows.append([f"`{name}` [{unit}]", f"{np.mean(np.abs(fitted - truth)):.3g}", f"{spread:.3g}",
                     f"{np.corrcoef(fitted, truth)[0, 1]:.3f}" if spread > 0 and fitted.std() > 0 else "—"])
    return (f"What the calibration identifies ({size} samples, every robot): the fitted parameters against the "
            "robot's drawn ones, as the calibrated model has them (gains times the supply's, the length the leaks "
            "take by 5 s after the valves open, loads — the module masses lumped at the module tops plus the "
            "payload — at the nominal leg stiffness, since tips only tell load/stiffness):\n\n"
            + markdown_table(["parameter", "mean |fitted − drawn|", "spread of the drawn values (std)",
                              "correlation"], rows))


def collection_speed(n: int = 40, seed: int = 0) -> dict[str, float]:
    """Wall and CPU time [s] per sample of :func:`collect_samples` read at 5 s and when settled,
    per raw ``env.step`` and the steps per sample, in this process, one after the other (the
    machine's 1-minute load average with them: on a shared machine the CPU time is what one free
    core would take)."""
    import os
    import time

    import gymnasium as gym

    import soft_envs  # noqa: F401
    from soft_envs.agents.nn import collect_samples

    class Counting(gym.Wrapper):
        steps = 0

        def step(self, action):
            Counting.steps += 1
            return self.env.step(action)

    env = Counting(gym.make(ENV_ID, n_modules=2, realism="realistic"))
    try:
        env.reset(seed=seed)
        collect_samples(env, 2, seed=seed, progress=False)  # warm up (the compiled step's first call)
        out = {"load": os.getloadavg()[0]}
        for key, read_at in (("at_5s", 5.0), ("settled", None)):
            Counting.steps = 0
            start, cpu = now(), time.process_time()
            collect_samples(env, n, seed=seed, settle_time=read_at, progress=False)
            out[key] = (now() - start) / n
            out[f"{key}_cpu"] = (time.process_time() - cpu) / n
            out[f"{key}_steps"] = Counting.steps / n
        base = env.unwrapped
        action = base.model_to_action(np.ones(base.model.n_dof))
        base.reset(seed=seed)
        start = now()
        for _ in range(200):
            base.step(action)
        out["step"] = (now() - start) / 200
        return out
    finally:
        env.close()


def _robot_run_job(kwargs: dict[str, Any]) -> dict[str, Any]:
    return robot_run(**kwargs)


def _run_jobs(jobs: list[dict[str, Any]], workers: int) -> list[dict[str, Any]]:
    """:func:`robot_run` of every job's keywords in ``workers`` processes (spawned), in job order."""
    import multiprocessing as mp

    if workers == 1:
        return [robot_run(**job) for job in progress(jobs, desc="learn_on_robot runs", leave=False)]
    with mp.get_context("spawn").Pool(workers) as pool:
        results = list(progress(pool.imap(_robot_run_job, jobs), total=len(jobs), desc="learn_on_robot runs",
                                leave=False))
        pool.close()
        pool.join()
    return results


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    n_robots, n_goals = (10, 30) if full else (2, 10)
    sizes = (100, 300, 1000, 3000) if full else (100, 300)
    decomposition_robots, decomposition_size = (4, 300) if full else (1, 100)

    def goals_of(r: int) -> list[int]:
        return [seed + 10_000 + 100 * r + k for k in range(n_goals)]

    jobs = [dict(realism="realistic", robot_seed=seed + 1000 + r, goal_seeds=goals_of(r), sizes=sizes, seed=seed)
            for r in range(n_robots)]
    jobs += [dict(realism=_realism(overrides), robot_seed=seed + 1000 + r, goal_seeds=goals_of(r),
                  sizes=(decomposition_size,), baselines=("TRR, nominal model",), settle_time=read_at, seed=seed)
             for _, overrides, read_at in DECOMPOSITION for r in range(decomposition_robots)]
    speed = collection_speed(40 if full else 10, seed)
    results = _run_jobs(jobs, WORKERS)
    runs, decomposed = results[:n_robots], results[n_robots:]

    def pooled(name: str) -> np.ndarray:
        return np.concatenate([run_["errors"][name] for run_ in runs])

    rows = [[name, "—", _stats(pooled(name)), "—"] for name in BASELINES]
    curves = {}
    for name in LEARNERS:
        means, p95s = [], []
        for k, n in enumerate(sizes):
            errors = pooled(f"{name}|{n}")
            seconds = np.mean([run_["learn_seconds"][name][k] for run_ in runs])
            rows.append([name, n, _stats(errors), f"{seconds:.1f}"])
            means.append(errors.mean())
            p95s.append(np.percentile(errors, 95))
        curves[name] = (np.array(means), np.array(p95s))
    headers = ["planner (open loop)", "samples", "final error: mean / p95 [mm]", "learning [s]"]
    text = markdown_table(headers, rows)
    collected = sum(run_["samples"] for run_ in runs)
    seconds = sum(run_["collect_seconds"] for run_ in runs)
    steps = sum(run_["steps"] for run_ in runs)
    text += (f"\n\n{n_robots} robots (seeded `realism=\"realistic\"` draws of soft `PeterReach-v0`, 2 modules) × "
             f"{n_goals} goals each (their own), open loop: planned once, held for the 5 s episode; the true final "
             "distance (the table pools robots and goals). The learners see the first *samples* of "
             f"{max(sizes)} collected on each robot by `collect_samples(env, n, seed=…, settle_time=5.0)` "
             "(random inflation times, each from rest — `reset(options={\"keep_robot\": True})` — the tip "
             "measured with the sensor's noise and latency 5 s after the command, when the task judges it). "
             f"Collection in the runs ({WORKERS} processes): {1e3 * seconds / collected:.0f} ms of wall time per "
             f"sample, {steps / collected:.0f} env steps of soft physics each. Alone in one process, before them "
             f"(1-minute load average {speed['load']:.1f} on this machine): {1e3 * speed['at_5s']:.0f} ms of wall "
             f"time ({1e3 * speed['at_5s_cpu']:.0f} ms of CPU) per sample read at 5 s ({speed['at_5s_steps']:.0f} "
             f"steps), {1e3 * speed['settled']:.0f} ms ({1e3 * speed['settled_cpu']:.0f} ms of CPU) per sample "
             f"read when settled ({speed['settled_steps']:.1f} steps), {1e3 * speed['step']:.2f} ms per raw "
             "`env.step`: the collector costs its steps and nothing more. Learning: the calibration's least "
             "squares plus TRR on the goals, or the fine-tuning (forward model and network, one torch thread) plus "
             "the network's predictions, per robot.")

    text += "\n\n" + _identification_table(runs, max(sizes))

    rows = []
    for i, (label, _, _) in enumerate(DECOMPOSITION):
        errors = [result["errors"] for result in decomposed[i * decomposition_robots:(i + 1) * decomposition_robots]]
        row = [label, _stats(np.concatenate([e["TRR, nominal model"] for e in errors]))]
        for name in LEARNERS:
            row.append(_stats(np.concatenate([e[f"{name}|{decomposition_size}"] for e in errors]), 3))
        rows.append(row)
    text += (f"\n\nWhat learning cannot absorb ({decomposition_robots} of the robots, their goals, "
             f"{decomposition_size} samples; one perturbation group off at a time, or the samples read when the "
             "arm has settled — `collect_samples(..., settle_time=None)` — instead of when the task judges):\n\n")
    text += markdown_table(["perturbations", "TRR, nominal model: mean / p95 [mm]",
                            f"TRR, calibrated ({decomposition_size} samples) [mm]",
                            f"network, fine-tuned ({decomposition_size} samples) [mm]"], rows)
    from soft_envs import evaluate as ev

    episodes = 20 if full else 2
    jobs = ev.jobs_for(["peter-2"], ["trr", "trr-feedback", "trr-calibrated", "nn-finetuned"], presets=("realistic",),
                       episodes=episodes, seed=seed)
    text += (f"\n\nThe same learners as `soft-envs evaluate` controllers ({ev.LEARN_SAMPLES} samples collected on "
             "each episode's robot before the episode, then the episode's goal open loop), next to TRR open loop "
             f"and closed on the measured tip — `soft-envs evaluate --tasks peter-2 --presets realistic --controllers "
             f"trr trr-feedback trr-calibrated nn-finetuned --episodes {episodes}`:\n\n")
    text += ev.evaluate(jobs, workers=WORKERS, progress=False).table()
    if plot_dir is not None:
        flat = {name: pooled(name).mean() for name in BASELINES}
        text += f"\n\n![open-loop error against samples]({_plot(np.array(sizes), curves, flat, plot_dir)})"
    return text
