"""Grouped, validated env configuration: one dataclass per env, its keywords in groups.

An env's configuration (:class:`EnvConfig`) is a dataclass whose fields are *groups*, each a
dataclass of keywords (the robot, its physics, its actuation, the task, the reward). ``gym.make``
keywords stay flat: :meth:`EnvConfig.split` sorts them into the one group that declares each (the
rest are the base env's, :class:`~soft_envs.envs.base.SoftEnv`), and every group is validated in
one place, :meth:`EnvConfig.validate`, before the env opens anything. Validation *resolves* the
keywords whose default depends on others (``None`` becomes the value the physics implies), so a
configuration holds what the env runs with. The env keeps it as :attr:`config` and pickles it as
one object; :meth:`EnvConfig.keywords` gives the flat keywords back, and
:meth:`EnvConfig.signature` the env's keyword signature (``inspect.signature(Env)``, IDE help).

>>> from soft_envs.envs.pcc_track_config import PCCTrackConfig
>>> config, rest = PCCTrackConfig.split({"kp": 60.0, "render_mode": "rgb_array"})
>>> config.actuation.kp, config.actuation.actuation, rest
(60.0, 'pressure', {'render_mode': 'rgb_array'})
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, ClassVar, TypeVar

from soft_envs.exceptions import InvalidParameterError

C = TypeVar("C", bound="EnvConfig")


class Configured:
    """An env attribute that is one keyword of the env's :attr:`config` (read there: the
    configuration is the one source of truth). Only a ``settable`` one may be set (the reward
    weights and thresholds, which act at every step: a curriculum, ``set_attr``); the value goes
    into the configuration, which is validated again (a refused value leaves it unchanged)."""

    def __init__(self, group: str, settable: bool = False) -> None:
        self.group = group
        self.settable = settable
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, env: Any, owner: type | None = None) -> Any:
        if env is None:
            return self
        return getattr(getattr(env.config, self.group), self.name)

    def __set__(self, env: Any, value: Any) -> None:
        if not self.settable:
            raise AttributeError(f"{self.name} is a keyword of the env's configuration: make a new env to change it")
        group = getattr(env.config, self.group)
        before = getattr(group, self.name)
        setattr(group, self.name, value)
        try:
            env.config.validate()
        except Exception:
            setattr(group, self.name, before)
            raise


def configured(group: str, count: int, settable: bool = False) -> tuple[Configured, ...]:
    """``count`` :class:`Configured` attributes of ``group``, for one line of a class body:
    ``gravity, payload = configured("physics", 2)``."""
    return tuple(Configured(group, settable) for _ in range(count))


class EnvConfig:
    """Base of an env's configuration dataclass (module docstring). A subclass declares its groups
    as fields with a ``default_factory`` (the group's class), the keywords its env takes by position
    (:attr:`POSITIONAL`), and checks them in :meth:`validate`."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every keyword (a clear :class:`~soft_envs.exceptions.InvalidParameterError`) and
        resolve the defaults that depend on other keywords (hook)."""

    @classmethod
    def group_classes(cls) -> dict[str, Any]:
        """``{group name: group dataclass}``."""
        return {f.name: f.default_factory for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    @classmethod
    def owners(cls) -> dict[str, str]:
        """``{keyword: the group that declares it}``."""
        return {k.name: name for name, group in cls.group_classes().items() for k in dataclasses.fields(group)}

    @classmethod
    def split(cls: type[C], keywords: dict[str, Any], config: C | None = None,
              args: tuple[Any, ...] = ()) -> tuple[C, dict[str, Any]]:
        """The configuration of ``keywords`` and positional ``args`` (those this env declares, over
        ``config``'s values or the defaults), validated, and the keywords left for the base env."""
        if config is not None and not isinstance(config, cls):
            raise InvalidParameterError(f"config must be a {cls.__name__}; got {type(config).__name__}")
        if len(args) > len(cls.POSITIONAL):
            raise TypeError(f"at most {len(cls.POSITIONAL)} positional arguments ({', '.join(cls.POSITIONAL)}); "
                            f"got {len(args)}")
        twice = [name for name in cls.POSITIONAL[:len(args)] if name in keywords]
        if twice:
            raise TypeError(f"got multiple values for argument {twice[0]!r}")
        keywords = dict(zip(cls.POSITIONAL, args)) | keywords
        owners = cls.owners()
        start = config.keywords() if config is not None else {}
        given = start | {k: v for k, v in keywords.items() if k in owners}
        groups = {name: group(**{k.name: given[k.name] for k in dataclasses.fields(group) if k.name in given})
                  for name, group in cls.group_classes().items()}
        return cls(**groups), {k: v for k, v in keywords.items() if k not in owners}

    @classmethod
    def of(cls: type[C], keywords: dict[str, Any]) -> C:
        """The configuration an env's constructor makes of its ``keywords`` (``config`` among them)."""
        rest = dict(keywords)
        return cls.split(rest, rest.pop("config", None))[0]

    def keywords(self) -> dict[str, Any]:
        """The flat ``gym.make`` keywords of this configuration."""
        return {k.name: getattr(getattr(self, name), k.name)
                for name, group in self.group_classes().items() for k in dataclasses.fields(group)}

    @classmethod
    def signature(cls, base: Any) -> inspect.Signature:
        """The env's signature: the :attr:`POSITIONAL` keywords first, then every other keyword of
        the groups, then ``base``'s (the base env's ``__init__``) keyword-only ones, and ``config``."""
        positional = cls.POSITIONAL
        defaults = {k.name: k.default for group in cls.group_classes().values() for k in dataclasses.fields(group)}
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=defaults[name])
                  for name in positional]
        params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                   for name, default in defaults.items() if name not in positional]
        params += [p for name, p in inspect.signature(base).parameters.items()
                   if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in defaults and name != "use_physics"]
        params.append(inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None))
        return inspect.Signature(params)
