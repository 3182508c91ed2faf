"""``soft-envs compile``: compile the package's kernels once, into the install location.

Every registered env at its default keywords, its main contact variants and the native soft vector
envs take their first step in a child process, two at a time; the kernels they compile land in the
install location's ``_kernels/`` folder (:mod:`soft_envs.kernel_cache`), where every later process
finds them whatever its ``HOME`` and cache folders are. A second pass checks that nothing is left
to compile (two children that compiled the same kernel at once may have kept one signature of it
each). With ``user=True`` the kernels go to the user's cache folder instead.

:func:`first_step` is also what ``soft-envs bench startup`` times, in fresh processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soft_envs.exceptions import InvalidParameterError

VECTOR_ARMS = 64  # sub-envs of the vector warm-ups (the startup goal's size)
#: The chain IK's kernels: explicit signatures, compiled when their module is imported.
CHAIN_IK_KERNELS = ("soft_envs.agents.ik.chain_kernels",)


@dataclass(frozen=True)
class Warmup:
    """One first step: ``gym.make(env_id, **kwargs)`` or, with ``num_envs``, ``gym.make_vec``; the
    modules ``imports`` imported before it (an empty ``env_id``: only them, e.g. kernels compiled at
    import for their explicit signatures)."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    num_envs: int | None = None
    imports: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if not self.env_id:
            return "import " + ", ".join(name.rsplit(".", 1)[-1] for name in self.imports)
        keywords = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        name = self.env_id.split("/")[-1]
        if self.num_envs:
            return f"{name} vector N={self.num_envs}" + (f" ({keywords})" if keywords else "")
        return name + (f" ({keywords})" if keywords else "")


def warmups() -> list[Warmup]:
    """What ``soft-envs compile`` runs: the soft envs first (their kernels take longest), then every
    other registered env, the obstacle variants, the 64-arm soft vector envs and the chain IK's kernels."""
    import soft_envs

    first = ["soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0", "soft_envs/HexapodPose-v0",
             "soft_envs/PCCPush-v0"]
    out = [Warmup(e) for e in first if e in soft_envs.ENV_IDS]
    out += [Warmup(e) for e in soft_envs.ENV_IDS if e not in first]
    out += [Warmup("soft_envs/PeterReach-v0", {"obstacles": 3}), Warmup("soft_envs/PCCReach-v0", {"obstacles": 3})]
    out += [Warmup(e, num_envs=VECTOR_ARMS) for e in ("soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0",
                                                       "soft_envs/PCCReach-v0", "soft_envs/PCCPush-v0")]
    out.append(Warmup("", imports=CHAIN_IK_KERNELS))
    return out


def _compiled_signatures() -> int:
    """Signatures of the package's kernels compiled (not loaded from a cache) in this process."""
    from numba.core.dispatcher import Dispatcher

    count = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("soft_envs") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Dispatcher) and value.py_func.__module__ == name:
                count += len(value.stats.cache_misses)
    return count


def first_step(env_id: str, kwargs: dict[str, Any] | None = None, num_envs: int | None = None,
               start: float | None = None, imports: tuple[str, ...] | list[str] = ()) -> dict[str, float]:
    """Import ``imports``, then build the env, reset it and step it once (uniform random actions, seed 0),
    in this process (an empty ``env_id``: the imports only).

    Returns ``import_s`` (from ``start``, default now, to ``import soft_envs`` done),
    ``first_step_s`` (the imports, make, reset, step) and ``compiled`` (kernel signatures compiled
    here, not loaded from a cache), ``stepped_at`` (``time.time()`` when the step returned)."""
    start = time.perf_counter() if start is None else start
    import importlib

    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)

    imported = time.perf_counter()
    for name in imports:
        importlib.import_module(name)
    env: Any = None
    if env_id and num_envs:
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **(kwargs or {}))
    elif env_id:
        env = gym.make(env_id, **(kwargs or {}))
    if env is not None:
        env.reset(seed=0)
        env.action_space.seed(0)
        env.step(env.action_space.sample())
    stepped = time.perf_counter()
    stepped_at = time.time()
    if env is not None:
        env.close()
    compiled = _compiled_signatures() if "numba" in sys.modules else 0
    return {"import_s": imported - start, "first_step_s": stepped - imported, "compiled": compiled,
            "stepped_at": stepped_at}


