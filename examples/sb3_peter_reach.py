"""Train a Stable-Baselines3 agent (PPO or SAC) on ``soft_envs/PeterReach-v0``.

    python examples/sb3_peter_reach.py --algo sac --timesteps 50000 --kinematic
    python examples/sb3_peter_reach.py --algo ppo --timesteps 200000 --n-envs 4

Needs the ``learn`` extra (PyTorch, stable-baselines3). Torch runs on ``--threads`` threads
(default 1: PyTorch's default of one thread per core oversubscribes a small machine, the env and
the learner then fight for the cores and SAC runs several times slower). For the tuned recipe
that reaches the goals within millimetres (SAC + HER, a short horizon, a time budget) use
``soft-envs train-rl``. ``--kinematic`` trains on the analytic
arm (no PyBullet, fast); without it the agent learns on the PyBullet body. At the end the
learned policy is compared, on the same seeded goals, with a random policy and with the
shipped neural-network IK refined by TRR (``NeuralReachAgent``): final tip distance [mm].
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import soft_envs  # noqa: F401  (registers the environments)
from soft_envs.agents.nn import NeuralReachAgent


def final_distances(env: gym.Env, act, episodes: int, seed: int, reset=None) -> np.ndarray:
    """Tip distance [m] at the end of each episode for the policy ``act(obs) -> action``."""
    out = []
    for k in range(episodes):
        obs, info = env.reset(seed=seed + k)
        if reset is not None:
            reset(obs, info)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(act(obs))
            done = terminated or truncated
        out.append(info["distance"])
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", choices=("ppo", "sac"), default="sac")
    parser.add_argument("--timesteps", type=int, default=30_000)
    parser.add_argument("--modules", type=int, default=2)
    parser.add_argument("--kinematic", action="store_true", help="analytic arm, no PyBullet (fast)")
    parser.add_argument("--n-envs", type=int, default=1, help="parallel envs (PPO)")
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="save the trained policy here (.zip)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)

    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    env_kwargs = {"n_modules": args.modules, "kinematic": args.kinematic}
    if args.algo == "ppo":
        venv = make_vec_env("soft_envs/PeterReach-v0", n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs)
        agent = PPO("MlpPolicy", venv, n_steps=1024, batch_size=64, learning_rate=3e-4, seed=args.seed, verbose=1)
    else:
        venv = make_vec_env("soft_envs/PeterReach-v0", n_envs=1, seed=args.seed, env_kwargs=env_kwargs)
        agent = SAC("MlpPolicy", venv, learning_starts=1000, seed=args.seed, verbose=1)
    agent.learn(total_timesteps=args.timesteps, progress_bar=_has_progress_bar())
    if args.save:
        agent.save(args.save)

    env = gym.make("soft_envs/PeterReach-v0", **env_kwargs)
    eval_seed = 10_000 + args.seed
    learned = final_distances(env, lambda o: agent.predict(o, deterministic=True)[0], args.episodes, eval_seed)
    env.action_space.seed(args.seed)
    random = final_distances(env, lambda o: env.action_space.sample(), args.episodes, eval_seed)
    ik = NeuralReachAgent(env)  # network + TRR on the env's own model
    hybrid = final_distances(env, ik.act, args.episodes, eval_seed, reset=ik.reset)
    env.close()
    venv.close()
    print(f"final tip distance over {args.episodes} episodes [mm] (mean / median):")
    for name, d in (("random policy", random), (f"{args.algo.upper()} ({args.timesteps} steps)", learned),
                    ("NN IK + TRR", hybrid)):
        print(f"  {name:28s} {d.mean() * 1e3:8.3f} / {np.median(d) * 1e3:8.3f}")


def _has_progress_bar() -> bool:
    """SB3's bar (rich + tqdm), only on a terminal, as the package's own bars."""
    import importlib.util
    import sys

    installed = importlib.util.find_spec("rich") is not None and importlib.util.find_spec("tqdm") is not None
    return installed and sys.stderr.isatty()


if __name__ == "__main__":
    main()
