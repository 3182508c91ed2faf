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

    PyBullet's joint index ``k`` is ``links[k]``'s joint.
    """

    name: str
    base: Body
    links: tuple[ChainLink, ...]

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
