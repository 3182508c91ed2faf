"""The PCC arm in soft, pressure-driven physics: the paper's controller with and without its gains,
an outer tip loop, payloads and the regulators' delay; the Figure 5 run; convergence of the
integration and the step rate (``PCCTrack-v0`` defaults).

Part of ``soft-envs bench pcc`` (:func:`run` is appended to :func:`soft_envs.bench.pcc.run`).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg

from soft_envs.bench import markdown_table
from soft_envs.console import progress

PAYLOADS = (0.0, 0.005, 0.01, 0.25)  # kg: the arm weighs 35 g (see the intro)
DELAY = 0.125  # s, the paper's regulators: 100–150 ms
CONTROLLERS = {
    "IK + PD+FF (kp 80, kv 3)": ({}, {}),
    "IK + feed-forward only (kp = kv = 0)": ({"kp": 0.0, "kv": 0.0}, {}),
    "IK + PD+FF + tip feedback (outer loop)": ({}, {"feedback_gain": 0.1}),
}


def _track(env_kwargs: dict, agent_kwargs: dict, n_steps: int, seed: int) -> dict:
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)
    from soft_envs.agents.pcc_control import PCCTrackingAgent

    env = gym.make("soft_envs/PCCTrack-v0", max_episode_steps=100_000, **env_kwargs)
    agent = PCCTrackingAgent(env, **agent_kwargs)
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    errors, desired, tracked, saturated, stop = [], [], [], 0, ""
    for _ in range(n_steps):
        obs, _, terminated, _, info = env.step(agent.act(obs))
        errors.append(info["tracking_error"])
        desired.append(obs[3:6].astype(float))
        tracked.append(obs[0:3].astype(float))
        saturated += bool(info.get("pressure_saturated", False))
        if terminated:
            stop = info["termination_reason"]
            break
    dt = env.unwrapped.dt
    env.close()
    return {"errors": np.array(errors), "desired": np.array(desired), "tracked": np.array(tracked),
            "saturated": saturated / max(len(errors), 1), "stop": stop, "dt": dt}


def controllers_table(n_steps: int, seeds: list[int]) -> str:
    rows = []
    cases = [(p, d, name) for p in PAYLOADS for d in (0.0, DELAY) for name in CONTROLLERS]
    for payload, delay, name in progress(cases, desc="PCC soft physics", leave=False):
        env_kwargs, agent_kwargs = CONTROLLERS[name]
        outs = [_track(dict(env_kwargs, payload=payload, regulator_delay=delay), agent_kwargs, n_steps, s)
                for s in seeds]
        e = np.concatenate([o["errors"] for o in outs]) * 1e3
        late = np.concatenate([o["errors"][int(round(1.0 / o["dt"])):] for o in outs]) * 1e3
        stops = sum(bool(o["stop"]) for o in outs)
        rows.append([f"{payload * 1e3:g}", f"{delay:g}", name, f"{np.sqrt(np.mean(e**2)):.2f}",
                     f"{late.max():.2f}" if late.size else "—",
                     f"{np.mean([o['saturated'] for o in outs]) * 100:.0f} %", f"{stops}/{len(outs)}"])
    return markdown_table(["payload [g]", "regulator delay [s]", "controller", "RMS [mm]", "max after 1 s [mm]",
                           "steps saturated", "stopped"], rows)


def figure5_table() -> str:
    """Paper Fig. 5C–D: the four-segment planar arm from the zero state, normed error."""
    rows = []
    cases = [("paper's controller (kp 80, kv 3)", {}), ("feed-forward only (kp = kv = 0)", {"kp": 0.0, "kv": 0.0}),
             ("paper's controller, without its +D term", {"compensate_damping": False}),
             ("paper's controller, direct actuation (no chambers)", {"actuation": "direct"}),
             (f"paper's controller, {DELAY:g} s regulator delay", {"regulator_delay": DELAY}),
             (f"feed-forward only, {DELAY:g} s regulator delay", {"regulator_delay": DELAY, "kp": 0.0, "kv": 0.0})]
    for label, kwargs in progress(cases, desc="Figure 5", leave=False):
        out = _track(dict(kwargs, n_segments=4, trajectory="planar_circle", start_straight=True, random_start=False),
                     {}, int(round(2 * np.pi / 0.05)), 0)
        normed = np.linalg.norm(out["desired"] - out["tracked"], axis=1) / np.linalg.norm(out["desired"], axis=1)
        quarter = len(normed) // 4
        rows.append([label, len(normed), f"{normed.mean() * 100:.1f} %",
                     f"{normed[quarter:].max() * 100:.1f} %" if len(normed) > quarter else "—",
                     f"{normed[-20:].mean() * 100:.2f} %", out["stop"] or "—"])
    return markdown_table(["case", "steps", "mean normed error", "max after ¼ period", "last second",
                           "stopped"], rows)


def convergence_table(seed: int) -> str:
    """Step halving on a 2 s tracking run, and an undamped mode over 10 periods."""
    paths = {}
    for dt in (5e-3, 2.5e-3, 1.25e-3):
        out = _track({"time_step": dt, "frame_skip": int(round(0.05 / dt)), "controller_period": 5e-3}, {}, 40, seed)
        paths[dt] = out["tracked"]
    span = np.linalg.norm(paths[1.25e-3] - paths[1.25e-3][0], axis=1).max()
    rows = [[f"{a * 1e3:g} → {b * 1e3:g} ms", f"{np.linalg.norm(paths[a] - paths[b], axis=1).max() * 1e3:.4f}",
             f"{np.linalg.norm(paths[a] - paths[b], axis=1).max() / span * 100:.2f} %"]
            for a, b in ((5e-3, 2.5e-3), (2.5e-3, 1.25e-3))]
    kept = _undamped_amplitude()
    return (markdown_table(["step", "max tip-path change [mm]", "of the path's span"], rows)
            + f"\n\n(2 s on the default spiral, {span * 1e3:.1f} mm span; controller every 5 ms.) An undamped "
            f"four-segment arm released from its first mode ({kept[0]:.1f} rad/s) keeps {kept[1] * 100:.1f} % of "
            f"its amplitude over 10 periods at the 5 ms step; a single segment's bending mode ({kept[2]:.0f} rad/s, "
            f"6 steps per period) {kept[3] * 100:.1f} % (generalised-α, ρ∞ = 0.9; the earlier semi-implicit "
            "Euler removed 96 % within 50–100 ms).")


def _undamped_amplitude() -> tuple[float, float, float, float]:
    from soft_envs.robots import PlanarPCCArm
    from soft_envs.sim.bullet import connect, disconnect
    from soft_envs.sim.pcc_body import PCCBody

    client = connect()
    out = []
    try:
        for n in (4, 1):
            arm = PlanarPCCArm(n, 6)
            body = PCCBody(client, arm, gravity=0.0, rayleigh_stiffness=0.0)
            body.reset(np.zeros(arm.n_dof))
            eigenvalues, modes = scipy.linalg.eigh(np.diag(body.stiffness), body.mass_matrix())
            omega, mode = float(np.sqrt(eigenvalues[0])), modes[:, 0]
            body.set_state(0.05 * mode / np.abs(mode).max())
            energy = body.energy()
            for _ in range(int(round(10 * 2 * np.pi / omega / 5e-3))):
                body.step(5e-3, np.zeros(arm.n_dof))
            out += [omega, float(np.sqrt(body.energy() / energy))]
    finally:
        disconnect(client)
    return out[0], out[1], out[2], out[3]


def step_rate(n_steps: int, seed: int) -> str:
    """Simulated time over CPU time of ``PCCTrack-v0``'s ``env.step`` (held set-point; and with the IK agent)."""
    import gymnasium as gym

    import soft_envs  # noqa: F401
    from soft_envs.agents.pcc_control import PCCTrackingAgent

    rows = []
    for label, kwargs in (("default (spiral, 2 segments, chambers)", {}), ("direct actuation", {"actuation": "direct"}),
                          ("Figure 5 arm (4 planar segments)", {"trajectory": "planar_circle", "n_segments": 4})):
        env = gym.make("soft_envs/PCCTrack-v0", max_episode_steps=100_000, **kwargs)
        obs, info = env.reset(seed=seed)
        hold = env.unwrapped.model_to_action(info["setpoint"])
        agent = PCCTrackingAgent(env)
        agent.reset(obs, info)
        speeds = []
        for act in (lambda o: hold, agent.act):
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(n_steps):
                obs, *_ = env.step(act(obs))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            speeds.append((n_steps / cpu, n_steps * env.unwrapped.dt / cpu, n_steps * env.unwrapped.dt / wall))
        env.close()
        rows.append([label, f"{speeds[0][0]:.0f}", f"{speeds[0][1]:.1f}×", f"{speeds[0][2]:.1f}×",
                     f"{speeds[1][1]:.1f}×"])
    return markdown_table(["`PCCTrack-v0`", "steps/s (CPU)", "real time, CPU", "real time, wall",
                           "with the IK agent, CPU"], rows)


