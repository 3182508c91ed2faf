"""Plausibility audit: how each env's learned policy uses its actuators, next to the IK
controllers on the same seeds.

A learned result counts only with the physics it used: a policy that beats its IK baseline by a
mechanism no hardware has (targets flipped every step, actuators driven beyond their rates) shows
a defect of the env. For every env this bench trains the env's recipe for a short CPU budget
(:data:`AUDITS`), then runs it and the env's IK controllers over the same held-out seeds and
reports, per controller:

* the task's measure and success rate (as ``soft-envs evaluate``);
* **reversals/s** — direction reversals of the applied action per second, on the action
  component that reverses most (a reversal: a turn back by more than 1 % of the action range,
  :class:`~soft_envs.envs.gait_meter.ReversalCounter`);
* **at bounds** — the share of action components within 1 % of the action box's bounds;
* the **actuators against their physical limits**, per env: PETER's legs' rest-length rate
  against each leg's own fill and vent rates (10 mm/s times the leg's drawn gain under realism;
  venting, plus its leak); the PCC chambers' pressures at their bound and
  the set-point reversals against the pressure regulators' bandwidth (``1/(2π τ)``, reversals
  beyond twice it are chatter the regulator filters out); the quadruped's peak joint speed
  against its servos' no-load speed and the stance feet's slip; the hexapod's guide speed (the
  env is quasi-static and models no guide speed: the figure says what a real guide would need);
  around obstacles the deepest penetration against the 1 mm the contact allows, and the largest
  normal force on the arm against the most its legs can push (:func:`legs_push`).

A row is flagged where the learned policy beats the IK controller on the measure and one of its
actuator figures is beyond the physical limit.

Where a policy ships for the task (``soft-envs evaluate``'s ``learned``,
:mod:`soft_envs.agents.learned`), the audit runs *that* policy, untrained here, in the realism
preset of its card, and the IK controllers in the same preset; the other tasks' policies are trained
for the audit's CPU budget.
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs.bench import markdown_table
from soft_envs.geometry import STANDARD_GRAVITY

TITLE = "Plausibility: how learned policies use their actuators, next to the IK controllers (every env)"
FIRST_SEED = 3_000_000  # held out from training (own stream) and from train-rl's evaluations (1 000 000)
REVERSAL_THRESHOLD = 0.02  # 1 % of the normalised action range [−1, 1]
BOUND_MARGIN = 0.02  # "at a bound": within 1 % of the range of it


@dataclass(frozen=True)
class Audit:
    """One env's audit: the ``soft-envs evaluate`` task, the recipe trained, the IK controllers."""

    task: str
    recipe: str
    ik: tuple[str, ...]


AUDITS: tuple[Audit, ...] = (
    Audit("peter-2", "peter-soft", ("trr-feedback",)),
    Audit("peter-2-obstacles", "peter-obstacles-residual", ("sqp-obstacles-feedback",)),
    Audit("pcc-spiral", "soft_envs/PCCTrack-v0", ("pd-ff",)),
    Audit("quadruped-walk", "quadruped-walk-gait", ("trot",)),
    Audit("quadruped-pose", "soft_envs/QuadrupedPose-v0", ("body-pose",)),
    Audit("hexapod-pose", "soft_envs/HexapodPose-v0", ("hexapod-jacobian",)),
)


def _train(item: tuple[Audit, str, float, int]) -> str:
    """Train one audit's recipe for ``minutes`` of CPU time into ``folder``; the policy's spec."""
    from soft_envs.learn.recipes import recipe_for
    from soft_envs.learn.train import train

    audit, folder, minutes, seed = item
    recipe = recipe_for(audit.recipe)
    output = Path(folder) / f"{audit.task}.zip"
    train(recipe, minutes=minutes, seed=seed, output=output, eval_every=10**9, eval_episodes=2, progress=False,
          log=lambda *parts: None, budget_clock="cpu")
    return f"sb3:{recipe.algo}:{output}"


