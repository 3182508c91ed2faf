"""BulletChain (any URDF chain as a kinematic model) and the Jacobian IK (pinv / DLS / transpose)."""

from __future__ import annotations

import math

import numpy as np
import pybullet
import pybullet_data
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybullet_utils.bullet_client import BulletClient

from soft_envs.agents.ik import ik_step, jacobian_ik, trr
from soft_envs.geometry import quaternion_error
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import BulletChain, Peter
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.geometry import matrix_to_quaternion

DATA = pybullet_data.getDataPath()
IIWA = (f"{DATA}/kuka_iiwa/model.urdf", "lbr_iiwa_link_7")
PANDA = (f"{DATA}/franka_panda/panda.urdf", "panda_hand")


@pytest.fixture(scope="module")
def iiwa() -> BulletChain:
    return BulletChain(*IIWA)


@pytest.fixture(scope="module")
def panda() -> BulletChain:
    return BulletChain(*PANDA)


@pytest.fixture(scope="module", params=["iiwa", "panda"])
def chain(request, iiwa, panda) -> BulletChain:
    return {"iiwa": iiwa, "panda": panda}[request.param]


def _connected_clients() -> int:
    return sum(pybullet.isConnected(physicsClientId=i) for i in range(64))


def _rotation_vector(R: np.ndarray) -> np.ndarray:
    """Rotation vector θn of a rotation matrix (small angles)."""
    eps, angle = quaternion_error(R, np.eye(3))
    norm = np.linalg.norm(eps)
    return np.zeros(3) if norm == 0 else eps / norm * angle


# ------------------------------------------------------------------------------ the model
def test_chain_reads_the_urdf(iiwa, panda):
    assert iiwa.n_dof == 7 and panda.n_dof == 7
    assert iiwa.joint_names == tuple(f"lbr_iiwa_joint_{i}" for i in range(1, 8))
    assert iiwa.joint_indices == tuple(range(7)) and panda.joint_indices == tuple(range(7))
    np.testing.assert_allclose(iiwa.upper, [2.96705972839, 2.09439510239] * 3 + [3.05432619099])
    np.testing.assert_allclose(panda.lower[[3, 5]], [-3.1416, -0.0873])
    assert [j.type for j in panda.joints][-2:] == ["fixed", "fixed"]  # joint8 and the hand joint


def test_loading_leaks_no_physics_client():
    before = _connected_clients()
    for _ in range(3):
        BulletChain(*IIWA)
    assert _connected_clients() == before


def test_forward_kinematics_equal_pybullet(chain):
    """Our end-link frame composed with PyBullet's inertial frame equals getLinkState's exact COM
    pose (≤ 1e-12); the link frame output [4:6] loses ~1e-7 m through the inertial inverse."""
    client = BulletClient(connection_mode=pybullet.DIRECT)
    try:
        body = client.loadURDF(chain.urdf_path, useFixedBase=True)
        end = next(j for j in range(client.getNumJoints(body))
                   if client.getJointInfo(body, j)[12].decode() == chain.end_link)
        inertial_pos, inertial_orn = client.getDynamicsInfo(body, end)[3:5]
        R_inertial = quaternion_to_matrix(np.array(inertial_orn))
        movable = [j for j in range(client.getNumJoints(body))
                   if client.getJointInfo(body, j)[2] != pybullet.JOINT_FIXED]
        rng = np.random.default_rng(3)
        for q in chain.sample(rng, 15):
            for j, v in zip(chain.joint_indices, q):
                client.resetJointState(body, j, v)
            state = client.getLinkState(body, end, computeForwardKinematics=True)
            T = chain.forward_matrix(q)
            com = T[:3, :3] @ np.array(inertial_pos) + T[:3, 3]
            np.testing.assert_allclose(com, state[0], atol=1e-12)
            np.testing.assert_allclose(T[:3, :3] @ R_inertial, quaternion_to_matrix(np.array(state[1])), atol=1e-12)
            np.testing.assert_allclose(chain.forward(q), state[4], atol=1e-6)
            all_q = [client.getJointState(body, j)[0] for j in movable]
            lin, ang = client.calculateJacobian(body, end, [0.0, 0.0, 0.0], all_q, [0.0] * len(all_q),
                                                [0.0] * len(all_q))
            cols = [movable.index(j) for j in chain.joint_indices]
            J_bullet = np.vstack((np.array(lin), np.array(ang)))[:, cols]
            np.testing.assert_allclose(chain.pose_jacobian(q), J_bullet, atol=1e-12)
    finally:
        client.disconnect()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), which=st.sampled_from(["iiwa", "panda"]))
