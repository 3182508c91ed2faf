"""The compiled Levenberg–Marquardt chain IK (``chain_ik``, ``chain_ik_batch``) and its kernels.

The kernels' forward kinematics and geometric Jacobian are checked against the BulletChain model
(itself checked against PyBullet in tests/robots/test_bullet_chain.py) and against finite
differences; the solvers' properties (limits, reachable and unreachable targets, bad input, the
budget) with hypothesis. The contract every solver keeps is in test_solver_contract.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urdf_chains import load

from soft_envs.agents.ik import chain_ik, chain_ik_batch, chain_lm
from soft_envs.agents.ik.chain_kernels import pose_error, pose_jacobian
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import matrix_to_quaternion, quaternion_error, quaternion_to_matrix
from soft_envs.robots import BulletChain, Peter


@pytest.fixture(scope="module")
def peter(tmp_path_factory) -> BulletChain:
    """PETER's body as a URDF chain: revolute and prismatic joints, fixed joints between."""
    path = tmp_path_factory.mktemp("peter") / "peter.urdf"
    path.write_text(Peter(2).urdf())
    return BulletChain(path, "m1_plate")


def kernel_pose(chain: BulletChain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position, rotation and Jacobian of the compiled kernel."""
    frames, kinds = chain.joint_frames()
    p, R, J = np.empty(3), np.empty((3, 3)), np.empty((6, chain.n_dof))
    pose_jacobian(frames, kinds, np.ascontiguousarray(q, dtype=float), p, R, J)
    return p, R, J


def rotation(vector: np.ndarray) -> np.ndarray:
    """Rodrigues: the rotation by ``|vector|`` [rad] about ``vector``."""
    angle = float(np.linalg.norm(vector))
    if angle == 0.0:
        return np.eye(3)
    k = vector / angle
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


# ------------------------------------------------------------------------------ kernels
@pytest.mark.parametrize("name", ["iiwa", "panda", "peter"])
def test_kernel_pose_and_jacobian_equal_the_model(name, peter):
    chain = peter if name == "peter" else load(name)
    q = chain.sample(np.random.default_rng(1), 20)
    for configuration in q:
        p, R, J = kernel_pose(chain, configuration)
        T = chain.forward_matrix(configuration)
        np.testing.assert_allclose(p, T[:3, 3], rtol=0, atol=1e-14)
        np.testing.assert_allclose(R, T[:3, :3], rtol=0, atol=1e-14)
        np.testing.assert_allclose(J, chain.pose_jacobian(configuration), rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", ["iiwa", "panda", "peter"])
def test_kernel_jacobian_equals_finite_differences(name, peter):
    """Linear rows: dp/dq; angular rows: vex(dR/dq Rᵀ) (central differences, h = 1e-6)."""
    chain = peter if name == "peter" else load(name)
    h = 1e-6
    for configuration in chain.sample(np.random.default_rng(2), 5):
        _, R, J = kernel_pose(chain, configuration)
        for j in range(chain.n_dof):
            step = np.zeros(chain.n_dof)
            step[j] = h
            p_plus, R_plus, _ = kernel_pose(chain, configuration + step)
            p_minus, R_minus, _ = kernel_pose(chain, configuration - step)
            np.testing.assert_allclose(J[:3, j], (p_plus - p_minus) / (2 * h), atol=1e-8)
            W = (R_plus - R_minus) / (2 * h) @ R.T
            np.testing.assert_allclose(J[3:, j], [W[2, 1], W[0, 2], W[1, 0]], atol=1e-8)


@pytest.mark.parametrize("angle", [0.0, 1e-9, 0.3, 2.0, math.pi - 1e-9, math.pi])
def test_pose_error_is_the_rotation_vector(angle):
    """``e_o`` rotates ``R`` onto ``R_d`` (to 1e-12) and its length is the geometry module's angle,
    near zero and near a half turn too."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        R = quaternion_to_matrix(matrix_to_quaternion(rotation(rng.normal(size=3))))
        axis = rng.normal(size=3)
        R_d = rotation(angle * axis / np.linalg.norm(axis)) @ R
        target = np.zeros((3, 4))
        target[:, :3], target[:, 3] = R_d, (0.1, 0.2, 0.3)
        e = np.empty(6)
        perr, oerr = pose_error(target, np.zeros(3), np.ascontiguousarray(R), 6, e)
        assert perr == pytest.approx(math.sqrt(0.14), abs=1e-15)
        np.testing.assert_allclose(e[:3], (0.1, 0.2, 0.3), atol=1e-15)
        assert oerr == pytest.approx(angle, abs=1e-9)
        assert np.linalg.norm(e[3:]) == pytest.approx(oerr, abs=1e-12)
        assert oerr == pytest.approx(quaternion_error(R_d, R)[1], abs=1e-9)
        np.testing.assert_allclose(rotation(e[3:]) @ R, R_d, atol=1e-9 if angle > 3 else 1e-12)


# ------------------------------------------------------------------------------ solvers
@settings(max_examples=30)
@given(name=st.sampled_from(["iiwa", "panda"]), seed=st.integers(0, 2**32 - 1),
       start=st.sampled_from(["middle", "random", "outside"]))
def test_reachable_poses_are_solved_within_the_limits(name, seed, start):
    chain = load(name)
    rng = np.random.default_rng(seed)
    position, quaternion = chain.forward_pose(chain.sample(rng))
    q0 = {"middle": None, "random": chain.sample(rng),
          "outside": chain.upper + rng.uniform(0.0, 1.0, chain.n_dof)}[start]  # clipped into the limits
    res = chain_ik(chain, position, quaternion, q0=q0, timeout=math.inf, seed=seed)
    assert res.success, res.message
    assert res.error < 1e-6 and res.orientation_error < 1e-6
    assert np.all(res.solution >= chain.lower) and np.all(res.solution <= chain.upper)
    p, quat = chain.forward_pose(res.solution)
    assert np.linalg.norm(p - position) == pytest.approx(res.error, abs=1e-12)
    angle = quaternion_error(quaternion_to_matrix(quaternion), quaternion_to_matrix(quat))[1]
    assert angle == pytest.approx(res.orientation_error, abs=1e-9)


@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1), tol=st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_position_only_and_a_rotation_matrix(seed, tol):
    chain = load("panda")
    rng = np.random.default_rng(seed)
    T = chain.forward_matrix(chain.sample(rng))
    res = chain_ik(chain, T[:3, 3], tol=tol, timeout=math.inf, seed=seed)
    assert res.success and res.error < tol and res.orientation_error is None
    res = chain_ik(chain, T[:3, 3], T[:3, :3], tol=tol, orientation_tol=tol, timeout=math.inf, seed=seed)
    assert res.success and res.error < tol and res.orientation_error < tol