#: The deepest penetration [m] the contact allows at its default settings (the obstacle tasks' bound).
PENETRATION_BOUND = 1e-3


def legs_push(env) -> float:
    """The most PETER's legs can push on an obstacle [N]: every leg's spring, at the stiffest a
    realism draw makes it (``PETER_REALISM``), compressed by its whole stroke, plus the weight of the
    heaviest drawn arm with the env's payload and the largest drawn one."""
    from soft_envs.envs.peter_reach import PETER_REALISM

    high = {p.name: p.realistic[1] for p in PETER_REALISM}
    model = env.model
    stroke = model.leg_rate * float(np.max(model.upper))  # [m]: a leg's fill at its rate over the longest time
    springs = 3 * model.n_modules * (1.0 + high["leg_stiffness_error"]) * model.leg_stiffness * stroke
    mass = (1.0 + high["mass_error"]) * model.n_modules * model.module_mass + float(env.payload) + high["payload"]
    return springs + mass * STANDARD_GRAVITY


class _ActuatorProbe:
    """Reads an env's actuators after every step and keeps their peak figures (module docstring)."""

    def __init__(self, env) -> None:
        self.env = env.unwrapped
        self.figures: dict[str, float] = {}
        self._last: np.ndarray | None = None
        self.pressure_reversals = None
        #: [N] the most PETER's legs push (:func:`legs_push`), with obstacles to push on; else ``None``.
        self.push = legs_push(self.env) if getattr(self.env, "legs", None) is not None and \
            getattr(self.env, "obstacles", 0) else None
        regulator = getattr(self.env, "regulator", None)
        if regulator is not None:
            from soft_envs.envs.gait_meter import ReversalCounter

            self.pressure_reversals = ReversalCounter(regulator.pressures.size, 0.01 * regulator.max_pressure)
            self.pressure_reversals.reset(np.ravel(regulator.pressures))  # (a batch of one arm)

    def _rate(self, value: np.ndarray) -> np.ndarray:
        rate = np.zeros_like(value) if self._last is None else (value - self._last) / self.env.dt
        self._last = value.copy()
        return rate

    def _peak(self, name: str, value: float) -> None:
        self.figures[name] = max(self.figures.get(name, 0.0), float(value))

    def step(self, info: dict[str, Any]) -> None:
        env = self.env
        legs = getattr(env, "legs", None)
        if legs is not None and not legs.instant:  # PETER: rest lengths vs each leg's fill and vent rates
            rate = self._rate(np.ravel(legs.actual_lengths))  # (a batch of one arm)
            gain, leak = np.ravel(legs.gain), np.ravel(legs.leak_rate)  # (the drawn robot's: realism)
            limit = np.where(rate >= 0.0, gain * legs.fill_rate, gain * legs.vent_rate + leak)
            self._peak("leg rate / its limit", np.max(np.abs(rate) / limit))
        regulator = getattr(env, "regulator", None)
        if regulator is not None:  # PCC: chamber pressures and their regulators
            self._peak("pressure / bound", np.max(np.abs(regulator.pressures)) / regulator.max_pressure)
            at_bound = np.mean(np.abs(regulator.pressures) >= 0.99 * regulator.max_pressure)
            self.figures["time at pressure bound"] = self.figures.get("time at pressure bound", 0.0) + at_bound
            self.pressure_reversals.update(np.ravel(regulator.pressures))
        if "gait_peak_joint_speed" in info:  # quadruped: servos and feet
            self.figures["peak joint speed / servo"] = info["gait_peak_joint_speed"] / env.model.servo_speed
            self.figures["stance slip [mm/s]"] = 1e3 * info["gait_stance_slip_speed"]
        if "contact_force" in info and self.push is not None:  # PETER around obstacles: how deep, how hard
            self._peak("penetration / 1 mm", info["penetration"] / PENETRATION_BOUND)
            self._peak("contact force / legs' push", info["contact_force"] / self.push)
        if "inputs" in info:  # hexapod: the guides' speed
            self._peak("guide speed [mm/s]", 1e3 * np.max(np.abs(self._rate(np.asarray(info["inputs"], dtype=float)))))

    def finish(self, steps: int) -> dict[str, float]:
        out = dict(self.figures)
        if "time at pressure bound" in out:
            out["time at pressure bound"] /= max(steps, 1)
        if self.pressure_reversals is not None:
            tau = np.max(self.env.regulator.time_constant)  # [s] (per arm: the batch of one)
            bandwidth = 1.0 / (2.0 * np.pi * tau) if tau > 0 else np.inf
            per_second = self.pressure_reversals.count.max() / (steps * self.env.dt)
            out["pressure reversals/s / 2·bandwidth"] = float(per_second / (2 * bandwidth))
        return out


