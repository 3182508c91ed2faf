"""The soft arms' body descriptions (:mod:`soft_envs.robots.chain`): one section pattern, analytic
frames that match the kinematic models, and the URDF text written from the description."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from soft_envs.robots import PCCArm, Peter, PlanarPCCArm
from soft_envs.robots.chain import Body, ChainLink, Limits, section_joint_values

ARMS = [PCCArm(3, 6), PCCArm(2, 4, (0.05, 0.08)), PlanarPCCArm(4, 3), Peter(1, links_per_module=1),
        Peter(3, links_per_module=2, gap=0.02)]


def _sections(arm) -> tuple[int, int, str, str]:
    if isinstance(arm, Peter):
        return arm.n_modules, arm.links_per_module, "slice", "plate"
    return arm.n_segments, arm.links_per_segment, "link", "end"


@pytest.mark.parametrize("arm", ARMS, ids=repr)
def test_both_arms_repeat_one_section_pattern(arm):
    n, m, extension, end = _sections(arm)
    chain = arm.chain()
    prefix = "m" if isinstance(arm, Peter) else "s"
    expected_names, expected_kinds = [], []
    for i in range(n):
        expected_names.append(f"{prefix}{i}_plane")
        for k in range(m):
            expected_names += [f"{prefix}{i}_bend{k}", f"{prefix}{i}_{extension}{k}"]
        expected_names += [f"{prefix}{i}_tilt", f"{prefix}{i}_{end}"]
        expected_kinds += ["revolute_z"] + ["revolute_y", "prismatic_z"] * m + ["revolute_y", "revolute_z"]
    assert chain.names == expected_names
    assert chain.kinds == expected_kinds
    assert len(arm.body_joint_positions(np.zeros(arm.n_dof))) == len(chain.links)


def test_section_joint_values_bend_the_section_by_theta_in_the_plane_phi():
    values = section_joint_values(0.4, 0.9, 0.001, 3)
    np.testing.assert_allclose(values, [0.4, 0.15, 0.001, 0.3, 0.001, 0.3, 0.001, 0.15, -0.4], atol=1e-15)
    assert values[1:-1:2].sum() == pytest.approx(0.9)


@pytest.mark.parametrize("arm", [a for a in ARMS if not isinstance(a, Peter)], ids=repr)
def test_pcc_chain_frames_end_at_the_model_tip(arm):
    rng = np.random.default_rng(1)
    for c in [np.zeros(arm.n_dof), *arm.sample(rng, 5)]:
        positions, rotations, _ = arm.link_frames(c)
        np.testing.assert_allclose(positions[-1], arm.forward(c), atol=1e-12)
        np.testing.assert_allclose(rotations[-1], arm.tip_rotation(c), atol=1e-12)
        # every bend joint and every segment end lies on the model's link polygon
        joints = [k for k, name in enumerate(arm.chain().names) if "_bend" in name or name.endswith("_end")]
        polygon, m = arm.link_points(c), arm.links_per_segment
        expected = np.concatenate([polygon[i * m:(i + 1) * m + 1] for i in range(arm.n_segments)])
        np.testing.assert_allclose(positions[joints], expected, atol=1e-12)
    # m links of (segment mass / m − hinge) and m + 3 hinges of 1e-3 × (segment mass / m) each
    m = arm.links_per_segment
    assert arm.chain().masses.sum() == pytest.approx(arm.n_segments * arm.segment_mass * (1 + 3e-3 / m))


@pytest.mark.parametrize("arm", [a for a in ARMS if isinstance(a, Peter)], ids=repr)
def test_peter_chain_plates_are_the_pcc_module_tops(arm):
    arm = arm.with_kinematics("pcc")
    rng = np.random.default_rng(2)
    plates = [k for k, name in enumerate(arm.chain().names) if name.endswith("_plate")]
    for t in [np.zeros(arm.n_dof), np.full(arm.n_dof, 2.0), *arm.sample(rng, 5)]:
        positions, rotations = arm.link_frames(t)
        np.testing.assert_allclose(positions[plates], arm.module_points(t), atol=1e-12)
    assert arm.chain(payload=0.5).masses.sum() == pytest.approx(arm.n_modules * arm.module_mass + 0.5)


@pytest.mark.parametrize("arm", ARMS, ids=repr)
def test_urdf_text_is_the_chain_description(arm):
    chain = arm.chain()
    root = ET.fromstring(arm.urdf())
    links = {el.get("name"): el for el in root.findall("link")}
    assert list(links) == ["base", *chain.names]
    joints = root.findall("joint")
    assert [j.get("name") for j in joints] == chain.names
    parent = "base"
    for joint, link in zip(joints, chain.links):
        assert joint.find("parent").get("link") == parent and joint.find("child").get("link") == link.name
        kind = {"revolute_z": ("revolute", "0.0 0.0 1.0"), "revolute_y": ("revolute", "0.0 1.0 0.0"),
                "prismatic_z": ("prismatic", "0.0 0.0 1.0")}[link.joint]
        assert (joint.get("type"), joint.find("axis").get("xyz")) == kind
        assert [float(v) for v in joint.find("origin").get("xyz").split()] == [0.0, 0.0, link.offset]
        limit = joint.find("limit")
        assert float(limit.get("lower")) == link.limits.lower and float(limit.get("upper")) == link.limits.upper
        inertial = links[link.name].find("inertial")
        assert float(inertial.find("mass").get("value")) == link.body.mass
        assert [float(inertial.find("inertia").get(k)) for k in ("ixx", "iyy", "izz")] == list(link.body.inertia)
        assert [float(v) for v in inertial.find("origin").get("xyz").split()] == list(link.body.com)
        parent = link.name


def test_a_chain_link_needs_a_known_joint_kind():
    with pytest.raises(ValueError):
        ChainLink("l", "revolute_x", 0.0, Body(), Limits(-1.0, 1.0, 1.0, 1.0))