@settings(max_examples=15)
@given(direction=st.lists(st.floats(-1, 1), min_size=3, max_size=3).filter(lambda v: np.linalg.norm(v) > 0.1),
       distance=st.floats(1.6, 5.0), batch=st.booleans())
def test_unreachable_targets_are_a_best_effort(direction, distance, batch):
    chain = load("iiwa")
    position = distance * np.asarray(direction) / np.linalg.norm(direction)
    quaternion = chain.forward_pose(np.zeros(chain.n_dof))[1]
    if batch:
        res = chain_ik_batch(chain, np.tile(position, (2, 1)), np.tile(quaternion, (2, 1)), restarts=3,
                             timeout=math.inf)
        assert not res.success.any() and np.all(res.errors > 0.2) and not res.timed_out.any()
        solutions = res.solutions
    else:
        res = chain_ik(chain, position, quaternion, restarts=3, timeout=math.inf)
        assert not res.success and res.error > 0.2 and not res.timed_out and res.restarts == 3
        solutions = res.solution[None]
    assert np.all(solutions >= chain.lower) and np.all(solutions <= chain.upper)
    weight = 2.0 * math.pi / chain.reach  # the solver's default position weight [1/m]

    def cost(q: np.ndarray) -> float:
        p, quat = chain.forward_pose(q)
        angle = quaternion_error(quaternion_to_matrix(quaternion), quaternion_to_matrix(quat))[1]
        return float(weight**2 * np.sum((p - position) ** 2) + angle**2)

    for q in solutions:  # no worse than the start (the middle of the limits)
        assert cost(q) <= cost(0.5 * (chain.lower + chain.upper))


@pytest.mark.budget
def test_the_budget_ends_an_unreachable_search():
    """Unlimited restarts: the 10 ms budget (a 20 ms one for the batch) ends the search."""
    chain = load("panda")
    quaternion = chain.forward_pose(np.zeros(chain.n_dof))[1]
    res = chain_ik(chain, np.array([0.0, 0.0, 3.0]), quaternion, restarts=10**9, max_iterations=10**12)
    assert not res.success and res.timed_out and "time budget of 0.01 s spent" in res.message
    assert res.restarts > 0
    batch = chain_ik_batch(chain, np.array([[0.0, 0.0, 3.0], [3.0, 0.0, 0.0]]), np.tile(quaternion, (2, 1)),
                           restarts=10**9, timeout=0.02, threads=2)
    assert not batch.success.any() and batch.timed_out.all()


