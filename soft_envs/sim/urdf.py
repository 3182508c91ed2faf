"""A minimal URDF writer for the parametric robots (generated from their model objects)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field


def _vec(v) -> str:
    return " ".join(repr(float(x)) for x in v)


@dataclass
class Visual:
    """A visual shape: ``geometry`` is URDF XML, e.g. ``<sphere radius="0.01"/>`` (the generated
    bodies move in free space, so they carry no collision shapes)."""

    geometry: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rgba: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)


@dataclass
class Link:
    """A URDF link; mass [kg], diagonal inertia [kg m²] about the centre of mass at ``com`` [m]."""

    name: str
    mass: float = 0.0
    inertia: tuple[float, float, float] = (0.0, 0.0, 0.0)
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    visuals: list[Visual] = field(default_factory=list)


@dataclass
class Joint:
    """A URDF joint; ``kind`` is ``fixed``, ``revolute``, ``prismatic``, ``continuous`` or ``spherical``."""

    name: str
    kind: str
    parent: str
    child: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    lower: float = 0.0
    upper: float = 0.0
    effort: float = 0.0
    velocity: float = 0.0


def urdf_text(robot_name: str, links: list[Link], joints: list[Joint]) -> str:
    """The URDF document of a tree of ``links`` connected by ``joints``."""
    out = ['<?xml version="1.0"?>', f'<robot name="{robot_name}">']
    for link in links:
        out.append(f'  <link name="{link.name}">')
        out.append("    <inertial>")
        out.append(f'      <origin xyz="{_vec(link.com)}" rpy="0 0 0"/>')
        out.append(f'      <mass value="{link.mass!r}"/>')
        ixx, iyy, izz = link.inertia
        out.append(f'      <inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{izz!r}" ixy="0" ixz="0" iyz="0"/>')
        out.append("    </inertial>")
        for vis in link.visuals:
            origin = f'<origin xyz="{_vec(vis.xyz)}" rpy="{_vec(vis.rpy)}"/>'
            out.append(
                f"    <visual>{origin}<geometry>{vis.geometry}</geometry>"
                f'<material name="c_{link.name}"><color rgba="{_vec(vis.rgba)}"/></material></visual>'
            )
        out.append("  </link>")
    for j in joints:
        out.append(f'  <joint name="{j.name}" type="{j.kind}">')
        out.append(f'    <parent link="{j.parent}"/><child link="{j.child}"/>')
        out.append(f'    <origin xyz="{_vec(j.xyz)}" rpy="{_vec(j.rpy)}"/>')
        if j.kind != "fixed":
            out.append(f'    <axis xyz="{_vec(j.axis)}"/>')
        if j.kind in ("revolute", "prismatic"):
            out.append(
                f'    <limit lower="{j.lower!r}" upper="{j.upper!r}" effort="{j.effort!r}" velocity="{j.velocity!r}"/>'
            )
        out.append("  </joint>")
    out.append("</robot>")
    return "\n".join(out) + "\n"


def load_urdf_text(client, text: str, **kwargs) -> int:
    """Load a URDF given as text into a PyBullet ``client``; returns the body id."""
    fd, path = tempfile.mkstemp(suffix=".urdf", prefix="soft_envs_")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        return client.loadURDF(path, **kwargs)
    finally:
        os.unlink(path)


def cylinder_inertia(mass: float, radius: float, length: float) -> tuple[float, float, float]:
    """Diagonal inertia [kg m²] of a solid cylinder about its centre, axis along z."""
    side = mass * (3 * radius**2 + length**2) / 12.0
    return (side, side, 0.5 * mass * radius**2)
