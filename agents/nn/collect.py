"""Samples of a robot's own behaviour: random inflation times commanded through ``env.step``.

What a user of a real PETER records before learning on it: command inflation times, wait until
the arm has settled, read the tip from the motion-capture system. :func:`collect_samples` does
that through the env's public API only (``reset``/``step``, the observation, ``env.unwrapped``'s
``model``, ``model_to_action``/``action_to_model`` and ``dt``), so it never imports an env.

Every sample starts from the arm at rest with its legs vented (``env.reset(options={"keep_robot":
True})``: the same robot, as venting every leg does on the real arm), commands uniformly random
inflation times within the model's bounds and holds them. The tip is read when the arm has
settled — the valves have been open for the longest commanded time (eq. 1's law: inflation
*times* are valve times) plus ``hold_time``, and the measured tip speed is below
``settle_speed`` — or, with ``settle_time``, exactly that long after the command. The second
matches a task that judges the tip a fixed time after its command (``PeterReach-v0``: the end
of its 5 s episode): a leg that leaks is then read as it will be judged, and what a learner
fits absorbs the leak (see :func:`collect_samples`).
"""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative, check_positive


def _tip_and_speed(obs) -> tuple[np.ndarray, float]:
    """Measured tip [m] and tip speed [m/s] from a ``PeterReach-v0`` observation (either form)."""
    if isinstance(obs, dict):
        tip, velocity = obs["achieved_goal"], np.asarray(obs["observation"])[3:6]
    else:
        obs = np.asarray(obs)
        tip, velocity = obs[0:3], obs[9:12]
    return np.asarray(tip, dtype=float), float(np.linalg.norm(velocity))


def episode_time(env) -> float | None:
    """The env's episode length [s] (``max_episode_steps · dt``), or ``None`` when it has no limit."""
    spec = getattr(env, "spec", None)
    steps = getattr(spec, "max_episode_steps", None)
    return None if steps is None else steps * env.unwrapped.dt


def collect_samples(
    env,
    n: int,
    *,
    seed: int,
    settle_time: float | None = None,
    hold_time: float = 0.3,
    settle_speed: float = 1e-3,
    max_time: float | None = None,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Command ``n`` seeded random inflation times on the env's robot; return what was measured.

    The env must have been reset (its robot is the one sampled; under ``realism=`` every sample
    keeps it). Each sample starts at rest (``reset(options={"keep_robot": True})``; the first
    with ``seed``, so the same robot and seed give the same samples), holds its command, and is
    read when the arm has settled or at ``settle_time``, at the latest at ``max_time`` or the
    episode's end (module docstring). The env is left at the last sample's end, its robot kept.

    Args:
        env: a ``PeterReach-v0`` env (wrapped or not), already reset.
        n: number of samples.
        seed: seeds the commands and the resets.
        settle_time: read the tip this long [s] after the command (``None``: when settled).
            Give the time your task judges the tip at to absorb leaks (``PeterReach-v0``: 5 s).
        hold_time: time [s] after the longest valve opening before the tip may count as settled
            (valve delay, the last motion).
        settle_speed: measured tip speed [m/s] below which the arm counts as settled.
        max_time: longest wait [s] per sample (default: the episode's length, else 10 s).
        progress: show a progress bar (:func:`soft_envs.console.progress`: a bar on a terminal, else a line every 30 s).

    Returns:
        ``(times, tips)``: the commanded inflation times ``(n, 3N)`` [s] (as the env applied
        them) and the measured tips ``(n, 3)`` [m] in the env's frame (observation noise and
        latency included, as a real sensor's).
    """
    from soft_envs.console import progress as progress_bar

    n = check_integer("n", n, minimum=1)
    base = env.unwrapped
    if base.previous_action is None:
        raise InvalidParameterError("collect_samples needs an env that has been reset: the robot to sample is "
                                    "the one of its last reset (env.reset(seed=…) first)")
    if settle_time is not None:
        settle_time = check_positive("settle_time [s]", settle_time)
    check_nonnegative(hold_time=hold_time, settle_speed=settle_speed)
    limit = episode_time(env)
    if max_time is None:
        max_time = limit if limit is not None else 10.0
    max_time = check_positive("max_time [s]", max_time)
    if settle_time is not None and settle_time > max_time + 1e-9:
        raise InvalidParameterError(f"settle_time {settle_time:g} s is longer than max_time {max_time:g} s "
                                    "(the episode's length by default)")
    model, dt = base.model, base.dt
    rng = np.random.default_rng(seed)
    commands = model.sample(rng, n)
    times = np.empty((n, model.n_dof))
    tips = np.empty((n, 3))
    for k in progress_bar(range(n), enabled=progress, desc="collect samples", leave=False):
        obs, _ = env.reset(seed=seed if k == 0 else None, options={"keep_robot": True})
        action = base.model_to_action(commands[k])
        times[k] = base.action_to_model(action)
        settled_after = float(np.max(times[k])) + hold_time
        elapsed, done = 0.0, False
        while not done:
            obs, _, terminated, truncated, _ = env.step(action)
            elapsed += dt
            tip, speed = _tip_and_speed(obs)
            if settle_time is not None:
                done = elapsed >= settle_time - 1e-9
            else:
                done = elapsed >= settled_after - 1e-9 and speed < settle_speed
            done = done or elapsed >= max_time - 1e-9 or terminated or truncated
        tips[k] = tip
    return times, tips


__all__ = ["collect_samples", "episode_time"]
