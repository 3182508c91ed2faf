"""BulletChain, any URDF chain as a kinematic model: read from the URDF, checked against PyBullet."""

from __future__ import annotations

import math

import numpy as np
import pybullet
import pybullet_data
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybullet_utils.bullet_client import BulletClient

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import matrix_to_quaternion, quaternion_error, quaternion_to_matrix
from soft_envs.robots import BulletChain, Quadruped
from soft_envs.robots.base import PoseKinematics

DATA = pybullet_data.getDataPath()
IIWA = (f"{DATA}/kuka_iiwa/model.urdf", "lbr_iiwa_link_7")
PANDA = (f"{DATA}/franka_panda/panda.urdf", "panda_hand")
_MOVABLE = {pybullet.JOINT_REVOLUTE: ("revolute", "continuous"), pybullet.JOINT_PRISMATIC: ("prismatic",)}


@pytest.fixture(scope="module")
def iiwa() -> BulletChain:
    return BulletChain(*IIWA)


@pytest.fixture(scope="module")
def panda() -> BulletChain:
    return BulletChain(*PANDA)


@pytest.fixture(scope="module", params=["iiwa", "panda"])
def chain(request, iiwa, panda) -> BulletChain:
    return {"iiwa": iiwa, "panda": panda}[request.param]


@pytest.fixture
def client():
    bullet = BulletClient(connection_mode=pybullet.DIRECT)
    yield bullet
    bullet.disconnect()


def _connected_clients() -> int:
    return sum(pybullet.isConnected(physicsClientId=i) for i in range(64))


def _rotation_vector(R: np.ndarray) -> np.ndarray:
    """Rotation vector θn of a rotation matrix (small angles)."""
    eps, angle = quaternion_error(R, np.eye(3))
    norm = np.linalg.norm(eps)
    return np.zeros(3) if norm == 0 else eps / norm * angle


def test_chain_reads_the_urdf(iiwa, panda):
    assert iiwa.n_dof == 7 and panda.n_dof == 7
    assert iiwa.joint_names == tuple(f"lbr_iiwa_joint_{i}" for i in range(1, 8))
    assert iiwa.joint_indices == tuple(range(7)) and panda.joint_indices == tuple(range(7))
    np.testing.assert_allclose(iiwa.upper, [2.96705972839, 2.09439510239] * 3 + [3.05432619099])
    np.testing.assert_allclose(panda.lower[[3, 5]], [-3.1416, -0.0873])
    assert [j.type for j in panda.joints][-2:] == ["fixed", "fixed"]  # joint8 and the hand joint
    assert isinstance(iiwa, PoseKinematics)


def test_the_model_needs_no_simulator():
    """Building a chain opens no physics client (the robots layer does not use PyBullet)."""
    before = _connected_clients()
    for _ in range(3):
        BulletChain(*IIWA)
    assert _connected_clients() == before


@pytest.mark.parametrize("urdf", ["kuka_iiwa/model.urdf", "franka_panda/panda.urdf", "r2d2.urdf",
                                  "laikago/laikago.urdf", "quadruped"])
def test_joint_names_types_and_indices_equal_pybullets(client, urdf):
    """PyBullet loads the URDF and numbers every chain's joints as ``joint_indices`` says — for
    every link of branched robots too (the fingers, the wheels, the legs)."""
    if urdf == "quadruped":
        with Quadruped().urdf_path() as path:
            path = str(path)
            body = client.loadURDF(path, useFixedBase=True)
    else:
        path = f"{DATA}/{urdf}"
        body = client.loadURDF(path, useFixedBase=True)
    infos = [client.getJointInfo(body, i) for i in range(client.getNumJoints(body))]
    checked = 0
    for info in infos:
        try:
            chain = BulletChain(path, info[12].decode())
        except InvalidParameterError:  # no movable joint, or a joint without usable limits
            continue
        for name, kind, index in zip(chain.joint_names, chain.joint_types, chain.joint_indices):
            assert infos[index][1].decode() == name
            assert kind in _MOVABLE[infos[index][2]]
        checked += 1
    assert checked >= 3


