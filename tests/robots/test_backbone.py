"""The soft arms' body backbone (the collision envelope's capsule axes) and its analytic Jacobian.

``Peter.backbone`` / ``PCCArm.backbone`` are the base origin then the frame origins of
``chain().backbone_links()``; ``backbone_jacobian`` (and the PCC arm's smooth-coordinate one) are
checked against central finite differences at random configurations within the bounds, straight
sections (``θ = 0``, where ``(θ, φ)`` is singular) included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots import PCCArm, Peter, PlanarPCCArm
from soft_envs.robots.base import BodyBackbone
from soft_envs.robots.chain import STRAIGHT_BEND, backbone_points, point_jacobian

ARMS = {
    "peter-2": Peter(2),
    "peter-3-pcc": Peter(3, kinematics="pcc", links_per_module=2),
    "pcc-3x6": PCCArm(3, 6),
    "pcc-2x4": PCCArm(2, 4, [0.05, 0.08]),
    "planar-3x5": PlanarPCCArm(3, 5),
}


def _central_difference(function, q: np.ndarray, step: float = 1e-6) -> np.ndarray:
    columns = [(function(q + step * e) - function(q - step * e)) / (2 * step) for e in np.eye(q.size)]
    return np.stack(columns, axis=-1)


def _configuration(arm, unit: list[float], straight: list[bool]) -> np.ndarray:
    """A configuration within the bounds from numbers in [0, 1]; ``straight`` sections get θ = 0
    (PETER: the module's three legs equal)."""
    q = arm.lower + np.asarray(unit[:arm.n_dof]) * (arm.upper - arm.lower)
    step = 2 if isinstance(arm, PCCArm) and arm.planar else 3
    for i, flat in enumerate(straight[:arm.n_dof // step]):
        if flat:
            if isinstance(arm, Peter):
                q[3 * i:3 * i + 3] = q[3 * i]
            else:
                q[step * i + 1] = 0.0
    return q


def _inside(arm, q: np.ndarray) -> np.ndarray:
    """Keep room for the finite differences' steps inside the bounds."""
    margin = 1e-5 * (arm.upper - arm.lower)
    return np.clip(q, arm.lower + margin, arm.upper - margin)


@pytest.mark.parametrize("name", list(ARMS))
def test_backbone_points_are_the_chain_s(name):
    arm = ARMS[name]
    q = arm.sample(np.random.default_rng(0))
    chain = arm.chain()
    points = arm.backbone(q)
    assert isinstance(arm, BodyBackbone)
    assert arm.body_radius == chain.body_radius > 0
    assert points.shape == (len(chain.backbone_links()) + 1, 3)
    np.testing.assert_array_equal(points[0], 0.0)
    positions = arm.link_frames(q)[0]
    np.testing.assert_allclose(points[1:], positions[chain.backbone_links()], atol=1e-15)
    np.testing.assert_allclose(points, backbone_points(chain, arm.body_joint_positions(q)), atol=1e-15)
    tip = arm.with_kinematics("pcc").forward(q) if isinstance(arm, Peter) else arm.forward(q)
    np.testing.assert_allclose(points[-1], tip, atol=1e-12)  # the body's tip is the PCC tip


@pytest.mark.parametrize("name", list(ARMS))
@settings(max_examples=25)
@given(unit=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12),
       straight=st.lists(st.booleans(), min_size=4, max_size=4))
def test_backbone_jacobian_matches_central_differences(name, unit, straight):
    arm = ARMS[name]
    q = _inside(arm, _configuration(arm, unit, straight))
    points, jac = arm.backbone_kinematics(q)
    assert jac.shape == points.shape + (arm.n_dof,)
    np.testing.assert_allclose(points, arm.backbone(q), atol=1e-15)
    np.testing.assert_allclose(arm.backbone_jacobian(q), jac, atol=0)
    np.testing.assert_allclose(jac, _central_difference(arm.backbone, q), atol=2e-8 * max(1.0, np.abs(jac).max()))


@pytest.mark.parametrize("name", ["pcc-3x6", "pcc-2x4", "planar-3x5"])
@settings(max_examples=25)
@given(unit=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12),
       straight=st.lists(st.booleans(), min_size=4, max_size=4))
def test_smooth_backbone_jacobian_matches_central_differences(name, unit, straight):
    arm = ARMS[name]
    u = arm.to_smooth(_inside(arm, _configuration(arm, unit, straight)))
    u = arm.project_smooth(u * 0.999)

    def points(x: np.ndarray) -> np.ndarray:
        return arm.smooth_backbone_kinematics(x)[0]

    p, jac = arm.smooth_backbone_kinematics(u)
    np.testing.assert_allclose(p, arm.backbone(arm.from_smooth(u)), atol=1e-15)
    np.testing.assert_allclose(jac, _central_difference(points, u), atol=2e-8 * max(1.0, np.abs(jac).max()))


@pytest.mark.parametrize("theta", [0.0, 0.3 * STRAIGHT_BEND, 3 * STRAIGHT_BEND, 1e-4])
def test_the_straight_limit_is_continuous(theta):
    """Around ``θ = 0`` the limit columns and the chain rule through ``(θ, φ)`` agree."""
    arm = PCCArm(2, 3)
    u = np.array([0.002, theta * np.cos(0.7), theta * np.sin(0.7), -0.001, 0.4, -0.2])
    reference = arm.smooth_backbone_kinematics(np.array([0.002, 0.0, 0.0, -0.001, 0.4, -0.2]))[1]
    np.testing.assert_allclose(arm.smooth_backbone_kinematics(u)[1], reference, atol=2 * theta + 1e-9)  # O(θ)


def test_point_jacobian_of_a_small_chain_by_hand():
    """Revolute z, revolute y 0.1 m up, prismatic z: the origins' columns from the joint axes."""
    from soft_envs.robots.chain import Body, Chain, ChainLink, Limits

    limits = Limits(-1.0, 1.0, 1.0, 1.0)
    chain = Chain("toy", Body(), (ChainLink("a", "revolute_z", 0.0, Body(), limits),
                                  ChainLink("b", "revolute_y", 0.1, Body(), limits),
                                  ChainLink("c", "prismatic_z", 0.0, Body(), limits),
                                  ChainLink("d", "revolute_z", 0.2, Body(), limits)))
    values = np.array([0.3, 0.5, 0.05, 0.0])
    points, jac, _, _ = point_jacobian(chain, values, [1, 3])

    def origins(v: np.ndarray) -> np.ndarray:
        return point_jacobian(chain, v, [1, 3])[0]

    np.testing.assert_allclose(jac, _central_difference(origins, values), atol=1e-9)
    np.testing.assert_allclose(jac[0, :, 1:], 0.0)  # the link-1 origin sits on joint 1's axis
