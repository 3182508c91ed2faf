"""Demos behind ``soft-envs demo``: a controller acting in a registered environment.

Harness code on top of the layers (it uses the env registry and the agents). Each demo takes
``(render_mode, steps, seed, **env_kwargs)`` and returns the ``rgb_array`` frames (none in a GUI
window). :func:`write_gallery` (``soft-envs demo --gallery docs/_static``) writes the pictures of
the README and the documentation: a looping GIF of every robot and the sim-to-real figure.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym

import soft_envs  # noqa: F401  (registers the environments)
from soft_envs.exceptions import InvalidParameterError, check_integer, check_positive

MAX_STEPS = 10_000  # the longest demo [control steps]: every frame is kept in memory
MAX_FRAME_TIME = 60.0  # s, the longest a frame of a demo's file is shown


def check_steps(steps: int) -> int:
    """A demo's length: 1 to :data:`MAX_STEPS` control steps, else :class:`InvalidParameterError`."""
    return check_integer("steps", steps, minimum=1, maximum=MAX_STEPS)


def check_frame_time(frame_time: float) -> float:
    """Seconds per frame of a demo's file: > 0 and at most :data:`MAX_FRAME_TIME`."""
    return check_positive("frame_time [s]", frame_time, MAX_FRAME_TIME)


def run_demo(env, agent, *, steps: int, seed: int, new_goal_every: int | None = None) -> list:
    """Run ``agent`` in ``env`` for ``steps`` (1 to :data:`MAX_STEPS`) steps and return the rgb
    frames (``rgb_array``).

    A new episode starts when one ends and, with ``new_goal_every``, every that many steps
    (seeded ``seed + k``). With ``render_mode="human"`` the loop runs at the env's control
    rate so the GUI shows real time. The env is closed at the end.
    """
    frames = []
    try:
        steps = check_steps(steps)
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        for k in range(steps):
            if new_goal_every and k and k % new_goal_every == 0:
                obs, info = env.reset(seed=seed + k)
                agent.reset(obs, info)
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            if env.render_mode == "rgb_array":
                frames.append(env.render())
            elif env.render_mode == "human":
                time.sleep(env.unwrapped.dt)
            if terminated or truncated:
                obs, info = env.reset()
                agent.reset(obs, info)
    finally:
        env.close()
    return frames


def peter(render_mode: str = "rgb_array", steps: int = 120, seed: int = 0, n_modules: int = 3, **env_kwargs) -> list:
    """TRR reaching a new random goal every 30 steps in ``PeterReach-v0`` (``env_kwargs`` to ``gym.make``)."""
    from soft_envs.agents.reach import TRRReachAgent

    env = gym.make("soft_envs/PeterReach-v0", n_modules=n_modules, render_mode=render_mode, **env_kwargs)
    return run_demo(env, TRRReachAgent(env), steps=steps, seed=seed, new_goal_every=30)


def peter_obstacles(render_mode: str = "rgb_array", steps: int = 120, seed: int = 0, n_modules: int = 3,
                    obstacles: int = 3, **env_kwargs) -> list:
    """TRR with a barrier, closed on the measured tip (``ObstacleReachAgent(env, feedback=True)``),
    reaching a new random goal every 30 steps past ``obstacles`` spheres in ``PeterReach-v0``
    (purple, yellow while touched)."""
    from soft_envs.agents.reach import ObstacleReachAgent

    env = gym.make("soft_envs/PeterReach-v0", n_modules=n_modules, obstacles=obstacles, render_mode=render_mode,
                   **env_kwargs)
    return run_demo(env, ObstacleReachAgent(env, feedback=True), steps=steps, seed=seed, new_goal_every=30)


def pcc(render_mode: str = "rgb_array", steps: int = 200, seed: int = 0, n_segments: int = 2,
        trajectory: str = "spiral", **env_kwargs) -> list:
    """The IK + PD/feed-forward pipeline following a trajectory in ``PCCTrack-v0``."""
    from soft_envs.agents.pcc_control import PCCTrackingAgent

    env = gym.make("soft_envs/PCCTrack-v0", n_segments=n_segments, trajectory=trajectory, render_mode=render_mode,
                   **env_kwargs)
    return run_demo(env, PCCTrackingAgent(env), steps=steps, seed=seed)


