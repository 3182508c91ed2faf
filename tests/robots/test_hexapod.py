"""The 6-PFS hexapod: forward kinematics, assembly modes, stability, the env and its agent."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soft_envs  # noqa: F401
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.cosserat import Hexapod6PFS, _FK_FREE


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
    _, J, _, _ = hexa._jacobian(sol.z[None], sol.inputs[None], _FK_FREE)
    rng = np.random.default_rng(1)
    for _ in range(3):
        v = rng.normal(size=43) * 1e-5
        zp, zm = sol.z.copy(), sol.z.copy()
        zp[:43] += v
        zm[:43] -= v
        gp, _ = hexa._residual(zp[None], sol.inputs[None])
        gm, _ = hexa._residual(zm[None], sol.inputs[None])
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
    sols = hexa.forward_kinematics(max_mode=1, max_combinations=4, radial=False, stability=False)
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


# ---------------------------------------------------------------------------- environment
def test_env_agent_reaches_goal_pose():
    from soft_envs.agents.hexapod_control import HexapodJacobianAgent

    env = gym.make("soft_envs/HexapodPose-v0")
    agent = HexapodJacobianAgent(env)
    successes = 0
    for seed in range(2):
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        start_error = info["position_error"]
        for _ in range(10):
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            assert info["solver_converged"]
            parts = [v for k, v in info.items() if k.startswith("reward_")]
            assert reward == pytest.approx(sum(parts), abs=1e-12)
        assert info["position_error"] < start_error
        successes += info["is_success"]
    assert successes == 2
    env.close()


def test_env_observation_layout_and_goal_conditioned_reward():
    env = gym.make("soft_envs/HexapodPose-v0", goal_conditioned=True)
    obs, info = env.reset(seed=3)
    obs, reward, *_ , info = env.step(np.full(6, 0.3, dtype=np.float32))
    u = env.unwrapped
    np.testing.assert_allclose(obs["achieved_goal"], u.solution.pose, atol=1e-6)
    expected = u.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
    assert expected == pytest.approx(info["reward_position"] + info["reward_orientation"], abs=1e-5)
    np.testing.assert_allclose(info["inputs"], 0.3 * u.model.input_limit, atol=1e-7)  # float32 action
    env.close()
    flat = gym.make("soft_envs/HexapodPose-v0")
    o, _ = flat.reset(seed=3)
    fu = flat.unwrapped
    np.testing.assert_allclose(o[0:7], fu.solution.pose, atol=1e-6)
    np.testing.assert_allclose(o[7:14], fu.goal, atol=1e-6)
    np.testing.assert_allclose(o[20:38], -fu.solution.forces.reshape(18), atol=1e-6)
    flat.close()


def test_rendered_rods_follow_the_model():
    env = gym.make("soft_envs/HexapodPose-v0", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.array([1, -1, 0.5, 0, -0.5, 1], dtype=np.float32))
    img = env.render()
    assert img.shape == (240, 320, 3) and img.std() > 5
    u = env.unwrapped
    client, ids = u._render_client, u._render_ids
    rods = u.model.rod_states(u.solution, n_steps=ids["n_seg"])
    for i in (0, 4):
        for k in (0, 9):
            pos, _ = client.getBasePositionAndOrientation(ids["segments"][i][k])
            mid = 0.5 * (rods[i].positions[k] + rods[i].positions[k + 1])
            np.testing.assert_allclose(pos, mid, atol=1e-9)
    env.close()
    assert u._render_client is None
