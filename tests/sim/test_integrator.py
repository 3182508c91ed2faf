"""The generalised-α step (:mod:`soft_envs.sim.integrator`) on a small synthetic system: batched
calls equal single ones, no corrector pass is the Chung–Hulbert scheme with the terms at the step's
start, and the corrected step is second order (with a velocity-product force too) where the
start-of-step one is first order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.exceptions import InvalidParameterError
from soft_envs.sim.integrator import AlphaParameters, generalized_alpha_step

N = 3


def mass_and_gravity(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A configuration-dependent mass matrix (SPD) and gravity-like torque, batched over leading axes."""
    c = np.cos(u)
    M = np.eye(N) * (1.0 + 0.5 * c[..., None, :] ** 2) + 0.2 * np.sin(u[..., :, None] - u[..., None, :])
    M = 0.5 * (M + np.swapaxes(M, -1, -2)) + 0.3 * np.eye(N)
    return M, 2.0 * np.sin(u) + 0.5 * np.sin(u[..., ::-1])


def with_velocity_product(gain: float):
    """``terms(u, w)``: :func:`mass_and_gravity` with a velocity-product force ``gain · w ⊙ w[::-1]`` in ``h``."""
    def terms(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        M, G = mass_and_gravity(u)
        return M, G + gain * w * w[..., ::-1], G
    return terms


terms = with_velocity_product(0.0)


def run(dt: float, duration: float, passes: int, coriolis_gain: float = 0.0, u0=(0.8, -0.5, 0.3),
        k=(4.0, 6.0, 9.0)) -> np.ndarray:
    u, w, a = np.array(u0), np.zeros(N), np.zeros(N)
    k = np.array(k)
    rest = np.zeros(N)
    path = []
    for i in range(int(round(duration / dt))):
        t = i * dt
        tau_s, tau_e = np.sin(3 * t) * np.ones(N), np.sin(3 * (t + dt)) * np.ones(N)
        bias = with_velocity_product(coriolis_gain)
        out = generalized_alpha_step(u, w, a, dt, k, bias, start_terms=bias(u, w), consistent_start=i == 0,
                                     torque_start=tau_s, torque_end=tau_e, rest_start=rest,
                                     rayleigh_stiffness=0.01, corrector_passes=passes)
        u, w, a = out.u, out.w, out.a
        if (i + 1) % int(round(0.1 / dt)) == 0:
            path.append(u)
    return np.array(path)


@pytest.mark.parametrize("passes, coriolis_gain, order", [(0, 0.0, 1), (1, 0.0, 2), (2, 0.0, 2), (0, 0.3, 1),
                                                          (1, 0.3, 2), (2, 0.3, 2)])
def test_corrected_step_is_second_order(passes, coriolis_gain, order):
    # M and h = C u̇ + G corrected at the step's end: second order; at the step's start: first order.
    paths = [run(0.02 / 2**j, 2.0, passes, coriolis_gain) for j in range(4)]
    changes = [np.abs(paths[j] - paths[j + 1]).max() for j in range(3)]
    ratios = np.array(changes[:-1]) / np.array(changes[1:])
    assert np.all(np.abs(np.log2(ratios) - order) < 0.3), ratios


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 2), st.booleans(), st.floats(0.0, 0.05))
def test_a_batch_equals_its_members_one_by_one(passes, cancel, rayleigh_mass):
    rng = np.random.default_rng(passes)
    B = 4
    u, w, a = rng.normal(size=(3, B, N)) * 0.5
    k = rng.uniform(1.0, 10.0, size=(B, N))
    tau_s, tau_e, rest_s, rest_e = rng.normal(size=(4, B, N))
    ray_k = rng.uniform(0.0, 0.02, size=B)
    terms = with_velocity_product(0.3)
    kwargs = dict(torque_start=tau_s, torque_end=tau_e, rest_start=rest_s, rest_end=rest_e,
                  rayleigh_stiffness=ray_k, rayleigh_mass=rayleigh_mass, cancel_damping=cancel,
                  corrector_passes=passes)
    batch = generalized_alpha_step(u, w, a, 5e-3, k, terms, start_terms=terms(u, w), **kwargs)
    for i in range(B):
        one = generalized_alpha_step(u[i], w[i], a[i], 5e-3, k[i], terms, start_terms=terms(u[i], w[i]),
                                     **{key: (v[i] if isinstance(v, np.ndarray) else v) for key, v in kwargs.items()})
        for x, y in zip(batch[:3], one[:3], strict=True):
            np.testing.assert_allclose(x[i], y, rtol=0, atol=1e-12)


def test_no_corrector_pass_is_chung_hulbert_with_start_terms():
    rng = np.random.default_rng(0)
    u, w, a, tau_s, tau_e, rest_s, rest_e = rng.normal(size=(7, N))
    k, dt, beta_r = np.array([3.0, 5.0, 7.0]), 4e-3, 0.02
    am, af, gamma, beta = AlphaParameters.from_spectral_radius(0.9)
    terms = with_velocity_product(0.3)
    M, h, G = terms(u, w)
    out = generalized_alpha_step(u, w, a, dt, k, terms, start_terms=(M, h, G), torque_start=tau_s,
                                 torque_end=tau_e, rest_start=rest_s, rest_end=rest_e, rayleigh_stiffness=beta_r,
                                 corrector_passes=0)
    u_hat, w_hat = u + dt * w + (0.5 - beta) * dt**2 * a, w + (1 - gamma) * dt * a
    D = beta_r * np.diag(k)
    A = (1 - am) * M + (1 - af) * (gamma * dt * D + beta * dt**2 * np.diag(k))
    rhs = (af * tau_s + (1 - af) * tau_e - h - am * M @ a
           - k * (af * u + (1 - af) * u_hat - (af * rest_s + (1 - af) * rest_e)) - D @ (af * w + (1 - af) * w_hat))
    a_next = np.linalg.solve(A, rhs)
    np.testing.assert_allclose(out.a, a_next, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.u, u_hat + beta * dt**2 * a_next, rtol=1e-12, atol=1e-14)


def test_bad_parameters_raise():
    with pytest.raises(InvalidParameterError):
        AlphaParameters.from_spectral_radius(1.5)
    u = np.zeros(N)
    with pytest.raises(InvalidParameterError):
        generalized_alpha_step(u, u, u, 1e-3, np.ones(N), terms, start_terms=terms(u, u),
                               torque_start=u, rest_start=u, corrector_passes=-1)
