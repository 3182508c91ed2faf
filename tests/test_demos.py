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


def test_gallery_writes_looping_gifs_within_the_size_limit(tmp_path, monkeypatch):
    import imageio.v2 as imageio

    from soft_envs import demos

    monkeypatch.setattr(demos, "GALLERY", {"pcc": demos.Clip(steps=4, every=2)})
    sizes = demos.write_gallery(tmp_path, width=64, height=48, benchmarks=None)
    (path, size), = sizes.items()
    assert path.endswith("pcc.gif") and 0 < size <= demos.MAX_GIF_BYTES
    assert len(imageio.mimread(path)) == 2


def test_write_gif_halves_the_frames_until_it_fits(tmp_path):
    from soft_envs.demos import write_gif

    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (40, 40, 3), dtype=np.uint8) for _ in range(8)]  # noise: big
    one = write_gif(tmp_path / "one.gif", frames[:1], 0.1)
    size = write_gif(tmp_path / "all.gif", frames, 0.1, max_bytes=3 * one)
    assert size <= 3 * one


def test_realism_figure_from_the_benchmarks(tmp_path):
    pytest.importorskip("matplotlib")
    from pathlib import Path

    from soft_envs.demos import realism_figure

    benchmarks = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
    path = realism_figure(benchmarks, tmp_path / "gap.png")
    assert Path(path).stat().st_size > 1000


def test_the_gallery_names_its_gifs_after_the_demos():
    from pathlib import Path

    from soft_envs.demos import GALLERY, gif_name

    assert set(GALLERY) <= set(DEMOS) and "peter-obstacles" in DEMOS
    assert gif_name("peter-obstacles") == "peter_obstacles.gif" and gif_name("peter") == "peter.gif"
    shipped = Path(__file__).resolve().parents[1] / "docs" / "_static" / "demos"
    for name in GALLERY:
        assert (shipped / gif_name(name)).is_file(), f"soft-envs demo --gallery docs/_static writes {name}"


def test_the_obstacle_demo_shows_the_obstacles():
    frames = DEMOS["peter-obstacles"](render_mode="rgb_array", steps=1, seed=0)
    purple = np.all(np.abs(frames[0].astype(int) - (140, 51, 204)) < 60, axis=-1)  # OBSTACLE_RGBA, shaded
    assert np.count_nonzero(purple) > 10
