"""The elastic soft-arm core (:mod:`soft_envs.sim.soft_arm`) against independent physics: the
Euler–Bernoulli cantilever, energy conservation of the integrator, finite-difference maps."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots import PCCArm, PlanarPCCArm
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody
from soft_envs.sim.sections import SectionMap

HORIZONTAL = (0.0, np.sin(np.pi / 4), 0.0, np.cos(np.pi / 4))  # the arm's z along the world's x


@pytest.fixture
def client():
    c = connect()
    yield c
    disconnect(c)


def cantilever_sag(client, n_sections: int, links: int) -> tuple[float, float, float]:
    """Tip sag [m] of a horizontal beam (the four-segment arm's length, mass and E I) as ``n_sections``
    PCC sections, its Euler–Bernoulli sag ``w L⁴ / 8 E I`` and its single-section PCC sag ``w L⁴ / 12 E I``."""
    length, mass = 0.26, 4 * 0.0173
    # The equivalent section shrinks with the section mass (A = m / ρ L0): E n² keeps E I fixed.
    arm = PlanarPCCArm(n_sections, links, length / n_sections, segment_mass=mass / n_sections,
                       stiffness_source="material", youngs_modulus=80e6 * n_sections**2)
    body = PCCBody(client, arm, rayleigh_stiffness=2e-3, base_orientation=HORIZONTAL)
    body.reset(np.zeros(arm.n_dof))
    for _ in range(1500):
        body.step(2e-3, np.zeros(arm.n_dof))
    assert np.abs(body.w).max() < 1e-3  # settled
    _, second_moment = arm.cross_section()
    w_load = mass * 9.81 / length
    ei = arm.youngs_modulus * second_moment
    return float(body.tip_state()[0][0]), w_load * length**4 / (8 * ei), w_load * length**4 / (12 * ei)


def test_horizontal_cantilever_sags_as_euler_bernoulli(client):
    # One constant-curvature section cannot bend as a beam does (its curvature is uniform): the
    # energy method gives w L⁴ / 12 E I, 2/3 of Euler–Bernoulli. Sections of the same beam
    # converge to w L⁴ / 8 E I.
    sag, euler_bernoulli, single_pcc = cantilever_sag(client, 1, 6)
    assert sag == pytest.approx(single_pcc, rel=0.03)
    ratios = [cantilever_sag(client, n, 6)[0] / euler_bernoulli for n in (2, 4)]
    assert abs(ratios[0] - 1) < 0.10 and abs(ratios[1] - 1) < 0.03
    assert ratios[1] > ratios[0] > sag / euler_bernoulli  # converging from below


def test_undamped_oscillation_keeps_its_amplitude(client):
    # The four-segment planar arm without damping or gravity, released from its first mode:
    # the trapezoidal rule keeps the energy (the semi-implicit Euler it replaced lost 96 % of it).
    arm = PlanarPCCArm(4, 6)
    body = PCCBody(client, arm, gravity=0.0, rayleigh_stiffness=0.0)
    body.reset(np.zeros(arm.n_dof))
    eigenvalues, modes = scipy.linalg.eigh(np.diag(body.stiffness), body.mass_matrix())
    omega, mode = np.sqrt(eigenvalues[0]), modes[:, 0]
    body.set_state(0.05 * mode / np.abs(mode).max())
    dt = 5e-3  # the env's default step
    period_steps = int(round(2 * np.pi / omega / dt))
    projection = mode @ body.mass_matrix()
    amplitude, energy0 = [], body.energy()
    for _ in range(10):
        peak = 0.0
        for _ in range(period_steps):
            body.step(dt, np.zeros(arm.n_dof))
            peak = max(peak, abs(projection @ body.u))
        amplitude.append(peak)
    assert amplitude[-1] > 0.9 * amplitude[0]
    assert body.energy() == pytest.approx(energy0, rel=0.1)


def test_chord_section_map_derivatives_match_finite_differences():
    sections = SectionMap(4, np.array([0.043, 0.05]), chord=True)
    rng = np.random.default_rng(3)
    u = np.array([0.01, 0.3, -0.2, 0.004, -0.05, 0.6])
    w = rng.normal(size=6)
    c = sections.configuration(u)
    J, acc = sections.jacobian(u, c, w)
    h = 1e-6
    fd = np.stack([(sections.configuration(u + h * e, c) - sections.configuration(u - h * e, c)) / (2 * h)
                   for e in np.eye(6)], axis=1)
    np.testing.assert_allclose(J, fd, atol=1e-7)
    second = (sections.configuration(u + 1e-4 * w, c) - 2 * c + sections.configuration(u - 1e-4 * w, c)) / 1e-8
    np.testing.assert_allclose(acc, second, atol=1e-5)
    # the chord polygon's extension: m chords of the arc of length ℓ, sinc(θ/2m) ℓ in all
    ell, theta = 0.043 + 0.01, np.hypot(0.3, 0.2)
    assert c[0] == pytest.approx(ell * np.sin(theta / 8) / (theta / 8) - 0.043, rel=1e-12)


@pytest.mark.parametrize("arm", [PCCArm(2, 6), PlanarPCCArm(3, 4)], ids=["3d", "planar"])
def test_gravity_is_the_gradient_of_the_potential_in_any_mounting(client, arm):
    body = PCCBody(client, arm, base_orientation=HORIZONTAL)
    rng = np.random.default_rng(1)
    c = arm.sample(rng) * 0.5
    body.reset(c)
    masses = body.chain.masses

    def potential(u):  # the world's height is −(base-frame x) in this mounting
        return -9.81 * np.dot(masses, arm.link_frames(arm.from_smooth(u, reference=c))[2][:, 0])

    u0 = arm.to_smooth(c)
    h = 1e-6
    fd = np.array([(potential(u0 + h * e) - potential(u0 - h * e)) / (2 * h) for e in np.eye(arm.n_dof)])
    np.testing.assert_allclose(body.gravity_torque(), fd, rtol=1e-5, atol=1e-9)


def test_mass_matrix_is_the_kinetic_energy_of_the_links(client):
    # ½ u̇ᵀ M u̇ = Σ ½ m v² + ½ ωᵀ I ω of PyBullet's links, for a random rate.
    arm = PCCArm(2, 4)
    body = PCCBody(client, arm)
    rng = np.random.default_rng(2)
    body.reset(arm.sample(rng) * 0.5, velocity=rng.normal(size=6))
    M = body.mass_matrix()
    assert np.all(np.linalg.eigvalsh(M) > 0) and np.allclose(M, M.T, atol=1e-12)
    body.sync_bullet()
    states = body.client.getLinkStates(body.body, body.joints, computeLinkVelocity=1, computeForwardKinematics=1)
    kinetic = 0.0
    for link, state in zip(body.chain.links, states):
        R = quaternion_to_matrix(np.asarray(state[1]))
        omega = R.T @ np.asarray(state[7])
        kinetic += (0.5 * link.body.mass * np.dot(state[6], state[6])
                    + 0.5 * omega @ (np.asarray(link.body.inertia) * omega))
    assert 0.5 * body.w @ M @ body.w == pytest.approx(kinetic, rel=1e-6)
