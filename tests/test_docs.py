"""Every ```python block of README.md and docs/ runs, so the documentation cannot go stale.

The blocks of one file run in order in one namespace, like a notebook (a page's later blocks use
the names of its earlier ones), in a temporary working directory, as one test per file (so no
test depends on another having run first). A block is compiled with the markdown file as its
file name and its own line numbers, so a failure points at the line of the page.

A block that cannot run in a test (it trains for minutes, needs a display) is preceded by
``<!-- snippet: skip REASON -->``; the reason shows in pytest's summary (``-ra``). Shell blocks
(```bash) are not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_SKIP = re.compile(r"<!--\s*snippet:\s*skip\s+(?P<reason>.+?)\s*-->")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the first line of code
    code: str
    skip: str | None  # the reason, for a block marked to skip


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a markdown file, with the skip marker on the line before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, k = [], 0
    while k < len(lines):
        match = _FENCE.match(lines[k])
        if not match:
            k += 1
            continue
        fence, info, indent = match["fence"], match["info"].strip(), len(match["indent"])
        end = k + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if info.split()[:1] == ["python"]:
            previous = next((lines[j] for j in range(k - 1, -1, -1) if lines[j].strip()), "")
            skip = _SKIP.search(previous)
            code = "\n".join(line[indent:] for line in lines[k + 1:end])
            blocks.append(Block(path, k + 2, code, skip["reason"] if skip else None))
        k = end + 1
    return blocks


def _page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


def test_the_runner_finds_blocks_and_skip_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n<!-- snippet: skip trains for 10 min -->\n"
                    "```python\ntrain()\n```\n\n```bash\nls\n```\n\n- item\n\n  ```python\n  y = x + 1\n  ```\n")
    blocks = python_blocks(page)
    assert [(b.line, b.code, b.skip) for b in blocks] == [
        (4, "x = 1", None), (9, "train()", "trains for 10 min"), (19, "y = x + 1", None)]
    assert len(PAGES_WITH_CODE) >= 10  # README and the docs pages with examples


@pytest.mark.parametrize("path", PAGES_WITH_CODE, ids=_page_id)
def test_python_blocks_run(path: Path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__snippet__"}
    try:
        for block in python_blocks(path):
            if block.skip is None:
                # padded so that tracebacks give the markdown file's own line numbers
                source = "\n" * (block.line - 1) + block.code
                exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - the documentation's code
    finally:
        for value in list(namespace.values()):
            # environments left open (not the classes a block imported)
            if hasattr(value, "close") and hasattr(value, "unwrapped") and not isinstance(value, type):
                value.close()


SKIPPED = [b for p in PAGES_WITH_CODE for b in python_blocks(p) if b.skip]


@pytest.mark.parametrize("block", SKIPPED, ids=[f"{_page_id(b.path)}:{b.line}" for b in SKIPPED])
def test_blocks_marked_to_skip_say_why(block: Block):
    pytest.skip(f"{_page_id(block.path)}:{block.line} not run: {block.skip}")


def test_ci_runs_the_commands_the_readme_gives():
    """Each command of ``.ci/run`` under a comment that names the README is in the README verbatim."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() + [""]
    commands = []
    for k, line in enumerate(lines):
        if line.startswith("# ---") and "README" in line:  # its commands, one a line, are one README line
            end = next(j for j in range(k + 1, len(lines)) if not lines[j] or lines[j].startswith("#"))
            commands.append(" && ".join(lines[k + 1:end]))
    assert len(commands) >= 3  # lint and type check, tests, docs
    for command in commands:
        assert command in readme, f".ci/run runs {command!r}, which the README does not give"


def test_the_readme_is_short():
    """The README is read in five minutes; everything else is in docs/ (its "Where to read more")."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move a topic to its docs page"
