"""Report helpers shared by the harness modules (``bench``, ``evaluate``, ``demos``): markdown
tables and matplotlib figures.

Top layer, like its users; it imports nothing of the package, so any harness module may use it
without depending on another (``evaluate`` does not import ``bench`` for a table).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from soft_envs.exceptions import MissingDependencyError


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are written as given (format them before)."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def pyplot():
    """``matplotlib.pyplot`` on the headless Agg backend (the ``plot`` extra), or a clear error."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingDependencyError("--plot needs matplotlib: pip install 'soft_envs[plot]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, plot_dir: str, filename: str, dpi: int = 120) -> str:
    """Lay out, write ``plot_dir/filename`` and close ``fig``; returns the path."""
    os.makedirs(plot_dir, exist_ok=True)
    path = os.path.join(plot_dir, filename)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