def shipped_preset(task: str) -> str | None:
    """The realism preset (``soft-envs evaluate --preset``) of the policy shipped for ``task``
    (from its card's env keywords), or ``None`` where none ships."""
    from soft_envs.agents.learned import shipped, shipped_names

    if task not in shipped_names():
        return None
    return "realistic" if shipped(task).card.get("env_kwargs", {}).get("realism") == "realistic" else "ideal"


def _episode(item: tuple[str, str, int, str]) -> dict[str, Any]:
    """One seeded episode of ``task`` with ``controller`` in a realism ``preset`` (``ideal`` or
    ``realistic``): the task's measure and the audit's figures."""
    import gymnasium as gym

    import soft_envs  # noqa: F401
    from soft_envs import evaluate as ev
    from soft_envs.envs.gait_meter import ReversalCounter

    task_name, controller, seed, preset = item
    task = ev.TASKS[task_name]
    kwargs = dict(task.kwargs) | ev.PRESETS[preset]
    kwargs |= ev.env_keywords(controller, task_name, task.env_id)
    if task.max_steps is not None:
        kwargs["max_episode_steps"] = task.max_steps
    env = gym.make(task.env_id, **kwargs)
    try:
        agent = ev.controller_for(controller, env, task_name)
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        u = env.unwrapped
        action = u.previous_action
        reversals = ReversalCounter(action.size, REVERSAL_THRESHOLD)
        reversals.reset(action)
        probe = _ActuatorProbe(env)
        command = getattr(u, "command_space", env.action_space)  # the set-points' box (also in task mode)
        low, high = command.low, command.high
        at_bounds, steps, done = 0.0, 0, False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            done = terminated or truncated
            applied = u.previous_action
            reversals.update(applied)
            margin = BOUND_MARGIN * (high - low) / 2.0
            at_bounds += float(np.mean((applied <= low + margin) | (applied >= high - margin)))
            probe.step(info)
            steps += 1
        seconds = steps * u.dt
        success = not info["fallen"] if task.env_id.endswith("QuadrupedWalk-v0") else bool(info.get("is_success"))
        return {"metric": float(info[task.metric]), "success": success,
                "reversals": float(reversals.count.max() / seconds), "at_bounds": at_bounds / steps,
                "actuators": probe.finish(steps)}
    finally:
        env.close()


def _better(task: str, mine: float, theirs: float) -> bool:
    """Whether the measure ``mine`` beats ``theirs`` (the walk's distance is larger-better)."""
    return mine > theirs if task == "quadruped-walk" else mine < theirs


#: The actuator figures whose limit is 1 (ratios).
_RATIOS = ("leg rate / its limit", "pressure / bound", "pressure reversals/s / 2·bandwidth", "peak joint speed / servo",
           "penetration / 1 mm", "contact force / legs' push")
#: How far above 1 a ratio may read and still be at its limit: an actuator at its cap (a leg filling at its
#: rate, measured as a difference of lengths over a step) reads 1 ± ~1e-14 in floating point.
RATIO_ROUNDING = 1e-9


