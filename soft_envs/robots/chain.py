"""The rigid-link chains of the soft arms as plain data, and their URDF text.

PETER (:class:`~soft_envs.robots.Peter`) and the PCC arm (:class:`~soft_envs.robots.PCCArm`)
realise their shapes in PyBullet as a serial chain of rigid links, each attached to the previous
one by a single joint of one of three kinds (:data:`JOINT_KINDS`): ``"revolute_z"`` and
``"revolute_y"`` turn the child about the z or y axis [rad], ``"prismatic_z"`` slides it along
z [m]. Every joint sits ``offset`` [m] along the z axis of its parent link's frame, so the
analytic link frames are :func:`soft_envs.geometry.chain_frames` of the joint values.

Both arms repeat one pattern per module (PETER) or segment (PCC): :func:`bend_section` builds
it and :func:`section_joint_values` gives its joint values. A model describes its body with
``model.chain()`` (a :class:`Chain`); :meth:`Chain.urdf` is the one URDF writer (plain
string building; loading it into PyBullet is :func:`soft_envs.sim.urdf.load_chain`).

Units: SI (m, kg, kg m², rad). Frames: every link frame is the frame of the joint that moves
it; a link's centre of mass and its visuals are given in that frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import chain_frames

JOINT_KINDS = ("revolute_z", "revolute_y", "prismatic_z")
_AXES = {"revolute_z": (0.0, 0.0, 1.0), "revolute_y": (0.0, 1.0, 0.0), "prismatic_z": (0.0, 0.0, 1.0)}

#: The one palette of the generated bodies: one colour per module/segment (cycled), the base
#: disc and PETER's module plates (RGBA in [0, 1]).
SECTION_COLOURS = ((0.85, 0.35, 0.2, 1.0), (0.2, 0.5, 0.85, 1.0), (0.3, 0.7, 0.35, 1.0), (0.8, 0.7, 0.2, 1.0))
BASE_COLOUR = (0.3, 0.3, 0.3, 1.0)
PLATE_COLOUR = (0.9, 0.9, 0.9, 1.0)

Vector3 = tuple[float, float, float]


def section_colour(index: int) -> tuple[float, float, float, float]:
    """The palette colour of module/segment ``index``."""
    return SECTION_COLOURS[index % len(SECTION_COLOURS)]


def cylinder_inertia(mass: float, radius: float, length: float) -> Vector3:
    """Diagonal inertia [kg m²] of a solid cylinder about its centre, axis along z."""
    side = mass * (3 * radius**2 + length**2) / 12.0
    return (side, side, 0.5 * mass * radius**2)


@dataclass(frozen=True)
class Cylinder:
    """A visual cylinder along the link's z axis: ``radius``, ``length`` [m], centre ``z`` [m], ``rgba``.

    (The generated bodies move in free space: they carry no collision shapes.)
    """

    radius: float
    length: float
    z: float = 0.0
    rgba: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)


@dataclass(frozen=True)
class Body:
    """The rigid body of a link: ``mass`` [kg], diagonal ``inertia`` [kg m²] about the centre of
    mass (link axes), centre of mass ``com`` [m] and ``visuals``, in the link frame."""

    mass: float = 0.0
    inertia: Vector3 = (0.0, 0.0, 0.0)
    com: Vector3 = (0.0, 0.0, 0.0)
    visuals: tuple[Cylinder, ...] = ()


@dataclass(frozen=True)
class Limits:
    """Joint limits: position ``lower``/``upper`` [rad or m], ``effort`` [N m or N], ``velocity`` [rad/s or m/s]."""

    lower: float
    upper: float
    effort: float
    velocity: float


@dataclass(frozen=True)
class ChainLink:
    """One link of a chain and the joint that attaches it to the previous link (or the base).

    ``joint`` is one of :data:`JOINT_KINDS`; the joint sits ``offset`` [m] along the parent's z.
    """

    name: str
    joint: str
    offset: float
    body: Body
    limits: Limits

    def __post_init__(self) -> None:
        if self.joint not in JOINT_KINDS:
            raise InvalidParameterError(f"joint kind must be one of {JOINT_KINDS}; got {self.joint!r}")


@dataclass(frozen=True)
class Chain:
    """A fixed ``base`` link (named ``"base"``) and a serial chain of ``links``, in joint order.

    PyBullet's joint index ``k`` is ``links[k]``'s joint. ``body_radius`` [m] is the radius of the
    capsules that make the body's collision envelope along its backbone (:meth:`backbone_links`;
    0: the body has none).
    """

    name: str
    base: Body
    links: tuple[ChainLink, ...]
    body_radius: float = 0.0

    def backbone_links(self) -> list[int]:
        """The links whose frame origins, after the base origin, are the backbone's points: every link
        whose joint sits ``offset > 0`` along its parent, then the last link (the tip) unless it is
        already the last of them. The body's collision envelope is capsules of :attr:`body_radius`
        on the segments between consecutive points (base origin first)."""
        points = [k for k, link in enumerate(self.links) if link.offset > 0.0]
        last = len(self.links) - 1
        if not points or (points[-1] != last and any(link.offset != 0.0 or link.joint == "prismatic_z"
                                                     for link in self.links[points[-1] + 1:])):
            points.append(last)
        return points

    @property
    def names(self) -> list[str]:
        """Link (and joint) names, in joint order."""
        return [link.name for link in self.links]

    @property
    def kinds(self) -> list[str]:
        """Joint kinds (:data:`JOINT_KINDS`), in joint order."""
        return [link.joint for link in self.links]

    @property
    def offsets(self) -> list[float]:
        """Joint offsets along the parent's z [m], in joint order."""
        return [link.offset for link in self.links]

    @property
    def masses(self) -> np.ndarray:
        """Link masses [kg], in joint order (the base's excluded)."""
        return np.array([link.body.mass for link in self.links])

    def frames(self, values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Link frames for joint ``values`` [rad or m], in the base frame.

        Returns positions ``(K, 3)`` [m], rotation matrices ``(K, 3, 3)`` and centre-of-mass
        positions ``(K, 3)`` [m].
        """
        positions, rotations = chain_frames(values, self.kinds, self.offsets)
        coms = np.array([link.body.com for link in self.links])
        return positions, rotations, positions + np.einsum("kij,kj->ki", rotations, coms)

    def urdf(self) -> str:
        """The URDF document of this chain (joint origins along the parent's z, no rotations)."""
        out = ['<?xml version="1.0"?>', f'<robot name="{self.name}">']
        out += _link_xml("base", self.base)
        for link in self.links:
            out += _link_xml(link.name, link.body)
        parent = "base"
        for link in self.links:
            kind = "prismatic" if link.joint == "prismatic_z" else "revolute"
            lim = link.limits
            out += [f'  <joint name="{link.name}" type="{kind}">',
                    f'    <parent link="{parent}"/><child link="{link.name}"/>',
                    f'    <origin xyz="{_vec((0.0, 0.0, link.offset))}" rpy="0.0 0.0 0.0"/>',
                    f'    <axis xyz="{_vec(_AXES[link.joint])}"/>',
                    f'    <limit lower="{_num(lim.lower)}" upper="{_num(lim.upper)}" effort="{_num(lim.effort)}" '
                    f'velocity="{_num(lim.velocity)}"/>',
                    "  </joint>"]
            parent = link.name
        out.append("</robot>")
        return "\n".join(out) + "\n"


def _num(x: float) -> str:
    return repr(float(x))


def _vec(v) -> str:
    return " ".join(_num(x) for x in v)


def _link_xml(name: str, body: Body) -> list[str]:
    ixx, iyy, izz = body.inertia
    out = [f'  <link name="{name}">', "    <inertial>",
           f'      <origin xyz="{_vec(body.com)}" rpy="0 0 0"/>',
           f'      <mass value="{_num(body.mass)}"/>',
           f'      <inertia ixx="{_num(ixx)}" iyy="{_num(iyy)}" izz="{_num(izz)}" ixy="0" ixz="0" iyz="0"/>',
           "    </inertial>"]
    for vis in body.visuals:
        out.append(f'    <visual><origin xyz="{_vec((0.0, 0.0, vis.z))}" rpy="0.0 0.0 0.0"/>'
                   f'<geometry><cylinder radius="{_num(vis.radius)}" length="{_num(vis.length)}"/></geometry>'
                   f'<material name="c_{name}"><color rgba="{_vec(vis.rgba)}"/></material></visual>')
    out.append("  </link>")
    return out


def bend_section(
    prefix: str,
    n_links: int,
    link_length: float,
    *,
    entry_offset: float,
    plane: Body,
    bend: Body,
    extension: Body,
    tilt: Body,
    end: Body,
    extension_name: str,
    end_name: str,
    revolute: Limits,
    prismatic: Limits,
) -> list[ChainLink]:
    """The links of one bending module/segment: ``Rz(φ), n × (Ry bend, prismatic), Ry half bend, Rz(−φ)``.

    Links in order: ``{prefix}_plane`` (revolute z, ``entry_offset`` [m] above the previous
    link), then ``n_links`` pairs ``{prefix}_bend{k}`` (revolute y; at the previous pair's end,
    ``link_length`` [m] up, except the first) and ``{prefix}_{extension_name}{k}`` (prismatic
    z), ``{prefix}_tilt`` (revolute y, ``link_length`` above the last extension) and
    ``{prefix}_{end_name}`` (revolute z). The bodies are given per role; see
    :func:`section_joint_values` for the joint values of a bend.
    """
    links = [ChainLink(f"{prefix}_plane", "revolute_z", entry_offset, plane, revolute)]
    for k in range(n_links):
        links.append(ChainLink(f"{prefix}_bend{k}", "revolute_y", 0.0 if k == 0 else link_length, bend, revolute))
        links.append(ChainLink(f"{prefix}_{extension_name}{k}", "prismatic_z", 0.0, extension, prismatic))
    links.append(ChainLink(f"{prefix}_tilt", "revolute_y", link_length, tilt, revolute))
    links.append(ChainLink(f"{prefix}_{end_name}", "revolute_z", 0.0, end, revolute))
    return links


def section_joint_values(phi: float, theta: float, extension: float, n_links: int,
                         out: np.ndarray | None = None) -> np.ndarray:
    """Joint values of a :func:`bend_section` bent by ``theta`` [rad] in the plane ``phi`` [rad].

    ``[φ, θ/2n, e, θ/n, e, …, θ/n, e, θ/2n, −φ]`` (``2 n_links + 3`` values) with every
    prismatic joint extended by ``extension`` [m]: the bends make ``Rz(φ) Ry(θ) Rz(−φ)`` and
    put every link along the arc's tangent at its middle. Written into ``out`` when given.
    """
    m = n_links
    row = np.empty(2 * m + 3) if out is None else out
    row[0] = phi
    row[1] = theta / (2 * m)
    row[3:2 * m + 1:2] = theta / m
    row[2:2 * m + 2:2] = extension
    row[2 * m + 1] = theta / (2 * m)
    row[2 * m + 2] = -phi
    return row


# ---------------------------------------------------------------------------------------------
# The backbone of a chain and its Jacobians (the body's collision envelope)
# ---------------------------------------------------------------------------------------------
def point_jacobian(chain: Chain, values: Sequence[float] | np.ndarray,
                   links: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frame origins of ``links`` and their Jacobians with respect to the joint ``values``.

    From the chain's joint axes: joint ``j`` moves the origin ``p`` of a link at or after ``j`` by
    ``e_j × (p − o_j)`` per radian (revolute; ``e_j`` its axis and ``o_j`` its origin, the link
    ``j`` frame's, in the base frame) or ``e_j`` per metre (prismatic).

    Returns the points ``(P, 3)`` [m], their Jacobians ``(P, 3, K)`` [m per rad or m], and every
    link's frame positions ``(K, 3)`` and rotations ``(K, 3, 3)`` (base frame).
    """
    positions, rotations = chain_frames(values, chain.kinds, chain.offsets)
    index = np.asarray(links, dtype=int)
    points = positions[index]
    axes = np.einsum("kij,kj->ki", rotations, np.array([_AXES[kind] for kind in chain.kinds]))
    prismatic = np.array([kind == "prismatic_z" for kind in chain.kinds])
    # (P, K, 3): e_j × (p − o_j), or e_j for a prismatic joint; zero for joints after the point's link.
    columns = np.cross(axes[None, :, :], points[:, None, :] - positions[None, :, :])
    columns[:, prismatic] = axes[prismatic][None]
    columns *= (np.arange(len(chain.links))[None, :] <= index[:, None])[..., None]
    return points, columns.transpose(0, 2, 1), positions, rotations


def backbone_points(chain: Chain, values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The backbone's points ``(P, 3)`` [m, base frame] for joint ``values``: the base origin, then
    the frame origins of :meth:`Chain.backbone_links`."""
    positions, _ = chain_frames(values, chain.kinds, chain.offsets)
    return np.concatenate((np.zeros((1, 3)), positions[chain.backbone_links()]))


def backbone_jacobian(chain: Chain, values: Sequence[float] | np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The backbone's points ``(P, 3)`` [m] and ``∂points/∂values`` ``(P, 3, K)`` (the base
    origin's row zero), with every link's frame positions ``(K, 3)`` and rotations ``(K, 3, 3)``
    (:func:`point_jacobian` of :meth:`Chain.backbone_links`)."""
    links = chain.backbone_links()
    points, jac, positions, rotations = point_jacobian(chain, values, links)
    n_joints = len(chain.links)
    return (np.concatenate((np.zeros((1, 3)), points)), np.concatenate((np.zeros((1, 3, n_joints)), jac)),
            positions, rotations)


#: Below this bend ``|θ|`` [rad] :func:`bend_section_jacobian` takes the straight section's limit.
STRAIGHT_BEND = 1e-7


def bend_section_jacobian(jac: np.ndarray, points: np.ndarray, point_links: np.ndarray, positions: np.ndarray,
                          rotations: np.ndarray, values: np.ndarray, first: int, n_links: int,
                          d_extension: tuple[float, float]) -> np.ndarray:
    """Columns ``∂points/∂(ℓ, a, b)`` ``(P, 3, 3)`` of one :func:`bend_section` (joints ``first`` …
    ``first + 2 n_links + 2``) whose joint values are :func:`section_joint_values` of
    ``(φ, θ, e(ℓ, θ))`` (``φ = values[first]``, ``θ = 2 n_links values[first + 1]``), with
    ``a = θ cos φ``, ``b = θ sin φ`` the smooth bend coordinates.

    ``jac`` ``(P, 3, K)`` is ``∂points/∂values`` (:func:`point_jacobian`; ``point_links`` the link
    of every point, −1 for the base origin), ``positions``/``rotations`` the link frames.
    ``d_extension = (∂e/∂ℓ, ∂e/∂θ)`` is the derivative of every prismatic value ``e``. The chain rule
    through ``(θ, φ)`` (``∂θ/∂a = cos φ``, ``∂φ/∂a = −sin φ/θ``, …) is singular at ``θ = 0``
    although the points are smooth there: below :data:`STRAIGHT_BEND` the columns are its limit,
    the bends as rotations about the section's fixed axes ``R₀ e_y`` (for ``a``) and ``−R₀ e_x``
    (for ``b``), ``R₀`` the section's entry frame (before ``Rz(φ)``; relative error ``O(θ)``).
    """
    m = n_links
    bends = first + 1 + 2 * np.arange(m + 1)  # the revolute-y joints: the m bends and the tilt
    weights = np.full(m + 1, 1.0 / m)
    weights[0] = weights[-1] = 0.5 / m  # θ/2m, θ/m, …, θ/m, θ/2m
    extensions = first + 2 + 2 * np.arange(m)
    end = first + 2 * m + 2
    phi, theta = float(values[first]), 2 * m * float(values[first + 1])
    out = np.empty(jac.shape[:2] + (3,))
    d_ext = jac[:, :, extensions].sum(axis=-1)
    out[:, :, 0] = d_ext * d_extension[0]
    c, s = np.cos(phi), np.sin(phi)
    if abs(theta) >= STRAIGHT_BEND:
        d_theta = jac[:, :, bends] @ weights + d_ext * d_extension[1]
        d_phi = jac[:, :, first] - jac[:, :, end]
        out[:, :, 1] = c * d_theta - (s / theta) * d_phi
        out[:, :, 2] = s * d_theta + (c / theta) * d_phi
        return out
    entry = rotations[first] @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])  # R₀ = R Rz(−φ)
    for column, axis in ((1, entry[:, 1]), (2, -entry[:, 0])):
        total = np.zeros(jac.shape[:2])
        for joint, weight in zip(bends.tolist(), weights.tolist()):
            moved = point_links >= joint
            total[moved] += weight * np.cross(axis, points[moved] - positions[joint])
        out[:, :, column] = total
    return out
