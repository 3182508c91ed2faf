"""Sim-to-real perturbations: one keyword (``realism=``) on every environment.

An environment lists the ways its simulated robot may differ from the model a controller
plans with — a table of :class:`Perturbation` s (actuator gain scatter, leaks, command delay,
observation noise and latency, model-parameter errors, payload, ground friction…), each a
range with its unit, its *ideal* value (no perturbation) and where its *realistic* range comes
from (a seed's figure, or an assumption). :class:`Realism` resolves the user's keyword:

* ``"ideal"`` (every env's default): every perturbation at its ideal value — the env behaves
  exactly as without the keyword, and draws nothing;
* ``"realistic"``: every perturbation over its documented realistic range;
* a dict overrides single perturbations on top of a preset (``"preset"``, default ``"ideal"``):
  a number fixes a perturbation, a pair ``(low, high)`` gives its range, e.g.
  ``realism={"preset": "realistic", "observation_noise": 0.0}``.

At every ``reset`` the env draws one value per perturbation (per leg or chamber for the
per-element ones) uniformly from its range with :meth:`Realism.draw`, from a generator spawned
off the env's seeded ``np_random`` — so the same seed gives the same draws, and the task's own
draws (goals, starts) are the same under every preset. :class:`DelayedSensor` adds the
observation noise and latency to a measured quantity.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError

PRESETS = ("ideal", "realistic")


@dataclass(frozen=True)
class Perturbation:
    """One way the simulated robot differs from its nominal model.

    Attributes:
        name: the keyword (a key of ``realism=`` dicts and of ``info["realism"]``).
        unit: SI unit of the value (``"1"`` for factors and fractions).
        description: what the value does to the robot.
        realistic: the ``(low, high)`` range of the ``"realistic"`` preset.
        source: where that range comes from (a seed's figure, or "assumption: …").
        ideal: the value that means no perturbation.
        valid: the physically meaningful ``[low, high]`` any range must lie in.
        per_element: drawn once per actuator / sensor element instead of once per episode.
    """

    name: str
    unit: str
    description: str
    realistic: tuple[float, float]
    source: str
    ideal: float = 0.0
    valid: tuple[float, float] = (0.0, math.inf)
    per_element: bool = False


class Realism:
    """A resolved ``realism=`` setting over an env's perturbation table (module docstring).

    Args:
        table: the env's perturbations.
        realism: a preset name, or a dict of overrides (with an optional ``"preset"`` key).
        env: the env's name, for error messages.

    ``ValueError`` (:class:`~soft_envs.exceptions.InvalidParameterError`) names the valid
    presets or perturbations on an unknown name, and rejects ranges outside a perturbation's
    ``valid`` interval, reversed ranges and non-finite values.
    """

    def __init__(self, table: Sequence[Perturbation], realism: str | Mapping[str, Any] | None = "ideal",
                 *, env: str = "this environment") -> None:
        self.table = {p.name: p for p in table}
        if realism is None:
            realism = "ideal"
        if isinstance(realism, str):
            preset, overrides = realism, {}
        elif isinstance(realism, Mapping):
            overrides = dict(realism)
            preset = overrides.pop("preset", "ideal")
        else:
            raise InvalidParameterError(f"realism must be one of {PRESETS} or a dict; got {realism!r}")
        if preset not in PRESETS:
            raise InvalidParameterError(f"unknown realism preset {preset!r}; valid presets: {', '.join(PRESETS)}")
        unknown = sorted(set(overrides) - set(self.table))
        if unknown:
            raise InvalidParameterError(
                f"unknown realism parameter(s) {unknown} for {env}; valid ones: {', '.join(self.table)} "
                "(and 'preset')")
        self.preset = preset
        self._all_ideal: bool | None = None
        self.ranges: dict[str, tuple[float, float]] = {}
        for name, p in self.table.items():
            value = overrides[name] if name in overrides else (p.realistic if preset == "realistic" else p.ideal)
            self.ranges[name] = self._check_range(p, value, env)

    @staticmethod
    def _check_range(p: Perturbation, value: Any, env: str) -> tuple[float, float]:
        try:
            low, high = (value, value) if np.ndim(value) == 0 else value
            low, high = float(low), float(high)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"realism {p.name!r} takes a number or a (low, high) pair [{p.unit}]; got {value!r}") from None
        if not (math.isfinite(low) and math.isfinite(high)):
            raise InvalidParameterError(f"realism {p.name!r} must be finite; got {value!r}")
        if low > high:
            raise InvalidParameterError(f"realism {p.name!r}: low {low:g} > high {high:g}")
        if low < p.valid[0] or high > p.valid[1]:
            raise InvalidParameterError(
                f"realism {p.name!r} of {env} must lie in [{p.valid[0]:g}, {p.valid[1]:g}] {p.unit}; got {value!r}")
        return low, high

    def is_ideal(self, name: str | None = None) -> bool:
        """Whether perturbation ``name`` (default: every one, computed once: envs ask every step)
        is fixed at its ideal value."""
        if name is None:
            if self._all_ideal is None:
                self._all_ideal = all(self.is_ideal(n) for n in self.table)
            return self._all_ideal
        return self.ranges[name] == (self.table[name].ideal, self.table[name].ideal)

    def limit(self, name: str, maximum: float, why: str) -> None:
        """Reject a range of ``name`` above ``maximum`` (an env-specific bound, e.g. an episode)."""
        if self.ranges[name][1] > maximum:
            raise InvalidParameterError(f"realism {name!r} must be at most {maximum:g} "
                                        f"{self.table[name].unit} ({why}); got {self.ranges[name]}")

    def draw(self, rng: np.random.Generator, sizes: Mapping[str, int] | None = None) -> dict[str, Any]:
        """One value per perturbation (arrays of ``sizes[name]`` for per-element ones), in table order."""
        sizes = sizes or {}
        out: dict[str, Any] = {}
        for name, p in self.table.items():
            low, high = self.ranges[name]
            if p.per_element:
                out[name] = rng.uniform(low, high, size=int(sizes.get(name, 1)))
            else:
                out[name] = float(rng.uniform(low, high))
        return out

    def ideal_values(self, sizes: Mapping[str, int] | None = None) -> dict[str, Any]:
        """Every perturbation at its ideal value (the shapes :meth:`draw` gives)."""
        sizes = sizes or {}
        return {name: np.full(int(sizes.get(name, 1)), p.ideal) if p.per_element else float(p.ideal)
                for name, p in self.table.items()}

    def describe(self) -> str:
        """A markdown table of the perturbations: unit, realistic range, source."""
        rows = ["| parameter | unit | ideal | realistic | per | source |", "|---|---|---|---|---|---|"]
        for p in self.table.values():
            per = "element" if p.per_element else "episode"
            rows.append(f"| `{p.name}` | {p.unit} | {p.ideal:g} | {p.realistic[0]:g} – {p.realistic[1]:g} | "
                        f"{per} | {p.source} |")
        return "\n".join(rows)


def spawn_generator(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator derived from ``rng``'s seed without advancing ``rng``'s stream
    (so the task's draws are the same whatever the realism draws)."""
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError, AttributeError):  # a generator made without a SeedSequence
        return np.random.default_rng(rng.bit_generator.random_raw())


