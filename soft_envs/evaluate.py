"""Evaluate controllers through ``env.step`` over seeded episodes, locally or on a Ray cluster.

Harness code on top of the layers. A *task* is an environment configuration with the measure
that says how well an episode went; a *controller* is built from the env (an IK agent open or
closed loop, the network, the hybrid, TRR on a model calibrated on the episode's robot and the
network fine-tuned on it (:data:`LEARNING_CONTROLLERS`: they collect samples of the robot with
``reset(options={"keep_robot": True})`` before the episode starts), PD + feed-forward, the
quadruped's gait and body-pose controllers, the hexapod's Jacobian agent, a Stable-Baselines3
policy given as ``sb3:ALGO:PATH``, or a numpy policy: :mod:`soft_envs.controllers` builds them by name);
a *preset* is a set of env keywords (``ideal`` is the env's defaults).

:func:`evaluate` runs every (task, controller, preset, episode) job with the same function,
:func:`run_episode`, in worker processes (:func:`soft_envs.jobs.run_jobs`): spawned processes
locally, or Ray tasks with ``ray_address`` (the optional ``ray`` extra) — the same code path, so
the same seeds give the same results on either. An episode whose worker dies is rerun (at most
``max_retries`` times). It returns an :class:`Evaluation`: one :class:`EpisodeResult` per
episode, a summary per (task, controller, preset) and its markdown table.

With ``results=FILE`` every finished episode is appended to ``FILE`` as it finishes (JSON Lines,
one :meth:`EpisodeResult.record` a line, flushed and fsynced), and the evaluation is read back
from that file; ``resume=True`` skips every (task, controller, preset, seed) already in it. So a
run killed in any way (SIGKILL, a lost node) and resumed ends with the records an uninterrupted
run writes. SIGINT and SIGTERM stop the run within seconds with
:class:`EvaluationInterrupted`, which carries the episodes finished so far.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from soft_envs import clock, console
from soft_envs.controllers import (  # noqa: F401  (re-exported: evaluate's names for them)
    LEARN_SAMPLES,
    LEARNING_CONTROLLERS,
    NumpyPolicy,
    SB3Policy,
    build_controller,
    controller_for,
    env_keywords,
    learning_controller,
)
from soft_envs.exceptions import InvalidParameterError, check_integer
from soft_envs.jobs import MAX_RETRIES, MAX_WORKERS, Interrupted, ResultsFile, run_jobs, stop_on_signals
from soft_envs.robots.quadruped import SERVO_SPEED

#: The most episodes per task, controller and preset of one evaluation (:func:`jobs_for`).
MAX_EPISODES = 100_000
#: The fields of a results-file record that name its episode (``--resume`` skips these).
RECORD_KEY = ("task", "controller", "preset", "seed")
#: The prefix of the ``info`` keys kept per episode as :attr:`EpisodeResult.figures` (the
#: quadruped envs' gait figures, :mod:`soft_envs.envs.gait_meter`).
GAIT_PREFIX = "gait_"
CONTACT_PREFIX = "contact_"  # the figures of an episode with obstacles (collisions, deepest penetration)
#: The gait table's columns: ``info`` key, header, scale.
GAIT_COLUMNS = (("gait_stance_slip_speed", "stance slip [mm/s]", 1e3),
                ("gait_touchdowns_per_second", "touchdowns [1/s/foot]", 1.0),
                ("gait_command_reversals_per_second", "reversals [1/s/joint]", 1.0),
                ("gait_peak_joint_speed", "peak joint speed [rad/s]", 1.0),
                ("gait_cost_of_transport", "cost of transport", 1.0))


@dataclass(frozen=True)
class Task:
    """An environment configuration to evaluate on.

    Attributes:
        name: label in the tables.
        env_id: a registered id.
        kwargs: keywords for ``gym.make`` (as ``(name, value)`` pairs, so tasks hash).
        metric: the ``info`` key measured at the end of an episode (an error [m or rad], or for
            the walk the forward distance [m]).
        unit: the metric's unit, for the table.
        controllers: the controller names that apply to this task.
        max_steps: episode length (default the env's ``max_episode_steps``).
    """

    name: str
    env_id: str
    kwargs: tuple[tuple[str, Any], ...]
    metric: str
    unit: str
    controllers: tuple[str, ...]
    max_steps: int | None = None


def _with_learned(task: Task) -> Task:
    """``task`` with the ``learned`` controller where a policy ships for it (:mod:`soft_envs.agents.learned`)."""
    from soft_envs.agents.learned import shipped_names

    if task.name in shipped_names():
        return dataclasses.replace(task, controllers=(*task.controllers, "learned"))
    return task


TASKS: dict[str, Task] = {task.name: _with_learned(task) for task in (
    Task("peter-2", "soft_envs/PeterReach-v0", (("n_modules", 2),), "distance", "m",
         ("trr", "trr-feedback", "trr-paper-model", "nn", "hybrid", "trr-calibrated", "nn-finetuned", "task-feedback")),
    # The analytic arm (no PyBullet) that `soft-envs train-rl` trains on: the IK controllers and
    # the learned policies (sb3:ALGO:PATH) side by side.
    Task("peter-2-kinematic", "soft_envs/PeterReach-v0", (("n_modules", 2), ("kinematic", True)), "distance", "m",
         ("trr", "trr-feedback", "trr-paper-model", "nn", "hybrid")),
    # Obstacle reach: three spheres drawn near the path every episode; success = within 1 mm, no collision.
    Task("peter-2-obstacles", "soft_envs/PeterReach-v0", (("n_modules", 2), ("obstacles", 3)), "distance", "m",
         ("trr", "trr-feedback", "trr-obstacles", "trr-obstacles-feedback", "sqp-obstacles-feedback", "task-feedback")),
    # The PCC arm's reach in free space (the obstacle reach's arm and goals, no obstacles): its feedback's figures.
    Task("pcc-reach", "soft_envs/PCCReach-v0", (("n_segments", 2),), "distance", "m",
         ("trr", "trr-feedback", "task-feedback")),
    # The PCC arm's obstacle reach: SQP (the seed's solver) and TRR around three spheres, routes paced at the ramp.
    Task("pcc-obstacles", "soft_envs/PCCReach-v0", (("n_segments", 2), ("obstacles", 3)), "distance", "m",
         ("trr", "trr-feedback", "trr-obstacles-feedback", "sqp-obstacles", "sqp-obstacles-feedback",
          "task-feedback")),
    # The push: the hanging PCC arm moves a box to a goal on the table; the metric is the box's distance.
    Task("pcc-push", "soft_envs/PCCPush-v0", (), "object_distance", "m", ("scripted-push",)),
    Task("pcc-spiral", "soft_envs/PCCTrack-v0", (("n_segments", 2), ("trajectory", "spiral")), "tracking_error",
         "m", ("pd-ff", "pd-ff-feedback"), max_steps=100),
    Task("quadruped-walk", "soft_envs/QuadrupedWalk-v0", (), "x", "m", ("trot",), max_steps=500),
    Task("quadruped-pose", "soft_envs/QuadrupedPose-v0", (), "orientation_error", "rad", ("body-pose",)),
    Task("hexapod-pose", "soft_envs/HexapodPose-v0", (), "position_error", "m",
         ("hexapod-jacobian", "hexapod-jacobian-low-gain")),
)}

#: Named sets of env keywords: ``ideal`` is every env's default, ``realistic`` its documented
#: sim-to-real ranges (``realism="realistic"``, :mod:`soft_envs.sim.realism`).
PRESETS: dict[str, dict[str, Any]] = {"ideal": {}, "realistic": {"realism": "realistic"}}


def _known_controllers() -> set[str]:
    return {c for task in TASKS.values() for c in task.controllers}


@dataclass(frozen=True)
class Job:
    """One episode to run: picklable, so any process (or Ray worker) can run it."""

    task: Task
    controller: str
    preset: str
    seed: int

    def key(self) -> tuple:
        """``(task, controller, preset, seed)``: what names the episode in a results file."""
        return (self.task.name, self.controller, self.preset, self.seed)

    def label(self) -> str:
        """The episode in words, for messages."""
        return f"episode (task={self.task.name}, controller={self.controller}, preset={self.preset}, seed={self.seed})"


@dataclass
class EpisodeResult:
    """What one episode gave. ``metric`` is the task's measure at the end (an error [m or rad];
    for ``quadruped-walk`` the distance walked [m]); ``time_to_goal`` [s] the first time
    ``info["is_success"]`` held (NaN if never); ``env_kwargs`` the keywords of ``gym.make``;
    ``figures`` the last step's gait figures where the env reports them
    (:data:`~soft_envs.envs.gait_meter.GAIT_KEYS`: the quadruped tasks)."""

    task: str
    controller: str
    preset: str
    seed: int
    success: bool
    metric: float
    time_to_goal: float
    steps: int
    seconds: float
    env_id: str = ""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, float] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The episode as a results-file record: every field, ``final_error`` (= ``metric``, SI),
        ``metric_name`` (the ``info`` key measured), ``unit`` and the package ``version``;
        ``time_to_goal`` is ``null`` when never reached."""
        from soft_envs import __version__

        task = TASKS.get(self.task)
        out = asdict(self)
        out["final_error"] = out.pop("metric")
        out |= {"metric_name": task.metric if task else "", "unit": task.unit if task else "",
                "version": __version__}
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> EpisodeResult:
        """The episode of a results-file record (:meth:`record`)."""
        values = dict(record, metric=record["final_error"])
        values["time_to_goal"] = float("nan") if values.get("time_to_goal") is None else values["time_to_goal"]
        values["metric"] = float("nan") if values["metric"] is None else values["metric"]
        if values.get("figures"):
            values["figures"] = {k: float("nan") if v is None else float(v) for k, v in values["figures"].items()}
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})

    def key(self) -> tuple:
        return (self.task, self.controller, self.preset, self.seed)