def beyond_limit(ratio: float) -> bool:
    """Whether an actuator ratio (:data:`_RATIOS`) is beyond its limit of 1, more than rounding."""
    return ratio > 1.0 + RATIO_ROUNDING


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None, minutes: float | None = None,
        workers: int = 1) -> str:
    from soft_envs import evaluate as ev

    minutes = minutes if minutes is not None else (10.0 if full else 2.0)
    episodes = 10 if full else 3
    first = FIRST_SEED + seed
    with tempfile.TemporaryDirectory(prefix="plausibility-") as folder:
        with mp.get_context("spawn").Pool(workers) as pool:
            presets = {a.task: shipped_preset(a.task) for a in AUDITS}
            trained = iter(pool.map(_train, [(a, folder, minutes, seed) for a in AUDITS if presets[a.task] is None]))
            specs = ["learned" if presets[a.task] else next(trained) for a in AUDITS]
            sections, flags = [], []
            for audit, spec in zip(AUDITS, specs):
                controllers = list(audit.ik) + [spec]
                preset = presets[audit.task] or "ideal"
                results = pool.map(_episode, [(audit.task, c, first + k, preset)
                                              for c in controllers for k in range(episodes)])
                per = {c: results[i * episodes:(i + 1) * episodes] for i, c in enumerate(controllers)}
                names = sorted({key for rows in per.values() for r in rows for key in r["actuators"]})
                unit = ev.TASKS[audit.task].unit
                scale = 1e3 if unit == "m" else (np.degrees(1.0) if unit == "rad" else 1.0)
                label = {"m": "mm", "rad": "°"}.get(unit, unit)
                rows = []
                for c, eps in per.items():
                    learned = "learned (shipped)" if c == "learned" else f"learned (`{audit.recipe}`)"
                    name = learned if c == spec else c
                    figures = {n: max(r["actuators"].get(n, 0.0) for r in eps) for n in names}
                    rows.append([name, f"{scale * np.mean([r['metric'] for r in eps]):.3g} {label}",
                                 f"{100 * np.mean([r['success'] for r in eps]):.0f} %",
                                 f"{max(r['reversals'] for r in eps):.1f}",
                                 f"{100 * np.mean([r['at_bounds'] for r in eps]):.0f} %"]
                                + [f"{figures[n]:.3g}" for n in names])
                mine = np.mean([r["metric"] for r in per[spec]])
                ik = np.mean([r["metric"] for r in per[audit.ik[0]]])
                beyond = [n for n in _RATIOS if n in names
                          and beyond_limit(max(r["actuators"].get(n, 0.0) for r in per[spec]))]
                if _better(audit.task, mine, ik) and beyond:
                    flags.append(f"**{audit.task}**: the learned policy beats `{audit.ik[0]}` with {', '.join(beyond)} "
                                 "beyond the limit")
                headers = ["controller", f"{ev.TASKS[audit.task].metric} (mean)", "success", "reversals/s (max)",
                           "at bounds", *names]
                source = (f"the policy shipped for the task, preset {preset}" if spec == "learned" else
                          f"the learned policy: recipe `{audit.recipe}`, seed {seed}, {minutes:g} CPU-min")
                sections.append(f"**{audit.task}** (`{ev.TASKS[audit.task].env_id}`, {episodes} episodes, seeds "
                                f"from {first}; {source}):\n\n" + markdown_table(headers, rows))
    verdict = ("No learned policy beats its IK controller with an actuator beyond its limit." if not flags
               else "Flagged:\n\n" + "\n".join(f"- {f}" for f in flags))
    return (f"Regenerate: `soft-envs bench plausibility{' --full' if full else ''} --update BENCHMARKS.md` (module "
            "`soft_envs.bench.plausibility`: what each column means is in its docstring; ratios above 1 are beyond "
            f"the hardware). A task's shipped policy is audited as it ships; every other env's recipe trained for "
            f"{minutes:g} CPU-min ({workers} at a time); each then run with its IK controllers on the same held-out "
            f"seeds and realism preset.\n\n{verdict}\n\n" + "\n\n".join(sections))
