"""What the single envs share besides the simulator (:mod:`soft_envs.envs.base`): the goal-reaching
envs' ``compute_reward`` contract (:class:`GoalConditionedMixin`), a single env's view of row 0 of
its arms (:class:`FirstRow`) and the check of ``reset``'s options (:func:`checked_reset_options`,
which the vector envs call too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from soft_envs.exceptions import InvalidParameterError


class FirstRow:
    """A single env's attribute that is row 0 of the like-named array of its arms (``self.arms``, the
    env logic written row-wise that it shares with its vector env): a copy, or the entry itself for
    an array of objects (a reason or ``None``)."""

    def __init__(self, doc: str = "") -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, env: Any, owner: Any = None) -> Any:
        if env is None:
            return self
        value = getattr(env.arms, self.name)[0]
        return value.copy() if isinstance(value, np.ndarray) else value

    def __set__(self, env: Any, value: Any) -> None:
        raise AttributeError(f"{self.name} is the arm's state, read-only (set it through env.arms)")


class GoalConditionedMixin:
    """The ``compute_reward`` contract of every goal-reaching env (with a :class:`SoftEnv`).

    With ``goal_conditioned=True`` the env's observation is a ``Dict`` with ``achieved_goal``
    and ``desired_goal`` and it has ``compute_reward(achieved_goal, desired_goal, info)``:
    the goal-dependent reward terms recomputed for (possibly relabelled) goals plus the
    goal-independent terms read from ``info`` (its ``reward_<name>`` entries, e.g.
    ``reward_action_rate``), summed in the step's order, vectorised over leading axes
    (``info`` a dict, a sequence / object array of dicts, or ``None`` for the goal terms
    alone). For the step's own float32 goals it equals the step's reward exactly. Without
    ``goal_conditioned`` there is no ``compute_reward`` at all (learners such as SB3 take
    its presence to mean a goal-conditioned env).

    The env fills:

    * ``goal_terms(achieved_goal, desired_goal)`` — ``{name: value}`` of the goal-dependent
      terms, vectorised over leading axes of the float arrays;
    * ``_observed_goals()`` — ``(achieved_goal, desired_goal)`` as the observation shows them
      (float32); the step computes its goal terms from these (:meth:`_step_goal_terms`).
    """

    goal_conditioned: bool = False

    def goal_terms(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> dict[str, Any]:
        """The reward's goal terms (named, as in ``info["reward_terms"]``) of achieved and desired
        goals, one or a batch (leading axes): the single env, ``compute_reward`` and the vector env
        all call this one function."""
        raise NotImplementedError

    def _observed_goals(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _step_goal_terms(self) -> dict[str, float]:
        """The goal terms of the current state, from the observed (float32) goals."""
        return {name: float(value) for name, value in self.goal_terms(*self._observed_goals()).items()}

    @property
    def compute_reward(self):
        """``compute_reward(achieved_goal, desired_goal, info)`` (see the class docstring)."""
        if not self.goal_conditioned:
            raise AttributeError("compute_reward exists only with goal_conditioned=True")
        return self._compute_reward

    def _compute_reward(self, achieved_goal, desired_goal, info) -> np.ndarray | float:
        goal_terms = self.goal_terms(np.asarray(achieved_goal), np.asarray(desired_goal))
        batch = np.shape(next(iter(goal_terms.values())))
        if info is None:
            infos = None
        elif isinstance(info, dict):
            infos = [info]
        else:
            infos = list(np.broadcast_to(np.asarray(info, dtype=object), batch).ravel())
        names = [key[len("reward_"):] for key in (infos[0] if infos else {}) if key.startswith("reward_")]
        names = [name for name in goal_terms if name not in names] + names
        terms = []
        for name in names:
            if name in goal_terms:
                terms.append(goal_terms[name])
            elif isinstance(info, dict):
                terms.append(info[f"reward_{name}"])
            else:
                terms.append(np.reshape([inf.get(f"reward_{name}", 0.0) for inf in infos or ()], batch))
        return sum(terms)


def checked_reset_options(options: Any, accepted: tuple[str, ...], owner: str, *,
                          robot_drawn: bool) -> dict[str, Any]:
    """``reset``'s ``options`` as a new dict, checked: a mapping of ``accepted`` names only, a
    boolean ``keep_robot`` that has a robot to keep (``robot_drawn``); ``owner`` names the env in
    the ``ValueError``."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidParameterError(f"reset options must be a dict; got {type(options).__name__}")
    unknown = sorted(str(name) for name in options if name not in accepted)
    if unknown:
        raise InvalidParameterError(f"unknown reset option(s) {unknown} for {owner}; it accepts: {', '.join(accepted)}")
    keep = options.get("keep_robot", False)
    if not isinstance(keep, (bool, np.bool_)):
        raise InvalidParameterError(f"reset option keep_robot must be True or False; got {keep!r}")
    if keep and not robot_drawn:
        raise InvalidParameterError(f"{owner}.reset(options={{'keep_robot': True}}) needs a previous reset: "
                                    "there is no robot to keep yet")
    return dict(options)