def run_child(warmup: Warmup, env: dict[str, str] | None = None, timeout: float = 1800.0) -> dict[str, Any]:
    """:func:`first_step` of ``warmup`` in a fresh interpreter (environment ``env``); adds
    ``to_first_step_s`` (from spawning the interpreter to the first step's return, as a user's
    script sees it) and ``wall_s`` (spawn to exit, closing the env and the interpreter included)."""
    code = ("import time; start = time.perf_counter(); import json, sys; from soft_envs.prepare import first_step; "
            "a = json.loads(sys.argv[1]); "
            "print('FIRST_STEP ' + json.dumps(first_step(*a[:3], start=start, imports=a[3])))")
    argument = json.dumps([warmup.env_id, warmup.kwargs, warmup.num_envs, list(warmup.imports)])
    import soft_envs

    # the child imports the package this process uses (its folder is the child's working directory,
    # first on a ``-c`` interpreter's path): a checkout's, or the installed one
    home = Path(soft_envs.__file__).resolve().parents[1]
    start, spawned_at = time.perf_counter(), time.time()
    done = subprocess.run([sys.executable, "-c", code, argument], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False, cwd=home)
    wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("FIRST_STEP ")]
    if done.returncode or not lines:
        raise RuntimeError(f"{warmup.label}: the child process failed (exit {done.returncode}):\n"
                           f"{done.stderr[-2000:]}")
    result = json.loads(lines[-1].split(" ", 1)[1])
    return {**result, "to_first_step_s": result["stepped_at"] - spawned_at, "wall_s": wall}


def clean(user: bool = False) -> list[str]:
    """Remove the install location's kernels (and with ``user``, the user cache's); the folders removed."""
    from soft_envs import kernel_cache

    removed = []
    for folder in [kernel_cache.PACKAGE_TIER] + ([kernel_cache.user_tier()] if user else []):
        if folder.is_dir():
            shutil.rmtree(folder)
            removed.append(str(folder))
    return removed


def compile_kernels(user: bool = False, jobs: int = 2,
                    report: Callable[[str], None] = print) -> tuple[int, float]:
    """Compile every warm-up's kernels (``jobs`` children at a time), then check that a second pass
    compiles nothing. Returns ``(signatures compiled in the check pass, seconds)``."""
    from soft_envs import kernel_cache
    from soft_envs.kernel_cache import TIER_VARIABLE

    if not 1 <= jobs <= 64:
        raise InvalidParameterError(f"jobs must be 1..64, got {jobs}")
    env = dict(os.environ)
    if user:
        env[TIER_VARIABLE] = "user"
        where = str(kernel_cache.user_tier())
    else:
        env.pop(TIER_VARIABLE, None)
        try:
            kernel_cache.PACKAGE_TIER.mkdir(exist_ok=True)
            probe = kernel_cache.PACKAGE_TIER / ".writable"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise InvalidParameterError(f"the install location {kernel_cache.PACKAGE_TIER.parent} is not writable "
                                        f"({exc}); `soft-envs compile --user` compiles into your cache folder") from exc
        where = str(kernel_cache.PACKAGE_TIER)
    start = time.perf_counter()
    items = warmups()
    report(f"compiling the kernels of {len(items)} first steps into {where} ({jobs} at a time)")

    def one(warmup: Warmup) -> dict[str, Any]:
        result = run_child(warmup, env)
        report(f"  {warmup.label:45s} {result['wall_s']:6.1f} s, {result['compiled']} signatures compiled")
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, items))
    report("checking: every first step again, nothing should compile")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        left = sum(r["compiled"] for r in pool.map(lambda w: run_child(w, env), items))
    seconds = time.perf_counter() - start
    report(f"done in {seconds:.0f} s; {left} signatures compiled in the check pass"
           + ("" if not left else " (run `soft-envs compile` again)"))
    return left, seconds
