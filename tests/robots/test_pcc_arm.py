"""PCC arm model (SPEC section 3): kinematics, Jacobian, discretisation limit, material, body description."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots import PCCArm, PlanarPCCArm
from soft_envs.robots.pcc_kinematics import PCCKinematics

ARMS = [PCCArm(3, 6), PCCArm(1, 3), PlanarPCCArm(4, 6), PCCArm(2, 4, (0.05, 0.08))]


def _fd_jacobian(arm, c, h=1e-7):
    return np.stack([(arm.forward(c + h * e) - arm.forward(c - h * e)) / (2 * h) for e in np.eye(arm.n_dof)], -1)


@settings(max_examples=40, deadline=None)
@given(arm_index=st.integers(0, len(ARMS) - 1), seed=st.integers(0, 2**31 - 1), shrink=st.floats(0.0, 1.0))
def test_jacobian_matches_finite_differences(arm_index, seed, shrink):
    arm = ARMS[arm_index]
    c = arm.sample(np.random.default_rng(seed)) * shrink  # shrink → 0 covers the straight (θ = 0) arm
    np.testing.assert_allclose(arm.jacobian(c), _fd_jacobian(arm, c), atol=2e-8)


@settings(max_examples=25, deadline=None)
@given(arm_index=st.integers(0, len(ARMS) - 1), seed=st.integers(0, 2**31 - 1))
def test_batched_equals_single_and_closed_form_equals_series(arm_index, seed):
    arm = ARMS[arm_index]
    c = arm.sample(np.random.default_rng(seed), 4)
    tips, jacs = arm.forward(c), arm.jacobian(c)
    for k in range(4):
        np.testing.assert_allclose(tips[k], arm.forward(c[k]), atol=1e-15)
        np.testing.assert_allclose(jacs[k], arm.jacobian(c[k]), atol=1e-14)
        u = arm.to_smooth(c[k])
        tip_u, jac_u = arm.smooth_kinematics(u)  # closed-form link sums (or the series path)
        np.testing.assert_allclose(tip_u, tips[k], atol=1e-15)
        if not arm.planar:
            series = PCCKinematics(arm.segment_lengths, arm.links_per_segment)
            series_tip, series_jac, _ = series.series(u.reshape(1, -1, 3), with_jacobian=True)
            np.testing.assert_allclose(jac_u, series_jac[0], atol=1e-13)
        np.testing.assert_allclose(arm.link_points(c[k])[-1], tips[k], atol=1e-15)


def test_closed_forms_single_link_and_straight_arm():
    arm = PCCArm(1, 1, 0.065)
    dl, theta, phi = 0.004, 0.9, 0.7
    ell = 0.065 + dl
    expected = ell * np.array([np.sin(theta / 2) * np.cos(phi), np.sin(theta / 2) * np.sin(phi), np.cos(theta / 2)])
    np.testing.assert_allclose(arm.forward([dl, theta, phi]), expected, atol=1e-16)
    arm3 = PCCArm(3, 6)
    np.testing.assert_allclose(arm3.forward(np.zeros(9)), [0, 0, 0.195], atol=1e-16)
    c = np.array([0.001, 0.5, 0.0, -0.002, -0.3, 0.0])
    planar = PlanarPCCArm(2, 6)
    np.testing.assert_allclose(planar.forward(c[[0, 1, 3, 4]]), PCCArm(2, 6).forward(c), atol=1e-16)
    np.testing.assert_allclose(planar.tip_angle(c[[0, 1, 3, 4]]), 0.2)
    np.testing.assert_allclose(PCCArm(2, 6).tip_angle(c), 0.2, atol=1e-12)


def test_tip_converges_to_the_exact_arc_as_one_over_m_squared():
    c = np.array([0.003, 1.2, 0.4, -0.004, -0.8, 2.0])
    errors = []
    for m in (4, 8, 16, 32, 64):
        arm = PCCArm(2, m)
        errors.append(np.linalg.norm(arm.forward(c) - arm.arc_tip(c)))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    np.testing.assert_allclose(ratios, 4.0, rtol=0.02)
    assert errors[-1] < 2e-6


def test_smooth_coordinates_roundtrip_and_continuity():
    arm = PCCArm(2, 6)
    c = np.array([0.001, 0.6, 3.0, -0.002, -0.4, -0.5])
    u = arm.to_smooth(c)
    back = arm.from_smooth(u)
    np.testing.assert_allclose(arm.forward(back), arm.forward(c), atol=1e-16)
    assert np.all(back[1::3] >= 0)
    # With a reference the representation (θ, φ) vs (−θ, φ ± π) nearest to it is kept.
    np.testing.assert_allclose(arm.from_smooth(u, reference=c), c, atol=1e-12)
    straight = arm.from_smooth(np.zeros(6), reference=c)
    np.testing.assert_allclose(straight[2::3], c[2::3])


@pytest.mark.parametrize("bad", [np.zeros(8), np.full(9, np.nan), np.zeros((2, 2, 9))])
def test_invalid_configuration_raises_value_error(bad):
    with pytest.raises(ValueError):
        PCCArm(3, 6).forward(bad)
    with pytest.raises(ValueError):
        PCCArm(3, 6).jacobian(bad)


@pytest.mark.parametrize("kwargs", [dict(n_segments=0), dict(links_per_segment=0), dict(segment_length=65.0),
                                    dict(segment_length=-0.1), dict(elongation=1.5), dict(max_bend=4.0)])
def test_invalid_parameters_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        PCCArm(**kwargs)


def test_stiffness_from_the_papers_material():
    arm = PCCArm(2, 6, stiffness_source="material")
    area, inertia = arm.cross_section()
    np.testing.assert_allclose(area, 0.0173 / (1100.0 * 0.0644))
    np.testing.assert_allclose(inertia, area**2 / (4 * np.pi))
    k = arm.stiffness()
    np.testing.assert_allclose(k[:, 0], 80e6 * area / 0.065)
    np.testing.assert_allclose(k[:, 1], 80e6 * inertia / 0.065)
    assert np.all(k[:, 2] == 0)


def test_default_stiffness_is_calibrated_on_the_chamber_pressures():
    # The most loaded chamber at a workspace corner (10 % elongation, 140° bend) is at the bound,
    # half of it for each: k_ΔL = ½ p d α₁ / (0.1 L), k_θ = ½ p α₁ r_b / (2/3 θ_max).
    arm = PCCArm(2, 6)
    pm = arm.pressure
    k = arm.stiffness()
    np.testing.assert_allclose(k[:, 0], 0.5 * 30e3 * 3 * 8e-4 / (0.1 * 0.065))
    np.testing.assert_allclose(k[:, 1], 0.5 * 30e3 * 8e-4 * pm.chamber_offset / (2 / 3 * np.deg2rad(140.0)))
    softer = PCCArm(2, 6, max_pressure=15e3).stiffness()
    np.testing.assert_allclose(softer, 0.5 * k)
    assert arm.pressure_map().shape == (6, 6)
    for kwargs in (dict(stiffness_source="rubber"), dict(max_pressure=-1.0), dict(alpha1=0.0)):
        with pytest.raises(ValueError):
            PCCArm(**kwargs)