def test_jacobian_equals_finite_differences(seed, which, iiwa, panda):
    chain = {"iiwa": iiwa, "panda": panda}[which]
    q = chain.sample(np.random.default_rng(seed))
    h = 1e-6
    J = chain.pose_jacobian(q)
    R0 = chain.forward_matrix(q)[:3, :3]
    for k in range(chain.n_dof):
        dq = np.zeros(chain.n_dof)
        dq[k] = h
        Tp, Tm = chain.forward_matrix(q + dq), chain.forward_matrix(q - dq)
        np.testing.assert_allclose(J[:3, k], (Tp[:3, 3] - Tm[:3, 3]) / (2 * h), atol=1e-8)
        omega = (_rotation_vector(Tp[:3, :3] @ R0.T) - _rotation_vector(Tm[:3, :3] @ R0.T)) / (2 * h)
        np.testing.assert_allclose(J[3:, k], omega, atol=1e-8)


def test_batched_equals_single(panda):
    q = panda.sample(np.random.default_rng(1), 6)
    p, quat = panda.forward_pose(q)
    J = panda.pose_jacobian(q)
    for i in range(6):
        pi, qi = panda.forward_pose(q[i])
        np.testing.assert_allclose(p[i], pi, atol=1e-15)
        np.testing.assert_allclose(quat[i], qi, atol=1e-15)
        np.testing.assert_allclose(J[i], panda.pose_jacobian(q[i]), atol=1e-15)
    np.testing.assert_allclose(panda.jacobian(q), J[:, :3])
    np.testing.assert_allclose(panda.forward(q), p)


@settings(max_examples=60, deadline=None)
@given(quat=st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1),
       flip=st.sampled_from([(1, 1, 1), (-1, -1, 1), (1, -1, -1), (-1, 1, -1)]))
def test_quaternion_conversion_round_trip(quat, flip):
    """Including rotations by nearly π (each Shepperd branch)."""
    q = np.array(quat) / np.linalg.norm(quat)
    R = quaternion_to_matrix(q) @ np.diag(flip).astype(float)  # diag(±1) with det 1: a π rotation
    back = matrix_to_quaternion(R)
    assert back[3] >= 0
    np.testing.assert_allclose(quaternion_to_matrix(back), R, atol=1e-12)


def test_fixed_joints_and_sub_chains(panda):
    """panda_hand = panda_link7 · (0.107 m along z) · Rz(−π/4); a sub-chain starts at its base link."""
    to_link7 = BulletChain(PANDA[0], "panda_link7", check_with_bullet=False)
    q = panda.sample(np.random.default_rng(2))
    T7, Th = to_link7.forward_matrix(q), panda.forward_matrix(q)
    c, s = math.cos(-math.pi / 4), math.sin(-math.pi / 4)
    offset = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0.107], [0, 0, 0, 1]])
    np.testing.assert_allclose(Th, T7 @ offset, atol=1e-10)  # URDF gives π/4 to 12 digits
    sub = BulletChain(PANDA[0], "panda_hand", base_link="panda_link3", check_with_bullet=False)
    assert sub.joint_names == ("panda_joint4", "panda_joint5", "panda_joint6", "panda_joint7")
    to_link3 = BulletChain(PANDA[0], "panda_link3", check_with_bullet=False)
    np.testing.assert_allclose(to_link3.forward_matrix(q[:3]) @ sub.forward_matrix(q[3:]), Th, atol=1e-14)
    tip = BulletChain(*PANDA, tip_offset=np.array([0.0, 0.0, 0.1]), check_with_bullet=False)
    np.testing.assert_allclose(tip.forward(q), Th[:3, 3] + 0.1 * Th[:3, 2], atol=1e-15)
    assert panda.reach > np.linalg.norm(panda.forward(panda.sample(np.random.default_rng(0), 200)), axis=1).max()


def test_bad_chains_raise(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        BulletChain(tmp_path / "missing.urdf", "x")
    with pytest.raises(ValueError, match="not a link"):
        BulletChain(IIWA[0], "no_such_link")
    with pytest.raises(ValueError, match="ancestor"):
        BulletChain(PANDA[0], "panda_link3", base_link="panda_link5", check_with_bullet=False)
    with pytest.raises(ValueError, match="no movable joint"):
        BulletChain(PANDA[0], "panda_hand", base_link="panda_link7", check_with_bullet=False)
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='floating'>"
                   "<parent link='a'/><child link='b'/></joint></robot>")
    with pytest.raises(ValueError, match="floating"):
        BulletChain(bad, "b", check_with_bullet=False)
    with pytest.raises(ValueError):
        BulletChain(*IIWA, tip_offset=np.array([0.0, np.nan, 0.0]))
    iiwa = BulletChain(*IIWA, check_with_bullet=False)
    with pytest.raises(ValueError):
        iiwa.forward(np.zeros(6))
    with pytest.raises(ValueError):
        iiwa.pose_jacobian(np.full(7, np.nan))


