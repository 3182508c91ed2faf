"""The soft arms' compiled periods (:mod:`soft_envs.sim.arm_period`, :mod:`soft_envs.sim.period_kernels`):
the same episodes as the numpy loops they replace — PETER's to the bit, the PCC arm's to rounding (its
law's and chambers' sums run in index order, numpy's ``einsum`` and BLAS in theirs) — through stops and
autoresets, and the same numbers for any number of threads."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401

PETER = "soft_envs/PeterReach-v0"
PCC = "soft_envs/PCCTrack-v0"

CASES = [
    pytest.param(PETER, {}, id="peter"),
    pytest.param(PETER, dict(realism="realistic", command_delay=0.15), id="peter-realistic-delay"),
    pytest.param(PETER, dict(n_modules=3, actuation="instant", payload=0.2, goal_conditioned=True,
                             realism={"preset": "realistic", "observation_latency": (0.0, 0.2)}),
                 id="peter-instant-goal"),
    pytest.param(PCC, {}, id="pcc"),
    pytest.param(PCC, dict(action_type="pressure", regulator_delay=0.05,
                           realism={"preset": "realistic", "payload": (0, 0)}), id="pcc-pressure-delay-realistic"),
    pytest.param(PCC, dict(action_type="torque", regulator_time_constant=0.0), id="pcc-torque-unlagged"),
    pytest.param(PCC, dict(trajectory="planar_circle", n_segments=3, links_per_segment=4, actuation="direct"),
                 id="pcc-planar-direct"),
    pytest.param(PCC, dict(controller_period=0.01, command_ramp_time=0.0, regulator_delay=0.12), id="pcc-stops"),
    pytest.param("soft_envs/PCCReach-v0", dict(goal_conditioned=True), id="pcc-reach"),
    pytest.param(PETER, dict(obstacles=3, realism="realistic"), id="peter-obstacles-realistic"),
    pytest.param(PETER, dict(obstacles=2, n_modules=3), id="peter-obstacles"),
]


def _run(env_id: str, kwargs: dict, compiled: bool, n: int = 5, steps: int = 24, num_threads: int = 1,
         poison: slice | None = None, crush: float = 0.0) -> list:
    """Every output of ``steps`` random vector steps (episodes of 10 steps); ``poison``: those arms' states
    made NaN after the reset (they stop at their first physics step); ``crush``: the first arm's first
    module shortened by that much [m] after the reset."""
    envs = gym.make_vec(env_id, num_envs=n, max_episode_steps=10, num_threads=num_threads, **kwargs)
    arms = envs.unwrapped.arms
    arms.compiled_periods = compiled
    out = [envs.reset(seed=4)]
    if poison is not None:
        arms.body.state.u[poison] = np.nan
    arms.body.state.u[0, 0] -= crush
    assert arms.compiled == compiled
    rng = np.random.default_rng(2)
    space = envs.single_action_space
    for _ in range(steps):
        out.append(envs.step(rng.uniform(1.2 * space.low, 1.2 * space.high, size=(n, *space.shape))))
        out.append(arms.legs.inflation.copy() if hasattr(arms, "legs") else arms.physics_steps.copy())
    envs.close()
    return out


def _leaves(tree, prefix=""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, f"{prefix}/{key}")
    elif isinstance(tree, (tuple, list)):
        for k, value in enumerate(tree):
            yield from _leaves(value, f"{prefix}/{k}")
    else:
        yield prefix, np.asarray(tree)


def _assert_same(a, b, exact: bool) -> None:
    la, lb = list(_leaves(a)), list(_leaves(b))
    assert [k for k, _ in la] == [k for k, _ in lb]
    for (key, x), (_, y) in zip(la, lb):
        assert x.dtype == y.dtype and x.shape == y.shape, key
        if exact or x.dtype.kind not in "fc":
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:  # float32 observations may round to a neighbouring value
            np.testing.assert_allclose(x, y, rtol=1e-6 if x.dtype == np.float32 else 1e-9, atol=1e-9, err_msg=key)


@pytest.mark.parametrize("env_id, kwargs", CASES)
def test_compiled_periods_run_the_numpy_loops_episodes(env_id, kwargs):
    _assert_same(_run(env_id, kwargs, True), _run(env_id, kwargs, False), exact=env_id == PETER)


@pytest.mark.parametrize("env_id, kwargs", [CASES[1], CASES[4], CASES[7], CASES[9]])
def test_threads_do_not_change_the_compiled_periods(env_id, kwargs):
    # 100 arms: three blocks of arms in three threads against one
    _assert_same(_run(env_id, kwargs, True, n=100, steps=12, num_threads=3),
                 _run(env_id, kwargs, True, n=100, steps=12, num_threads=1), exact=True)


def test_a_block_whose_arms_all_stopped_runs_the_batchs_remaining_steps():
    # the first block's 32 arms stop at their first physics step (a state that is not finite); the other
    # block steps on, and the stopped arms' legs move on with it, as in the batch loop
    kwargs = dict(realism="realistic", command_delay=0.15)
    compiled = _run(PETER, kwargs, True, n=64, steps=3, num_threads=2, poison=slice(0, 32))
    _assert_same(compiled, _run(PETER, kwargs, False, n=64, steps=3, num_threads=2, poison=slice(0, 32)), exact=True)
    info = compiled[1][4]
    assert info["_termination_reason"][:32].all() and not info["_termination_reason"][32:].any()
    assert info["termination_reason"][0] == "the state is not finite"


def test_the_obstacles_contact_and_tally_are_the_numpy_loops_in_every_block():
    # contact happens in these episodes; a block whose arms all stopped at once runs the batch's remaining steps
    kwargs = dict(obstacles=3, realism="realistic")
    compiled = _run(PETER, kwargs, True, n=64, steps=12, num_threads=2, poison=slice(0, 32))
    _assert_same(compiled, _run(PETER, kwargs, False, n=64, steps=12, num_threads=2, poison=slice(0, 32)), exact=True)
    infos = [step[4] for step in compiled[1::2] if isinstance(step, tuple)]
    assert max(float(info["contact_force"].max()) for info in infos) > 0.0
    assert sum(int(info["collisions"].sum()) for info in infos) > 0
    assert not infos[0]["contact_force"][:32].any()  # (stopped at their first physics step: no force)


def test_the_reasons_of_stopped_arms_are_the_numpy_loops():
    # a module squeezed far below half its legs' length: "a leg crushed to ... mm", from the state that stopped
    compiled = _run(PETER, {}, True, steps=2, crush=0.04)
    _assert_same(compiled, _run(PETER, {}, False, steps=2, crush=0.04), exact=True)
    assert compiled[1][4]["termination_reason"][0].startswith("a leg crushed to")


def test_the_period_kernels_compile_once():
    # every configuration above, three threads among them: one specialization of each kernel (no new compiles)
    from soft_envs.sim import pcc_period, period_kernels

    for env_id, kwargs in (c.values for c in CASES):
        _run(env_id, kwargs, True, n=3, steps=2)
    _run(PETER, {}, True, n=100, steps=1, num_threads=3)
    for kernel in (period_kernels.peter_legs, period_kernels.settle, pcc_period.pcc_period,
                   period_kernels.pcc_observation, period_kernels.pcc_ramp):
        assert len(kernel.signatures) == 1, kernel.py_func.__name__
