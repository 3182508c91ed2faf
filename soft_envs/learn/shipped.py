"""The learned policies the package ships, held to their model cards.

A shipped policy (``soft_envs/agents/learned/policies/TASK.npz``, named after the
``soft-envs evaluate`` task it acts on) carries in its card the held-out results it was shipped
with. :func:`verify` runs it again on *fresh* held-out episodes (seeds from :data:`FRESH_SEED`, never
those of the card's evaluation nor of training) and refuses it when it falls short of its card by
more than chance allows: the fraction within 1 mm (or the card's success fraction, as for a reach
around obstacles, whose success needs no collision) may be lower by three binomial standard
deviations of the fresh sample, at least 5 points. A tracking policy
(PCCTrack) is held to its RMS tracking error: the fresh mean may exceed the card's by three
standard errors of the fresh sample, at least 10 %; a *residual* policy (``action_type="residual"``)
must also beat, on the same fresh episodes, the law it corrects (the zero residual,
:class:`ZeroAction`). A walking policy (QuadrupedWalk, a modulation of its card's ``base_gait``) is held
to the mean distance it walks: the fresh mean may fall below the card's by three standard errors of
the fresh sample, at least 10 %, and it may fall no more often than its card's falls allow (three
binomial standard deviations, at least 5 points). ``soft-envs bench learned`` verifies every shipped
policy; CI does on a few episodes. :func:`ship` copies a trained policy (``soft-envs train-rl``
output) into the package under its task's name; :func:`from_sb3` turns a Stable-Baselines3 PPO
policy into a numpy one.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from soft_envs.agents.learned import MLPPolicy, shipped, shipped_names
from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.train import EVAL_SEED, EvalResult, evaluate_policy

FRESH_SEED = EVAL_SEED + 500_000  # first seed of a verification (neither training's nor the card's)
CARD_KEYS = ("env_id", "env_kwargs", "recipe", "seed", "timesteps", "evaluation", "soft_envs_version")


class ZeroAction:
    """The policy that always acts 0: for a residual env, the law it corrects and nothing more
    (with ``action_mode="delta"`` too: the residual stays at its reset value, 0)."""

    def __init__(self, n_actions: int) -> None:
        self.n_actions = int(n_actions)

    def predict(self, obs: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        return np.zeros(self.n_actions, np.float32), None


@dataclass
class Verdict:
    """A shipped policy against its card: the card's figure, the fresh one, and whether it holds
    (``lower_is_better``: an error [m] that may not exceed the card's by more than ``tolerance``;
    ``mean_m`` otherwise: the distance walked [m], which may not fall below the card's by more;
    else a fraction that may not fall below it by more). ``law``: the fresh episodes of the
    law a residual policy corrects, which it must beat."""

    name: str
    key: str  # the figure compared (``within_1mm``, ``success``, ``rms_m`` or ``mean_m``)
    card: float
    fresh: EvalResult
    tolerance: float
    lower_is_better: bool = False
    law: EvalResult | None = None
    max_falls: float | None = None  # the walk: the largest fraction of fresh episodes that may end in a fall

    @property
    def fresh_value(self) -> float:
        return float(self.fresh.summary()[self.key])

    @property
    def law_value(self) -> float:
        return float(self.law.summary()[self.key]) if self.law is not None else float("nan")

    @property
    def higher_is_better_amount(self) -> bool:
        """The figure is an amount (the distance walked [m]), not a fraction."""
        return self.key == "mean_m" and not self.lower_is_better

    @property
    def holds(self) -> bool:
        if self.higher_is_better_amount:
            falls = float(self.fresh.summary()["terminated"])
            walks = self.fresh_value >= self.card - self.tolerance
            return walks and (self.max_falls is None or falls <= self.max_falls)
        if self.lower_is_better:
            beats_law = self.law is None or self.fresh_value < self.law_value
            return self.fresh_value <= self.card + self.tolerance and beats_law
        return self.fresh_value >= self.card - self.tolerance

    def show(self, value: float) -> str:
        """``value`` as the reports show it: an error in mm, a distance walked in m, a fraction in %."""
        if self.higher_is_better_amount:
            return f"{value:.3f} m"
        return f"{1e3 * value:.2f} mm" if self.lower_is_better else f"{100 * value:.0f} %"

    def line(self) -> str:
        verdict = "holds" if self.holds else "FAILS its card"
        law = f", the law it corrects {self.show(self.law_value)}" if self.law is not None else ""
        allowed = f"{1e3 * self.tolerance:.2f} mm" if self.lower_is_better else f"{100 * self.tolerance:.0f} points"
        if self.higher_is_better_amount:
            allowed = f"{self.tolerance:.3f} m"
            if self.max_falls is not None:
                allowed += f"; falls {100 * float(self.fresh.summary()['terminated']):.0f} %, at most " \
                           f"{100 * self.max_falls:.0f} %"
        return (f"{self.name}: {self.key} {self.show(self.fresh_value)} on {self.fresh.episodes} fresh episodes"
                f"{law}, card {self.show(self.card)} (tolerance {allowed}): {verdict}")


def tolerance(p: float, episodes: int) -> float:
    """How far below ``p`` a fresh fraction over ``episodes`` may fall by chance (3 σ, at least 0.05)."""
    return max(0.05, 3.0 * math.sqrt(max(p * (1.0 - p), 0.01) / episodes))


def error_tolerance(card: float, fresh: np.ndarray) -> float:
    """How far above ``card`` the mean of the fresh per-episode errors may lie by chance: three
    standard errors of the fresh sample, at least 10 % of the card's figure."""
    spread = float(np.std(fresh, ddof=1)) / math.sqrt(fresh.size) if fresh.size > 1 else float("inf")
    return max(0.1 * card, 3.0 * spread)


