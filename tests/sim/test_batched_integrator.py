"""The compiled physics step of the batched core (:mod:`soft_envs.sim.batched_integrator`) against
its readable reference, the numpy :func:`~soft_envs.sim.integrator.generalized_alpha_step` on the
same batched terms (:func:`soft_envs.sim.batched_arm.reference_step`): the same new states to ~1e-12."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.robots import PCCArm, Peter, PlanarPCCArm
from soft_envs.sim.batched_arm import configuration, reference_step, step, terms
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter


def _arm(kind: str, B: int):
    if kind == "peter":
        arm = BatchedSoftPeter(Peter(2), B, payload=0.2, rayleigh_mass=0.5)
        arm.reset_inflation(None, np.full(6, 1.0))
        return arm, 1 / 120
    model = PlanarPCCArm(3, 4) if kind == "planar" else PCCArm(2, 6)
    arm = BatchedPCCBody(model, B)
    c0 = np.array([0.001, 0.5, 0.0, 0.8, -0.002, 0.3]) if kind == "planar" else \
        np.array([0.001, 0.5, 0.3, 0.0, 0.8, -1.0])
    arm.reset_configuration(None, c0)
    return arm, 5e-3


def _relative(x: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(x - reference).max() / max(np.abs(reference).max(), 1e-300))


@pytest.mark.parametrize("kind", ["peter", "pcc", "planar"])
@pytest.mark.parametrize("passes", [0, 1, 2])
def test_compiled_step_matches_the_numpy_reference(kind, passes):
    B = 11  # more than one chunk of the batch loop, arms differing in state and flags
    arm, dt = _arm(kind, B)
    rng = np.random.default_rng(passes)
    state = arm.state.copy()
    state.u = state.u + rng.normal(0.0, 0.05, state.u.shape)
    state.u[0, 1:3] = [2e-5, -1e-5] if kind != "planar" else state.u[0, 1:3]  # near straight: evaluation point
    state.w = rng.normal(0.0, 0.5, state.u.shape)
    state.a = rng.normal(0.0, 5.0, state.u.shape)
    state.c = configuration(arm.topology, state.u, state.c)
    state.fresh = rng.random(B) < 0.5
    tau = rng.normal(0.0, 0.02, state.u.shape)
    kwargs = dict(torque_end=1.1 * tau, rest_end=state.rest + 1e-3, cancel_damping=rng.random(B) < 0.5,
                  active=rng.random(B) < 0.8, corrector_passes=passes)
    got = step(arm.topology, arm.params, state, dt, tau, **kwargs)
    want = reference_step(arm.topology, arm.params, state, dt, tau, **kwargs)
    np.testing.assert_array_equal(got.fresh, want.fresh)
    for name in ("u", "w", "a", "c", "rest", "time"):
        np.testing.assert_array_equal(np.isfinite(getattr(got, name)), True, err_msg=name)
        # φ of the near-straight arm 0 moves by the rounding of u over θ ≈ 2e-5: a looser bound for c̃
        assert _relative(getattr(got, name), getattr(want, name)) < (1e-10 if name == "c" else 1e-12), name
    # with the start terms given (as BatchedSoftArm does after the controller asked for them)
    again = step(arm.topology, arm.params, state, dt, tau, start_terms=terms(arm.topology, arm.params, state),
                 **kwargs)
    np.testing.assert_array_equal(again.u, got.u)


def test_stepping_a_body_reuses_the_terms_the_controller_asked_for():
    arm, dt = _arm("pcc", 3)
    twin, _ = _arm("pcc", 3)
    for _ in range(3):
        arm.mass_matrix()  # caches the terms at the current state; the step starts from them
        arm.step(dt, np.full(6, 1e-3))
        twin.step(dt, np.full(6, 1e-3))
    np.testing.assert_array_equal(arm.state.u, twin.state.u)
    arm.reset(None, np.zeros(6))
    assert arm._terms is None


@pytest.mark.parametrize("passes, cancel", [(0, False), (1, True), (2, False)])
def test_single_body_steps_as_the_numpy_reference(passes, cancel):
    from soft_envs.sim.bullet import connect, disconnect
    from soft_envs.sim.integrator import generalized_alpha_step
    from soft_envs.sim.pcc_body import PCCBody

    client = connect()
    try:
        body = PCCBody(client, PCCArm(2, 6), rayleigh_mass=0.3, backend="pybullet")
        body.corrector_passes = passes
        body.reset(np.array([0.001, 0.5, 0.3, 0.0, 0.8, -1.0]), velocity=np.linspace(-0.5, 0.5, 6))
        tau = np.linspace(0.01, -0.02, 6)

        def terms(u, w):
            return (*body.state_terms(u, w), body.gravity_torque(u))

        for first in (True, False):
            want = generalized_alpha_step(
                body.u, body.w, body.a, 5e-3, body.stiffness, terms,
                start_terms=(body.mass_matrix(), body.bias(), body.gravity_torque()), torque_start=tau,
                torque_end=1.2 * tau, rest_start=body.rest, rest_end=body.rest + 1e-3, rayleigh_mass=body.alpha,
                rayleigh_stiffness=body.beta,
                cancel_damping=cancel, parameters=body.alpha_parameters, corrector_passes=passes,
                consistent_start=first and passes > 0)
            body.step(5e-3, tau, torque_end=1.2 * tau, rest_end=body.rest + 1e-3, cancel_damping=cancel)
            for got, ref in ((body.u, want.u), (body.w, want.w), (body.a, want.a)):
                assert _relative(got, ref) < 1e-12
    finally:
        disconnect(client)
