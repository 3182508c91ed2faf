"""Structural checks of a URDF before anything (our parser, PyBullet) walks it.

PyBullet trusts the files it loads: two joints of the same name crash it inside ``loadURDF``, a
visual OBJ with a face but no vertices takes the process down, and a link with two parents
(``l0 → l1 → l2 → l1``) sends a parent walk round a cycle for ever. :func:`check_urdf` turns
each of these into a clear :class:`~soft_envs.exceptions.InvalidParameterError` (a
``ValueError``):

* unique, present link names and joint names;
* every joint's parent and child are links of the file; no link is the child of two joints;
  no cycle (the joints form a forest: walking parents from any link ends at a root);
* every mesh file exists (paths relative to the URDF's folder; a ``package://`` or
  ``file://`` prefix is stripped as PyBullet does) and parses: an OBJ has vertices and faces
  whose vertex indices exist, a binary STL has the size its triangle count
  says and at least one triangle, an ASCII STL has a facet, a COLLADA file is XML. Meshes are
  checked once per file version (path, size, modification time).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from functools import lru_cache

import numpy as np

from soft_envs.exceptions import InvalidParameterError

_PREFIXES = ("package://", "file://")
_FACE = re.compile(rb"^f[ \t]+(.+)$", re.M)
_AFTER_SLASH = re.compile(rb"/\S*")


def check_urdf(root: ET.Element, urdf_path: str) -> None:
    """Raise :class:`InvalidParameterError` unless the parsed URDF ``root`` (``<robot>``) is a
    well-formed tree whose meshes exist and parse (see the module docstring)."""
    links = _unique_names(root.findall("link"), "link", urdf_path)
    joints = root.findall("joint")
    _unique_names(joints, "joint", urdf_path)
    parent_of: dict[str, str] = {}
    for joint in joints:
        name = joint.get("name")
        ends = []
        for end in ("parent", "child"):
            element = joint.find(end)
            link = None if element is None else element.get("link")
            if link is None:
                raise InvalidParameterError(f"{urdf_path}: joint {name!r} has no <{end} link=...>")
            if link not in links:
                raise InvalidParameterError(f"{urdf_path}: joint {name!r} names {end} link {link!r}, which is "
                                            "not a link of the file")
            ends.append(link)
        parent, child = ends
        if child in parent_of:
            raise InvalidParameterError(f"{urdf_path}: link {child!r} is the child of two joints (its parents "
                                        f"{parent_of[child]!r} and {parent!r}): a URDF is a tree")
        parent_of[child] = parent
    for link in links:  # every parent walk must end at a root
        seen = {link}
        while link in parent_of:
            link = parent_of[link]
            if link in seen:
                raise InvalidParameterError(f"{urdf_path}: the joints form a cycle through link {link!r}: "
                                            "a URDF is a tree")
            seen.add(link)
    directory = os.path.dirname(os.path.abspath(urdf_path))
    for mesh in root.iter("mesh"):
        filename = mesh.get("filename")
        if not filename:
            raise InvalidParameterError(f"{urdf_path}: a <mesh> has no filename")
        check_mesh(_mesh_path(filename, directory), urdf_path)


def _unique_names(elements: list[ET.Element], kind: str, urdf_path: str) -> set[str]:
    names: set[str] = set()
    for element in elements:
        name = element.get("name")
        if not name:
            raise InvalidParameterError(f"{urdf_path}: a <{kind}> has no name")
        if name in names:
            raise InvalidParameterError(f"{urdf_path}: two {kind}s are named {name!r}; {kind} names must be unique")
        names.add(name)
    return names


def _mesh_path(filename: str, directory: str) -> str:
    for prefix in _PREFIXES:
        if filename.startswith(prefix):
            filename = filename[len(prefix):]
            break
    return filename if os.path.isabs(filename) else os.path.join(directory, filename)


def check_mesh(path: str, urdf_path: str = "") -> None:
    """Raise :class:`InvalidParameterError` unless the mesh file ``path`` exists and parses."""
    try:
        stat = os.stat(path)
    except OSError:
        raise InvalidParameterError(f"{urdf_path}: mesh file not found: {path}") from None
    problem = _mesh_problem(path, stat.st_size, stat.st_mtime_ns)
    if problem:
        raise InvalidParameterError(f"{urdf_path}: mesh {path} {problem}")


@lru_cache(maxsize=1024)
def _mesh_problem(path: str, size: int, mtime_ns: int) -> str:
    """What is wrong with a mesh file ("" if nothing); cached per file version."""
    extension = os.path.splitext(path)[1].lower()
    with open(path, "rb") as fh:
        data = fh.read()
    if extension == ".obj":
        n_vertices = data.count(b"\nv ") + data.count(b"\nv\t") + data.startswith((b"v ", b"v\t"))
        if n_vertices == 0:
            return "has no vertices"
        faces = _FACE.findall(data)
        if not faces:
            return "has no faces"
        # the vertex index of every corner ("v", "v/vt", "v//vn", "v/vt/vn"), 1-based or negative
        try:
            indices = np.array(_AFTER_SLASH.sub(b"", b" ".join(faces)).split(), dtype=np.int64)
        except ValueError:
            return "has a face whose corners are not vertex numbers"
        if indices.max() > n_vertices or indices.min() < -n_vertices or not np.all(indices):
            return f"has a face that names a vertex it does not have ({n_vertices} vertices)"
        return ""
    if extension == ".stl":
        if data[:5].lower() == b"solid" and b"facet" in data[:4096]:
            return ""  # ASCII STL
        if len(data) < 84:
            return "is too short for an STL file"
        n_triangles = int.from_bytes(data[80:84], "little")
        if n_triangles == 0 or len(data) != 84 + 50 * n_triangles:
            return f"is not a valid binary STL ({n_triangles} triangles announced, {len(data)} bytes)"
        return ""
    if extension == ".dae":
        try:
            ET.fromstring(data)
        except ET.ParseError as exc:
            return f"is not valid COLLADA XML ({exc})"
    return ""
