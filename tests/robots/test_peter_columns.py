"""The column form of PETER's tip (``Peter.forward_arms``, the vector envs' kinematics) against the
single-configuration path of arms built with each radius."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.robots.peter import Peter


@settings(max_examples=30, deadline=None)
@given(n_modules=st.integers(1, 4), kinematics=st.sampled_from(["pcc", "tilted"]),
       seed=st.integers(0, 2**31 - 1), per_arm_radius=st.booleans())
def test_forward_arms_equals_forward_of_each_arm(n_modules, kinematics, seed, per_arm_radius):
    rng = np.random.default_rng(seed)
    arm = Peter(n_modules, kinematics=kinematics)
    t = arm.sample(rng, 8)
    t[0] = 0.0  # straight modules: the arc's limits
    t[1, :3] = 1.3  # one straight module under a bent one
    radius = arm.radius * (1.0 + rng.uniform(-0.3, 0.3, 8)) if per_arm_radius else None
    tips = arm.forward_arms(t, radius)
    arms = [arm.with_parameters(radius=r) for r in radius] if per_arm_radius else [arm] * 8
    expected = np.array([a.forward(x) for a, x in zip(arms, t, strict=True)])
    assert tips.shape == (8, 3)
    np.testing.assert_allclose(tips, expected, rtol=0, atol=1e-15)
