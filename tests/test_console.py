"""Progress bars: one helper, on stderr, quiet unless stderr is a terminal."""

from __future__ import annotations

import ast
import io
import sys
from pathlib import Path

from soft_envs.console import progress

ROOT = Path(__file__).resolve().parents[1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_quiet_off_a_terminal_and_shown_on_one():
    assert not sys.stderr.isatty()  # pytest captures stderr
    bar = progress(range(3), desc="x")
    assert bar.disable and list(bar) == [0, 1, 2]
    terminal = _Terminal()
    shown = progress(range(3), desc="shown", file=terminal)
    assert not shown.disable and list(shown) == [0, 1, 2]
    shown.close()
    assert "shown" in terminal.getvalue()
    assert progress(range(3), enabled=False, file=_Terminal()).disable


def test_bars_go_through_console_progress():
    """No module makes a tqdm bar itself (a bar on stdout, or one shown in a pipe, is a bug)."""
    offenders = []
    for folder in ("soft_envs", "agents"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "console.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] == "tqdm"]
    assert not offenders, "use soft_envs.console.progress instead of tqdm in: " + ", ".join(offenders)
