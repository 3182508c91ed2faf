"""The ``soft-envs`` command line: list environments, run benchmarks and demos, train the NN IK and RL policies."""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soft_envs.console import Progress

# What `soft-envs bench` runs with no names: the IK controllers of PETER side by side
# (TRR, the naive TRR, the neural network and the hybrid, in the model and in physics).
DEFAULT_BENCHES = ("peter", "nn")

# The main keyword variants of each environment (``gym.make(id, **kwargs)``), shown by `list`.
ENV_VARIANTS: dict[str, tuple[str, ...]] = {
    "soft_envs/PeterReach-v0": (
        "n_modules=1..4",
        "kinematic=True (analytic model, no PyBullet; fast learning)",
        "kinematics='pcc'|'tilted' (the paper's model, with kinematic=True)",
        "goal_conditioned=True (achieved_goal/desired_goal dict)",
        "physics='soft'|'stiff', actuation='pneumatic'|'instant', payload=kg, command_delay=s",
        "leg_stiffness=N/m, vent_rate=m/s, links_per_module=m",
        "realism='ideal'|'realistic'|{{name: value or (low, high)}} (PETER_REALISM)",
        "gym.make_vec(id, num_envs=N, **variant): N arms per batched call (soft and kinematic)",
    ),
    "soft_envs/PCCTrack-v0": (
        "n_segments=N, links_per_segment=m",
        "trajectory={trajectories}",
        "action_type='configuration'|'torque'|'pressure', regulator_delay=s, payload=kg",
        "physics='soft'|'stiff'",
        "kp=80, kv=3 (the paper's PD + feed-forward gains), stiffness_error=e",
        "goal_conditioned=True",
        "realism='ideal'|'realistic'|{{name: value or (low, high)}} (PCC_REALISM)",
        "gym.make_vec(id, num_envs=N, **variant): N arms per batched call",
    ),
    "soft_envs/QuadrupedWalk-v0": (
        "reset_noise_scale=rad, ground_friction=mu",
        "realism='ideal'|'realistic'|{{name: value or (low, high)}} (friction, servo strength and offsets, "
        "trunk mass, payload, delays, joint and IMU noise)",
    ),
    "soft_envs/QuadrupedPose-v0": ("goal_range=rad", "goal_conditioned=True",
                                   "realism='ideal'|'realistic'|{{...}} (as QuadrupedWalk-v0)"),
    "soft_envs/HexapodPose-v0": (
        "goal_range=fraction of the input limit", "goal_conditioned=True",
        "realism='ideal'|'realistic'|{{name: value or (low, high)}} (guide gains and offsets, rod length and "
        "stiffness, payload, delays, pose noise)",
    ),
}


