"""The PCC arms' command ramp: the compiled batch (``ramp_setpoints``) equals the numpy ramp row by row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.envs.pcc_ramp import command_step, ramp_setpoint, ramp_setpoints
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.robots.planar_pcc_arm import PlanarPCCArm

ARM = PCCArm(2)


def _batch(rng: np.random.Generator, model: PCCArm, rows: int) -> np.ndarray:
    """``rows`` random configurations; some straight (``θ = 0``) and some negative bends."""
    c = np.array([model.sample(rng) for _ in range(rows)])
    if not model.planar:
        c[rng.random(rows) < 0.2, 1] = 0.0
        c[rng.random(rows) < 0.2, 4] *= -1.0
    return c


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ramp_time=st.sampled_from([0.05, 0.5, 5.0]))
def test_the_compiled_ramp_is_the_numpy_ramp_of_each_row(seed: int, ramp_time: float) -> None:
    rng = np.random.default_rng(seed)
    setpoint, target = _batch(rng, ARM, 16), _batch(rng, ARM, 16)
    step = command_step(ARM, "configuration", np.ones(ARM.n_dof), 1.0, 0.05, ramp_time)
    ramped, u_from, u_to = ramp_setpoints(ARM, setpoint, target, step)
    for b in range(16):
        expected = ramp_setpoint(ARM, setpoint[b], target[b], step)
        assert np.allclose(ARM.to_smooth(ramped[b]), ARM.to_smooth(expected), rtol=0, atol=1e-12)
        assert np.allclose(ramped[b][1::3], expected[1::3], rtol=0, atol=1e-12)  # the same sign of θ
    assert np.allclose(u_from, ARM.to_smooth(setpoint), rtol=0, atol=1e-12)
    assert np.allclose(u_to, ARM.to_smooth(ramped), rtol=0, atol=1e-12)
    assert step is not None and np.all(np.abs(u_to - u_from) <= step + 1e-12)


def test_without_a_ramp_and_on_the_planar_arm_the_numpy_ramp_answers() -> None:
    rng = np.random.default_rng(1)
    planar = PlanarPCCArm(2)
    setpoint, target = _batch(rng, planar, 4), _batch(rng, planar, 4)
    step = command_step(planar, "configuration", np.ones(planar.n_dof), 1.0, 0.05, 0.5)
    ramped, u_from, u_to = ramp_setpoints(planar, setpoint, target, step)
    assert np.array_equal(ramped, ramp_setpoint(planar, setpoint, target, step))
    assert np.array_equal(u_from, setpoint) and np.array_equal(u_to, ramped)
    setpoint, target = _batch(rng, ARM, 4), _batch(rng, ARM, 4)
    same, u_from, u_to = ramp_setpoints(ARM, setpoint, target, None)
    assert same is target
    assert np.array_equal(u_from, ARM.to_smooth(setpoint)) and np.array_equal(u_to, ARM.to_smooth(target))