def pcc_obstacles(render_mode: str = "rgb_array", steps: int = 200, seed: int = 0, obstacles: int = 3,
                  **env_kwargs) -> list:
    """SQP around the spheres with a route paced at the command ramp, closed on the measured tip
    (``PCCObstacleReachAgent(env, feedback=True)``), reaching a new goal every 50 steps in
    ``PCCReach-v0`` (purple spheres, yellow while touched)."""
    from soft_envs.agents.pcc_reach import PCCObstacleReachAgent

    env = gym.make("soft_envs/PCCReach-v0", obstacles=obstacles, render_mode=render_mode, **env_kwargs)
    return run_demo(env, PCCObstacleReachAgent(env, feedback=True), steps=steps, seed=seed, new_goal_every=50)


def pcc_push(render_mode: str = "rgb_array", steps: int = 200, seed: int = 0, **env_kwargs) -> list:
    """The scripted push (:class:`~soft_envs.agents.pcc_push.ScriptedPushAgent`) in ``PCCPush-v0``: the
    hanging arm approaches behind the box and pushes it to the green pad."""
    from soft_envs.agents.pcc_push import ScriptedPushAgent

    env = gym.make("soft_envs/PCCPush-v0", render_mode=render_mode, **env_kwargs)
    return run_demo(env, ScriptedPushAgent(env), steps=steps, seed=seed)


def quadruped(render_mode: str = "rgb_array", steps: int = 300, seed: int = 0, **env_kwargs) -> list:
    """The Bézier trot walking in ``QuadrupedWalk-v0``."""
    from soft_envs.agents.gait import TrotController

    env = gym.make("soft_envs/QuadrupedWalk-v0", render_mode=render_mode, **env_kwargs)
    return run_demo(env, TrotController(env), steps=steps, seed=seed)


def hexapod(render_mode: str = "rgb_array", steps: int = 120, seed: int = 0, **env_kwargs) -> list:
    """The Jacobian agent reaching a new random goal pose every 30 steps in ``HexapodPose-v0``."""
    from soft_envs.agents.hexapod_control import HexapodJacobianAgent

    env = gym.make("soft_envs/HexapodPose-v0", render_mode=render_mode, max_episode_steps=max(steps, 1),
                   **env_kwargs)
    return run_demo(env, HexapodJacobianAgent(env), steps=steps, seed=seed, new_goal_every=30)


def learned(policy: str, render_mode: str = "rgb_array", steps: int = 300, seed: int = 0, **env_kwargs) -> list:
    """A policy saved by ``soft-envs train-rl`` (``PATH.zip`` with its ``PATH.json``) acting in the
    env it was trained on (the env id and observation keywords from ``PATH.json``), through
    :class:`~soft_envs.evaluate.SB3Policy` as ``soft-envs evaluate`` runs it (the ``learn`` extra)."""
    from soft_envs.evaluate import SB3Policy
    from soft_envs.learn.train import policy_record

    record = policy_record(policy)
    if "env_id" not in record:
        raise InvalidParameterError(f"{policy}: no PATH.json with the env id next to it (soft-envs train-rl writes it)")
    spec = f"sb3:{record.get('algo', 'PPO')}:{policy}"
    env = gym.make(record["env_id"], render_mode=render_mode, **(SB3Policy.env_keywords(spec) | env_kwargs))
    return run_demo(env, SB3Policy.from_spec(spec, env), steps=steps, seed=seed)


#: demo name -> function
DEMOS: dict[str, Callable[..., list]] = {"peter": peter, "peter-obstacles": peter_obstacles, "pcc": pcc,
                                          "pcc-obstacles": pcc_obstacles, "pcc-push": pcc_push,
                                          "quadruped": quadruped, "hexapod": hexapod}


# ---------------------------------------------------------------------------------------------
# The pictures of the README and the documentation: `soft-envs demo --gallery docs/_static`
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clip:
    """How a demo becomes a looping GIF: ``steps`` control steps, every ``every``-th frame kept,
    ``frame_time`` [s] per kept frame (real time is ``every · env.dt``)."""

    steps: int
    every: int = 1
    frame_time: float = 0.1


#: demo name -> its clip in the gallery (real time or close to it)
GALLERY: dict[str, Clip] = {
    "peter": Clip(steps=120),  # 10 Hz control: four goals, 3 s each
    "peter-obstacles": Clip(steps=120),  # the same, past three spheres
    "pcc": Clip(steps=200, every=2),  # 20 Hz control: 10 s of the spiral
    "pcc-obstacles": Clip(steps=200, every=2),  # four goals past three spheres, 2.5 s each
    "pcc-push": Clip(steps=200, every=2),  # 10 s: approach, push, retreat
    "quadruped": Clip(steps=300, every=3, frame_time=0.03),  # 100 Hz control: 3 s of trot
    "hexapod": Clip(steps=120, frame_time=0.08),  # four goal poses
}
MAX_GIF_BYTES = 1_000_000  # the README shows four of them at once


