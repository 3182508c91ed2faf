"""A serial chain of any URDF as a kinematic model: numpy forward kinematics and Jacobians.

``BulletChain(urdf_path, end_link, base_link=None)`` first checks the file's structure
(:func:`~soft_envs.robots.urdf_checks.check_urdf`: unique names, a tree, meshes that exist
and parse — the inputs that hang a parser or crash PyBullet), then takes the joints from
``base_link`` (default the URDF's root link) to ``end_link`` and becomes a :class:`KinematicModel`: configuration = the
chain's movable joints (revolute [rad], continuous [rad], prismatic [m]) in chain order, bounds
= the URDF's joint limits, position = the origin of ``end_link``'s URDF link frame (plus an
optional ``tip_offset`` in that frame) [m], expressed in ``base_link``'s URDF link frame.
Quaternions are ``(x, y, z, w)`` with ``w ≥ 0``.

Frames are read from the URDF text (joint ``origin`` xyz/rpy, ``axis``, ``limit``) in float64,
because PyBullet's ``getJointInfo`` gives joint frames relative to inertial frames. The model
needs no simulator: :attr:`BulletChain.joint_indices` (for driving a PyBullet body with IK
solutions) comes from the URDF's joint tree too, numbered as PyBullet's ``loadURDF`` numbers
joints. The kinematics and the indices are checked against PyBullet (``getLinkState``,
``calculateJacobian``, ``getJointInfo``) in ``tests/robots/test_bullet_chain.py``.

Fixed joints inside the chain are folded into the next movable joint's origin (or into the tip
transform), and every joint is re-framed to turn about its own z axis, so forward kinematics
costs one constant 4×4 product and a plane rotation per movable joint: in plain floats for one
configuration (about 10 µs for 7 joints) and vectorised over a batch. ``mimic`` tags are ignored, as
PyBullet ignores them: a mimic joint in the chain is an independent variable. Continuous joints get
the bounds ``[−π, π]``.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from math import cos, sin

import numpy as np

from soft_envs.exceptions import InvalidConfigurationError, InvalidParameterError
from soft_envs.geometry import matrix_to_quaternion, rpy_to_matrix
from soft_envs.robots.base import KinematicModel
from soft_envs.robots.urdf_checks import check_urdf

_MOVABLE = ("revolute", "continuous", "prismatic")
_SUPPORTED = _MOVABLE + ("fixed",)


@dataclass(frozen=True)
class ChainJoint:
    """One URDF joint of the chain (frames in the parent link's URDF frame, SI units)."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray  # (4, 4) parent link frame -> joint (= child link) frame at q = 0
    axis: np.ndarray  # (3,) unit axis in the child link frame (zeros for fixed joints)
    lower: float
    upper: float


def _floats(text: str | None, default: tuple[float, ...], what: str) -> np.ndarray:
    if text is None:
        return np.array(default, dtype=float)
    try:
        values = np.array([float(v) for v in text.split()], dtype=float)
    except ValueError as exc:
        raise InvalidParameterError(f"{what}: cannot read numbers from {text!r}") from exc
    if values.shape != (len(default),) or not np.all(np.isfinite(values)):
        raise InvalidParameterError(f"{what}: expected {len(default)} finite numbers; got {text!r}")
    return values


def read_urdf(urdf_text: str) -> ET.Element:
    """The ``<robot>`` element of a URDF document (:class:`InvalidParameterError` otherwise)."""
    try:
        root = ET.fromstring(urdf_text)
    except ET.ParseError as exc:
        raise InvalidParameterError(f"not a valid URDF (XML error: {exc})") from exc
    if root.tag != "robot":
        raise InvalidParameterError(f"not a URDF: root element is <{root.tag}>, expected <robot>")
    return root


def parse_urdf_joints(urdf: str | ET.Element) -> tuple[dict[str, ChainJoint], set[str]]:
    """All joints of a URDF (text, or its parsed ``<robot>`` element; keyed by child link name, in
    document order) and the set of link names."""
    root = read_urdf(urdf) if isinstance(urdf, str) else urdf
    links = {str(link.get("name")) for link in root.findall("link")}
    joints: dict[str, ChainJoint] = {}
    for el in root.findall("joint"):
        name, jtype = el.get("name"), el.get("type")
        parent_el, child_el = el.find("parent"), el.find("child")
        if parent_el is None or child_el is None:
            raise InvalidParameterError(f"URDF joint {name!r} lacks <parent> or <child>")
        parent, child = parent_el.get("link"), child_el.get("link")
        if name is None or jtype is None or parent is None or child is None:
            raise InvalidParameterError(f"URDF joint {name!r} lacks a name, a type or a parent or child link")
        origin_el = el.find("origin")
        xyz = _floats(None if origin_el is None else origin_el.get("xyz"), (0.0, 0.0, 0.0), f"joint {name} xyz")
        rpy = _floats(None if origin_el is None else origin_el.get("rpy"), (0.0, 0.0, 0.0), f"joint {name} rpy")
        origin = np.eye(4)
        origin[:3, :3] = rpy_to_matrix(*rpy)
        origin[:3, 3] = xyz
        axis = np.zeros(3)
        lower, upper = 0.0, 0.0
        if jtype in _MOVABLE:
            axis_el = el.find("axis")
            axis = _floats(None if axis_el is None else axis_el.get("xyz"), (1.0, 0.0, 0.0), f"joint {name} axis")
            norm = float(np.linalg.norm(axis))
            if norm < 1e-12:
                raise InvalidParameterError(f"URDF joint {name!r} has a zero axis")
            axis = axis / norm
            if jtype == "continuous":
                lower, upper = -math.pi, math.pi
            else:
                limit_el = el.find("limit")
                lower = float(limit_el.get("lower", 0.0)) if limit_el is not None else 0.0
                upper = float(limit_el.get("upper", 0.0)) if limit_el is not None else 0.0
        joints[child] = ChainJoint(name, jtype, parent, child, origin, axis, lower, upper)
    return joints, links


def _depth_first_joint_order(joints_by_child: dict[str, ChainJoint], roots: list[str]) -> list[str]:
    """Joint names in depth-first order from the root links, each link's child joints in document
    order: PyBullet's joint numbering."""
    children: dict[str, list[ChainJoint]] = {}
    for joint in joints_by_child.values():
        children.setdefault(joint.parent, []).append(joint)
    order: list[str] = []
    stack = [joint for root in reversed(roots) for joint in reversed(children.get(root, []))]
    while stack:
        joint = stack.pop()
        order.append(joint.name)
        stack.extend(reversed(children.get(joint.child, [])))
    return order


def _frame_with_z_along(axis: np.ndarray) -> np.ndarray:
    """A rotation ``P`` with ``P e_z = axis`` (unit); exact 0/±1 entries for a coordinate axis."""
    z = np.asarray(axis, dtype=float)
    if np.array_equal(z, [0.0, 0.0, 1.0]):
        return np.eye(3)
    e = np.zeros(3)
    e[int(np.argmin(np.abs(z)))] = 1.0
    x = e - (e @ z) * z
    x /= np.linalg.norm(x)
    return np.stack((x, np.cross(z, x), z), axis=1)


def chain_pose_jacobian(tables: tuple, q: list[float]) -> tuple[list[float], list[float], list[float]]:
    """Pose and geometric Jacobian of one configuration in plain floats (the fast path of
    :class:`BulletChain`): ``tables`` from :meth:`BulletChain._build_tables`, ``q`` the joint
    values. Returns the position ``[x, y, z]`` [m], the rotation matrix (row-major, 9 floats) and
    the Jacobian ``6 × n`` (row-major, flat: linear rows, then angular rows), base frame."""
    joints, tip_R, tip_p = tables
    n = len(q)
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    px = py = pz = 0.0
    frames = []
    for ((a00, a01, a02, a10, a11, a12, a20, a21, a22), (ax, ay, az), revolute), value in zip(joints, q):
        px, py, pz = px + r00 * ax + r01 * ay + r02 * az, py + r10 * ax + r11 * ay + r12 * az, \
            pz + r20 * ax + r21 * ay + r22 * az
        if revolute:  # A · Rz(value): the first two columns turn
            c, s = cos(value), sin(value)
            a00, a01 = c * a00 + s * a01, c * a01 - s * a00
            a10, a11 = c * a10 + s * a11, c * a11 - s * a10
            a20, a21 = c * a20 + s * a21, c * a21 - s * a20
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            r00 * a00 + r01 * a10 + r02 * a20, r00 * a01 + r01 * a11 + r02 * a21, r00 * a02 + r01 * a12 + r02 * a22,
            r10 * a00 + r11 * a10 + r12 * a20, r10 * a01 + r11 * a11 + r12 * a21, r10 * a02 + r11 * a12 + r12 * a22,
            r20 * a00 + r21 * a10 + r22 * a20, r20 * a01 + r21 * a11 + r22 * a21, r20 * a02 + r21 * a12 + r22 * a22)
        if not revolute:  # · Tz(value)
            px, py, pz = px + value * r02, py + value * r12, pz + value * r22
        frames.append((revolute, r02, r12, r22, px, py, pz))
    tx, ty, tz = tip_p
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = tip_R
    position = [px + r00 * tx + r01 * ty + r02 * tz, py + r10 * tx + r11 * ty + r12 * tz,
                pz + r20 * tx + r21 * ty + r22 * tz]
    rotation = [r00 * b00 + r01 * b10 + r02 * b20, r00 * b01 + r01 * b11 + r02 * b21, r00 * b02 + r01 * b12 + r02 * b22,
                r10 * b00 + r11 * b10 + r12 * b20, r10 * b01 + r11 * b11 + r12 * b21, r10 * b02 + r11 * b12 + r12 * b22,
                r20 * b00 + r21 * b10 + r22 * b20, r20 * b01 + r21 * b11 + r22 * b21, r20 * b02 + r21 * b12 + r22 * b22]
    ex, ey, ez = position
    J = [0.0] * (6 * n)
    for j, (revolute, zx, zy, zz, ox, oy, oz) in enumerate(frames):
        if revolute:  # v = z × (tip − origin), ω = z
            dx, dy, dz = ex - ox, ey - oy, ez - oz
            J[j], J[n + j], J[2 * n + j] = zy * dz - zz * dy, zz * dx - zx * dz, zx * dy - zy * dx
            J[3 * n + j], J[4 * n + j], J[5 * n + j] = zx, zy, zz
        else:
            J[j], J[n + j], J[2 * n + j] = zx, zy, zz
    return position, rotation, J