# ------------------------------------------------------------------------------ the solver
@pytest.mark.parametrize("method", ["dls", "pinv"])
def test_full_pose_ik_on_iiwa_and_panda(chain, method):
    q_true = chain.sample(np.random.default_rng(11), 12)
    positions, quats = chain.forward_pose(q_true)
    for p, quat in zip(positions, quats):
        res = jacobian_ik(chain, p, quat, method=method)
        assert res.success, res.message
        assert res.error < 1e-6 and res.orientation_error < 1e-6
        assert np.all(res.solution >= chain.lower) and np.all(res.solution <= chain.upper)
        p_sol, q_sol = chain.forward_pose(res.solution)
        assert np.linalg.norm(p_sol - p) == pytest.approx(res.error, abs=1e-12)
        assert quaternion_error(quaternion_to_matrix(quat), quaternion_to_matrix(q_sol))[1] \
            == pytest.approx(res.orientation_error, abs=1e-9)


def test_transpose_converges_position_only(iiwa):
    p = iiwa.forward(iiwa.sample(np.random.default_rng(4)))
    res = jacobian_ik(iiwa, p, method="transpose", tol=1e-5)
    assert res.success and res.orientation_error is None
    assert res.iterations > jacobian_ik(iiwa, p, method="dls", tol=1e-5).iterations  # linear vs quadratic


def test_orientation_as_rotation_matrix(iiwa):
    T = iiwa.forward_matrix(iiwa.sample(np.random.default_rng(5)))
    res = jacobian_ik(iiwa, T[:3, 3], T[:3, :3])
    assert res.success
    np.testing.assert_allclose(iiwa.forward_matrix(res.solution), T, atol=1e-5)


def test_fixed_damping_and_gains(panda):
    p, quat = panda.forward_pose(panda.sample(np.random.default_rng(6)))
    res = jacobian_ik(panda, p, quat, damping=0.01, gain=(1, 1, 1, 2, 2, 2))
    assert res.success
    slow = jacobian_ik(panda, p, quat, gain=0.3, restarts=0, q0=res.solution + 0.05)
    fast = jacobian_ik(panda, p, quat, restarts=0, q0=res.solution + 0.05)
    assert slow.success and fast.success and slow.iterations > fast.iterations


def test_restarts_rescue_stalled_starts(panda):
    """Some targets stall from the middle of the limits; the seeded restarts solve them all."""
    positions, quats = panda.forward_pose(panda.sample(np.random.default_rng(0), 40))
    stalled = [i for i in range(40) if not jacobian_ik(panda, positions[i], quats[i], restarts=0).success]
    assert stalled, "no stalled start among the targets: the test would prove nothing"
    for i in stalled[:3]:
        for seed in (0, 1):
            assert jacobian_ik(panda, positions[i], quats[i], seed=seed).success


def test_unreachable_target_is_best_effort(iiwa):
    target = np.array([2.0, 0.0, 0.5])  # beyond the 1.3 m arm
    res = jacobian_ik(iiwa, target, method="dls")
    assert not res.success and "not converged" in res.message
    assert np.all(res.solution >= iiwa.lower) and np.all(res.solution <= iiwa.upper)
    assert res.error == pytest.approx(np.linalg.norm(iiwa.forward(res.solution) - target))
    assert res.error < np.linalg.norm(iiwa.forward(np.zeros(7)) - target) - 0.5  # it stretched towards it


@settings(max_examples=25, deadline=None)
@given(target=st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.floats(-1.0, 2.5)),
       method=st.sampled_from(["dls", "pinv", "transpose"]), start=st.integers(0, 1000))
def test_solutions_always_within_limits(target, method, start, panda):
    q0 = panda.sample(np.random.default_rng(start))
    res = jacobian_ik(panda, np.array(target), method=method, q0=q0, max_iterations=60, restarts=2)
    assert np.all(res.solution >= panda.lower) and np.all(res.solution <= panda.upper)
    assert np.isfinite(res.error)
    assert res.error == pytest.approx(np.linalg.norm(panda.forward(res.solution) - np.array(target)), abs=1e-12)


