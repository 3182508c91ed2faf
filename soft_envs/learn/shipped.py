"""The learned policies the package ships, held to their model cards.

A shipped policy (``soft_envs/agents/learned/policies/TASK.npz``, named after the
``soft-envs evaluate`` task it acts on) carries in its card the held-out results it was shipped
with. :func:`verify` runs it again on *fresh* held-out episodes (seeds from :data:`FRESH_SEED`, never
those of the card's evaluation nor of training) and refuses it when it falls short of its card by
more than chance allows: the fraction within 1 mm (or the card's success fraction) may be lower by
three binomial standard deviations of the fresh sample, at least 5 points. ``soft-envs bench
learned`` verifies every shipped policy; CI does on a few episodes. :func:`ship` copies a trained
policy (``soft-envs train-rl`` output) into the package under its task's name.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from soft_envs.agents.learned import MLPPolicy, shipped, shipped_names
from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.train import EVAL_SEED, EvalResult, evaluate_policy

FRESH_SEED = EVAL_SEED + 500_000  # first seed of a verification (neither training's nor the card's)
CARD_KEYS = ("env_id", "env_kwargs", "recipe", "seed", "timesteps", "evaluation", "soft_envs_version")


@dataclass
class Verdict:
    """A shipped policy against its card: the card's figure, the fresh one, and whether it holds."""

    name: str
    key: str  # the figure compared (``within_1mm``, or ``success``)
    card: float
    fresh: EvalResult
    tolerance: float

    @property
    def fresh_value(self) -> float:
        return float(self.fresh.summary()[self.key])

    @property
    def holds(self) -> bool:
        return self.fresh_value >= self.card - self.tolerance

    def line(self) -> str:
        verdict = "holds" if self.holds else "FAILS its card"
        return (f"{self.name}: {self.key} {100 * self.fresh_value:.0f} % on {self.fresh.episodes} fresh episodes, "
                f"card {100 * self.card:.0f} % (tolerance {100 * self.tolerance:.0f} points): {verdict}")


def tolerance(p: float, episodes: int) -> float:
    """How far below ``p`` a fresh fraction over ``episodes`` may fall by chance (3 σ, at least 0.05)."""
    return max(0.05, 3.0 * math.sqrt(max(p * (1.0 - p), 0.01) / episodes))


def verify(name: str, episodes: int = 20, first_seed: int = FRESH_SEED) -> Verdict:
    """Run the shipped policy ``name`` on ``episodes`` fresh held-out episodes against its card."""
    policy = shipped(name)
    missing = [key for key in CARD_KEYS if key not in policy.card]
    if missing:
        raise InvalidParameterError(f"shipped policy {name!r} has no {missing} in its card")
    card = policy.card["evaluation"]
    key = "within_1mm" if "within_1mm" in card and policy.card["env_id"].endswith("PeterReach-v0") else "success"
    fresh = evaluate_policy(policy, policy.card["env_kwargs"], episodes, seed=first_seed,
                            env_id=policy.card["env_id"])
    return Verdict(name, key, float(card[key]), fresh, tolerance(float(card[key]), episodes))


def verify_all(episodes: int = 20) -> list[Verdict]:
    """:func:`verify` of every shipped policy; :class:`InvalidParameterError` names those that fail."""
    verdicts = [verify(name, episodes) for name in shipped_names()]
    failing = [v.line() for v in verdicts if not v.holds]
    if failing:
        raise InvalidParameterError("shipped policies no longer meet their cards: " + "; ".join(failing))
    return verdicts


def ship(path: str | Path, task: str, folder: str | Path | None = None) -> Path:
    """Copy the policy at ``path`` (``.npz`` with its card) into the package as ``TASK.npz`` (+ ``.json``)."""
    policy = MLPPolicy.load(path)
    missing = [key for key in CARD_KEYS if key not in policy.card]
    if missing:
        raise InvalidParameterError(f"{path}: its card lacks {missing}; train it with soft-envs train-rl")
    target = Path(folder) if folder is not None else Path(str(resources.files("soft_envs.agents.learned"))) / "policies"
    policy.card["task"] = task
    out = policy.save(target / f"{task}.npz")
    json.loads(out.with_suffix(".json").read_text())  # written and readable
    source_curve = Path(path).with_suffix(".curve.json")
    if source_curve.exists():
        shutil.copyfile(source_curve, target / f"{task}.curve.json")
    return out
