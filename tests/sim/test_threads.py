"""The batched core across threads: blocks of arms, results identical to one thread."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import PCCArm, Peter
from soft_envs.sim import threads
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter


@given(n_arms=st.integers(1, 5000), num_threads=st.integers(1, 64))
@settings(max_examples=200, deadline=None)
def test_blocks_cover_the_batch_once(n_arms, num_threads):
    parts = threads.blocks(n_arms, num_threads)
    assert 1 <= len(parts) <= num_threads
    assert parts[0].start == 0 and parts[-1].stop == n_arms
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:], strict=False))
    if len(parts) > 1:
        assert min(p.stop - p.start for p in parts) >= threads.MIN_ARMS_PER_THREAD


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", 2000])
def test_num_threads_is_checked(bad):
    with pytest.raises(InvalidParameterError):
        threads.check_threads(bad)
    with pytest.raises(InvalidParameterError):
        BatchedSoftPeter(Peter(2), 4, num_threads=bad)


def test_default_is_the_cores_of_this_process():
    assert threads.check_threads(None) == threads.available_cores() >= 1
    assert BatchedSoftPeter(Peter(2), 2).num_threads == threads.available_cores()


def _peter(num_threads: int) -> BatchedSoftPeter:
    arms = BatchedSoftPeter(Peter(2), 97, payload=0.1, num_threads=num_threads)
    arms.reset_inflation(None, np.random.default_rng(0).uniform(0.0, 2.0, (97, 6)))
    return arms


def _pcc(num_threads: int) -> BatchedPCCBody:
    arms = BatchedPCCBody(PCCArm(2, 6), 70, num_threads=num_threads)
    arms.reset_configuration(None, np.array([0.001, 0.5, 0.3, 0.0, 0.8, -1.0]))
    return arms


@pytest.mark.parametrize("make", [_peter, _pcc])
def test_threads_give_the_results_of_one_thread_bit_for_bit(make):
    runs = []
    for num_threads in (1, 2, 3):
        arms = make(num_threads)
        rng = np.random.default_rng(1)
        active = rng.random(arms.n_arms) < 0.8
        for _ in range(4):
            torque = rng.normal(0.0, 1e-3, arms.state.u.shape)
            arms.step(0.005, torque, rest_end=arms.state.rest + 1e-4, active=active)
        runs.append(arms.state)
    for other in runs[1:]:
        for name in ("u", "w", "a", "c", "rest", "time"):
            assert np.array_equal(getattr(runs[0], name), getattr(other, name)), name


def _step_in_child(queue) -> None:
    arms = _peter(2)
    arms.step(0.005, 0.0)
    queue.put(arms.state.u.copy())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_a_forked_child_steps_with_threads():
    """A forked process inherits the parent's pool object but not its threads: it must make its own."""
    parent = _peter(2)
    parent.step(0.005, 0.0)  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_step_in_child, args=(queue,))
    child.start()
    u = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert np.array_equal(u, parent.state.u)