def gif_name(name: str) -> str:
    """The gallery's file name of demo ``name`` (``peter-obstacles`` -> ``peter_obstacles.gif``)."""
    return name.replace("-", "_") + ".gif"


def write_gif(path: str | os.PathLike, frames: list, frame_time: float, max_bytes: int = MAX_GIF_BYTES) -> int:
    """Write ``frames`` as a looping GIF of ``frame_time`` [s] per frame; while it is larger than
    ``max_bytes``, drop every other frame (same duration). Returns its size [bytes]."""
    import imageio.v2 as imageio

    while True:
        imageio.mimsave(os.fspath(path), frames, duration=1000 * frame_time, loop=0)
        size = os.path.getsize(path)
        if size <= max_bytes or len(frames) < 2:
            return size
        frames, frame_time = frames[::2], 2 * frame_time


def realism_figure(benchmarks: str | os.PathLike, output: str | os.PathLike) -> str:
    """The README's figure of the sim-to-real gap, drawn from the ``realism`` section of
    ``benchmarks`` (BENCHMARKS.md, ``soft-envs bench realism``): mean error [mm] of TRR and the
    network open loop and of TRR closed on the measured tip, per perturbation stage, next to the
    paper's simulator and real robot (the ``plot`` extra). Returns the file written."""
    from soft_envs.report import pyplot, save_figure

    text = open(benchmarks, encoding="utf-8").read()
    match = re.search(r"<!-- bench:realism -->(.*?)<!-- /bench:realism -->", text, re.S)
    if match is None:
        raise InvalidParameterError(f"{benchmarks} has no realism section (soft-envs bench realism --update)")
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in match.group(1).splitlines() if line.startswith("| ") and not line.startswith("| perturb")]

    def mean(cell: str) -> float:
        number = re.match(r"[\d.]+", cell)
        return float(number.group()) if number else float("nan")

    rows = rows[-1:] + rows[:-1]  # the paper's simulator first, its real robot last
    labels = [row[0].split(" (")[0].replace('"', "") for row in rows]
    series = {"TRR, open loop": [mean(r[2]) for r in rows], "network, open loop": [mean(r[3]) for r in rows],
              "TRR closed on the measured tip": [mean(r[5]) for r in rows]}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    height = 0.26
    for k, (name, values) in enumerate(series.items()):
        ax.barh([i + (k - 1) * height for i in range(len(rows))], values, height=height, label=name)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("mean final error [mm] (log scale; dashed: 1 mm, the success threshold)")
    ax.set_title('PETER, 2 modules, soft physics: realism="realistic" reproduces the real robot\'s\n'
                 "open-loop error; TRR closed on the measured tip: mean below 1 mm", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    directory, filename = os.path.split(os.fspath(output))
    return save_figure(fig, directory or ".", filename, dpi=100)


def write_gallery(directory: str | os.PathLike, *, width: int = 400, height: int = 300, seed: int = 0,
                  benchmarks: str | os.PathLike | None = "BENCHMARKS.md",
                  names: Sequence[str] | None = None) -> dict[str, int]:
    """Write every demo of :data:`GALLERY` (or those ``names``) as ``directory/demos/<name>.gif``
    (:func:`gif_name`; ``width`` × ``height`` px, looping, at most :data:`MAX_GIF_BYTES`) and, if
    ``benchmarks`` exists, the README's :func:`realism_figure` as ``directory/realism_gap.png``.
    Returns path -> size [bytes]."""
    from soft_envs.console import progress

    unknown = sorted(set(names or ()) - set(GALLERY))
    if unknown:
        raise InvalidParameterError(f"no gallery demo {unknown}; choose from {sorted(GALLERY)}")
    os.makedirs(os.path.join(directory, "demos"), exist_ok=True)
    sizes = {}
    for name in progress(list(GALLERY) if names is None else list(names), desc="gallery"):
        clip = GALLERY[name]
        frames = DEMOS[name](render_mode="rgb_array", steps=clip.steps, seed=seed, width=width, height=height)
        path = os.path.join(directory, "demos", gif_name(name))
        sizes[path] = write_gif(path, frames[::clip.every], clip.frame_time)
    if benchmarks is not None and os.path.exists(benchmarks):
        path = realism_figure(benchmarks, os.path.join(directory, "realism_gap.png"))
        sizes[path] = os.path.getsize(path)
    return sizes
