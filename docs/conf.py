"""Sphinx configuration of the soft_envs documentation.

Build (the ``docs`` extra), warnings as errors:
``sphinx-build -W --keep-going -b html docs docs/_build/html``.

Why Sphinx + Furo + MyST (and not MkDocs Material + mkdocstrings): the docstrings are written
for Sphinx — reST with cross-reference roles (``:class:``, ``:func:``, ``:mod:``, ``:data:``)
and Google-style ``Args:`` sections, which autodoc + napoleon render as links and parameter
lists as they are; the environment pages are generated from the code by directives written in
Python in ``_ext/soft_envs_docs.py``, running inside the build so any drift is a build warning;
MyST keeps the pages in Markdown like README.md, and includes BENCHMARKS.md and CHANGELOG.md as
they are; Gymnasium, whose environment pages these follow, is built the same way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import soft_envs  # noqa: E402

project = "soft_envs"
author = "the soft_envs authors"
copyright = "the soft_envs authors"  # noqa: A001
release = version = soft_envs.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "soft_envs_docs",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
templates_path: list[str] = []

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 4  # GitHub-style anchors, so BENCHMARKS.md's own links work here too

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_inherit_docstrings = False  # Gymnasium's own docstrings (Env.step, …) are not ours to render
autodoc_mock_imports = ["torch", "stable_baselines3", "ray"]  # optional extras
napoleon_google_docstring = True
napoleon_numpy_docstring = True

html_theme = "furo"
html_title = f"soft_envs {release}"
html_static_path = ["_static"]
