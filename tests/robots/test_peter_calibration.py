"""PETER calibrated on samples (:mod:`soft_envs.robots.peter_calibration`): the calibrated model's
kinematics (nominal case, Jacobian, the sag against an energy minimisation and the soft simulator)
and the least-squares fit (recovery, bad input)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import CalibratedPeter, Peter
from soft_envs.robots.peter_calibration import GROUPS, calibrate, nominal_loads

ARM = Peter(2, kinematics="pcc")


def robot(arm: Peter = ARM, seed: int = 0) -> CalibratedPeter:
    """A perturbed arm in the ranges of the realistic preset."""
    rng = np.random.default_rng(seed)
    return CalibratedPeter(arm.with_parameters(radius=arm.radius * 1.05), leg_gain=rng.uniform(0.7, 1.3, arm.n_dof),
                           leg_offset=rng.uniform(0.0, 2e-3, arm.n_dof), leak_loss=rng.uniform(0.0, 1.5e-3, arm.n_dof),
                           loads=[0.2, 0.4], base_tilt=[0.02, -0.015])


@pytest.mark.parametrize("kinematics", ["pcc", "tilted"])
def test_the_nominal_parameters_are_the_arm(kinematics):
    arm = Peter(3, kinematics=kinematics)
    model = CalibratedPeter(arm)
    t = arm.sample(np.random.default_rng(1), 20)
    np.testing.assert_array_equal(model.forward(t), arm.forward(t))
    np.testing.assert_allclose(model.jacobian(t), arm.jacobian(t), atol=1e-15)
    assert model.n_dof == arm.n_dof and np.array_equal(model.upper, arm.upper)


def test_gains_and_offsets_are_eq_1_per_leg():
    gain, offset = np.linspace(0.8, 1.2, 6), np.linspace(-1e-3, 2e-3, 6)
    model = CalibratedPeter(ARM, leg_gain=gain, leg_offset=offset)
    t = ARM.sample(np.random.default_rng(2), 5)
    legs = ARM.leg_length_at_rest + offset + gain * ARM.leg_rate * t  # the legs' lengths [m]
    np.testing.assert_allclose(model.forward(t), ARM.forward((legs - ARM.leg_length_at_rest) / ARM.leg_rate),
                               atol=1e-15)


def test_a_leak_shortens_a_leg_down_to_its_deflated_length():
    gain, loss = np.full(6, 1.2), np.r_[3e-3, np.zeros(5)]
    model = CalibratedPeter(ARM, leg_gain=gain, leak_loss=loss)
    t = np.array([[0.1, 1, 1, 1, 1, 1], [1.0, 1, 1, 1, 1, 1]])
    legs = ARM.leg_length_at_rest + np.maximum(gain * ARM.leg_rate * t - loss, 0.0)
    np.testing.assert_allclose(model.forward(t), ARM.forward((legs - ARM.leg_length_at_rest) / ARM.leg_rate),
                               atol=1e-15)
    assert model.jacobian(t[0])[:, 0] == pytest.approx(np.zeros(3))  # an emptied leg does not move the tip
    assert np.linalg.norm(model.jacobian(t[1])[:, 0]) > 1e-3


def test_the_tilt_rotates_the_tips_about_the_base():
    tilt = np.array([0.03, -0.02])
    model = CalibratedPeter(ARM, base_tilt=tilt)
    t = ARM.sample(np.random.default_rng(3), 5)
    angle = np.linalg.norm(tilt)
    axis = np.r_[tilt, 0.0] / angle
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K  # Rodrigues
    np.testing.assert_allclose(model.forward(t), ARM.forward(t) @ R.T, atol=1e-15)


def test_the_jacobian_is_the_derivative_of_forward_single_and_batched():
    model = robot()
    t = ARM.sample(np.random.default_rng(4), 4)
    h = 1e-6
    for q in t:
        numeric = np.stack([(model.forward(q + h * e) - model.forward(q - h * e)) / (2 * h) for e in np.eye(6)], 1)
        np.testing.assert_allclose(model.jacobian(q), numeric, atol=1e-8 * np.abs(numeric).max())
    np.testing.assert_allclose(model.jacobian(t)[2], model.jacobian(t[2]), atol=1e-14)
    np.testing.assert_allclose(model.forward(t)[1], model.forward(t[1]), atol=1e-15)


def test_the_sag_minimises_the_legs_and_gravity_energy():
    """The loaded legs' times minimise ½ k v² |t_eff − s|² + g Σ M_i e·p_i(t_eff) (an independent solve)."""
    model = CalibratedPeter(ARM, loads=[0.3, 0.6], base_tilt=[0.05, 0.0])
    t = np.array([1.8, 0.2, 0.9, 0.0, 1.5, 0.4])
    s = model.unloaded_times(t)
    k, v, g = ARM.leg_stiffness, ARM.leg_rate, model.gravity
    up = model.rotation.T @ np.array([0.0, 0.0, 1.0])

    def energy(x):
        return 0.5 * k * v**2 * np.sum((x - s) ** 2) + g * np.sum(model.loads * (ARM.module_points(x) @ up))

    best = minimize(energy, s, method="BFGS", options={"gtol": 1e-12}).x
    np.testing.assert_allclose(model.effective_times(t), best, atol=1e-6)
    assert np.max(np.abs(best - s)) > 0.05  # a real sag: tenths of a second of inflation, millimetres of leg


