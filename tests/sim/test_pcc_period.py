"""The PCC law's lean gravity pass (``setpoint_gravity``) against the core's terms, and the per-arm
validity codes: the pieces of the compiled PCC period
(its whole against the numpy loop: ``tests/envs/test_vector_step.py``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots import PCCArm, Peter
from soft_envs.robots.planar_pcc_arm import PlanarPCCArm
from soft_envs.sim.batched_bodies import MAX_PCC_RATE, BatchedPCCBody, BatchedSoftPeter
from soft_envs.sim.batched_kernels import pcc_code, pcc_validity
from soft_envs.sim.pcc_period import gravity_workspace, setpoint_gravity

HANGING = np.array([1.0, 0.0, 0.0, 0.0])  # (x, y, z, w): 180° about x


def _lean_gravity(body, u: np.ndarray) -> np.ndarray:
    """``setpoint_gravity`` of every arm of ``body`` at ``u`` ``(B, n)`` (the arms' ``c̃`` the reference)."""
    ints, table, trig, sec, lref = topology = body.topology.arrays
    ws = gravity_workspace(ints, trig, lref)
    out = np.zeros_like(u)
    for b in range(u.shape[0]):
        setpoint_gravity(topology, np.ascontiguousarray(body.params.mass[b]),
                         np.ascontiguousarray(body.params.gravity[b]), np.ascontiguousarray(u[b]),
                         np.ascontiguousarray(body.state.c[b]), out[b], ws)
    return out


def _assert_equal_to_terms(body, u: np.ndarray) -> None:
    reference = body.gravity_torque(u)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(_lean_gravity(body, u), reference, rtol=0, atol=1e-12 * scale)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hanging=st.booleans(), planar=st.booleans())
def test_the_lean_pass_is_the_cores_gravity_on_random_set_points(seed, hanging, planar):
    rng = np.random.default_rng(seed)
    model = (PlanarPCCArm if planar else PCCArm)(2, 6, 0.065)
    body = BatchedPCCBody(model, 4, payload=0.05, base_orientation=HANGING if hanging else (0.0, 0.0, 0.0, 1.0))
    body.reset_configuration(np.arange(4), model.sample(rng, 4))
    _assert_equal_to_terms(body, model.to_smooth(model.sample(rng, 4)))


def test_straight_and_nearly_straight_sections_are_evaluated_where_the_terms_are():
    # at θ = 0 the evaluation point lies along the arm's current φ (c̃), below MIN_BEND along the bend's own
    model = PCCArm(2, 6, 0.065)
    body = BatchedPCCBody(model, 3)
    body.reset_configuration(np.arange(3), np.array([[0.0, 0.3, 1.1, 0.01, 0.2, -2.0]] * 3))
    u = np.zeros((3, 6))
    u[1, 1:3] = (3e-5, -4e-5)  # 5e-5 rad, below MIN_BEND
    u[2, 0], u[2, 4:6] = 0.004, (0.5, 0.0)
    _assert_equal_to_terms(body, u)


def test_the_lean_pass_handles_chord_sections():
    # PETER's sections map their legs' chord (the sinc factor in c̃'s extension): the same pass, another chain
    model = Peter()
    body = BatchedSoftPeter(model, 2)
    rng = np.random.default_rng(3)
    u = body.state.u + rng.normal(0.0, 0.05, body.state.u.shape) * np.tile([0.01, 1.0, 1.0], model.n_modules)
    _assert_equal_to_terms(body, u)


def test_the_validity_codes_and_their_order():
    # 0 valid; 1 not finite; 2 a segment bent past π, 3 stretched past half its length (the first segment
    # decides, its bend before its stretch); 4 a rate above the bound
    half = np.array([0.03, 0.03])
    valid = np.array([0.01, 0.5, -0.5, -0.02, 1.0, 1.0])
    cases = {0: (valid, 0.0), 1: (np.where(np.arange(6) == 4, np.nan, valid), 0.0),
             2: (valid + [0.0, 0.0, 0.0, -0.02, 3.0, 0.0], 0.0), 3: (valid + [0.03, 0.0, 0.0, 0.0, 3.0, 0.0], 0.0),
             4: (valid, 2 * MAX_PCC_RATE)}
    u = np.stack([c[0] for c in cases.values()])
    w = np.zeros_like(u)
    w[4, 5] = cases[4][1]
    expected = list(cases)
    assert [pcc_code(u[b], w[b], 3, half, MAX_PCC_RATE) for b in range(5)] == expected
    assert pcc_validity(u, w, 3, half, MAX_PCC_RATE).tolist() == expected