def test_singularity_dls_bounded_pinv_blows_up(iiwa):
    """Stretched iiwa (joints 2 and 4 at δ), target 1 cm further along the arm: the pseudo-inverse
    step grows like 1/δ, the DLS step stays below ‖e‖ / 2λ."""
    lam = 0.05
    norms = {}
    for delta in (1e-2, 1e-4, 1e-6):
        q = np.zeros(7)
        q[1] = q[3] = delta
        target = iiwa.forward(q) + np.array([0.0, 0.0, 0.01])
        norms[delta] = [np.linalg.norm(ik_step(iiwa, q, target, method=m, damping=lam)) for m in ("pinv", "dls")]
        assert norms[delta][1] <= 0.01 / (2 * lam) + 1e-12
    assert norms[1e-6][0] > 1e4 and norms[1e-6][0] > 1e3 * norms[1e-2][0]
    assert norms[1e-6][1] < 1e-3
    # and the full DLS solve from the exactly stretched arm reaches a pose target
    p, quat = iiwa.forward_pose(iiwa.sample(np.random.default_rng(8)))
    assert jacobian_ik(iiwa, p, quat, q0=np.zeros(7), restarts=0).success


def test_works_on_any_kinematic_model(iiwa):
    """Position-only IK on a model that is not a BulletChain (PETER), and trr on a BulletChain."""
    arm = Peter(2)
    target = arm.forward(arm.sample(np.random.default_rng(9)))
    res = jacobian_ik(arm, target, method="dls")
    assert res.success and np.all(res.solution >= arm.lower) and np.all(res.solution <= arm.upper)
    with pytest.raises(ValueError, match="position-only"):
        jacobian_ik(arm, target, np.array([0.0, 0.0, 0.0, 1.0]))
    p = iiwa.forward(iiwa.sample(np.random.default_rng(10)))
    assert trr(iiwa, p).success


def test_quadruped_leg_chain():
    quadruped = pytest.importorskip("soft_envs.robots.quadruped")
    model = quadruped.Quadruped()
    with model.urdf_path() as path:
        leg = BulletChain(path, model.foot_link_name("front_left"))
    assert leg.n_dof == 3
    for q in leg.sample(np.random.default_rng(12), 5):
        res = jacobian_ik(leg, leg.forward(q), method="dls")
        assert res.success and np.all(res.solution >= leg.lower) and np.all(res.solution <= leg.upper)


@pytest.mark.parametrize("kwargs", [
    dict(position=np.array([0.1, np.nan, 0.5])),
    dict(position=np.zeros(2)),
    dict(position=np.zeros((2, 3))),
    dict(position=np.array([500.0, 0.0, 0.0])),  # millimetres for metres
    dict(orientation=np.array([0.0, 0.0, 0.0, 2.0])),
    dict(orientation=np.zeros(3)),
    dict(orientation=np.eye(3) * 2),
    dict(method="newton"),
    dict(damping=-0.1),
    dict(damping="fixed"),
    dict(q0=np.zeros(6)),
    dict(q0=np.full(7, np.inf)),
    dict(gain=(1.0, 2.0)),
    dict(gain=-1.0),
    dict(tol=0.0),
    dict(max_step=np.nan),
    dict(max_iterations=0),
])
def test_invalid_input_raises_value_error(iiwa, kwargs):
    args = dict(position=np.array([0.3, 0.2, 0.8]), orientation=None)
    args.update(kwargs)
    with pytest.raises(ValueError):
        jacobian_ik(iiwa, args.pop("position"), args.pop("orientation"), **args)


def test_invalid_ik_step_raises(iiwa):
    with pytest.raises(InvalidParameterError):
        ik_step(iiwa, np.zeros(7), np.array([0.3, 0.2, 0.8]), method="svd")
    with pytest.raises(ValueError):
        ik_step(iiwa, np.zeros(5), np.array([0.3, 0.2, 0.8]))


def test_bench_comparison_table_shape():
    from soft_envs.bench.chain_ik import comparison

    table, success = comparison(n_targets=3, n_transpose=1, seed=0)
    lines = table.splitlines()
    assert len(lines) == 2 + 2 * 6  # header, rule, 6 rows per robot
    assert all(line.count("|") == 13 for line in lines)
    assert success[("KUKA iiwa", "dls")] == 1.0 and success[("Franka Panda", "dls")] == 1.0
    assert set(success) >= {("KUKA iiwa", "pybullet, one call"), ("Franka Panda", "pybullet looped")}
