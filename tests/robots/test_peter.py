"""The PETER model: both kinematics, analytic Jacobians, batching, and its body description (chain, URDF)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots import Peter

KINEMATICS = ["tilted", "pcc"]


def inflation_times(n_modules: int):
    return st.lists(st.floats(0.0, 2.0), min_size=3 * n_modules, max_size=3 * n_modules).map(np.array)


def fd_jacobian(f, t, h=1e-6):
    cols = [(f(t + h * e) - f(t - h * e)) / (2 * h) for e in np.eye(t.shape[-1])]
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("kinematics", KINEMATICS)
@pytest.mark.parametrize("n_modules", [1, 2, 3, 4])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_jacobian_matches_finite_differences(kinematics, n_modules, data):
    arm = Peter(n_modules, kinematics=kinematics)
    t = data.draw(inflation_times(n_modules))
    t = np.clip(t, 1e-6, 2 - 1e-6)  # central differences stay inside the bounds
    J = arm.jacobian(t)
    assert J.shape == (3, 3 * n_modules)
    np.testing.assert_allclose(J, fd_jacobian(arm.forward, t), atol=1e-9)
    points, jac = arm.module_points_jacobian(t)
    np.testing.assert_allclose(jac, fd_jacobian(arm.module_points, t), atol=1e-9)


@pytest.mark.parametrize("kinematics", KINEMATICS)
@pytest.mark.parametrize("n_modules", [1, 2, 3, 4])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_single_configuration_path_equals_the_batched_path(kinematics, n_modules, data):
    """One configuration runs the fused float path (reverse-mode Jacobian), a batch of one the
    vectorised numpy path (forward mode): the same tip and Jacobian to 1e-15."""
    arm = Peter(n_modules, kinematics=kinematics)
    t = data.draw(inflation_times(n_modules))
    np.testing.assert_allclose(arm.forward(t), arm.forward(t[None])[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(arm.jacobian(t), arm.jacobian(t[None])[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(arm.forward(t), arm.module_points(t)[-1], rtol=0, atol=1e-15)
    assert arm.forward(list(t)).shape == (3,) and arm.jacobian(tuple(t)).shape == (3, 3 * n_modules)


@pytest.mark.parametrize("kinematics", KINEMATICS)
def test_single_configuration_path_checks_its_input(kinematics):
    arm = Peter(2, kinematics=kinematics)
    for bad in (np.full(6, np.nan), np.array([0.0, 1.0, np.inf, 0.0, 0.0, 0.0]), np.zeros(5), np.zeros((2, 2, 6))):
        with pytest.raises(ValueError):
            arm.forward(bad)
        with pytest.raises(ValueError):
            arm.jacobian(bad)


@pytest.mark.parametrize("kinematics", KINEMATICS)
def test_batched_equals_single(kinematics):
    arm = Peter(3, kinematics=kinematics)
    t = arm.sample(np.random.default_rng(0), 7)
    np.testing.assert_allclose(arm.forward(t), np.array([arm.forward(x) for x in t]), atol=1e-15)
    np.testing.assert_allclose(arm.jacobian(t), np.array([arm.jacobian(x) for x in t]), atol=1e-15)


@pytest.mark.parametrize("kinematics", KINEMATICS)
@pytest.mark.parametrize("n_modules", [1, 2, 3, 4])
def test_equal_legs_give_a_straight_arm(kinematics, n_modules):
    arm = Peter(n_modules, kinematics=kinematics)
    for value in (0.0, 1.3):
        t = np.full(3 * n_modules, value)
        leg = arm.leg_length_at_rest + arm.leg_rate * value
        expected = [0.0, 0.0, n_modules * leg + (n_modules - 1) * arm.gap]
        np.testing.assert_allclose(arm.forward(t), expected, atol=1e-15)


def test_paper_leg_length_model():
    arm = Peter(1)
    np.testing.assert_allclose(arm.leg_lengths(np.array([0.0, 1.0, 2.0]))[0],
                               [0.042926, 0.052926, 0.062926], atol=1e-15)


def test_one_module_tilted_plane_tip_moves_only_vertically():
    # The paper's model places the tip at the mean of the three leg tops: with one module the
    # feet are centred on the axis, so the tip only moves along z (1-D workspace).
    arm = Peter(1)
    tips = arm.forward(arm.sample(np.random.default_rng(1), 50))
    np.testing.assert_allclose(tips[:, :2], 0.0, atol=1e-15)


def test_shorter_leg_bends_the_arm_towards_it_in_both_models():
    for kinematics in KINEMATICS:
        tip = Peter(2, kinematics=kinematics).forward(np.array([0.0, 2.0, 2.0, 1.0, 1.0, 1.0]))
        assert tip[0] > 1e-3, kinematics  # leg at +x shortest -> bends towards +x
        assert abs(tip[1]) < 1e-12


def test_pcc_curvature_matches_the_leg_geometry():
    # A PCC arc of bend θ in direction φ has legs l_j = L − θ r cos(α_j − φ).
    arm = Peter(1, kinematics="pcc")
    L, theta, phi = 0.05, 0.3, 0.7
    legs = L - theta * arm.radius * np.cos(arm.leg_angles - phi)
    t = (legs - arm.leg_length_at_rest) / arm.leg_rate
    params = arm.arc_parameters(t)[0]
    np.testing.assert_allclose(params, [L, theta * np.cos(phi), theta * np.sin(phi)], atol=1e-12)
    expected = (L / theta) * np.array([(1 - np.cos(theta)) * np.cos(phi), (1 - np.cos(theta)) * np.sin(phi),
                                       np.sin(theta)])
    np.testing.assert_allclose(arm.forward(t), expected, atol=1e-15)


def test_models_differ_by_a_model_gap_of_millimetres():
    rng = np.random.default_rng(2)
    tilted, pcc = Peter(2), Peter(2, kinematics="pcc")
    t = tilted.sample(rng, 200)
    gap = np.linalg.norm(tilted.forward(t) - pcc.forward(t), axis=1)
    assert 1e-4 < np.median(gap) < 5e-2


@pytest.mark.parametrize("bad", [np.zeros(5), np.zeros((2, 7)), np.array([np.nan] * 6), np.zeros((1, 1, 6))])
def test_bad_configuration_raises_value_error(bad):
    with pytest.raises(ValueError):
        Peter(2).forward(bad)


@pytest.mark.parametrize("kwargs", [dict(n_modules=0), dict(n_modules=5), dict(n_modules=2.5), dict(radius=-1.0),
                                    dict(radius=45.0), dict(kinematics="exact"), dict(links_per_module=0),
                                    dict(gap=np.nan)])
def test_bad_parameters_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        Peter(**kwargs)


def test_bounds_are_copies_and_seconds():
    arm = Peter(2)
    low, high = arm.bounds
    low[:] = 5
    np.testing.assert_array_equal(arm.bounds[0], np.zeros(6))
    np.testing.assert_array_equal(arm.bounds[1], np.full(6, 2.0))


def test_urdf_is_generated_from_the_model():
    arm = Peter(2, links_per_module=2, radius=0.05, gap=0.02)
    text = arm.urdf(payload=0.3)
    assert text.count("<joint ") == len(arm.chain().names) == len(arm.chain().kinds)
    assert 'radius="0.05"' in text and 'xyz="0.0 0.0 0.02"' in text
    with pytest.raises(ValueError):
        arm.urdf(payload=-1.0)


def test_with_parameters_replaces_only_what_it_is_given():
    arm = Peter(2, kinematics="pcc")
    plant = arm.with_parameters(radius=0.05, leg_stiffness=1000.0)
    assert (plant.radius, plant.leg_stiffness, plant.kinematics, plant.gap) == (0.05, 1000.0, "pcc", arm.gap)
    assert arm.with_kinematics("tilted").kinematics == "tilted"
    with pytest.raises(ValueError, match="no parameter"):
        arm.with_parameters(diameter=0.1)
