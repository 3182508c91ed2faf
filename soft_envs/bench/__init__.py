"""Benchmarks behind ``soft-envs bench``: each module returns a markdown section.

Harness code on top of the layers: benches may use every layer (models, bodies, envs, agents).
A bench module ``soft_envs.bench.<name>`` defines ``TITLE`` and
``run(full: bool, seed: int, plot_dir: str | None) -> str`` (markdown tables, figures in SI
or in the papers' mm/ms). ``soft-envs bench NAME --update BENCHMARKS.md`` rewrites only that
bench's section (between ``<!-- bench:NAME -->`` markers) with the machine it ran on.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import re
import time

from soft_envs.exceptions import InvalidParameterError

# The report helpers live in soft_envs.report (evaluate and demos use them too); re-exported for the benches.
from soft_envs.report import markdown_table, pyplot, save_figure  # noqa: F401

# name -> module; a bench whose module is not installed is listed but skipped.
BENCHES: dict[str, str] = {
    "peter": "soft_envs.bench.peter",
    "nn": "soft_envs.bench.neural",
    "pcc": "soft_envs.bench.pcc",
    "quadruped": "soft_envs.bench.quadruped",
    "ik": "soft_envs.bench.chain_ik",
    "hexapod": "soft_envs.bench.hexapod",
    "reliability": "soft_envs.bench.reliability",
    "realism": "soft_envs.bench.realism",
    "learn_on_robot": "soft_envs.bench.learn_on_robot",
    "evaluate": "soft_envs.bench.evaluation",
    "rl": "soft_envs.bench.rl",
    "learnability": "soft_envs.bench.learnability",
    "learned": "soft_envs.bench.learned",
    "loop_options": "soft_envs.bench.loop_options",
    "convergence": "soft_envs.bench.convergence",
    "plausibility": "soft_envs.bench.plausibility",
    "batched": "soft_envs.bench.batched",
    "vector": "soft_envs.bench.vector",
    "learner": "soft_envs.bench.learner",
    "contact": "soft_envs.bench.contact",
    "startup": "soft_envs.bench.startup",
}


def available() -> list[str]:
    """Bench names whose module is installed."""
    return [name for name, mod in BENCHES.items() if importlib.util.find_spec(mod) is not None]


def load(name: str):
    """The bench module called ``name``."""
    if name not in BENCHES:
        raise InvalidParameterError(f"unknown bench {name!r}; choose from {sorted(BENCHES)}")
    return importlib.import_module(BENCHES[name])


def machine() -> str:
    """One line naming the machine and the library versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    import scipy

    versions = f"Python {platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}"
    try:
        from importlib.metadata import version

        versions += f", pybullet {version('pybullet')}"
    except Exception:  # noqa: BLE001
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}; {versions}"


def speed_gauge() -> float:
    """Seconds of one numpy multiply of two 4-vectors (best of 5 × 20,000): the machine's speed as a
    Python caller sees it (0.2–0.3 µs on this project's usual 2-core machine; shared machines vary)."""
    import timeit

    import numpy

    a = numpy.ones(4)
    return min(timeit.repeat(lambda: a * a, number=20_000, repeat=5)) / 20_000


def section(name: str, title: str, body: str, command: str, seconds: float) -> str:
    """A bench section with its markers, the command that made it, the machine and its speed gauge."""
    stamp = time.strftime("%Y-%m-%d")
    return (f"<!-- bench:{name} -->\n## {title}\n\n"
            f"Command: `{command}` — {stamp}, {seconds:.0f} s on {machine()}; speed gauge (a numpy multiply of "
            f"two 4-vectors) {speed_gauge() * 1e6:.2f} µs.\n\n{body.strip()}\n"
            f"<!-- /bench:{name} -->")


_SECTION = re.compile(r"<!-- bench:(\w+) -->.*?<!-- /bench:\1 -->", re.S)


def read_section(path: str, name: str) -> str:
    """The section ``name`` of the markdown file ``path`` as it stands (``""`` if it has none)."""
    with open(path) as fh:
        match = next((m for m in _SECTION.finditer(fh.read()) if m.group(1) == name), None)
    return match.group(0) if match else ""


def update_file(path: str, name: str, text: str) -> None:
    """Replace (or add) the section ``name`` of the markdown file ``path``.

    The text before the first section is kept; sections are kept in the order of
    :data:`BENCHES` (unknown ones after), so the file reads the same however it was built.
    """
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    first = _SECTION.search(old)
    head = (old[:first.start()] if first else old).rstrip() + "\n"
    sections = {m.group(1): m.group(0) for m in _SECTION.finditer(old)}
    sections[name] = text
    order = [n for n in BENCHES if n in sections] + [n for n in sections if n not in BENCHES]
    with open(path, "w") as fh:
        fh.write(head + "".join("\n" + sections[n] + "\n" for n in order))
