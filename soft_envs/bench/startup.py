"""How long a new process takes to its first env step (``soft-envs bench startup``), cold and warm.

Each row is :func:`soft_envs.prepare.first_step` in fresh interpreters (spawn to exit, as a user's
script sees it: the interpreter, ``import soft_envs``, ``make``, ``reset`` and one ``step``):

* **cold**: ``HOME``, ``XDG_CACHE_HOME`` and ``NUMBA_CACHE_DIR`` point at new empty folders — a new
  container user, CI job or Ray worker. The kernels come from the install location's ``_kernels/``
  folder where ``soft-envs compile`` prepared it, else they are compiled in this process;
* **warm**: the same folders again, now holding whatever the cold run cached.

``--full`` adds the cold start of an install that was never prepared
(``SOFT_ENVS_KERNEL_CACHE=user``: every kernel compiled in the process), the cost
``soft-envs compile`` moves to the install.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from soft_envs.bench import markdown_table
from soft_envs.console import progress

TITLE = "Start-up: a new process to its first env step, cold and warm"
SINGLE_GOAL_S = 2.0  # cold, every registered env at its default keywords
VECTOR_GOAL_S = 5.0  # cold, a 64-arm soft vector env
WARM_GOAL_S = 1.0
UNPREPARED = ("soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0")  # --full: compiled from nothing


def _fresh_environment(folder: str, unprepared: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=folder, XDG_CACHE_HOME=os.path.join(folder, "cache"), NUMBA_CACHE_DIR=os.path.join(folder, "numba"))
    if unprepared:
        env["SOFT_ENVS_KERNEL_CACHE"] = "user"
    else:
        env.pop("SOFT_ENVS_KERNEL_CACHE", None)
    return env


def measure(warmup: Any, unprepared: bool = False, repeats: int = 1) -> dict[str, Any]:
    """Cold then warm :func:`~soft_envs.prepare.run_child` results of ``warmup`` in new empty cache folders;
    with ``repeats`` > 1, the median wall time of the warm runs."""
    from soft_envs.prepare import run_child

    with tempfile.TemporaryDirectory(prefix="soft_envs_startup_") as folder:
        env = _fresh_environment(folder, unprepared)
        cold = run_child(warmup, env)
        warm = sorted((run_child(warmup, env) for _ in range(repeats)),
                      key=lambda r: r["to_first_step_s"])[repeats // 2]
    return {"cold": cold, "warm": warm}


def run(full: bool = False, seed: int = 0, plot_dir: str | None = None) -> str:
    """The start-up section (``seed`` is unused: every first step is seeded 0)."""
    import soft_envs
    from soft_envs import kernel_cache
    from soft_envs.prepare import VECTOR_ARMS, Warmup

    items = [Warmup(e) for e in soft_envs.ENV_IDS]
    items += [Warmup(e, num_envs=VECTOR_ARMS) for e in ("soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0")]
    prepared = kernel_cache.PACKAGE_TIER.is_dir()
    rows, passed = [], 0
    for warmup in progress(items, desc="startup", unit="envs"):
        result = measure(warmup, repeats=3 if full else 1)
        cold, warm = result["cold"], result["warm"]
        goal = VECTOR_GOAL_S if warmup.num_envs else SINGLE_GOAL_S
        ok = cold["to_first_step_s"] <= goal and warm["to_first_step_s"] <= WARM_GOAL_S
        passed += ok
        rows.append([warmup.label, f"{cold['to_first_step_s']:.2f}",
                     f"{cold['import_s']:.2f} + {cold['first_step_s']:.2f}", str(cold["compiled"]),
                     f"{warm['to_first_step_s']:.2f}", f"{warm['wall_s']:.2f}", str(warm["compiled"]),
                     f"≤ {goal:g} / ≤ {WARM_GOAL_S:g}", "yes" if ok else "**no**"])
    table = markdown_table(["first step of", "cold [s]", "cold: import + make/reset/step [s]",
                            "compiled (cold)", "warm [s]", "warm, to exit [s]", "compiled (warm)",
                            "goal cold / warm [s]", "met"], rows)
    where = (f"the install location holds the compiled kernels (`soft-envs compile`: {kernel_cache.PACKAGE_TIER.name}/)"
             if prepared else "the install location is **not** prepared (no `soft-envs compile`): cold runs compile "
                              "every kernel they use")
    parts = [f"Fresh interpreters, seconds from spawning the interpreter to the first `step`'s return (`import "
             f"soft_envs`, `make`, `reset`, `step`); cold = `HOME`, `XDG_CACHE_HOME`, "
             f"`NUMBA_CACHE_DIR` new empty folders; warm = the same folders again. {where}. "
             f"{passed} of {len(rows)} rows meet both goals. 'compiled' counts kernel signatures compiled in the "
             "process rather than loaded.", table]
    if full:
        unprepared_rows = []
        for env_id in progress(UNPREPARED, desc="unprepared", unit="envs"):
            result = measure(Warmup(env_id), unprepared=True)
            unprepared_rows.append([env_id.split("/")[-1], f"{result['cold']['to_first_step_s']:.1f}",
                                    str(result["cold"]["compiled"]), f"{result['warm']['to_first_step_s']:.2f}"])
        parts.append("**An install never prepared** (`SOFT_ENVS_KERNEL_CACHE=user`, empty folders: the first process "
                     "compiles, the next loads from the user's cache)\n\n"
                     + markdown_table(["first step of", "cold [s]", "compiled", "next process [s]"], unprepared_rows))
    return "\n\n".join(parts)
