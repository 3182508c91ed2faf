"""The 6-PFS hexapod model: forward kinematics, assembly modes, stability."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.exceptions import ConvergenceError
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.cosserat import Hexapod6PFS
from soft_envs.robots.cosserat.equations import FK_FREE


@pytest.fixture(scope="module")
def hexa() -> Hexapod6PFS:
    return Hexapod6PFS()


def balance(hexa: Hexapod6PFS, sol) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint-position error [m], force balance [N] and moment balance about p_P [N m], from the
    solution's own fields and its rods integrated afresh."""
    rods = hexa.rod_states(sol)
    tips = np.array([r.tip_position for r in rods])
    joints = sol.position + hexa.platform_points @ sol.rotation.T
    F, M = sol.load[:3], sol.load[3:]
    force = sol.forces.sum(axis=0) - F
    moment = np.sum(np.cross(tips - sol.position, sol.forces), axis=0) - M
    return tips - joints, force, moment


def test_reference_solution_is_symmetric_equilibrium(hexa):
    ref = hexa.reference_solution()
    assert ref.converged and ref.residual < 1e-10
    np.testing.assert_allclose(ref.position[:2], 0.0, atol=1e-10)
    np.testing.assert_allclose(ref.quaternion, [0, 0, 0, 1], atol=1e-10)  # (x, y, z, w)
    joint, force, moment = balance(hexa, ref)
    assert np.max(np.abs(joint)) < 1e-10 and np.max(np.abs(force)) < 1e-9 and np.max(np.abs(moment)) < 1e-9
    # zero tip moment at the spherical joints
    assert max(np.max(np.abs(r.moments[-1])) for r in hexa.rod_states(ref)) < 1e-10
    # every rod carries the same force magnitude (symmetry)
    np.testing.assert_allclose(np.linalg.norm(ref.forces, axis=1), np.linalg.norm(ref.forces[0]), rtol=1e-8)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_solve_reaches_an_equilibrium_for_any_input(values):
    hexa = Hexapod6PFS()
    rho = np.array(values) * hexa.input_limit
    sol = hexa.solve(rho)
    assert sol.converged and sol.residual < 1e-10
    np.testing.assert_allclose(sol.inputs, rho)
    joint, force, moment = balance(hexa, sol)
    assert np.max(np.abs(joint)) < 1e-9 and np.max(np.abs(force)) < 1e-8 and np.max(np.abs(moment)) < 1e-8
    assert abs(np.linalg.norm(sol.quaternion) - 1) < 1e-12 and sol.quaternion[3] >= 0
    np.testing.assert_allclose(quaternion_to_matrix(sol.quaternion), sol.rotation, atol=1e-12)  # (x, y, z, w)


def test_warm_start_path_independence_and_platform_load(hexa):
    rho = np.array([0.01, -0.005, 0.0, 0.008, -0.01, 0.004])
    direct = hexa.solve(rho)
    step = hexa.solve(0.5 * rho)
    chained = hexa.solve(rho, step)
    np.testing.assert_allclose(chained.pose, direct.pose, atol=1e-10)
    load = np.array([0.1, -0.05, -0.2, 0.002, 0.001, -0.003])
    loaded = hexa.solve(rho, direct, load=load)
    assert loaded.converged
    joint, force, moment = balance(hexa, loaded)
    assert np.max(np.abs(force)) < 1e-8 and np.max(np.abs(moment)) < 1e-8
    assert np.linalg.norm(loaded.position - direct.position) > 1e-5  # the load moves the platform


def test_input_jacobian_matches_finite_differences_of_solves(hexa):
    rho = np.array([0.004, -0.002, 0.001, 0.0, 0.003, -0.004])
    sol = hexa.solve(rho)
    S = hexa.input_jacobian(sol)
    h = 1e-5
    for i in (0, 3):
        e = np.zeros(6)
        e[i] = h
        a, b = hexa.solve(rho + e, sol, tol=1e-12), hexa.solve(rho - e, sol, tol=1e-12)
        dp = (a.position - b.position) / (2 * h)
        dq = 2 * (a.quaternion - b.quaternion) / (2 * h)
        v, w = sol.quaternion[:3], sol.quaternion[3]  # (x, y, z, w)
        dth = w * dq[:3] - dq[3] * v - np.cross(dq[:3], v)  # 2 vec(δe ⊗ e*) without the factor 2 twice
        np.testing.assert_allclose(S[:3, i], dp, atol=1e-5 * np.max(np.abs(S[:3])))
        np.testing.assert_allclose(S[3:, i], dth, atol=1e-5 * np.max(np.abs(S[3:])))


def test_newton_jacobian_matches_central_differences(hexa):
    sol = hexa.solve(np.array([0.01, 0, -0.01, 0, 0.005, 0]))
    eq = hexa.equations
    _, J, _, _ = eq.jacobian(sol.z[None], sol.inputs[None], FK_FREE)
    # the solution carries the Jacobian of its last Newton evaluation, at its own z
    np.testing.assert_allclose(sol.jacobian, J[0], rtol=0, atol=1e-12 * np.max(np.abs(J[0])))
    rng = np.random.default_rng(1)
    for _ in range(3):
        v = rng.normal(size=43) * 1e-5
        zp, zm = sol.z.copy(), sol.z.copy()
        zp[:43] += v
        zm[:43] -= v
        gp, _ = eq.residual(zp[None], sol.inputs[None])
        gm, _ = eq.residual(zm[None], sol.inputs[None])
        np.testing.assert_allclose(J[0] @ v, (gp[0] - gm[0]) / 2, atol=1e-6 * np.max(np.abs(J[0] @ v)))