def test_bad_input_raises_value_errors():
    chain = load("iiwa")
    position, quaternion = chain.forward_pose(np.zeros(chain.n_dof))
    bad_calls = [
        dict(position=np.array([np.nan, 0.0, 0.0])), dict(position=np.zeros(2)),
        dict(position=1000.0 * position),  # millimetres
        dict(orientation=np.array([0.0, 0.0, 0.0, 2.0])), dict(orientation=np.array([np.nan, 0, 0, 1.0])),
        dict(orientation=np.zeros(3)), dict(orientation=2.0 * np.eye(3)),
        dict(q0=np.zeros(3)), dict(q0=np.full(7, np.nan)),
        dict(tol=0.0), dict(tol=math.inf), dict(orientation_tol=-1.0), dict(max_step=0.0),
        dict(position_weight=math.nan), dict(stall_iterations=0), dict(restarts=2.5), dict(max_iterations=True),
        dict(seed=-1), dict(timeout=0.0), dict(timeout="1"),
    ]
    for bad in bad_calls:
        call = dict(position=position, orientation=quaternion) | bad
        with pytest.raises(ValueError):
            chain_ik(chain, **call)
    with pytest.raises(ValueError):
        chain_ik_batch(chain, np.tile(position, (3, 1)), np.tile(quaternion, (2, 1)))
    with pytest.raises(ValueError):
        chain_ik_batch(chain, np.tile(position, (3, 1)), threads=0)
    with pytest.raises(ValueError):
        chain_ik_batch(chain, np.tile(position, (3, 1)), q0=np.zeros((2, 7)))
    with pytest.raises(InvalidParameterError, match="BulletChain"):
        chain_ik(Peter(2), np.array([0.0, 0.0, 0.1]))


def test_prismatic_chain(peter):
    """A chain with prismatic joints (PETER's body): reachable poses are solved."""
    rng = np.random.default_rng(7)
    for _ in range(10):
        position, quaternion = peter.forward_pose(peter.sample(rng))
        res = chain_ik(peter, position, quaternion, timeout=math.inf)
        assert res.success, res.message
        assert np.all(res.solution >= peter.lower) and np.all(res.solution <= peter.upper)


# ------------------------------------------------------------------------------ batches
def test_batch_is_deterministic_and_matches_one_at_a_time(monkeypatch):
    """The same answers on 1 or 3 threads, in chunks of 1 or 256 iterations (the budget's
    checks resume exactly), and target 0 as chain_ik with the same seed."""
    chain = load("panda")
    positions, quats = chain.forward_pose(chain.sample(np.random.default_rng(8), 120))
    one = chain_ik_batch(chain, positions, quats, threads=1, timeout=math.inf, seed=5)
    assert one.success.all()
    three = chain_ik_batch(chain, positions, quats, threads=3, timeout=math.inf, seed=5)
    np.testing.assert_array_equal(one.solutions, three.solutions)
    monkeypatch.setattr(chain_lm, "CHUNK", 1)
    chunked = chain_ik_batch(chain, positions, quats, threads=2, timeout=math.inf, seed=5)
    np.testing.assert_array_equal(one.solutions, chunked.solutions)
    np.testing.assert_array_equal(one.iterations, chunked.iterations)
    single = chain_ik(chain, positions[0], quats[0], timeout=math.inf, seed=5)
    np.testing.assert_array_equal(single.solution, one.solutions[0])
    assert single.iterations == one.iterations[0] and single.restarts == one.restarts[0]


def test_batch_position_only_and_warm_starts():
    chain = load("iiwa")
    q = chain.sample(np.random.default_rng(9), 50)
    positions, quats = chain.forward_pose(q)
    res = chain_ik_batch(chain, positions, timeout=math.inf)
    assert res.success.all() and res.orientation_errors is None and np.all(res.errors < 1e-6)
    warm = chain_ik_batch(chain, positions, quats, q0=q)
    assert warm.success.all() and np.all(warm.iterations == 0) and np.all(warm.restarts == 0)
    np.testing.assert_allclose(warm.solutions, q, atol=0)