def _cmd_list(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import soft_envs
    from soft_envs.trajectories import TRAJECTORIES

    print("Environments (gym.make(id, **variant)):")
    for env_id in soft_envs.ENV_IDS:
        spec = gym.spec(env_id)
        print(f"  {env_id:32s} max_episode_steps={spec.max_episode_steps}")
        for variant in ENV_VARIANTS.get(env_id, ()):
            print(f"      {variant.format(trajectories='|'.join(sorted(TRAJECTORIES)))}")
    from soft_envs import bench

    print("Benchmarks: " + ", ".join(bench.available()))
    from soft_envs.demos import DEMOS

    print("Demos:      " + ", ".join(DEMOS))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from soft_envs import bench
    from soft_envs.console import progress

    names = args.names or [n for n in DEFAULT_BENCHES if n in bench.available()]
    if names == ["all"]:
        names = bench.available()
    for name in names:
        if name not in bench.BENCHES:
            print(f"unknown bench {name!r}; choose from {', '.join(bench.available())} or all", file=sys.stderr)
            return 2
    # lines in a log (every 30 s, also while one bench runs long); on a terminal the benches' own bars
    with progress(total=len(names), desc="bench", unit="benches", terminal=False) as bar:
        return _run_benches(args, names, bar)


def _run_benches(args: argparse.Namespace, names: list[str], bar: Progress) -> int:
    """Run the benches ``names`` in turn (``soft-envs bench``), ``bar`` counting them."""
    from soft_envs import bench
    from soft_envs.exceptions import InvalidParameterError, MissingDependencyError

    for name in names:
        bar.set_postfix_str(f"running {name}")
        module = bench.load(name)
        accepted = inspect.signature(module.run).parameters
        options: dict = {flag: True for flag in ("peers", "train") if getattr(args, flag) and flag in accepted}
        if args.device != "cpu":
            if "device" not in accepted:
                print(f"bench {name!r} runs on the CPU only (no --device)", file=sys.stderr)
                return 2
            options["device"] = args.device
        if args.goals and "goals" in accepted:
            options["goals"] = list(args.goals)
            if args.update and "previous" in accepted and os.path.exists(args.update):
                options["previous"] = bench.read_section(args.update, name)
        start = time.perf_counter()
        try:
            body = module.run(full=args.full, seed=args.seed, plot_dir=args.plot, **options)
        except MissingDependencyError as exc:  # e.g. no trained policies for `learned`: keep its section
            print(f"[skipped bench '{name}': {exc}]", file=sys.stderr)
            bar.update()
            continue
        except InvalidParameterError as exc:  # e.g. --device cuda where there is no GPU
            print(f"bench {name}: {exc}", file=sys.stderr)
            return 2
        seconds = time.perf_counter() - start
        command = f"soft-envs bench {name}" + (" --full" if args.full else "") + \
            (f" --seed {args.seed}" if args.seed else "") + \
            "".join(f" --{flag}" for flag in options if options[flag] is True) + \
            (f" --goals {' '.join(options['goals'])}" if "goals" in options else "")
        if "device" in options:
            command += f" --device {options['device']}"
        section_name = name if "device" not in options else f"{name}_{options['device']}"
        text = bench.section(section_name, module.TITLE + (f" ({options['device']})" if "device" in options else ""),
                             body, command, seconds)
        print(text.split("\n", 1)[1].rsplit("\n", 1)[0])
        print()
        if args.update:
            bench.update_file(args.update, section_name, text)
            print(f"[updated section '{section_name}' of {args.update}]")
        sys.stdout.flush()  # (a log file sees each section as it is done)
        bar.set_postfix_str(f"done {name}")
        bar.update()
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from soft_envs.demos import DEMOS, check_frame_time, check_steps
    from soft_envs.exceptions import InvalidParameterError
    from soft_envs.sim.bullet import has_display

    try:  # before any env is made
        check_steps(args.steps)
        check_frame_time(args.frame_time)
    except InvalidParameterError as exc:
        print(f"soft-envs demo: {exc}", file=sys.stderr)
        return 2
    if args.gallery:
        from soft_envs.demos import write_gallery

        for path, size in write_gallery(args.gallery, seed=args.seed).items():
            print(f"wrote {path} ({size / 1e3:.0f} kB)")
        return 0
    gui = has_display() and not args.output
    mode = "human" if gui else "rgb_array"
    if args.policy:
        from soft_envs.demos import learned

        frames = learned(args.policy, render_mode=mode, steps=args.steps, seed=args.seed)
        args.name = os.path.splitext(os.path.basename(args.policy))[0]
    elif args.name not in DEMOS:
        print(f"unknown demo {args.name!r}; choose from {', '.join(DEMOS)}", file=sys.stderr)
        return 2
    else:
        frames = DEMOS[args.name](render_mode=mode, steps=args.steps, seed=args.seed)
    if gui:
        return 0
    output = args.output or f"{args.name}_demo.gif"
    import imageio.v2 as imageio

    if output.endswith(".gif"):
        imageio.mimsave(output, frames, duration=1000 * args.frame_time, loop=0)
    else:
        imageio.mimsave(output, frames, fps=1.0 / args.frame_time)  # (a float: a frame may last over 1 s)
    print(f"wrote {len(frames)} frames to {os.path.abspath(output)}")
    return 0


def _cmd_train_ik(args: argparse.Namespace) -> int:
    from soft_envs.agents.nn import train

    return train.main(args)


def _cmd_train_rl(args: argparse.Namespace) -> int:
    from soft_envs.learn import cli

    return cli.main(args)


def _tasks_text() -> str:
    """Every evaluation task with its environment and its controllers (``evaluate --help`` and ``--list``)."""
    from soft_envs import evaluate as ev

    lines = ["tasks (env and keywords) and their controllers:"]
    for task in ev.TASKS.values():
        kwargs = " ".join(f"{k}={v}" for k, v in task.kwargs)
        lines.append(f"  {task.name:20s} {task.env_id.split('/')[-1]} {kwargs}".rstrip())
        lines.append(f"  {'':20s}   controllers: {', '.join(task.controllers)}")
    lines.append(f"presets: {', '.join(ev.PRESETS)}; any task also takes a Stable-Baselines3 policy, sb3:ALGO:PATH")
    return "\n".join(lines)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from soft_envs import evaluate as ev
    from soft_envs.exceptions import InvalidParameterError
    from soft_envs.jobs import JobFailedError, ResultsFileError

    if args.list:
        print(_tasks_text())
        return 0
    try:
        jobs = ev.jobs_for(args.tasks or None, (args.controllers or None), presets=args.presets or tuple(ev.PRESETS),
                           episodes=args.episodes, seed=args.seed, learn_samples=args.learn_samples)
        result = ev.evaluate(jobs, workers=args.workers, ray_address=args.ray, results=args.results,
                             resume=args.resume, max_retries=args.max_retries)
    except (ResultsFileError, JobFailedError, InvalidParameterError) as exc:
        print(f"soft-envs evaluate: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, JobFailedError) else 2
    except ev.EvaluationInterrupted as stop:
        print(stop.evaluation.table() if stop.evaluation.episodes else "(no episode finished)")
        kept = f"; every finished episode is in {args.results}: rerun with --resume to finish" if args.results else ""
        print(f"[{stop}: {len(stop.evaluation.episodes)} of {len(jobs)} episodes finished{kept}]", file=sys.stderr)
        return 128 + stop.signum
    table = result.table()
    gait = ev.gait_table(result)
    if gait:
        table += "\n\ngait figures (median over the episodes; soft_envs.envs.gait_meter):\n\n" + gait
    contact = ev.contact_table(result)
    if contact:
        table += "\n\ncontact with the obstacles (every episode):\n\n" + contact
    print(table)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(table + "\n")
        print(f"[wrote {args.output}]")
    if args.plot:
        print(f"[wrote {ev.plot(result, args.plot)}]")
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    from soft_envs import prepare
    from soft_envs.exceptions import InvalidParameterError

    if args.clean:
        removed = prepare.clean(user=args.user)
        print("removed " + ", ".join(removed) if removed else "no compiled kernels to remove")
        return 0
    try:
        left, _ = prepare.compile_kernels(user=args.user, jobs=args.jobs)
    except InvalidParameterError as exc:
        print(f"compile: {exc}", file=sys.stderr)
        return 2
    return 1 if left else 0


def build_parser() -> argparse.ArgumentParser:
    from soft_envs import __version__

    parser = argparse.ArgumentParser(prog="soft-envs", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="list environments, benchmarks and demos").set_defaults(func=_cmd_list)

    b = sub.add_parser("bench", help="compare the IK controllers with the papers' figures")
    b.add_argument("names", nargs="*", help="benches to run (default: peter nn; 'all' for every one)")
    b.add_argument("--full", action="store_true",
                   help="the papers' sizes (e.g. 1000 targets) instead of small defaults")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--update", metavar="FILE", help="rewrite this bench's section of FILE (e.g. BENCHMARKS.md)")
    b.add_argument("--plot", metavar="DIR", help="also write figures (needs the 'plot' extra)")
    b.add_argument("--peers", action="store_true",
                   help="also run the other IK libraries that are installed (bench ik; the 'peers' extra)")
    b.add_argument("--train", action="store_true",
                   help="bench learned: first train every goal's policy (hours; soft_envs.learn.recipes.GOALS)")
    b.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="bench batched: the GPU core and env (numba's CUDA target; a section of its own)")
    b.add_argument("--goals", nargs="+", metavar="STEM",
                   help="bench learned: only these goals; with --update the others' rows are kept from the file")
    b.set_defaults(func=_cmd_bench)

    c = sub.add_parser("compile", help="compile the kernels once into the install location, so that every later "
                                       "process starts in about a second (whatever its HOME and cache folders)")
    c.add_argument("--user", action="store_true",
                   help="into your cache folder instead ($NUMBA_CACHE_DIR/soft_envs, else ~/.cache/soft_envs/numba)")
    c.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="child processes at a time (default: 2, or 1 on one core)")
    c.add_argument("--clean", action="store_true",
                   help="remove the install location's compiled kernels (with --user: the cache folder's too); "
                        "run it before `pip uninstall`")
    c.set_defaults(func=_cmd_compile)

    d = sub.add_parser("demo", help="run a controller in an environment (GUI, or a GIF/MP4 headless)")
    d.add_argument("name", nargs="?", default="peter")
    from soft_envs.demos import MAX_FRAME_TIME, MAX_STEPS

    d.add_argument("--steps", type=int, default=120, help=f"control steps (default 120, at most {MAX_STEPS:,})")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--output", help="write frames here (.gif or .mp4) instead of opening a window")
    d.add_argument("--frame-time", type=float, default=0.05,
                   help=f"seconds per frame in the file (at most {MAX_FRAME_TIME:g})")
    d.add_argument("--gallery", metavar="DIR", help="write the README's pictures instead: every demo as a looping "
                   "GIF (DIR/demos/NAME.gif, at most 1 MB) and the sim-to-real figure from BENCHMARKS.md")
    d.add_argument("--policy", metavar="PATH.zip", help="instead of a demo: a policy saved by train-rl acting in "
                   "the env it was trained on (its PATH.json; the 'learn' extra)")
    d.set_defaults(func=_cmd_demo)

    e = sub.add_parser("evaluate", help="run controllers through env.step over seeded episodes and compare them",
                       epilog=_tasks_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--list", action="store_true", help="list the tasks and their controllers, then exit")
    e.add_argument("--tasks", nargs="*", help="tasks (default: every one; listed below)")
    e.add_argument("--controllers", nargs="*",
                   help="controllers (default: each task's own); a Stable-Baselines3 policy as sb3:ALGO:PATH")
    e.add_argument("--presets", nargs="*", help="realism presets (default: every one: ideal, realistic)")
    from soft_envs.evaluate import MAX_EPISODES
    from soft_envs.jobs import MAX_RETRIES, MAX_WORKERS

    e.add_argument("--episodes", type=int, default=10,
                   help=f"episodes per task, controller and preset (default 10, at most {MAX_EPISODES:,})")
    e.add_argument("--learn-samples", type=int, metavar="N",
                   help="samples the learning controllers (trr-calibrated, nn-finetuned) collect on each "
                        "episode's robot before acting (default 100)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--workers", type=int, default=2,
                   help=f"worker processes (or Ray workers with --ray; at most {MAX_WORKERS})")
    e.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster: an address, 'auto', or 'local' "
                                                    "(needs the 'ray' extra)")
    e.add_argument("--results", metavar="FILE",
                   help="append one JSON record per finished episode to FILE (JSON Lines, on disk as each "
                        "finishes); the table is read from it")
    e.add_argument("--resume", action="store_true", help="skip the episodes already in --results FILE, run the rest")
    e.add_argument("--max-retries", type=int, default=2, metavar="N",
                   help=f"rerun an episode whose worker process died at most N times (default 2; N <= {MAX_RETRIES})")
    e.add_argument("--output", help="also write the table here (markdown)")
    e.add_argument("--plot", metavar="DIR", help="write error CDFs per task (needs the 'plot' extra)")
    e.set_defaults(func=_cmd_evaluate)

    t = sub.add_parser("train-ik", help="train the neural-network IK (needs the 'learn' extra)")
    t.add_argument("--modules", type=int, default=2)
    from soft_envs.agents.nn.train import MAX_EPOCHS, MAX_SAMPLES

    t.add_argument("--samples", type=int, default=10_000,
                   help=f"samples of the model (default 10,000, at most {MAX_SAMPLES:,})")
    t.add_argument("--epochs", type=int, default=250, help=f"the most epochs (default 250, at most {MAX_EPOCHS:,})")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--output", help="weights file (.npz)")
    t.add_argument("--recipe", choices=("ours", "paper"), default="ours",
                   help="'paper': random labels, 30%% dropout, no forward loss; 'ours' (default): TRR-branch "
                        "labels, forward-model loss, learning-rate decay, no dropout")
    t.add_argument("--dropout", type=float, help="dropout rate (paper: 0.3; ours: 0)")
    t.add_argument("--forward-weight", type=float, help="weight of the forward-model loss [1/mm^2]")
    t.add_argument("--patience", type=int, help="early-stopping patience [epochs] (default 20)")
    t.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    t.set_defaults(func=_cmd_train_ik)

    r = sub.add_parser("train-rl", help="train a Stable-Baselines3 policy on any env (--env; SAC+HER, PPO, "
                                        "RecurrentPPO; checkpoints and --resume; needs the 'learn' extra)")
    from soft_envs.learn.cli import add_arguments

    add_arguments(r)
    r.set_defaults(func=_cmd_train_rl)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