def test_discretisation_error_is_small():
    rho = np.array([0.02, -0.02, 0.01, 0.0, -0.015, 0.02])
    coarse, fine = Hexapod6PFS(n_steps=32).solve(rho), Hexapod6PFS(n_steps=128).solve(rho)
    assert np.max(np.abs(coarse.position - fine.position)) < 1e-6
    assert np.max(np.abs(coarse.quaternion - fine.quaternion)) < 1e-6


def test_stiffness_by_linearisation_matches_load_perturbation_and_resolve(hexa):
    ref = hexa.reference_solution()
    K_lin = hexa.stiffness(ref)
    K_res = hexa.stiffness(ref, "resolve")
    np.testing.assert_allclose(K_res, K_lin, atol=1e-4 * np.max(np.abs(K_lin)))
    # conservative system at equilibrium without load: symmetric stiffness (moments about p_P)
    np.testing.assert_allclose(K_lin, K_lin.T, atol=1e-5 * np.max(np.abs(K_lin)))


@pytest.fixture(scope="module")
def stage1(hexa):
    return hexa.stage1(max_mode=2)


def test_stage1_finds_centred_level_modes(hexa, stage1):
    assert len(stage1) >= 4
    modes = {s.modes[0] for s in stage1}
    assert {0, 1} <= modes
    for s in stage1:
        assert s.converged
        np.testing.assert_allclose(s.position[:2], 0.0, atol=1e-9)
        np.testing.assert_allclose(np.abs(s.quaternion[3]), 1.0, atol=1e-9)
        joint, force, moment = balance(hexa, s)
        assert np.max(np.abs(force)) < 1e-7 and np.max(np.abs(moment)) < 1e-7
    heights = [s.position[2] for s in stage1]
    assert len(np.unique(np.round(heights, 6))) == len(stage1)  # distinct


def test_stability_criteria(hexa, stage1):
    ref = hexa.reference_solution()
    info = hexa.stability(ref)
    assert info["stable"] and info["stiffness_criterion"] and info["energy_criterion"]
    assert info["hessian_asymmetry"] < 1e-5
    # the energy Hessian predicts the energy of the adjacent configurations: ΔE ≈ ½ ε² λ
    lam, dE = info["energy_hessian_eigenvalues"], info["adjacent_energy_changes"]
    np.testing.assert_allclose(dE[:, 0], 0.5 * 1e-6 * lam, rtol=2e-2)
    # the most energetic symmetric modes are unstable, and some adjacent configuration has less energy
    worst = max(stage1, key=lambda s: s.energy)
    info = hexa.stability(worst)
    assert not info["stable"]
    assert np.min(info["adjacent_energy_changes"]) < 0 or np.any(info["conjugate_points"] > 0)


def test_forward_kinematics_small_search(hexa):
    found = hexa.search_assembly_modes(max_mode=1, max_combinations=4, radial=False, stability=False)
    sols = found.solutions
    assert found.after_radial == len(sols) <= found.after_load_release
    assert found.stage1_symmetric >= 2 and found.stage1_configurations >= found.stage1_symmetric
    assert len(sols) >= 4
    Z = np.array([s.z[:43] for s in sols])
    for a in range(len(Z)):  # distinct
        assert np.all(np.max(np.abs(Z[a + 1:] - Z[a]), axis=1) > 1e-6)
    for s in sols:
        joint, force, moment = balance(hexa, s)
        assert np.max(np.abs(joint)) < 1e-8 and np.max(np.abs(force)) < 1e-7 and np.max(np.abs(moment)) < 1e-7
    ref = hexa.reference_solution()
    assert any(np.max(np.abs(s.z[:43] - ref.z[:43])) < 1e-6 for s in sols)


@pytest.mark.parametrize("bad", [np.zeros(5), [0, 0, 0, 0, 0, np.nan]])
def test_bad_inputs_raise(hexa, bad):
    with pytest.raises(ValueError):
        hexa.solve(bad)
    with pytest.raises(ValueError):
        hexa.solve(np.zeros(6), load=[1.0, 2.0])


def test_failed_reference_raises_convergence_error():
    # joints 0.3 m apart horizontally with 0.25 m rods: no equilibrium near the centred guess
    with pytest.raises(ConvergenceError):
        Hexapod6PFS(platform_radius=0.4).reference_solution()


def test_forward_kinematics_at_nonzero_inputs_never_relabels_starts(hexa):
    """Every solution returned is an equilibrium at the requested inputs."""
    with pytest.raises(ValueError):
        hexa.forward_kinematics([0.01] * 6, input_steps=0, max_mode=1, max_combinations=4, radial=False,
                                stability=False)
    rho = np.full(6, 0.01)
    sols = hexa.forward_kinematics(rho, input_steps=2, max_mode=0, max_combinations=2, radial=False, stability=False)
    assert sols
    for s in sols:
        np.testing.assert_array_equal(s.inputs, rho)
        assert s.converged and s.residual < 1e-8
        joint, force, moment = balance(hexa, s)
        assert np.max(np.abs(joint)) < 1e-8 and np.max(np.abs(force)) < 1e-7 and np.max(np.abs(moment)) < 1e-7


@pytest.mark.parametrize("kwargs", [dict(max_input_step=0.0), dict(max_input_step=np.nan), dict(tol=0.0),
                                    dict(max_iter=0)])
def test_bad_solve_options_raise(hexa, kwargs):
    with pytest.raises(ValueError):
        hexa.solve(np.full(6, 0.005), **kwargs)


@pytest.mark.parametrize("kwargs", [dict(max_mode=-1), dict(max_combinations=0), dict(radial="some")])
def test_bad_search_options_raise(hexa, kwargs):
    with pytest.raises(ValueError):
        hexa.forward_kinematics(**kwargs)
