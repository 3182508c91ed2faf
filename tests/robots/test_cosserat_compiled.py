"""The compiled Cosserat kernels against the numpy reference path: same rods, same equations, same equilibria."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soft_envs  # noqa: F401
from soft_envs.bench.hexapod import TEST_INPUTS, solve_inputs
from soft_envs.robots.cosserat import Hexapod6PFS, compiled
from soft_envs.robots.cosserat.equations import FK_FREE
from soft_envs.robots.cosserat.integrator import integrate_rods

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def hexa() -> Hexapod6PFS:
    return Hexapod6PFS()


def test_kernels_are_used_and_disabled_restores_them():
    assert compiled.enabled()
    with pytest.raises(RuntimeError), compiled.disabled():
        assert not compiled.enabled()
        raise RuntimeError("an error inside the block")
    assert compiled.enabled()


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_rod_tips_match_the_numpy_integrator(count, seed):
    rng = np.random.default_rng(seed)
    p0, q0 = rng.normal(size=(count, 3)), rng.normal(size=(count, 4))  # q0 (w, x, y, z), not unit
    u0, n = rng.normal(scale=5.0, size=(count, 3)), rng.normal(scale=2.0, size=(count, 3))
    kw = {"EI": 0.03, "GJ": 0.023, "length": 0.25, "n_steps": 17}
    fast = integrate_rods(p0, q0, u0, n, **kw)
    with compiled.disabled():
        slow = integrate_rods(p0, q0, u0, n, **kw)
    assert fast.shape == slow.shape == (11, count)
    np.testing.assert_allclose(fast, slow, rtol=1e-13, atol=1e-15)


def test_residuals_and_jacobians_match_the_numpy_path(hexa):
    eq = hexa.equations
    rng = np.random.default_rng(4)
    Z = hexa.reference_solution().z + rng.normal(scale=0.2, size=(20, 49))
    rho = rng.uniform(-0.02, 0.02, (20, 6))
    g, tips = eq.residual(Z, rho)
    gj, J, tips_j, extra = eq.jacobian(Z, rho, FK_FREE)
    with compiled.disabled():
        g0, tips0 = eq.residual(Z, rho)
        gj0, J0, _, extra0 = eq.jacobian(Z, rho, FK_FREE)
    np.testing.assert_allclose(g, g0, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tips, tips0, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(gj, g, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tips_j, tips, rtol=1e-13, atol=1e-15)
    # forward differences with the same step: equal up to the round-off of g over the step (1e-7)
    assert np.max(np.abs(J - J0)) < 1e-6 * max(1.0, np.max(np.abs(J0)))
    np.testing.assert_array_equal(extra["rod_of"], extra0["rod_of"])
    np.testing.assert_allclose(extra["tips_perturbed"], extra0["tips_perturbed"], rtol=1e-13, atol=1e-15)


def test_same_equilibria_as_the_numpy_path_on_the_bench_poses(hexa):
    """The issue's check: the platform pose of every solve within 1e-9 m (and 1e-9 in the quaternion)."""
    cold, walk = solve_inputs(hexa, 3, 8, seed=0)

    def solve_all() -> tuple[np.ndarray, list[bool]]:
        poses, ok = [], []
        for rho in np.concatenate((TEST_INPUTS[None], cold)):
            s = hexa.solve(rho)
            poses.append(s.pose)
            ok.append(s.converged)
        prev = hexa.reference_solution()
        for rho in walk:
            prev = hexa.solve(rho, prev)
            poses.append(prev.pose)
            ok.append(prev.converged)
        return np.array(poses), ok

    fast, fast_ok = solve_all()
    with compiled.disabled():
        slow, slow_ok = solve_all()
    assert all(fast_ok) and fast_ok == slow_ok
    assert np.max(np.abs(fast[:, :3] - slow[:, :3])) <= 1e-9  # [m]
    assert np.max(np.abs(fast[:, 3:] - slow[:, 3:])) <= 1e-9  # quaternion (x, y, z, w)


def test_env_episode_is_the_same_on_both_paths():
    actions = np.random.default_rng(2).uniform(-1, 1, (4, 6)).astype(np.float32)

    def episode() -> np.ndarray:
        env = gym.make("soft_envs/HexapodPose-v0")
        obs = [env.reset(seed=5)[0]]
        obs += [env.step(a)[0] for a in actions]
        env.close()
        return np.array(obs)

    fast = episode()
    with compiled.disabled():
        slow = episode()
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-6)  # float32 observations