def verify(name: str, episodes: int = 20, first_seed: int = FRESH_SEED) -> Verdict:
    """Run the shipped policy ``name`` on ``episodes`` fresh held-out episodes against its card."""
    policy = shipped(name)
    missing = [key for key in CARD_KEYS if key not in policy.card]
    if missing:
        raise InvalidParameterError(f"shipped policy {name!r} has no {missing} in its card")
    card, env_id, env_kwargs = policy.card["evaluation"], policy.card["env_id"], policy.card["env_kwargs"]
    base_gait = str(policy.card.get("base_gait", "") or "")
    fresh = evaluate_policy(policy, env_kwargs, episodes, seed=first_seed, env_id=env_id, base_gait=base_gait)
    if env_id.endswith("QuadrupedWalk-v0"):  # the distance walked, higher is better, and no more falls
        card_mean, card_falls = float(card["mean_m"]), float(card["terminated"])
        return Verdict(name, "mean_m", card_mean, fresh, error_tolerance(card_mean, fresh.distances),
                       max_falls=card_falls + tolerance(card_falls, episodes))
    if env_id.endswith("PCCTrack-v0"):
        law = None
        if env_kwargs.get("action_type") == "residual":
            law = evaluate_policy(ZeroAction(policy.n_actions), env_kwargs, episodes, seed=first_seed, env_id=env_id)
        card_rms = float(card["rms_m"])
        return Verdict(name, "rms_m", card_rms, fresh, error_tolerance(card_rms, fresh.rms), True, law)
    reach = env_id.endswith("PeterReach-v0") and not env_kwargs.get("obstacles")  # (around obstacles: no collision)
    key = "within_1mm" if "within_1mm" in card and reach else "success"
    return Verdict(name, key, float(card[key]), fresh, tolerance(float(card[key]), episodes))


def verify_all(episodes: int = 20) -> list[Verdict]:
    """:func:`verify` of every shipped policy; :class:`InvalidParameterError` names those that fail."""
    verdicts = [verify(name, episodes) for name in shipped_names()]
    failing = [v.line() for v in verdicts if not v.holds]
    if failing:
        raise InvalidParameterError("shipped policies no longer meet their cards: " + "; ".join(failing))
    return verdicts


def ship(path: str | Path, task: str, folder: str | Path | None = None, **card: Any) -> Path:
    """Copy the policy at ``path`` (``.npz`` with its card) into the package as ``TASK.npz`` (+ ``.json``).

    ``card``: entries added to the model card (e.g. ``reproduce``, the command that trains it
    again). A residual PCC policy's card gains ``law``: the law it corrects (:class:`ZeroAction`)
    on the card's own evaluation episodes, next to the policy's figures."""
    policy = MLPPolicy.load(path)
    missing = [key for key in CARD_KEYS if key not in policy.card]
    if missing:
        raise InvalidParameterError(f"{path}: its card lacks {missing}; train it with soft-envs train-rl")
    target = Path(folder) if folder is not None else Path(str(resources.files("soft_envs.agents.learned"))) / "policies"
    policy.card |= card | {"task": task}
    evaluation, env_kwargs = policy.card["evaluation"], policy.card["env_kwargs"]
    if policy.card["env_id"].endswith("PCCTrack-v0") and env_kwargs.get("action_type") == "residual":
        law = evaluate_policy(ZeroAction(policy.n_actions), env_kwargs, int(evaluation["episodes"]),
                              seed=int(evaluation.get("first_seed", EVAL_SEED)), env_id=policy.card["env_id"])
        policy.card["law"] = law.summary() | {"first_seed": int(evaluation.get("first_seed", EVAL_SEED))}
    out = policy.save(target / f"{task}.npz")
    json.loads(out.with_suffix(".json").read_text())  # written and readable
    source_curve = Path(path).with_suffix(".curve.json")
    if source_curve.exists():
        shutil.copyfile(source_curve, target / f"{task}.curve.json")
    return out


def from_sb3(path: str | Path, card: dict[str, Any]) -> MLPPolicy:
    """The deterministic action of the Stable-Baselines3 PPO policy saved at ``path`` (a ``.zip`` of
    ``soft-envs train-rl``: its input standardisation, its policy network and action layer) as a
    numpy :class:`MLPPolicy` with model card ``card`` (needs the ``learn`` extra)."""
    import torch

    from soft_envs.learn.train import load_model
    from soft_envs.learn.vector_rollouts import activation_name, numpy_weights

    policy = load_model(path, "PPO").policy
    extractor = policy.features_extractor
    if not hasattr(extractor, "mean"):
        raise InvalidParameterError(f"{path}: not a policy with a standardised input (recipe standardize=True)")
    activation = activation_name(policy.activation_fn)
    layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)] + [policy.action_net]
    return MLPPolicy(numpy_weights(layers), extractor.mean.numpy().astype(float), extractor.std.numpy().astype(float),
                     activation, dict(card))