@pytest.mark.parametrize("module_mass, payload, tolerance", [(0.01, 0.5, 1e-5), (0.12, 0.5, 6e-5), (0.12, 0.0, 6e-5)])
def test_the_sag_is_the_soft_simulators_equilibrium(module_mass, payload, tolerance):
    """Against the compliant PyBullet arm at rest under gravity: the module masses lumped at the
    module tops (``nominal_loads``) plus the payload on the tip give the simulated tip."""
    from soft_envs.sim.bullet import connect, disconnect
    from soft_envs.sim.peter_soft import SoftPeterBody

    arm = Peter(2, kinematics="pcc", module_mass=module_mass)
    client = connect()
    try:
        body = SoftPeterBody(client, arm, payload=payload, gravity=9.81)
        t = np.array([2.0, 0.0, 0.5, 1.5, 0.2, 0.0])
        body.reset(t)
        for _ in range(2400):
            body.step(1 / 240, np.zeros(6))
        simulated = body.tip_state()[0]
    finally:
        disconnect(client)
    model = CalibratedPeter(arm, loads=nominal_loads(arm) + np.r_[0.0, payload], gravity=9.81)
    sag = np.linalg.norm(simulated - arm.forward(t))
    assert sag > 5e-4 if payload else sag > 5e-5
    assert np.linalg.norm(model.forward(t) - simulated) < tolerance


def test_the_fit_recovers_a_robot_from_its_samples():
    truth = robot(seed=5)
    rng = np.random.default_rng(6)
    times = ARM.sample(rng, 300)
    tips = truth.forward(times) + rng.normal(0.0, 1e-4, (300, 3))
    fitted = calibrate(ARM, times, tips, noise=1e-4)
    report = fitted.calibration
    assert report["converged"] and report["samples"] == 300
    assert report["rms_m"] == pytest.approx(np.sqrt(3) * 1e-4, rel=0.15)  # down to the noise
    held_out = ARM.sample(rng, 200)
    assert np.max(np.linalg.norm(fitted.forward(held_out) - truth.forward(held_out), axis=1)) < 1e-4
    np.testing.assert_allclose(fitted.leg_gain, truth.leg_gain, atol=0.02)
    np.testing.assert_allclose(fitted.base_tilt, truth.base_tilt, atol=3e-3)
    np.testing.assert_allclose(fitted.leak_loss, truth.leak_loss, atol=3e-4)
    assert set(report["parameters"]) == set(GROUPS)
    assert 0 < report["max_correlation"] < 1


def test_fitting_fewer_groups_leaves_the_others_nominal_and_a_larger_residual():
    truth = robot(seed=7)
    times = ARM.sample(np.random.default_rng(8), 200)
    tips = truth.forward(times)
    rigid = calibrate(ARM, times, tips, fit=("gain", "offset", "leak", "radius", "tilt"))
    assert np.all(rigid.loads == 0) and set(rigid.calibration["parameters"]) == {"gain", "offset", "leak", "radius",
                                                                                   "tilt"}
    assert rigid.calibration["rms_m"] > 3 * calibrate(ARM, times, tips).calibration["rms_m"]


def test_bad_calibration_input_is_a_value_error():
    times = ARM.sample(np.random.default_rng(9), 20)
    tips = ARM.forward(times)
    with pytest.raises(InvalidParameterError, match="shape"):
        calibrate(ARM, times, tips[:10])
    with pytest.raises(ValueError, match="millimetres"):
        calibrate(ARM, times, tips * 1e5)
    with pytest.raises(InvalidParameterError, match="groups"):
        calibrate(ARM, times, tips, fit=("gain", "stiffness"))
    with pytest.raises(InvalidParameterError, match="noise"):
        calibrate(ARM, times, tips, noise=0.0)
    with pytest.raises(ValueError, match="NaN"):
        calibrate(ARM, np.where(times > 1.0, np.nan, times), tips)
    with pytest.raises(InvalidParameterError, match="Peter"):
        CalibratedPeter("arm")
    with pytest.raises(InvalidParameterError, match="gains"):
        CalibratedPeter(ARM, leg_gain=-1.0)
    with pytest.raises(InvalidParameterError, match="6 finite"):
        CalibratedPeter(ARM, leg_offset=np.zeros(5))
    with pytest.raises(InvalidParameterError, match="leak"):
        CalibratedPeter(ARM, leak_loss=-1e-3)
