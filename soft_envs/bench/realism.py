"""The sim-to-real gap: PETER's real-robot column reproduced with ``realism="realistic"``.

Seed 000 planned with TRR and with its network on the tilted-plane model and ran them open loop:
0.22 / 1.27 mm in its simulator, 14 / 15 mm on the real two-module arm, "both models worse at
the same points". Here the same two planners run open loop on the soft ``PeterReach-v0``
(2 modules) while the perturbations of :data:`~soft_envs.envs.peter_reach.PETER_REALISM` are
switched on group by group — the model gap alone, + actuator scatter, + leaks, + compliance
under payload, and the whole ``"realistic"`` preset — next to TRR closed on the measured tip.
Every stage sees the same goals (realism draws from its own generator).
"""

from __future__ import annotations

import numpy as np

from soft_envs.bench import markdown_table, pyplot, save_figure
from soft_envs.console import progress

TITLE = "The sim-to-real gap: PETER's real-robot column (realism presets)"
PAPER_REAL_ROBOT = {"TRR": 14.0, "network": 15.0}  # mm, seed 000 §4.2 (5 targets, open loop)
SUCCESS = 1e-3  # m

SCATTER = ("leg_gain", "supply_gain", "leg_offset")
LEAKS = ("leak_rate",)
COMPLIANCE = ("payload", "leg_stiffness_error", "mass_error")
STAGES: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("model gap alone (ideal)", ()),
    ("+ actuator scatter (gains, supply, offsets)", SCATTER),
    ("+ leaks", SCATTER + LEAKS),
    ("+ compliance under payload (payload, stiffness, mass)", SCATTER + LEAKS + COMPLIANCE),
    ('"realistic" (+ base tilt, radius, valve delay, tip noise and latency)', None),
)


def stage_realism(names: tuple[str, ...] | None) -> str | dict[str, tuple[float, float]]:
    """The ``realism=`` of a stage: the named perturbations over their realistic ranges (``None``:
    the whole preset)."""
    from soft_envs.envs.peter_reach import PETER_REALISM

    if names is None:
        return "realistic"
    table = {p.name: p.realistic for p in PETER_REALISM}
    return {name: table[name] for name in names}


def _final(env, agent, seed: int) -> tuple[float, bool]:
    """Final distance [m] and whether a leg's command ended at an input bound (0 or 2 s)."""
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        done = terminated or truncated
    model = env.unwrapped.model
    t = info["inflation_times"]
    return info["distance"], bool(np.any(t <= model.lower + 1e-6) or np.any(t >= model.upper - 1e-6))


def stage_errors(realism, n_episodes: int, seed: int) -> dict[str, np.ndarray]:
    """Final distances [m] per controller over ``n_episodes`` seeded goals, and (key
    ``"closed loop at a bound"``) whether the closed loop ended with a command at a bound."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)
    from soft_envs.agents.nn import NeuralReachAgent
    from soft_envs.agents.reach import TRRReachAgent

    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, realism=realism)
    try:
        paper_model = env.unwrapped.model.with_kinematics("tilted")
        agents = {"TRR": TRRReachAgent(env, paper_model), "network": NeuralReachAgent(env, refine=False),
                  "TRR closed loop": TRRReachAgent(env, feedback=True)}
        out = {}
        for name, agent in agents.items():
            finals = [_final(env, agent, seed + k) for k in range(n_episodes)]
            out[name] = np.array([d for d, _ in finals])
            if name == "TRR closed loop":
                out["closed loop at a bound"] = np.array([b for _, b in finals])
        return out
    finally:
        env.close()


def _plot(errors: dict[str, np.ndarray], plot_dir: str) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.4, 4.0))
    trr, net = errors["TRR"] * 1e3, errors["network"] * 1e3
    ax.scatter(trr, net, s=14)
    top = 1.05 * max(trr.max(), net.max())
    ax.plot([0, top], [0, top], color="0.6", lw=0.8)
    ax.set_xlabel("TRR (tilted model), open loop [mm]")
    ax.set_ylabel("network, open loop [mm]")
    ax.set_title('PETER, realism="realistic": error per target')
    return save_figure(fig, plot_dir, "realism_peter_errors.png")


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    n = 50 if full else 10
    rows, last = [], {}
    for label, names in progress(STAGES, desc="realism stages", leave=False):
        errors = stage_errors(stage_realism(names), n, seed)
        trr, net, closed = (errors[k] * 1e3 for k in ("TRR", "network", "TRR closed loop"))
        r = float(np.corrcoef(trr, net)[0, 1])
        missed = closed >= SUCCESS * 1e3
        rows.append([label, n, f"{trr.mean():.2f} / {np.percentile(trr, 95):.2f}",
                     f"{net.mean():.2f} / {np.percentile(net, 95):.2f}", f"{r:.2f}",
                     f"{closed.mean():.3f} / {np.percentile(closed, 95):.3f}",
                     f"{100 * np.mean(~missed):.0f} % ({np.sum(missed & errors['closed loop at a bound'])} of "
                     f"{np.sum(missed)} misses at a bound)"])
        last = errors
    rows.append(["paper, real robot (seed 000 §4.2, 5 targets)", 5, f"{PAPER_REAL_ROBOT['TRR']:.0f} (mean)",
                 f"{PAPER_REAL_ROBOT['network']:.0f} (mean)", "'worse at the same points'", "—", "—"])
    rows.append(["paper, its simulator (seed 000 Table 1)", 1000, "0.22 (mean)", "1.27 (mean)", "—", "—", "—"])
    text = markdown_table(
        ["perturbations (PeterReach-v0, 2 modules, soft physics)", "targets", "TRR (tilted model), open loop: "
         "mean / p95 [mm]", "network, open loop: mean / p95 [mm]", "Pearson r (TRR, network)",
         "TRR closed loop (tip feedback): mean / p95 [mm]", "closed loop < 1 mm"], rows)
    text += ("\n\nThe goals are ones each episode's drawn arm can reach within the paper's input range "
             "(`soft_envs.envs.peter_goal_reach`: a weak or leaking leg has a shorter stroke; about 3 % of the "
             "nominal draws are redrawn). A closed-loop miss *at a bound* ended with a leg commanded to 0 or 2 s; "
             "the other misses ended with the arm still moving, a heavy payload (0.3–0.5 kg) swinging on the soft "
             "legs.")
    text += ("\n\nOpen loop: the plan is computed once on the paper's tilted-plane model and held; closed loop: "
             "TRR on the env's nominal PCC model re-aims at every step from the measured tip "
             "(`TRRReachAgent(feedback=True)`). The ranges and their sources are in "
             "`soft_envs.envs.peter_reach.PETER_REALISM` (README, \"Realism\").")
    if plot_dir is not None:
        text += f"\n\n![TRR against network errors per target]({_plot(last, plot_dir)})"
    return text
