"""soft_envs.geometry: the batched orientation error agrees with the single one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.geometry import (
    quaternion_error,
    quaternion_errors,
    quaternion_from_rotation_vector,
    quaternion_to_matrix,
)

rotation_vectors = st.lists(st.floats(-3.2, 3.2), min_size=3, max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(rotation_vectors, rotation_vectors), min_size=1, max_size=6))
def test_batched_quaternion_error_is_the_single_one(pairs):
    R_d = quaternion_to_matrix(quaternion_from_rotation_vector(np.array([a for a, _ in pairs])))
    R = quaternion_to_matrix(quaternion_from_rotation_vector(np.array([b for _, b in pairs])))
    eps, angles = quaternion_errors(R_d, R)
    for k in range(len(pairs)):
        eps_k, angle_k = quaternion_error(R_d[k], R[k])
        np.testing.assert_allclose(eps[k], eps_k, atol=1e-12)
        assert abs(angles[k] - angle_k) < 1e-12


def test_batched_quaternion_error_near_a_half_turn():
    # the far branch (trace ≤ −0.5): a rotation of π − 1e-9 about a tilted axis
    axis = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    R_d = quaternion_to_matrix(quaternion_from_rotation_vector((np.pi - 1e-9) * axis))[None]
    eps, angles = quaternion_errors(R_d, np.eye(3)[None])
    assert abs(angles[0] - (np.pi - 1e-9)) < 1e-9
    np.testing.assert_allclose(eps[0], np.sin(0.5 * (np.pi - 1e-9)) * axis, atol=1e-9)
