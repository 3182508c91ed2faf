"""Budgets, evaluations and checkpoints of ``soft-envs train-rl`` runs (SB3 callbacks).

A checkpoint is a folder (``POLICY.ckpt/``) written atomically (to a temporary folder, then
renamed): ``model.zip`` (SB3's save: the policy with its input normaliser, the optimisers, the
step count), ``replay.pkl`` (the replay buffer, off-policy algorithms), ``rng.pkl`` (the states
of Python's, NumPy's and torch's generators) and ``state.json`` (steps, the wall-clock budget
used [s], the evaluations so far, seed, recipe and env keywords). :class:`StopOnSigterm` turns
SIGTERM into a checkpoint and a clean stop.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs import clock


class Checkpoint:
    """The checkpoint folder of one run."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def exists(self) -> bool:
        return (self.folder / "state.json").exists()

    def save(self, model, state: dict[str, Any]) -> None:
        """Write the model, its replay buffer, the RNG states and ``state`` (atomic)."""
        import torch

        tmp = self.folder.with_name(self.folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        model.save(tmp / "model.zip")
        if getattr(model, "replay_buffer", None) is not None:
            model.save_replay_buffer(tmp / "replay.pkl")
        rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
        with open(tmp / "rng.pkl", "wb") as fh:
            pickle.dump(rng, fh)
        (tmp / "state.json").write_text(json.dumps(state, indent=2, default=to_json_value) + "\n")
        old = self.folder.with_name(self.folder.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if self.folder.exists():
            os.replace(self.folder, old)
        os.replace(tmp, self.folder)
        shutil.rmtree(old, ignore_errors=True)

    def state(self) -> dict[str, Any]:
        return json.loads((self.folder / "state.json").read_text())

    def load(self, algorithm, env, tensorboard: str | None = None):
        """``(model, state)``: the model on ``env`` with its replay buffer and the RNG states restored."""
        import torch

        model = algorithm.load(str(self.folder / "model.zip"), env=env, device="cpu", tensorboard_log=tensorboard)
        if (self.folder / "replay.pkl").exists():
            model.load_replay_buffer(self.folder / "replay.pkl")  # HER: truncates the unfinished episode
        with open(self.folder / "rng.pkl", "rb") as fh:
            rng = pickle.load(fh)
        random.setstate(rng["python"])
        np.random.set_state(rng["numpy"])
        torch.set_rng_state(rng["torch"])
        return model, self.state()


def to_json_value(value):
    """``json.dumps``'s ``default``: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


class StopOnSigterm:
    """A context in which SIGTERM sets :attr:`requested` instead of killing the process (main
    thread only; elsewhere it does nothing)."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> StopOnSigterm:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.requested = True

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def budget_callback(seconds: float | None, steps: int | None, eval_every: int, evaluate, progress: bool, log, *,
                    elapsed0: float = 0.0, history: list | None = None, checkpoint: Checkpoint | None = None,
                    checkpoint_seconds: float | None = None, run_state: dict[str, Any] | None = None,
                    live_state=None):
    """An SB3 callback that stops at the budget (``seconds`` of wall time, of which ``elapsed0``
    were used before a resume, or ``steps``), evaluates every ``eval_every`` steps
    (``evaluate(model) -> EvalResult``), checkpoints every ``checkpoint_seconds`` and when its
    ``stop_flag`` (a :class:`StopOnSigterm`) is raised, and reports its progress
    (:func:`soft_envs.console.progress`: a bar on a terminal, else a line every 30 s with the steps,
    their rate, the budget used, the time left and the last evaluation). ``history`` lists the
    evaluations as ``(steps, seconds, summary)``; ``live_state()`` (a dict) joins every checkpoint's
    state (its ``cpu_seconds``, if any, every evaluation's summary and log line)."""
    from stable_baselines3.common.callbacks import BaseCallback

    from soft_envs.console import progress as progress_bar

    class BudgetCallback(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.history = list(history or [])
            self.elapsed = 0.0  # [s] in this process
            self.interrupted = False
            self.stop_flag: StopOnSigterm | None = None

        def _on_training_start(self) -> None:
            self.deadline_start = clock.now()
            self.next_eval = (self.num_timesteps // eval_every + 1) * eval_every
            self.next_checkpoint = checkpoint_seconds
            self.bar = progress_bar(total=steps, desc="train-rl", unit="steps", initial=self.num_timesteps,
                                    time_budget=seconds, used=elapsed0, enabled=progress, dynamic_ncols=True)

        def save(self) -> None:
            if checkpoint is not None:
                live = live_state() if live_state is not None else {}
                checkpoint.save(self.model, dict(run_state or {}) | live | {
                    "timesteps": self.num_timesteps, "elapsed": elapsed0 + self.elapsed, "history": self.history,
                    "budget_seconds": seconds, "budget_steps": steps})

        def _on_step(self) -> bool:
            self.elapsed = clock.now() - self.deadline_start
            used = elapsed0 + self.elapsed
            if self.num_timesteps >= self.next_eval:
                self.next_eval += eval_every
                result = evaluate(self.model)
                cpu = (live_state() if live_state is not None else {}).get("cpu_seconds")
                summary = result.summary() | ({} if cpu is None else {"cpu_seconds": cpu})
                self.history.append((self.num_timesteps, used, summary))
                self.bar.set_postfix_str(f"last evaluation ({self.num_timesteps:,} steps): {result.line()}")
                cpu_text = "" if cpu is None else f" ({cpu / 60:.1f} CPU min)"
                log(f"{self.num_timesteps} steps, {used / 60:.1f} min{cpu_text}: {result.line()}")
            if self.stop_flag is not None and self.stop_flag.requested:
                self.interrupted = True
                self.save()
                return False
            if self.next_checkpoint is not None and self.elapsed >= self.next_checkpoint:
                self.next_checkpoint += float(checkpoint_seconds or 0.0)
                self.save()
            done = seconds is not None and used >= seconds
            self.bar.update_to(self.num_timesteps, used=used)
            return not done

        def _on_training_end(self) -> None:
            self.elapsed = clock.now() - self.deadline_start
            self.bar.close()

    return BudgetCallback()
