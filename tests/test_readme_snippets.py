"""The README's tested snippets: every ```python block right after a ``<!-- snippet: NAME -->`` line
runs as written (in a fresh namespace, in a temporary working directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = dict(re.findall(r"<!-- snippet: ([\w-]+) -->\n```python\n(.*?)```", README.read_text(), re.S))
SLOW = {"vector-sb3"}  # training runs


def test_the_marked_snippets_are_found():
    assert {"vector-envs", "vector-sb3"} <= set(SNIPPETS)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in SNIPPETS])
def test_readme_snippet_runs(name, tmp_path, monkeypatch):
    if "stable_baselines3" in SNIPPETS[name]:
        pytest.importorskip("stable_baselines3")
        import torch

        torch.set_num_threads(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(SNIPPETS[name], f"README.md:{name}", "exec"), {"__name__": f"readme_{name}"})