INTRO = (
    "`PCCTrack-v0` with its default soft physics: the chambers' pressures (eq. 9, α₁ = 8e-4 m², "
    "α₂ = 7.91e-7 m⁴ read on the bellow geometry; ±30 kPa, an assumption; first-order regulators "
    "of 10 ms) drive an arm whose stiffness is calibrated on that bound (k_ΔL = 5.5e3 N/m, "
    "k_θ = 0.113 N m/rad per 65 mm segment), Rayleigh β = 5e-3 s, gravity on, 5 ms steps, the "
    "paper's PD + feed-forward every 5 ms on set-points from `PCCTrackingAgent` (SQP, 20 Hz). "
    f"The arm weighs 35 g: payloads of grams, and 0.25 kg to show what it does. *Delay*: the regulators' "
    f"{DELAY:g} s dead time (the paper: 100–150 ms). Spiral trajectory, random start on the path."
)

WHY = """Why the numbers differ:

* **kp = kv = 0** — the feed-forward alone leaves the arm's motion undamped (the law cancels
  its damping): any transient rings on; with the gains it decays at kv/2 = 1.5 /s.
* **tip feedback** — an outer loop re-aims the IK by the integrated tip miss: it removes the
  slowly varying part of the error — a payload the controller's model lacks, and the lag
  behind delayed regulators on a slow, steady path.
* **payload** — the controller's model lacks it: the soft arm (k_θ ≈ 0.1 N m/rad) sags
  millimetres per gram, since kp M adds little to K; 0.25 kg (seven times the arm) folds it over
  within a few steps and the env stops it (*stopped*).
* **delay** — the pressures act 125 ms late: the arm lags its path by that much; from a
  standing start (Figure 5) the law, which cancels the arm's damping with its +D term, drives
  the delayed loop unstable and the env stops the folded arm.
"""


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    """The soft-physics section of the PCC bench."""
    seeds = [seed + k for k in range(3)] if full else [seed]
    return ("### The paper's controller on the soft, pressure-driven arm\n\n" + INTRO + "\n\n"
            + controllers_table(200 if full else 60, seeds) + "\n\n" + WHY
            + "\n#### Figure 5 run (four planar segments, 30° tip angle, from the zero state)\n\n"
            + "Normed error ‖x_d − x‖ / ‖x_d‖ over one period (2π s; the paper: below 12 %).\n\n"
            + figure5_table()
            + "\n\n#### Convergence and speed\n\n" + convergence_table(seed) + "\n\n"
            + step_rate(200 if full else 60, seed))
