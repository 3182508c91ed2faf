"""Learnability of every env: what an RL run sees at its start, under uniformly random actions.

Per env (and per ``action_type`` of ``PCCTrack-v0``): the median random-action episode length
against the step limit (an env that terminates on its model's validity within a few steps
cannot be learned: the first episodes of every RL run are random), the fraction of steps whose
observation had an entry clipped into its bounds (``env.unwrapped.observation_clipped``), and
the median per-step reward magnitude (SB3's default hyper-parameters expect O(1)).
``tests/envs/test_env_conventions.py`` asserts the same figures on fewer episodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from soft_envs.bench import markdown_table

TITLE = "Learnability: random-action episodes, observation bounds and reward scale of every env"

#: (env id, keywords) measured by the bench: every env, every PCC action type.
CASES: tuple[tuple[str, dict], ...] = (
    ("soft_envs/PeterReach-v0", {}),
    ("soft_envs/PeterReach-v0", {"kinematic": True}),
    ("soft_envs/PCCTrack-v0", {}),
    ("soft_envs/PCCTrack-v0", {"action_type": "torque"}),
    ("soft_envs/PCCTrack-v0", {"action_type": "pressure"}),
    ("soft_envs/PCCTrack-v0", {"trajectory": "planar_circle", "n_segments": 4}),
    ("soft_envs/QuadrupedWalk-v0", {}),
    ("soft_envs/QuadrupedPose-v0", {}),
    ("soft_envs/HexapodPose-v0", {}),
)


@dataclass
class Learnability:
    """Random-action figures of one env: episode lengths (steps), the step limit, the fraction
    of steps with a clipped observation entry, of observations outside the space, and the
    per-step rewards."""

    lengths: np.ndarray
    limit: int
    clipped: float
    outside: float
    rewards: np.ndarray

    @property
    def median_fraction(self) -> float:
        """Median episode length over the step limit."""
        return float(np.median(self.lengths)) / self.limit

    @property
    def reward_scale(self) -> float:
        """Median per-step ``|reward|``."""
        return float(np.median(np.abs(self.rewards)))


def random_episodes(env_id: str, kwargs: dict | None = None, episodes: int = 5, seed: int = 0,
                    max_steps: int | None = None) -> Learnability:
    """Run ``episodes`` uniformly random episodes (seeds ``seed…``; each at most ``max_steps``,
    default the registered limit) and measure them."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    env = gym.make(env_id, **(kwargs or {}))
    limit = int(env.spec.max_episode_steps)
    cap = limit if max_steps is None else min(limit, int(max_steps))
    env.action_space.seed(seed)
    lengths, rewards, clipped, outside = [], [], 0, 0
    try:
        for k in range(int(episodes)):
            env.reset(seed=seed + k)
            n = 0
            while n < cap:
                obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                n += 1
                rewards.append(reward)
                clipped += env.unwrapped.observation_clipped > 0
                outside += not env.observation_space.contains(obs)
                if terminated or truncated:
                    break
            lengths.append(n)
    finally:
        env.close()
    steps = max(1, len(rewards))
    return Learnability(np.array(lengths), limit, clipped / steps, outside / steps, np.array(rewards))


def _label(env_id: str, kwargs: dict) -> str:
    name = env_id.split("/")[-1]
    return name + (" " + ", ".join(f"{k}={v}" for k, v in kwargs.items()) if kwargs else "")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    from soft_envs.console import progress

    episodes = 20 if full else 5
    rows = []
    for env_id, kwargs in progress(CASES, desc="learnability"):
        m = random_episodes(env_id, kwargs, episodes=episodes, seed=seed)
        rows.append([_label(env_id, kwargs), m.limit, f"{np.median(m.lengths):.0f}", f"{100 * m.median_fraction:.0f} %",
                     f"{int(m.lengths.min())}", f"{100 * m.clipped:.1f} %", f"{100 * m.outside:.1f} %",
                     f"{m.reward_scale:.3g}"])
    text = markdown_table(["env", "step limit", "median episode", "of the limit", "shortest", "steps with a clipped "
                           "observation entry", "observations outside the space", "median per-step |reward|"], rows)
    return text + (f"\n\n{episodes} episodes of uniformly random actions per row (seeds {seed}…). The quadrupeds "
                   "fall under random joint targets (their termination is the task's failure, not a model's "
                   "limit); `PCCTrack-v0` ramps its command (`command_ramp_time`, 0.5 s for the whole range) and "
                   "bounds its torque and pressure actions by the workspace (see its docstring); without the ramp "
                   "its median random episode was 4 (configuration), 1 (torque) and 1 (pressure) step of 400.")