class DelayedSensor:
    """A measurement with additive Gaussian noise and a latency of whole sample periods.

    :meth:`read` is called once per sample (control step) with the true value; it returns the
    value ``latency_steps`` samples old plus ``N(0, noise_std²)`` per component (``noise_std``
    a number, or one per component).
    """

    def __init__(self, noise_std: float | np.ndarray = 0.0, latency_steps: int = 0,
                 rng: np.random.Generator | None = None) -> None:
        self.noise_std = np.asarray(noise_std, dtype=float)
        self.latency_steps = int(latency_steps)
        self.rng = rng
        self._history: deque[np.ndarray] = deque(maxlen=self.latency_steps + 1)

    def reset(self, value: np.ndarray) -> np.ndarray:
        """Start with ``value`` held for the whole latency; returns its measurement."""
        self._history.clear()
        value = np.array(value, dtype=float)
        self._history.extend(value.copy() for _ in range(self.latency_steps + 1))
        return self._measure(self._history[0])

    def read(self, value: np.ndarray) -> np.ndarray:
        """Measure the true ``value`` of this sample."""
        self._history.append(np.array(value, dtype=float))
        return self._measure(self._history[0])

    def _measure(self, value: np.ndarray) -> np.ndarray:
        if self.rng is None or not np.any(self.noise_std):
            return value.copy()
        return value + self.rng.normal(0.0, 1.0, size=value.shape) * self.noise_std
