"""Kirchhoff-rod shooting solver against closed-form results (elastica, circular arc, Euler)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.optimize import brentq

from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.cosserat import Rod
from soft_envs.robots.cosserat.elastica import cantilever_tip as elastica_tip
from soft_envs.robots.cosserat.integrator import rotation_matrix_wxyz, to_wxyz, to_xyzw

L = 0.4


def make_rod(n_steps: int = 100) -> Rod:
    return Rod(length=L, radius=0.00065, youngs_modulus=207e9, shear_modulus=79.3e9, n_steps=n_steps)


def test_elastica_reference_matches_quadrature():
    """The closed form is checked against direct quadrature of θ' = sqrt(2λ(sin α − sin θ))."""
    for load in (0.5, 3.0, 10.0):
        across, along = elastica_tip(load)
        # tip angle α from the length condition, then the two integrals
        def length(alpha):
            return quad(lambda t: 1 / np.sqrt(2 * load * (np.sin(alpha) - np.sin(t))), 0, alpha)[0] - 1.0
        with np.errstate(divide="ignore"):
            alpha = brentq(length, 1e-6, np.pi / 2 - 1e-12)
        x = quad(lambda t: np.sin(t) / np.sqrt(2 * load * (np.sin(alpha) - np.sin(t))), 0, alpha)[0]
        z = quad(lambda t: np.cos(t) / np.sqrt(2 * load * (np.sin(alpha) - np.sin(t))), 0, alpha)[0]
        assert abs(x - across) < 1e-7 and abs(z - along) < 1e-7


@pytest.mark.parametrize("load", [0.5, 2.0, 10.0])
def test_cantilever_matches_elastica(load):
    rod = make_rod(100)
    P = load * rod.EI / L**2
    state = rod.solve_clamped(tip_force=[P, 0.0, 0.0])
    assert state.converged
    across, along = elastica_tip(load)
    expected = np.array([across * L, 0.0, along * L])
    assert np.max(np.abs(state.tip_position - expected)) < 1e-6 * L
    # the tip is moment-free and the force is the dead load everywhere
    assert np.max(np.abs(state.moments[-1])) < 1e-9 * rod.EI / L
    np.testing.assert_allclose(state.force, [P, 0.0, 0.0])


def test_cantilever_in_another_direction_is_the_rotated_solution():
    rod = make_rod(60)
    P = 2.0 * rod.EI / L**2
    a = rod.solve_clamped(tip_force=[P, 0.0, 0.0]).tip_position
    b = rod.solve_clamped(tip_force=[0.0, -P, 0.0]).tip_position
    np.testing.assert_allclose(b, [0.0, -a[0], a[2]], atol=1e-12)


def test_pure_bending_is_a_circular_arc():
    rod = make_rod(100)
    M = 2.0 * rod.EI / L  # bends the rod by 2 rad
    state = rod.solve_clamped(tip_moment=[0.0, M, 0.0])
    assert state.converged
    kappa = M / rod.EI
    s = state.s
    arc = np.stack(((1 - np.cos(kappa * s)) / kappa, np.zeros_like(s), np.sin(kappa * s) / kappa), axis=1)
    assert np.max(np.abs(state.positions - arc)) < 1e-9 * L
    np.testing.assert_allclose(state.curvatures[:, 1], kappa, rtol=1e-10)
    np.testing.assert_allclose(state.moments, np.tile([0.0, M, 0.0], (len(s), 1)), atol=1e-12 * M)
    assert state.energy == pytest.approx(M**2 * L / (2 * rod.EI), rel=1e-9)


