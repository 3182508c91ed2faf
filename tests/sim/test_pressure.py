"""The PCC arm's chambers: eq. 9's map, the stiffness calibrated on the pressure bound, and the
first-order regulator with its dead time (:mod:`soft_envs.robots.pcc_pressure`,
:mod:`soft_envs.sim.actuators`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots import PCCArm, PlanarPCCArm
from soft_envs.robots.pcc_pressure import PAPER_ALPHA1, PAPER_ALPHA2, PressureMap
from soft_envs.sim.actuators import DELAY_DAMPING_MARGIN, BatchedPressureRegulator, delay_robust_gains
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody


def test_eq9_read_on_the_bellow_geometry():
    pm = PressureMap(3)
    assert pm.chamber_offset == pytest.approx(PAPER_ALPHA2 / (PAPER_ALPHA1 * 0.0644))
    assert 0.010 < pm.chamber_offset < 0.020  # a 15 mm offset: chambers around a ~60 mm segment
    H = pm.segment_matrix()
    np.testing.assert_allclose(H[0], PAPER_ALPHA1)
    np.testing.assert_allclose(H[1:] * 0.0644, PAPER_ALPHA2 * np.stack((np.cos(pm.angles), np.sin(pm.angles))))
    # one chamber pressurised bends the segment towards its angle (eq. 9's sign)
    tau = H @ np.array([0.0, 1.0, 0.0])
    assert np.arctan2(tau[2], tau[1]) == pytest.approx(2 * np.pi / 3)
    with pytest.raises(ValueError):
        PressureMap(3, max_pressure=2e5)  # the vacuum side cannot pass −1 atm (bar/kPa mix-up)


@pytest.mark.parametrize("arm", [PCCArm(1, 6), PlanarPCCArm(1, 6)], ids=["3d", "planar"])
def test_pressure_bound_holds_every_corner_of_the_workspace(arm):
    # Without gravity, the elastic force at every corner of the paper's workspace box (±10 %,
    # ±140°, any bending direction) needs at most the pressure bound — and a corner needs all of it.
    H, k = arm.pressure_map(), arm.stiffness()
    stiffness = k[0, :2] if arm.planar else k[0, [0, 1, 1]]
    worst = 0.0
    for sign in (-1.0, 1.0):
        for phi in np.linspace(-np.pi, np.pi, 73):
            c = np.array([sign * 0.1 * 0.065, arm.max_bend] if arm.planar else [sign * 0.1 * 0.065, arm.max_bend, phi])
            p = np.linalg.solve(H, stiffness * arm.to_smooth(c))
            worst = max(worst, np.abs(p).max())
    assert worst == pytest.approx(arm.pressure.max_pressure, rel=1e-9)


def test_bounded_pressures_drive_the_arm_to_a_workspace_corner():
    arm = PCCArm(1, 6)
    client = connect()
    try:
        body = PCCBody(client, arm, gravity=0.0)
        body.reset(np.zeros(3))
        corner = np.array([0.1 * 0.065, arm.max_bend, 0.3])
        p = np.linalg.solve(arm.pressure_map(), body.stiffness * arm.to_smooth(corner))
        assert np.abs(p).max() <= arm.pressure.max_pressure * (1 + 1e-9)
        for _ in range(800):
            body.step(5e-3, arm.pressure_map() @ p)
        np.testing.assert_allclose(body.configuration, corner, atol=1e-6)
    finally:
        disconnect(client)


def test_regulator_is_a_bounded_first_order_lag_with_dead_time():
    reg = BatchedPressureRegulator(1, 2, max_pressure=3e4, time_constant=0.01, delay=0.125)
    reg.reset(None, np.zeros(2))
    reg.command(np.array([[1e4, 5e4]]), now=np.zeros(1))
    assert reg.saturated[0]
    trace = [reg.advance(1e-3, np.array([k * 1e-3]))[0].copy() for k in range(400)]
    trace = np.array(trace)
    assert np.all(trace[:124] == 0.0)  # nothing before 125 ms
    # one time constant after the dead time: 1 − 1/e of the (clipped) set-point
    np.testing.assert_allclose(trace[134], [1e4, 3e4] * np.array(1 - np.exp(-1.0)), rtol=1e-9)
    np.testing.assert_allclose(trace[-1], [1e4, 3e4], rtol=1e-6)
    ideal = BatchedPressureRegulator(1, 1, max_pressure=3e4, time_constant=0.0)
    ideal.command(np.array([[2e4]]), now=np.zeros(1))
    assert ideal.advance(1e-3, np.zeros(1))[0, 0] == 2e4


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), beta=st.floats(1e-4, 0.05),
       kp=st.floats(0.0, 500.0), kv=st.floats(0.0, 20.0))
def test_delay_robust_gains_keep_the_delayed_feedback_below_the_first_modes_own_damping(seed, n, beta, kp, kv):
    """The scaled gains: one factor ≤ 1 on both, the first mode ``ω₁`` that of ``M⁻¹ K``, and
    ``kv + kp/ω₁ ≤ margin · β ω₁²`` (unscaled where the given gains already meet it)."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    mass, stiffness = a @ a.T + 0.1 * np.eye(n), b @ b.T + 0.5 * np.eye(n)
    scaled_kp, scaled_kv, w1 = delay_robust_gains(mass, stiffness, beta, kp, kv)
    assert w1 == pytest.approx(np.sqrt(np.linalg.eigvals(np.linalg.solve(mass, stiffness)).real.min()), rel=1e-9)
    bound = DELAY_DAMPING_MARGIN * beta * w1 * w1
    assert scaled_kv + scaled_kp / w1 <= bound * (1 + 1e-9)
    assert scaled_kp <= kp and scaled_kv <= kv
    assert scaled_kp * kv == pytest.approx(scaled_kv * kp, rel=1e-9, abs=1e-12)  # one factor on both
    if kv + kp / w1 <= bound:
        assert (scaled_kp, scaled_kv) == (kp, kv)
    else:
        assert scaled_kv + scaled_kp / w1 == pytest.approx(bound, rel=1e-9)
