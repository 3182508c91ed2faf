"""The ``soft-envs train-rl`` command line (options, and the run it starts: :mod:`soft_envs.learn.train`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from soft_envs.learn.recipes import (
    ALGORITHMS,
    MAX_BUFFER_SIZE,
    MAX_ENVS,
    MAX_NET_LAYERS,
    MAX_NET_WIDTH,
    PARALLEL_LEARNERS,
    PARALLEL_MIN_ENVS,
    PARALLEL_RECIPES,
    RECIPES,
    recipe_for,
)

#: Command-line options that override a recipe's field (``None``: keep the recipe's).
_OVERRIDES = {"algo": "algo", "gamma": "gamma", "her": "her", "standardize": "standardize",
              "learning_rate": "learning_rate", "batch_size": "batch_size", "train_freq": "train_freq",
              "gradient_steps": "gradient_steps", "n_envs": "n_envs", "learning_starts": "learning_starts",
              "buffer_size": "buffer_size"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``soft-envs train-rl`` options."""
    from soft_envs.jobs import MAX_WORKERS
    from soft_envs.learn.train import DEFAULT_MINUTES, MAX_EVAL_EPISODES, MAX_SEEDS, MAX_TIMESTEPS

    parser.add_argument("--env", default="soft_envs/PeterReach-v0",
                        help="env id (its recipe: soft_envs.learn.recipes.RECIPES); default kinematic PeterReach")
    parser.add_argument("--recipe", help=f"a named recipe instead of the env's: {', '.join(sorted(RECIPES))}")
    parser.add_argument("--env-kwargs", default="{}",
                        help='gym.make keywords as JSON, e.g. \'{"realism": "realistic"}\'')
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help=f"wall-clock budget [min] (default {DEFAULT_MINUTES:g}; 0: none, then --timesteps)")
    parser.add_argument("--budget-clock", choices=("wall", "cpu"), default="wall",
                        help="what --minutes counts: wall time (default) or this run's CPU time (the wall time an "
                             "idle core would take, however busy the machine; both are recorded)")
    parser.add_argument("--timesteps", type=int,
                        help=f"env-step budget (whichever budget ends first; at most {MAX_TIMESTEPS:.0e})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", help="several runs, e.g. 0-7 (OUTPUT_seedK.zip each), in --workers processes "
                                        f"(at most {MAX_SEEDS:,} seeds)")
    parser.add_argument("--workers", type=int, default=2,
                        help=f"processes for --seeds (default 2, at most {MAX_WORKERS})")
    parser.add_argument("--ray", metavar="ADDRESS", help="run --seeds as Ray tasks ('auto', 'local' or an address)")
    parser.add_argument("--output", help="policy file (.zip; the env id and keywords go to the same name with .json)")
    parser.add_argument("--realism", help="the env's realism preset to train and test under (e.g. realistic)")
    parser.add_argument("--modules", type=int, help="PeterReach: number of modules")
    parser.add_argument("--algo", choices=ALGORITHMS, type=str.upper)
    parser.add_argument("--gamma", type=float, help="discount")
    parser.add_argument("--her", action=argparse.BooleanOptionalAction, default=None,
                        help="goal-conditioned env + hindsight relabelling (HerReplayBuffer)")
    parser.add_argument("--standardize", action=argparse.BooleanOptionalAction, default=None,
                        help="standardise the networks' input (StandardizedInput)")
    parser.add_argument("--net", help="hidden layers of actor and critic, e.g. 256,256 (at most "
                                      f"{MAX_NET_LAYERS} layers of {MAX_NET_WIDTH:,} units)")
    parser.add_argument("--learning-rate", type=float)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--learning-starts", type=int)
    parser.add_argument("--buffer-size", type=int,
                        help=f"replay buffer capacity (off-policy; at most {MAX_BUFFER_SIZE:.0e} transitions)")
    parser.add_argument("--train-freq", type=int)
    parser.add_argument("--gradient-steps", type=int)
    parser.add_argument("--n-envs", type=int,
                        help=f"PPO: parallel envs (at most {MAX_ENVS:,}); at least {PARALLEL_MIN_ENVS} on an env with "
                             "a native vector env picks the parallel learner (rsl_rl PPO, soft_envs.learn.parallel)")
    parser.add_argument("--eval-every", type=int,
                        help="env steps between evaluations (default 10,000; the parallel learner 500,000)")
    parser.add_argument("--eval-episodes", type=int, default=100,
                        help=f"held-out episodes of each evaluation (default 100, at most {MAX_EVAL_EPISODES:,})")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--env-threads", type=int,
                        help="the parallel learner: threads stepping the vector env (default: every core)")
    parser.add_argument("--device", default="cpu",
                        help="the parallel learner: where its networks and batches live ('cpu', 'cuda', 'cuda:N')")
    parser.add_argument("--checkpoint-every", type=float, metavar="MIN",
                        help="write OUTPUT.ckpt/ every MIN minutes of training (and on SIGTERM)")
    parser.add_argument("--resume", action="store_true", help="continue OUTPUT.ckpt/ to the same total budget")
    parser.add_argument("--tensorboard", metavar="DIR", help="SB3's TensorBoard logs to DIR")


