"""A dead ``AsyncVectorEnv`` worker gives an error, not a hang (docs page "Vector environments").

Gymnasium leaves a plain ``close()`` waiting forever on a worker that died mid-step; the
pattern the docs recommend — ``step_wait(timeout=…)`` and ``close(terminate=True)`` on any
error — must end in seconds with every worker process gone.
"""

from __future__ import annotations

import os
import signal
import threading
import warnings

import gymnasium as gym
import pytest

import soft_envs  # noqa: F401


def _call_with_deadline(fn, seconds: float):
    """Run ``fn`` in a thread; fail the test (instead of hanging the suite) if it takes longer."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"call did not return within {seconds} s"
    return outcome


@pytest.mark.parametrize("when", ["before_step", "during_step"])
def test_killed_worker_raises_and_close_terminates(when):
    # "during_step": a physics step long enough (thousands of substeps) that the kill lands inside it
    kwargs = {"kinematic": True} if when == "before_step" else {"frame_skip": 10_000}
    envs = gym.make_vec("soft_envs/PeterReach-v0", num_envs=2, vectorization_mode="async", **kwargs)
    envs.reset(seed=0)
    victim = envs.processes[1]
    if when == "during_step":
        envs.step_async(envs.action_space.sample())
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(5.0)

    def step():
        if when == "before_step":
            envs.step_async(envs.action_space.sample())
        return envs.step_wait(timeout=30.0)

    # The dead worker's pipe gives the error (an OSError or EOFError, not step_wait's own
    # multiprocessing.TimeoutError); the thread's deadline only guards the suite against a hang.
    outcome = _call_with_deadline(step, 60.0)
    assert isinstance(outcome.get("error"), (OSError, EOFError)), outcome
    with warnings.catch_warnings():  # gymnasium warns about closing during a pending step
        warnings.simplefilter("ignore")
        closed = _call_with_deadline(lambda: envs.close(terminate=True), 60.0)
    assert "error" not in closed, closed
    assert not any(p.is_alive() for p in envs.processes)