def test_forward_kinematics_equal_pybullet(chain, client):
    """Our end-link frame composed with PyBullet's inertial frame equals getLinkState's exact COM
    pose (≤ 1e-12); the link frame output [4:6] loses ~1e-7 m through the inertial inverse."""
    body = client.loadURDF(chain.urdf_path, useFixedBase=True)
    end = next(j for j in range(client.getNumJoints(body))
               if client.getJointInfo(body, j)[12].decode() == chain.end_link)
    inertial_pos, inertial_orn = client.getDynamicsInfo(body, end)[3:5]
    R_inertial = quaternion_to_matrix(np.array(inertial_orn))
    movable = [j for j in range(client.getNumJoints(body))
               if client.getJointInfo(body, j)[2] != pybullet.JOINT_FIXED]
    rng = np.random.default_rng(3)
    configurations = chain.sample(rng, 15)
    T_batch, J_batch = chain.forward_matrix(configurations), chain.pose_jacobian(configurations)  # numpy path
    for q, T_b, J_b in zip(configurations, T_batch, J_batch):
        for j, v in zip(chain.joint_indices, q):
            client.resetJointState(body, j, v)
        state = client.getLinkState(body, end, computeForwardKinematics=True)
        for T in (chain.forward_matrix(q), T_b):  # one configuration (float path), a batch (numpy)
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
        np.testing.assert_allclose(J_b, J_bullet, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), which=st.sampled_from(["iiwa", "panda", "tip"]))