def recipe_from_args(args: argparse.Namespace):
    """The recipe the options name, with the options that override it."""
    from soft_envs.exceptions import InvalidParameterError

    name = args.recipe or args.env
    if args.recipe is None and (args.n_envs or 0) >= PARALLEL_MIN_ENVS and args.env in PARALLEL_RECIPES:
        name = PARALLEL_RECIPES[args.env]  # thousands of envs: the parallel learner's recipe
    recipe = recipe_for(name)
    if args.recipe is None and args.env != recipe.env_id:
        raise InvalidParameterError(f"no recipe for {args.env!r}")
    changes = {field: getattr(args, option) for option, field in _OVERRIDES.items()
               if getattr(args, option, None) is not None}
    if args.net:
        try:
            changes["net_arch"] = tuple(int(w) for w in str(args.net).split(",") if w.strip())
        except ValueError:
            raise InvalidParameterError(f"--net takes widths like 256,256; got {args.net!r}") from None
    try:
        extra = json.loads(args.env_kwargs or "{}")
    except json.JSONDecodeError as exc:
        raise InvalidParameterError(f"--env-kwargs must be a JSON object; got {args.env_kwargs!r}") from exc
    if not isinstance(extra, dict):
        raise InvalidParameterError(f"--env-kwargs must be a JSON object; got {args.env_kwargs!r}")
    return recipe.replace(**changes, env_kwargs=extra).validate()


def main(args: argparse.Namespace) -> int:
    """``soft-envs train-rl``: train, print the evaluations and the final figures, save."""
    from soft_envs.exceptions import InvalidParameterError
    from soft_envs.learn import train as train_rl

    try:
        recipe = recipe_from_args(args)
        minutes = args.minutes if args.minutes and args.minutes > 0 else None
        if recipe.learner in PARALLEL_LEARNERS:
            return _main_parallel(args, recipe, minutes)
        if args.device != "cpu":
            raise InvalidParameterError("--device is the parallel learner's (--n-envs N on a native vector env)")
        output = args.output or f"{recipe.env_id.split('/')[-1].split('-')[0].lower()}_policy.zip"
        common = dict(minutes=minutes, timesteps=args.timesteps, n_modules=args.modules, realism=args.realism,
                      eval_every=args.eval_every or 10_000, eval_episodes=args.eval_episodes, threads=args.threads,
                      checkpoint_every=args.checkpoint_every, resume=args.resume, tensorboard=args.tensorboard,
                      budget_clock=args.budget_clock)
        if args.seeds:
            rows = train_rl.train_seeds(train_rl.parse_seeds(args.seeds), output=output, workers=args.workers,
                                        ray_address=args.ray, recipe=recipe, **common)
            for row in rows:
                print(json.dumps(row))
            return 0
        result = train_rl.train(recipe, seed=args.seed, output=output, **common)
    except ValueError as exc:
        print(f"train-rl: {exc}", file=sys.stderr)
        return 2
    if result.interrupted:
        print(f"train-rl: stopped at {result.timesteps} steps; resume with --resume", file=sys.stderr)
        return 3
    assert result.final is not None  # a finished run was evaluated
    s = result.final.summary()
    print(f"{recipe.algo} on {result.env_id} {result.env_kwargs}, seed {args.seed}: {result.timesteps} steps in "
          f"{result.seconds / 60:.1f} min; {s['episodes']} held-out episodes: {result.final.line()}")
    return 0


def _main_parallel(args: argparse.Namespace, recipe, minutes: float | None) -> int:
    """``soft-envs train-rl`` on the parallel learner: one run per seed, in this process."""
    from soft_envs.exceptions import InvalidParameterError
    from soft_envs.learn import train as train_rl
    from soft_envs.learn.parallel import train_parallel

    unsupported = [flag for flag, value in (("--checkpoint-every", args.checkpoint_every), ("--resume", args.resume),
                                            ("--tensorboard", args.tensorboard), ("--ray", args.ray)) if value]
    if unsupported:
        raise InvalidParameterError(f"the parallel learner does not take {', '.join(unsupported)}")
    recipe = recipe.replace(env_kwargs=train_rl.env_kwargs_for(recipe, n_modules=args.modules, realism=args.realism))
    output = args.output or f"{recipe.env_id.split('/')[-1].split('-')[0].lower()}_policy.npz"
    seeds = train_rl.parse_seeds(args.seeds) if args.seeds else [args.seed]
    for seed in seeds:
        path = output if len(seeds) == 1 else str(Path(output).with_suffix("")) + f"_seed{seed}.npz"
        result = train_parallel(recipe, minutes=minutes, timesteps=args.timesteps, seed=seed,
                                eval_every=args.eval_every or 500_000, eval_episodes=args.eval_episodes,
                                threads=args.threads, env_threads=args.env_threads, output=path,
                                budget_clock=args.budget_clock, device=args.device)
        assert result.final is not None
        learner = "skrl SAC" if recipe.learner == "skrl" else "rsl_rl PPO"
        print(f"{learner} on {result.env_id} {result.env_kwargs}, {recipe.n_envs} envs, seed {seed}: "
              f"{result.timesteps} steps in {result.seconds / 60:.1f} min ({args.budget_clock}); "
              f"{result.final.summary()['episodes']} held-out episodes: {result.final.line()}")
    return 0