def test_twist_rotates_the_tip_about_the_axis():
    rod = make_rod(50)
    T = 0.5 * rod.GJ / L
    state = rod.solve_clamped(tip_moment=[0.0, 0.0, T])
    angle = T * L / rod.GJ
    c, s = np.cos(angle), np.sin(angle)
    np.testing.assert_allclose(state.tip_rotation, [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-10)
    np.testing.assert_allclose(state.tip_position, [0, 0, L], atol=1e-14)


@pytest.mark.parametrize("boundary, mode, factor", [
    ("clamped-free", 1, np.pi**2 / 4),
    ("pinned-pinned", 1, np.pi**2),
    ("pinned-pinned", 2, 4 * np.pi**2),
])
def test_euler_buckling_loads(boundary, mode, factor):
    rod = make_rod(100)
    P = rod.buckling_load(boundary, mode=mode)
    assert P == pytest.approx(factor * rod.EI / L**2, rel=1e-3)  # the 0.1 %
    assert P == pytest.approx(factor * rod.EI / L**2, rel=1e-6)  # and in fact far better


def test_rk4_converges_at_fourth_order():
    load = 5.0
    across, along = elastica_tip(load)
    errors = []
    for n in (20, 40):
        rod = make_rod(n)
        tip = rod.solve_clamped(tip_force=[load * rod.EI / L**2, 0, 0]).tip_position
        errors.append(np.linalg.norm(tip - [across * L, 0, along * L]))
    assert 12.0 < errors[0] / errors[1] < 20.0  # 2⁴ = 16


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_random_loads_satisfy_global_balance(values):
    rod = make_rod(40)
    F = np.array(values[:3]) * 3 * rod.EI / L**2
    M = np.array(values[3:]) * 1.5 * rod.EI / L
    state = rod.solve_clamped(tip_force=F, tip_moment=M)
    assert state.converged
    # moment balance of the whole rod: m(0) = M + (p(L) − p(0)) × F
    np.testing.assert_allclose(state.moments[0], M + np.cross(state.tip_position, F), atol=1e-6 * rod.EI / L)
    R = state.rotations
    np.testing.assert_allclose(R @ np.swapaxes(R, 1, 2), np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(state.quaternions, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(quaternion_to_matrix(state.quaternions), R, atol=1e-12)  # (x, y, z, w)
    np.testing.assert_allclose(np.linalg.norm(np.diff(state.positions, axis=0), axis=1).sum(), L, rtol=1e-3)


def test_integrator_rotation_matches_seed_eq11_for_non_unit_quaternions():
    q = np.array([0.3, -1.2, 0.5, 2.0])  # scalar first (w, x, y, z), the integrator's order
    R = rotation_matrix_wxyz(q)
    np.testing.assert_allclose(R, rotation_matrix_wxyz(2.5 * q), atol=1e-15)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-14)
    unit = q / np.linalg.norm(q)
    np.testing.assert_allclose(R, quaternion_to_matrix(to_xyzw(unit)), atol=1e-15)
    np.testing.assert_array_equal(to_wxyz(to_xyzw(q)), q)


def test_integrate_takes_and_returns_xyzw_quaternions():
    rod = make_rod(20)
    tilt = np.array([np.sin(0.2), 0.0, 0.0, np.cos(0.2)])  # 0.4 rad about x, (x, y, z, w)
    Y = rod.integrate(np.zeros(3), np.zeros(3), base_quaternion=tilt)
    np.testing.assert_allclose(Y[3:7], tilt, atol=1e-14)  # an unloaded rod stays straight
    np.testing.assert_allclose(Y[0:3], L * quaternion_to_matrix(tilt)[:, 2], atol=1e-14)
    state = rod.state(np.zeros(3), np.zeros(3), base_quaternion=tilt)
    np.testing.assert_allclose(state.quaternions, np.tile(tilt, (len(state.s), 1)), atol=1e-14)


@pytest.mark.parametrize("kwargs", [dict(length=-1.0), dict(radius=0.0), dict(youngs_modulus=np.nan),
                                    dict(shear_modulus=-5.0), dict(n_steps=1)])
def test_bad_parameters_raise(kwargs):
    base = dict(length=L, radius=0.00065, youngs_modulus=207e9)
    base.update(kwargs)
    with pytest.raises(ValueError):
        Rod(**base)


def test_bad_loads_raise():
    rod = make_rod(10)
    with pytest.raises(ValueError):
        rod.solve_clamped(tip_force=[np.nan, 0, 0])
    with pytest.raises(ValueError):
        rod.solve_clamped(tip_moment=[1.0, 2.0])
    with pytest.raises(ValueError):
        rod.buckling_load("free-free")


def test_elastica_reference_rejects_bad_loads():
    for load in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError):
            elastica_tip(load)


# ---------------------------------------------------------------------------- branches, stability, budgets
def test_clamped_rod_prefers_the_stable_branch_over_a_loop():
    """Past ~10 N the linear start converges to a looped rod (tip (−0.093, 0, 0.023),
    potential +1.63 J); the stable, lowest-potential branch is the one returned and so marked."""
    rod = Rod(0.25, 0.00065, 207e9)
    state = rod.solve_clamped(tip_force=[8.0, 0.0, 0.0], max_seconds=math.inf)  # the branch, not the machine
    assert state.converged and state.stable
    np.testing.assert_allclose(state.tip_position, [0.2146, 0.0, 0.0851], atol=5e-4)
    assert state.potential_energy == pytest.approx(state.energy - 8.0 * state.tip_position[0], rel=1e-12)
    assert state.potential_energy == pytest.approx(-1.436, abs=2e-3)
    assert np.max(np.abs(state.moments[-1])) < 1e-9 * rod.EI / rod.length
    # a start on the looped branch ends on the stable branch as well
    looped = rod.solve_clamped(tip_force=[8.0, 0.0, 0.0], guess=[0.0, 1.57 / rod.length, 0.0], max_seconds=math.inf)
    assert looped.stable
    np.testing.assert_allclose(looped.tip_position, state.tip_position, atol=1e-9)


@pytest.mark.parametrize("load, stable", [(2.0, True), (3.0, False), (12.0, False)])
def test_stability_of_the_compressed_column(load, stable):
    """Straight rod under an axial dead load P L²/EI: stable below π²/4 ≈ 2.47 (Euler); at 3 the
    tip term is indefinite, at 12 the rod also has a (double, by symmetry) conjugate point."""
    rod = make_rod(100)
    state = rod.solve_clamped(tip_force=[0.0, 0.0, -load * rod.EI / L**2])
    assert state.converged and state.stable is stable
    np.testing.assert_allclose(state.tip_position, [0.0, 0.0, L], atol=1e-12)
    assert rod.clamped_stability(state) is stable


def test_a_nan_residual_never_beats_a_converged_start():
    """An absurd guess overflows (NaN residual) and the fallback start converges."""
    rod = make_rod(60)
    state = rod.solve_clamped(tip_force=[1.0, 0.0, 0.0], guess=[1e6, 0.0, 0.0], max_seconds=math.inf)
    assert state.converged and np.all(np.isfinite(state.positions)) and state.residual < 1e-10
    reference = rod.solve_clamped(tip_force=[1.0, 0.0, 0.0])
    np.testing.assert_allclose(state.tip_position, reference.tip_position, atol=1e-10)


def test_unresolvable_moment_raises_before_any_integration(monkeypatch):
    """A 1e3 N m tip moment (thousands of turns) used to run for minutes; it is now
    rejected by its input check, before the rod is integrated once."""
    rod = make_rod(100)

    def integrate(*args, **kwargs):
        raise AssertionError("the rod was integrated before the load was rejected")

    monkeypatch.setattr(rod, "_integrate_wxyz", integrate)
    with pytest.raises(ValueError, match="n_steps"):
        rod.solve_clamped(tip_moment=[1e3, 0.0, 0.0])


@pytest.mark.budget
def test_the_budget_ends_a_hard_solve(expiring_clock):
    """A load far past the first loop (P L²/EI ≈ 100) takes a long continuation: the clock jumps past
    the 1 s budget after 5 reads (on any machine), the solve stops there and says so, and what it
    returns is what it says (not converged: no stability assessed)."""
    rod = Rod(0.25, 0.00065, 207e9, n_steps=100)
    expiring_clock(5)
    state = rod.solve_clamped(tip_force=[50.0, 0.0, 0.0], max_seconds=1.0)
    assert state.timed_out and not state.converged
    assert state.stable is None and state.potential_energy is None
    assert np.all(np.isfinite(state.positions))


def test_a_real_budget_ends_a_hard_solve():
    """End to end on the real clock, a guard against a hang only (the bound is for any machine)."""
    rod = Rod(0.25, 0.00065, 207e9, n_steps=100)
    start = time.perf_counter()
    state = rod.solve_clamped(tip_force=[50.0, 0.0, 0.0], max_seconds=1.0)
    assert time.perf_counter() - start < 60.0
    assert state.converged or state.timed_out
    if state.converged:
        assert state.residual < 1e-10 and state.stable is not None and not state.timed_out


@pytest.mark.parametrize("kwargs", [dict(n_steps=0), dict(n_steps=2.5), dict(tol=0.0), dict(tol=np.inf),
                                    dict(tol=np.nan), dict(max_iter=0), dict(max_seconds=0.0),
                                    dict(guess=[np.nan, 0.0, 0.0]), dict(guess=[1.0, 2.0])])
def test_bad_solver_options_raise(kwargs):
    with pytest.raises(ValueError):
        make_rod(10).solve_clamped(tip_force=[1.0, 0.0, 0.0], **kwargs)
