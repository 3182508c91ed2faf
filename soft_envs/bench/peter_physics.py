"""PETER in soft physics: IK controllers on the compliant, pneumatically actuated arm
(``PeterReach-v0`` defaults), under payloads and a valve delay.

Part of ``soft-envs bench peter`` (:func:`run` is appended to :func:`soft_envs.bench.peter.run`).
"""

from __future__ import annotations

import time

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.console import progress

PAYLOADS = (0.0, 0.25, 0.5)  # kg (the real arm's rated load is 0.5 kg)
DELAY = 0.2  # s, valve delay of the "delay" rows (an assumption: a slow valve and its tubing)
SUCCESS = 1e-3  # m, the env's success threshold


def _agents(env):
    from soft_envs.agents.nn import NeuralReachAgent
    from soft_envs.agents.reach import TRRReachAgent

    return {
        "TRR, open loop": TRRReachAgent(env),
        "TRR, closed loop (tip feedback)": TRRReachAgent(env, feedback=True),
        "network (paper's, tilted model)": NeuralReachAgent(env, refine=False),
        "network + TRR (hybrid)": NeuralReachAgent(env),
    }


def _episode(env, agent, seed: int) -> tuple[float, float]:
    """Final distance [m] after the episode and the first time [s] within 1 mm (``inf`` if never)."""
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    reached = np.inf
    for k in range(env.spec.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if reached == np.inf and info["distance"] < SUCCESS:
            reached = (k + 1) * env.unwrapped.dt
        if terminated or truncated:
            break
    return info["distance"], reached


def controllers_table(n_episodes: int, seed: int, n_modules: int = 2) -> str:
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)

    rows = []
    cases = [(p, d) for p in PAYLOADS for d in (0.0, DELAY)]
    for payload, delay in progress(cases, desc="PETER soft physics", leave=False):
        env = gym.make("soft_envs/PeterReach-v0", n_modules=n_modules, payload=payload, command_delay=delay)
        for name, agent in _agents(env).items():
            finals, times = np.array([_episode(env, agent, seed + k) for k in range(n_episodes)]).T
            reached = times[np.isfinite(times)]
            rows.append([f"{payload:g}", f"{delay:g}", name, n_episodes, f"{finals.mean() * 1e3:.3f}",
                         f"{finals.max() * 1e3:.3f}", f"{np.mean(finals < SUCCESS) * 100:.0f} %",
                         f"{reached.mean():.1f}" if reached.size else "—"])
        env.close()
    return markdown_table(["payload [kg]", "valve delay [s]", "controller", "episodes", "final mean [mm]",
                           "final max [mm]", "< 1 mm", "time to 1 mm [s]"], rows)


def step_rate(n_steps: int, seed: int, n_modules: int = 2) -> str:
    """Simulated time over CPU time of ``PeterReach-v0``'s ``env.step`` (random actions)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401

    env = gym.make("soft_envs/PeterReach-v0", n_modules=n_modules, max_episode_steps=n_steps + 1)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(n_steps)]
    cpu, wall = time.process_time(), time.perf_counter()
    for a in actions:
        env.step(a)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    dt = env.unwrapped.dt
    env.close()
    return (f"`PeterReach-v0` soft physics, {n_modules} modules, {n_steps} random steps: "
            f"{n_steps / cpu:.0f} steps/s CPU ({n_steps * dt / cpu:.1f}× real time on one core; "
            f"wall clock {n_steps * dt / wall:.1f}×).")


INTRO = (
    "`PeterReach-v0` with its default soft physics: every leg a spring (1300 N/m, an assumption "
    "calibrated so that 0.5 kg sags the 2-module arm with every leg at 1 s by 2.5 mm) about its "
    "rest length, which the pneumatics move at the paper's 10 mm/s (filling) and 10 mm/s "
    "(venting, an assumption); gravity on, 10 Hz control, one episode = 50 steps (5 s); goals are PCC "
    f"tips of random inflation times. *Delay*: the valves act {DELAY:g} s after the action. Final "
    "distance after the episode; *time to 1 mm*: mean over the episodes that got there."
)

WHY = """Why the numbers differ:

* **open loop** — the legs reach the commanded rest lengths, but gravity and the payload deflect the
  compliant arm about them: the sag grows linearly with the load (0.7 mm under its own weight,
  a few mm with 0.5 kg).
* **closed loop** — once the arm has settled it re-aims by the measured miss: the sag is removed,
  at the price of further fills (a later time to 1 mm, more with a payload).
* **network** — trained on the paper's tilted-plane model: the model gap to the PCC arm
  (millimetres) adds to the sag; the hybrid refines on the PCC model, so only the sag remains.
* **delay** — the valves start late: final errors are those without delay, the times grow by
  about the delay (more with feedback, which waits for the arm to settle after every plan).
"""


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    """The soft-physics section of the PETER bench."""
    return ("### IK controllers on the soft, pneumatic PETER\n\n" + INTRO + "\n\n"
            + controllers_table(10 if full else 1, seed) + "\n\n" + WHY + "\n"
            + step_rate(500 if full else 100, seed))
