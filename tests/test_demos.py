"""Every demo of ``soft-envs demo`` runs headless and returns rgb frames."""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs.demos import DEMOS


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_demo_returns_rgb_frames(name):
    frames = DEMOS[name](render_mode="rgb_array", steps=2, seed=0)
    assert len(frames) == 2
    assert frames[0].shape == (240, 320, 3) and frames[0].dtype == np.uint8