class BulletChain(KinematicModel):
    """Kinematic model of the serial chain ``base_link → end_link`` of a URDF.

    Args:
        urdf_path: path of the URDF file (e.g. ``pybullet_data.getDataPath() + "/kuka_iiwa/model.urdf"``).
        end_link: name of the end-effector link.
        base_link: name of the link whose URDF frame is the chain's base frame; default the root.
        tip_offset: point ``(3,)`` [m] in ``end_link``'s frame taken as the end effector
            (default its origin).

    Attributes:
        joints: every URDF joint of the chain, fixed ones included, base to tip.
        joint_names: names of the movable joints (the configuration's order).
        joint_indices: index of each movable joint in the URDF's depth-first joint order from
            the root link (children in document order) — the joint index PyBullet's
            ``loadURDF`` gives it (default flags, no merged fixed links).
        lower, upper: joint limits [rad or m].
    """

    def __init__(
        self,
        urdf_path: str | os.PathLike,
        end_link: str,
        base_link: str | None = None,
        *,
        tip_offset: np.ndarray | None = None,
    ) -> None:
        self.urdf_path = os.fspath(urdf_path)
        if not os.path.isfile(self.urdf_path):
            raise InvalidParameterError(f"URDF file not found: {self.urdf_path!r}")
        with open(self.urdf_path) as fh:
            root = read_urdf(fh.read())
        check_urdf(root, self.urdf_path)  # names, tree, meshes: before anything walks the file
        joints_by_child, links = parse_urdf_joints(root)
        if end_link not in links:
            raise InvalidParameterError(f"end_link {end_link!r} is not a link of {self.urdf_path}; "
                                        f"links: {sorted(links)}")
        roots = sorted(links - set(joints_by_child))
        if base_link is None:
            if len(roots) != 1:
                raise InvalidParameterError(f"URDF has {len(roots)} root links {roots}; pass base_link")
            base_link = roots[0]
        elif base_link not in links:
            raise InvalidParameterError(f"base_link {base_link!r} is not a link of {self.urdf_path}")
        chain: list[ChainJoint] = []
        link = end_link
        while link != base_link:
            if link not in joints_by_child:
                raise InvalidParameterError(f"{base_link!r} is not an ancestor of {end_link!r}")
            joint = joints_by_child[link]
            if joint.type not in _SUPPORTED:
                raise InvalidParameterError(f"joint {joint.name!r} is {joint.type!r}; a chain may only have "
                                            f"{_SUPPORTED} joints")
            chain.append(joint)
            link = joint.parent
        chain.reverse()
        movable = [j for j in chain if j.type in _MOVABLE]
        if not movable:
            raise InvalidParameterError(f"the chain {base_link!r} → {end_link!r} has no movable joint")
        for j in movable:
            if not (np.isfinite(j.lower) and np.isfinite(j.upper)) or j.lower >= j.upper:
                raise InvalidParameterError(f"joint {j.name!r} has no usable limits [{j.lower}, {j.upper}]")
        if tip_offset is None:
            tip_offset = np.zeros(3)
        tip_offset = np.asarray(tip_offset, dtype=float)
        if tip_offset.shape != (3,) or not np.all(np.isfinite(tip_offset)):
            raise InvalidParameterError(f"tip_offset must be a finite (3,) vector [m]; got {tip_offset!r}")

        self.base_link, self.end_link = base_link, end_link
        self.joints: tuple[ChainJoint, ...] = tuple(chain)
        self.joint_names: tuple[str, ...] = tuple(j.name for j in movable)
        self.joint_types: tuple[str, ...] = tuple(j.type for j in movable)
        self.lower = np.array([j.lower for j in movable])
        self.upper = np.array([j.upper for j in movable])
        self.tip_offset = tip_offset
        self._build_tables(tip_offset)
        order = _depth_first_joint_order(joints_by_child, roots)
        self.joint_indices: tuple[int, ...] = tuple(order.index(name) for name in self.joint_names)

    # ------------------------------------------------------------------ construction helpers
    def _build_tables(self, tip_offset: np.ndarray) -> None:
        """The kinematics' constants: every movable joint re-framed so that it turns about (or
        slides along) its own z axis, ``local_j(q) = A_j · Rz(q)`` (or ``· Tz(q)``): the fixed joints
        before it and a frame change ``P_j`` (``P_j e_z = axis``) folded into ``A_j``, ``P_jᵀ`` into
        the next joint's ``A`` (or the tip transform). Kept as floats for the one-configuration
        path (:func:`chain_pose_jacobian`) and as transposed 4×4 arrays for the batched one."""
        tables, transposed = [], []
        pending = np.eye(4)
        for joint in self.joints:
            if joint.type == "fixed":
                pending = pending @ joint.origin
                continue
            P = _frame_with_z_along(joint.axis)
            A = pending @ joint.origin
            A[:3, :3] = A[:3, :3] @ P
            tables.append((tuple(A[:3, :3].ravel().tolist()), tuple(A[:3, 3].tolist()), joint.type != "prismatic"))
            transposed.append(A.T.copy())
            pending = np.eye(4)
            pending[:3, :3] = P.T
        tip = pending.copy()
        tip[:3, 3] = pending[:3, :3] @ tip_offset + pending[:3, 3]
        self._single = (tuple(tables), tuple(tip[:3, :3].ravel().tolist()), tuple(tip[:3, 3].tolist()))
        frames = np.zeros((len(tables) + 1, 3, 4))
        for j, A in enumerate(transposed):
            frames[j] = A.T[:3]
        frames[-1] = tip[:3]
        frames.flags.writeable = False
        kinds = np.array([int(revolute) for _, _, revolute in tables], dtype=np.int64)
        kinds.flags.writeable = False
        self._frames_array = (frames, kinds)
        self._columns = (tuple(transposed), tip.T.copy())
        self._revolute = np.array([revolute for _, _, revolute in tables])

    def joint_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """The kinematics' constants as arrays for compiled kernels (read-only): ``frames``
        ``(n + 1, 3, 4)``, row ``j < n`` movable joint ``j``'s ``[A_j | a_j]`` (rotation, offset [m]:
        ``T_j = T_{j−1} · [A_j | a_j] · Rz(q_j)``, or ``· Tz(q_j)`` for a prismatic joint), row ``n``
        the tip transform (``T_e = T_{n−1} · tip``); ``kinds`` ``(n,)`` int64, 1 revolute, 0 prismatic."""
        return self._frames_array

    # ------------------------------------------------------------------ kinematics
    def _frames(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Batch ``q (B, n)`` -> the end-effector frames side by side, ``X = [T_1ᵀ … T_Bᵀ]``
        ``(4, 3B)`` (rotation columns, then the origin, as rows), and every movable joint's axis
        and origin ``(n, 3B)`` in the base frame.

        With the frames transposed side by side each joint's constant ``A_j`` is one matrix
        product ``A_jᵀ X`` for the whole batch, and its ``Rz(q)`` mixes two contiguous rows.
        """
        batch, n = q.shape
        transposed, tip_t = self._columns
        c = np.repeat(np.cos(q).T, 3, axis=1)  # (n, 3B): each configuration's value thrice
        s = np.repeat(np.sin(q).T, 3, axis=1)
        X = np.tile(transposed[0][:, :3], (1, batch))
        axes, origins = np.empty((n, 3 * batch)), np.empty((n, 3 * batch))
        for j, revolute in enumerate(self._revolute):
            if j:
                X = transposed[j] @ X
            if revolute:
                x0 = X[0].copy()
                X[0] *= c[j]
                X[0] += s[j] * X[1]
                X[1] *= c[j]
                X[1] -= s[j] * x0
            else:
                X[3] += np.repeat(q[:, j], 3) * X[2]
            axes[j], origins[j] = X[2], X[3]
        return tip_t @ X, axes, origins

    @staticmethod
    def _split(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions ``(B, 3)`` and rotations ``(B, 3, 3)`` of side-by-side transposed frames."""
        batch = X.shape[1] // 3
        return X[3].reshape(batch, 3), X[:3].reshape(3, batch, 3).transpose(1, 2, 0)

    def pose_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Batch ``q (B, n)`` -> position ``(B, 3)`` [m], rotation matrix ``(B, 3, 3)``, Jacobian
        ``(B, 6, n)`` of the end effector, in the base frame (one pass for IK inner loops).

        Rows 0–2 of the Jacobian: d position / dq; rows 3–5: angular velocity of the end link per
        unit joint rate (the geometric Jacobian). For speed only the shape of ``q`` is checked
        (:class:`InvalidConfigurationError`); ``q`` must be a finite float array — use
        :meth:`forward_pose` and :meth:`pose_jacobian` for fully checked calls. A batch of one
        runs the float path of one configuration (as the single-configuration methods do).
        """
        if q.ndim != 2 or q.shape[1] != self._revolute.shape[0]:
            raise InvalidConfigurationError(f"pose_and_jacobian takes a batch of shape (B, {self.n_dof}); "
                                            f"got {q.shape}")
        if q.shape[0] == 1:
            p, R, J = chain_pose_jacobian(self._single, q[0].tolist())
            return np.array([p]), np.array(R).reshape(1, 3, 3), np.array(J).reshape(1, 6, -1)
        return self._pose_and_jacobian(q)

    def _pose_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`pose_and_jacobian` of a batch, vectorised, without the shape check."""
        X, axes, origins = self._frames(q)
        p, R = self._split(X)
        batch, n = q.shape
        z = axes.reshape(n, batch, 3)
        d = p[None] - origins.reshape(n, batch, 3)
        J = np.empty((batch, 6, n))
        zx, zy, zz = z[..., 0], z[..., 1], z[..., 2]
        dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
        J[:, 0], J[:, 1], J[:, 2] = (zy * dz - zz * dy).T, (zz * dx - zx * dz).T, (zx * dy - zy * dx).T
        J[:, 3:] = z.transpose(1, 2, 0)
        prismatic = ~self._revolute
        if prismatic.any():  # v = axis, ω = 0
            J[:, :3, prismatic] = z[prismatic].transpose(1, 2, 0)
            J[:, 3:, prismatic] = 0.0
        return p, R, J

    def _one(self, q: np.ndarray) -> list[float] | None:
        """``q`` as a list of floats when it is one finite configuration ``(n,)``, else ``None``
        (batches and anything :meth:`check_configuration` rejects take the checked numpy path)."""
        arr = np.asarray(q, dtype=float)
        if arr.shape != self.lower.shape:
            return None
        values = arr.tolist()
        return values if all(map(math.isfinite, values)) else None

    def _batch(self, q: np.ndarray) -> tuple[np.ndarray, bool]:
        q = self.check_configuration(q)
        return (q[None], True) if q.ndim == 1 else (q, False)

    def forward(self, q: np.ndarray) -> np.ndarray:
        """End-effector position [m] in the base frame, ``(3,)`` or ``(B, 3)``."""
        one = self._one(q)
        if one is not None:
            return np.array(chain_pose_jacobian(self._single, one)[0])
        return self._split(self._frames(self._batch(q)[0])[0])[0]

    def forward_matrix(self, q: np.ndarray) -> np.ndarray:
        """Homogeneous end-effector pose ``(4, 4)`` or ``(B, 4, 4)`` in the base frame [m]."""
        one = self._one(q)
        if one is not None:
            p, R, _ = chain_pose_jacobian(self._single, one)
            return np.array(R[0:3] + p[0:1] + R[3:6] + p[1:2] + R[6:9] + p[2:3] + [0.0, 0.0, 0.0, 1.0]).reshape(4, 4)
        positions, rotations = self._split(self._frames(self._batch(q)[0])[0])
        T = np.zeros((positions.shape[0], 4, 4))
        T[:, :3, :3], T[:, :3, 3], T[:, 3, 3] = rotations, positions, 1.0
        return T

    def forward_pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """End-effector position [m] ``(3,)``/``(B, 3)`` and quaternion ``(x, y, z, w)`` ``(4,)``/``(B, 4)``,
        ``w ≥ 0``."""
        one = self._one(q)
        if one is not None:
            p, R, _ = chain_pose_jacobian(self._single, one)
            return np.array(p), matrix_to_quaternion(np.array(R).reshape(3, 3))
        positions, rotations = self._split(self._frames(self._batch(q)[0])[0])
        return positions, matrix_to_quaternion(rotations)

    def link_positions(self, q: np.ndarray) -> np.ndarray:
        """Origins of the movable joints' child-link frames [m], ``(n, 3)`` or ``(B, n, 3)``."""
        qb, single = self._batch(q)
        o = self._frames(qb)[2].reshape(self.n_dof, -1, 3).transpose(1, 0, 2)
        return o[0] if single else o

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """d position / dq, ``(3, n)`` or ``(B, 3, n)`` [m per rad or m per m]."""
        one = self._one(q)
        if one is not None:
            return np.array(chain_pose_jacobian(self._single, one)[2][:3 * len(one)]).reshape(3, -1)
        return self._pose_and_jacobian(self._batch(q)[0])[2][:, :3]

    def pose_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Geometric Jacobian ``(6, n)`` or ``(B, 6, n)``: linear velocity rows, then angular velocity
        rows, in the base frame."""
        one = self._one(q)
        if one is not None:
            return np.array(chain_pose_jacobian(self._single, one)[2]).reshape(6, -1)
        return self._pose_and_jacobian(self._batch(q)[0])[2]

    @property
    def reach(self) -> float:
        """Upper bound of the end effector's distance from the base origin [m]: the sum of the
        chain's joint offsets, prismatic travels and the tip offset."""
        total = self.__dict__.get("_reach")
        if total is None:
            total = float(np.linalg.norm(self.tip_offset))
            for joint in self.joints:
                total += float(np.linalg.norm(joint.origin[:3, 3]))
                if joint.type == "prismatic":
                    total += max(abs(joint.lower), abs(joint.upper))
            self.__dict__["_reach"] = total
        return total

    def __repr__(self) -> str:
        return (f"BulletChain({os.path.basename(self.urdf_path)!r}, {self.base_link!r} → {self.end_link!r}, "
                f"{self.n_dof} DOF)")