def run_episode(job: Job) -> EpisodeResult:
    """Run one seeded episode of ``job`` through ``env.step`` and measure it."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    start = clock.now()
    kwargs = dict(job.task.kwargs) | PRESETS[job.preset]
    kwargs |= env_keywords(job.controller, job.task.name, job.task.env_id)  # a saved policy's observation form
    if job.task.max_steps is not None:
        kwargs["max_episode_steps"] = job.task.max_steps
    env = gym.make(job.task.env_id, **kwargs)
    try:
        agent = build_controller(job.controller, env, job.task.name)
        obs, info = env.reset(seed=job.seed)
        if hasattr(agent, "learn"):  # learns on this episode's robot, then the episode starts on it
            agent.learn(seed=job.seed)
            obs, info = env.reset(seed=job.seed, options={"keep_robot": True})
        agent.reset(obs, info)
        dt = float(env.unwrapped.dt)  # type: ignore[attr-defined]  # every soft_envs env has dt
        time_to_goal, steps, deepest = float("nan"), 0, 0.0
        while True:
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            steps += 1
            deepest = max(deepest, float(info.get("penetration", 0.0)))
            if np.isnan(time_to_goal) and info.get("is_success", False):
                time_to_goal = steps * dt
            if terminated or truncated:
                break
        if job.task.env_id.endswith("QuadrupedWalk-v0"):
            success = not info["fallen"]
        else:
            success = bool(info.get("is_success", False))
        figures = {key: float(value) for key, value in info.items() if key.startswith(GAIT_PREFIX)}
        if "collisions" in info:  # an env with obstacles: the episode's contacts
            figures |= {"contact_collisions": float(info["collisions"]), "contact_penetration": deepest}
        return EpisodeResult(job.task.name, job.controller, job.preset, job.seed, success,
                             float(info[job.task.metric]), time_to_goal, steps, clock.now() - start,
                             env_id=job.task.env_id, env_kwargs=kwargs, figures=figures)
    finally:
        env.close()


@dataclass
class Evaluation:
    """The episodes of an evaluation and their summary (a data-frame-like record, no pandas)."""

    episodes: list[EpisodeResult] = field(default_factory=list)

    def columns(self) -> dict[str, np.ndarray]:
        """Column name -> array over the episodes (``task``, ``controller``, …, ``seconds``)."""
        rows = [asdict(e) for e in self.episodes]
        return {key: np.array([r[key] for r in rows]) for key in (rows[0] if rows else {})}

    def summary(self) -> list[dict[str, Any]]:
        """One row per (task, controller, preset): episodes, success rate, metric mean and p95,
        mean time to goal over the successful episodes."""
        groups: dict[tuple[str, str, str], list[EpisodeResult]] = {}
        for e in self.episodes:
            groups.setdefault((e.task, e.controller, e.preset), []).append(e)
        out = []
        for (task, controller, preset), eps in groups.items():
            metric = np.array([e.metric for e in eps])
            reached = np.array([e.time_to_goal for e in eps])
            reached = reached[np.isfinite(reached)]
            out.append({"task": task, "controller": controller, "preset": preset, "episodes": len(eps),
                        "success_rate": float(np.mean([e.success for e in eps])),
                        "metric_mean": float(metric.mean()), "metric_p95": float(np.percentile(metric, 95)),
                        "time_to_goal": float(reached.mean()) if reached.size else float("nan"),
                        "unit": TASKS[task].unit if task in TASKS else ""})
        return out

    def table(self) -> str:
        """The summary as a markdown table (lengths in mm, angles in degrees)."""
        from soft_envs.report import markdown_table

        rows = []
        for r in self.summary():
            scale, unit = ((1e3, "mm") if r["unit"] == "m"
                           else ((np.degrees(1.0), "°") if r["unit"] == "rad" else (1, "")))
            label = "distance walked" if TASKS.get(r["task"]) and TASKS[r["task"]].metric == "x" else "final error"
            ttg = "—" if np.isnan(r["time_to_goal"]) else f"{r['time_to_goal']:.2f}"
            rows.append([r["task"], r["controller"], r["preset"], r["episodes"], f"{100 * r['success_rate']:.0f} %",
                         f"{label}: {r['metric_mean'] * scale:.3g} / {r['metric_p95'] * scale:.3g} {unit}", ttg])
        return markdown_table(["task", "controller", "preset", "episodes", "success", "mean / p95",
                               "time to goal [s]"], rows)


def gait_table(evaluation: Evaluation, servo_speed: float = SERVO_SPEED) -> str:
    """The gait figures of the episodes that have them (the quadruped tasks), one row per (task,
    controller, preset): each the median over the episodes (non-finite values left out); the
    servos' no-load speed ``servo_speed`` [rad/s] heads the peak joint speed's column. Empty when
    no episode has figures."""
    from soft_envs.report import markdown_table

    groups = _groups(evaluation, GAIT_PREFIX)
    if not groups:
        return ""
    rows = []
    for (task, controller, preset), eps in groups.items():
        row: list[Any] = [task, controller, preset, len(eps)]
        for key, _, scale in GAIT_COLUMNS:
            values = np.array([e.figures.get(key, np.nan) for e in eps], dtype=float)
            values = values[np.isfinite(values)]
            row.append(f"{np.median(values) * scale:.3g}" if values.size else "—")
        rows.append(row)
    headers = [f"{h} (servo {servo_speed:.3g})" if key == "gait_peak_joint_speed" else h for key, h, _ in GAIT_COLUMNS]
    return markdown_table(["task", "controller", "preset", "episodes", *headers], rows)


def _groups(evaluation: Evaluation, prefix: str) -> dict[tuple[str, str, str], list[EpisodeResult]]:
    """The episodes with figures named ``prefix…``, by (task, controller, preset)."""
    groups: dict[tuple[str, str, str], list[EpisodeResult]] = {}
    for e in evaluation.episodes:
        if any(key.startswith(prefix) for key in e.figures):
            groups.setdefault((e.task, e.controller, e.preset), []).append(e)
    return groups


def contact_table(evaluation: Evaluation) -> str:
    """The contact figures of the episodes with obstacles, one row per (task, controller, preset): the
    share of episodes without a collision, the mean collisions, the deepest penetration [mm] and the
    success (within the threshold without a collision). Empty when no episode has obstacles."""
    from soft_envs.report import markdown_table

    rows = []
    for (task, controller, preset), eps in _groups(evaluation, CONTACT_PREFIX).items():
        collisions = np.array([e.figures["contact_collisions"] for e in eps])
        deepest = max(e.figures["contact_penetration"] for e in eps)
        rows.append([task, controller, preset, len(eps), f"{100 * np.mean(collisions == 0):.0f} %",
                     f"{collisions.mean():.2g}", f"{1e3 * deepest:.3f}",
                     f"{100 * np.mean([e.success for e in eps]):.0f} %"])
    if not rows:
        return ""
    return markdown_table(["task", "controller", "preset", "episodes", "collision-free", "collisions",
                           "deepest penetration [mm]", "success (no collision)"], rows)


def jobs_for(tasks: Sequence[str] | None = None, controllers: Sequence[str] | None = None,
             presets: Sequence[str] = ("ideal",), episodes: int = 10, seed: int = 0,
             learn_samples: int | None = None) -> list[Job]:
    """Every (task, controller, preset, episode) job; controllers default to each task's own.
    ``episodes``: per task, controller and preset, 1 to :data:`MAX_EPISODES`. ``learn_samples``:
    the collection budget of the learning controllers (default :data:`LEARN_SAMPLES`, at most
    :data:`~soft_envs.controllers.MAX_LEARN_SAMPLES`; their names become ``NAME:N``)."""
    if learn_samples is not None:
        learning_controller(f"{LEARNING_CONTROLLERS[0]}:{learn_samples}")  # checks the budget
    names = list(TASKS) if tasks is None else list(tasks)
    for name in names:
        if name not in TASKS:
            raise InvalidParameterError(f"unknown task {name!r}; choose from {sorted(TASKS)}")
    for preset in presets:
        if preset not in PRESETS:
            raise InvalidParameterError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    check_integer("episodes", episodes, minimum=1, maximum=MAX_EPISODES)
    out = []
    for name in names:
        task = TASKS[name]
        chosen = task.controllers if controllers is None else [
            c for c in controllers if c.partition(":")[0] in task.controllers or c.startswith(("sb3:", "policy:"))]
        for controller in chosen:
            learning = learning_controller(controller)
            if learning is not None:
                if learn_samples is not None:
                    controller = f"{learning[0]}:{learn_samples}"
            elif not controller.startswith(("sb3:", "policy:")) and controller not in _known_controllers():
                raise InvalidParameterError(f"unknown controller {controller!r}")
            out += [Job(task, controller, preset, seed + k) for preset in presets for k in range(int(episodes))]
    return out


class EvaluationInterrupted(Interrupted):
    """SIGINT or SIGTERM stopped :func:`evaluate`; :attr:`evaluation` holds the episodes that
    finished (all of them also in the results file), :attr:`remaining` how many did not."""

    def __init__(self, signum: int, evaluation: Evaluation, remaining: int) -> None:
        super().__init__(signum)
        self.evaluation, self.remaining = evaluation, remaining


def evaluate(jobs: Sequence[Job], *, workers: int = 2, ray_address: str | None = None,
             progress: bool = True, run: Callable[[Job], EpisodeResult] = run_episode,
             results: str | None = None, resume: bool = False, max_retries: int = 2) -> Evaluation:
    """Run ``jobs`` in ``workers`` processes (or Ray workers at ``ray_address``: an address,
    ``"auto"`` for a running cluster, or ``"local"`` to start one here), reporting the progress
    (``progress``; :func:`soft_envs.console.progress`: a bar on a terminal, else a line every 30 s);
    episodes come back in the order of ``jobs`` whatever finished first.

    Args:
        results: a JSON Lines file that gets one record per episode as it finishes
            (:meth:`EpisodeResult.record`); the returned evaluation is read back from it. A file
            that already holds records needs ``resume``.
        resume: skip the episodes already in ``results`` (a truncated last line is cut off with
            a warning) and run the rest.
        workers: 1 to :data:`~soft_envs.jobs.MAX_WORKERS`.
        max_retries: how many times (at most :data:`~soft_envs.jobs.MAX_RETRIES`) an episode
            whose worker process died is rerun; then :class:`~soft_envs.jobs.JobFailedError` names
            it. (An exception raised by an episode is not retried: it ends the run, the finished
            records kept.)
        run: the function that runs one job (module level, so that it pickles).

    Raises:
        EvaluationInterrupted: on SIGINT or SIGTERM, within seconds, with the finished episodes.
    """
    workers = check_integer("workers", workers, minimum=1, maximum=MAX_WORKERS)
    max_retries = check_integer("max_retries", max_retries, minimum=0, maximum=MAX_RETRIES)
    if resume and results is None:
        raise InvalidParameterError("resume needs a results file (--results FILE)")
    jobs = list(dict.fromkeys(jobs))
    file = None if results is None else ResultsFile(results, RECORD_KEY)
    done: dict[tuple, EpisodeResult] = {}
    try:
        if file is not None:
            done = {tuple(r[k] for k in RECORD_KEY): EpisodeResult.from_record(r) for r in file.open(resume)}
        todo = [job for job in jobs if job.key() not in done]
        successes, resumed = [0], len(done)  # (of the episodes this run finishes)
        bar = console.progress(total=len(jobs), initial=len(jobs) - len(todo), desc="evaluate", unit="episodes",
                               enabled=progress)

        def finished(index: int, result: EpisodeResult) -> None:
            if file is not None:
                file.append(result.record())
            done[todo[index].key()] = result
            successes[0] += bool(result.success)
            bar.set_postfix_str(f"success {successes[0]}/{len(done) - resumed} so far", refresh=False)
            bar.update()

        try:
            with stop_on_signals():
                run_jobs(todo, run, finished, workers=int(workers), max_retries=max_retries,
                         ray_address=ray_address, describe=lambda i: todo[i].label())
        except Interrupted as exc:
            partial = _finished(jobs, done, file)
            raise EvaluationInterrupted(exc.signum, partial, len(jobs) - len(partial.episodes)) from None
        finally:
            bar.close()
    finally:
        if file is not None:
            file.close()
    return _finished(jobs, done, file)


def _finished(jobs: list[Job], done: dict[tuple, EpisodeResult], file: ResultsFile | None) -> Evaluation:
    """The finished episodes of ``jobs`` in their order: from the results file when there is one
    (the file is the record, also of an episode whose record a signal interrupted on its way)."""
    if file is not None:
        file.close()
        done = {tuple(r[k] for k in RECORD_KEY): EpisodeResult.from_record(r) for r in file.read()}
    return Evaluation([done[job.key()] for job in jobs if job.key() in done])


def plot(evaluation: Evaluation, plot_dir: str) -> str:
    """Empirical CDFs of the episode metric, one panel per task, one line per controller and
    preset (the ``plot`` extra); returns the file written."""
    from soft_envs.report import pyplot, save_figure

    plt = pyplot()
    cols = evaluation.columns()
    tasks = list(dict.fromkeys(cols["task"].tolist()))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        unit = TASKS[task].unit if task in TASKS else ""
        scale, label = (1e3, "mm") if unit == "m" else ((np.degrees(1.0), "deg") if unit == "rad" else (1.0, unit))
        mine = cols["task"] == task
        for controller, preset in dict.fromkeys(zip(cols["controller"][mine].tolist(), cols["preset"][mine].tolist())):
            sel = mine & (cols["controller"] == controller) & (cols["preset"] == preset)
            values = np.sort(cols["metric"][sel] * scale)
            ax.step(values, np.arange(1, values.size + 1) / values.size, where="post", label=f"{controller} ({preset})")
        ax.set_xscale("symlog", linthresh=1e-3)
        ax.set_xlabel(f"{TASKS[task].metric if task in TASKS else 'metric'} [{label}]")
        ax.set_ylabel("fraction of episodes")
        ax.set_title(task)
        ax.legend(fontsize=7)
    return save_figure(fig, plot_dir, "evaluate_cdf.png")