def test_single_configuration_path_equals_the_batched_path(seed, which, iiwa, panda):
    """One configuration runs the fused float path, a batch the vectorised numpy path: the same
    pose and Jacobian to 1e-15 (also with a tip offset, and for a batch of one)."""
    chain = {"iiwa": iiwa, "panda": panda, "tip": BulletChain(*PANDA, tip_offset=np.array([0.01, -0.02, 0.1]))}[which]
    q = chain.sample(np.random.default_rng(seed))
    np.testing.assert_allclose(chain.forward_matrix(q), chain.forward_matrix(np.stack((q, q)))[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(chain.pose_jacobian(q), chain.pose_jacobian(np.stack((q, q)))[0], rtol=0, atol=1e-15)
    p1, R1, J1 = chain.pose_and_jacobian(q[None])
    p2, R2, J2 = chain.pose_and_jacobian(np.stack((q, q)))
    for one, many in ((p1, p2), (R1, R2), (J1, J2)):
        np.testing.assert_allclose(one[0], many[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(chain.link_positions(q)[-1], chain.link_positions(q[None])[0, -1], atol=1e-15)


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
    p_all, R_all, J_all = panda.pose_and_jacobian(q)
    np.testing.assert_array_equal(p_all, p)
    np.testing.assert_array_equal(J_all, J)
    np.testing.assert_allclose(matrix_to_quaternion(R_all), quat, atol=1e-15)
    with pytest.raises(ValueError):
        panda.pose_and_jacobian(q[0])  # one configuration: the batch form only


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
    to_link7 = BulletChain(PANDA[0], "panda_link7")
    q = panda.sample(np.random.default_rng(2))
    T7, Th = to_link7.forward_matrix(q), panda.forward_matrix(q)
    c, s = math.cos(-math.pi / 4), math.sin(-math.pi / 4)
    offset = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0.107], [0, 0, 0, 1]])
    np.testing.assert_allclose(Th, T7 @ offset, atol=1e-10)  # URDF gives π/4 to 12 digits
    sub = BulletChain(PANDA[0], "panda_hand", base_link="panda_link3")
    assert sub.joint_names == ("panda_joint4", "panda_joint5", "panda_joint6", "panda_joint7")
    assert sub.joint_indices == (3, 4, 5, 6)  # the whole robot's numbering
    to_link3 = BulletChain(PANDA[0], "panda_link3")
    np.testing.assert_allclose(to_link3.forward_matrix(q[:3]) @ sub.forward_matrix(q[3:]), Th, atol=1e-14)
    tip = BulletChain(*PANDA, tip_offset=np.array([0.0, 0.0, 0.1]))
    np.testing.assert_allclose(tip.forward(q), Th[:3, 3] + 0.1 * Th[:3, 2], atol=1e-15)
    assert panda.reach > np.linalg.norm(panda.forward(panda.sample(np.random.default_rng(0), 200)), axis=1).max()


def test_quadruped_leg_chain_equals_the_leg_model():
    robot = Quadruped()
    with robot.urdf_path() as path:
        chain = BulletChain(path, robot.foot_link_name("front_left"), base_link="body")
    leg = robot.leg("front_left")
    assert chain.n_dof == 3
    np.testing.assert_allclose(chain.lower, leg.lower)
    np.testing.assert_allclose(chain.upper, leg.upper)
    q = leg.sample(np.random.default_rng(12), 20)
    np.testing.assert_allclose(chain.forward(q) - leg.base, leg.forward(q), atol=1e-12)


def test_bad_chains_raise(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        BulletChain(tmp_path / "missing.urdf", "x")
    with pytest.raises(ValueError, match="not a link"):
        BulletChain(IIWA[0], "no_such_link")
    with pytest.raises(ValueError, match="ancestor"):
        BulletChain(PANDA[0], "panda_link3", base_link="panda_link5")
    with pytest.raises(ValueError, match="no movable joint"):
        BulletChain(PANDA[0], "panda_hand", base_link="panda_link7")
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='floating'>"
                   "<parent link='a'/><child link='b'/></joint></robot>")
    with pytest.raises(ValueError, match="floating"):
        BulletChain(bad, "b")
    not_urdf = tmp_path / "not.urdf"
    not_urdf.write_text("<sdf/>")
    with pytest.raises(ValueError, match="not a URDF"):
        BulletChain(not_urdf, "b")
    with pytest.raises(ValueError):
        BulletChain(*IIWA, tip_offset=np.array([0.0, np.nan, 0.0]))
    iiwa = BulletChain(*IIWA)
    with pytest.raises(ValueError):
        iiwa.forward(np.zeros(6))
    with pytest.raises(ValueError):
        iiwa.pose_jacobian(np.full(7, np.nan))


# ------------------------------------------------------------------------------ URDF structure checks
def _urdf(links: str, joints: str) -> str:
    return f"<robot name='r'>{links}{joints}</robot>"


def _joint(name: str, parent: str, child: str) -> str:
    return (f"<joint name='{name}' type='revolute'><parent link='{parent}'/><child link='{child}'/>"
            "<axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint>")


def _mesh_link(name: str, mesh: str) -> str:
    return f"<link name='{name}'><visual><geometry><mesh filename='{mesh}'/></geometry></visual></link>"


THREE_LINKS = "<link name='l0'/><link name='l1'/><link name='l2'/>"


@pytest.mark.parametrize("text, match", [
    # a link with two parents, l0 -> l1 -> l2 -> l1: the parent walk used to loop for ever
    (_urdf(THREE_LINKS, _joint("j0", "l0", "l1") + _joint("j1", "l1", "l2") + _joint("j2", "l2", "l1")),
     "child of two joints"),
    # a pure cycle: every link has one parent, no root
    (_urdf(THREE_LINKS, _joint("j0", "l0", "l1") + _joint("j1", "l1", "l2") + _joint("j2", "l2", "l0")), "cycle"),
    # two joints of the same name: a segfault inside PyBullet's loadURDF
    (_urdf(THREE_LINKS, _joint("j", "l0", "l1") + _joint("j", "l1", "l2")), "joint names must be unique"),
    (_urdf(THREE_LINKS + "<link name='l1'/>", _joint("j0", "l0", "l1")), "link names must be unique"),
    (_urdf(THREE_LINKS, _joint("j0", "l0", "nowhere")), "not a link of the file"),
    (_urdf(_mesh_link("l0", "missing.obj") + "<link name='l1'/>", _joint("j0", "l0", "l1")), "not found"),
])
def test_malformed_urdf_raises_before_anything_walks_it(tmp_path, text, match):
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        BulletChain(path, "l2", base_link="l0")


@pytest.mark.parametrize("content, match", [
    ("f 1 2 3\n", "no vertices"),  # crashed PyBullet
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", "does not have"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1/1 2/2/2 -4/1/1\n", "does not have"),
    ("v 0 0 0\nv 1 0 0\n", "no faces"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf a b c\n", "not vertex numbers"),
])
def test_meshes_that_do_not_parse_are_rejected(tmp_path, content, match):
    (tmp_path / "part.obj").write_text(content)
    path = tmp_path / "robot.urdf"
    path.write_text(_urdf(_mesh_link("l0", "part.obj") + "<link name='l1'/>", _joint("j0", "l0", "l1")))
    with pytest.raises(ValueError, match=match):
        BulletChain(path, "l1")


def test_valid_meshes_pass_and_load_in_pybullet(tmp_path, client):
    """OBJ (with v/vt/vn corners and negative indices), binary and ASCII STL: accepted, and PyBullet
    loads the same file."""
    (tmp_path / "a.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nvt 0 0\nvn 0 0 1\nf 1/1/1 2/1/1 -1/1/1\n")
    triangle = np.zeros(12, dtype="<f4").tobytes() + b"\0\0"
    (tmp_path / "b.stl").write_bytes(b"\0" * 80 + (1).to_bytes(4, "little") + triangle)
    (tmp_path / "c.stl").write_text("solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n"
                                    "vertex 0 1 0\nendloop\nendfacet\nendsolid t\n")
    links = _mesh_link("l0", "a.obj") + _mesh_link("l1", "b.stl") + _mesh_link("l2", "package://c.stl")
    path = tmp_path / "robot.urdf"
    path.write_text(_urdf(links, _joint("j0", "l0", "l1") + _joint("j1", "l1", "l2")))
    chain = BulletChain(path, "l2")
    assert chain.n_dof == 2
    assert client.getNumJoints(client.loadURDF(str(path), useFixedBase=True)) == 2


def test_a_bad_binary_stl_is_rejected(tmp_path):
    (tmp_path / "b.stl").write_bytes(b"\0" * 80 + (3).to_bytes(4, "little") + b"\0" * 50)
    path = tmp_path / "robot.urdf"
    path.write_text(_urdf(_mesh_link("l0", "b.stl") + "<link name='l1'/>", _joint("j0", "l0", "l1")))
    with pytest.raises(ValueError, match="binary STL"):
        BulletChain(path, "l1")


def test_prismatic_joints_in_both_paths(tmp_path, client):
    """PETER's body (revolute and prismatic joints) as a BulletChain: the float and numpy paths agree,
    and both equal PyBullet's link pose and Jacobian."""
    from soft_envs.robots import Peter

    path = tmp_path / "peter.urdf"
    path.write_text(Peter(2).urdf())
    chain = BulletChain(path, "m1_plate")
    assert "prismatic" in chain.joint_types
    q = chain.sample(np.random.default_rng(5), 4) * 0.2
    np.testing.assert_allclose(chain.pose_jacobian(q[0]), chain.pose_jacobian(q)[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(chain.forward_matrix(q[0]), chain.forward_matrix(q)[0], rtol=0, atol=1e-15)
    body = client.loadURDF(str(path), useFixedBase=True)
    end = chain.joint_indices[-1]
    for configuration in q:
        for j, v in zip(chain.joint_indices, configuration):
            client.resetJointState(body, j, v)
        state = client.getLinkState(body, end, computeForwardKinematics=True)
        np.testing.assert_allclose(chain.forward(configuration), state[0], atol=1e-12)  # COM at the link origin
        lin, ang = client.calculateJacobian(body, end, [0.0, 0.0, 0.0], configuration.tolist(),
                                            [0.0] * chain.n_dof, [0.0] * chain.n_dof)
        np.testing.assert_allclose(chain.pose_jacobian(configuration), np.vstack((lin, ang)), atol=1e-12)
