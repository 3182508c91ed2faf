"""Stateful fuzzing of every environment (hypothesis ``RuleBasedStateMachine``).

A *sequence* makes an env with a random keyword set (valid and invalid,
:mod:`soft_envs.bench.fuzz_keywords`) — a single env through ``gym.make`` or a vector env through
``gym.make_vec`` (whatever it returns for the id: Gymnasium's sync vector env, or a native one) —
then calls, in a random order: ``reset`` with and without a seed and options, ``step`` with
valid, clipped, extreme, NaN, inf and wrong-shape actions, ``render``, ``close`` and every call
again after ``close``, and *replays*: ``reset`` with the seed and options of an episode seen
earlier in the sequence and its actions again, in the same env (whatever ran in between) or in
a fresh one. The invariants, checked after every call:

* a call gives a valid result or a typed error (a :class:`~soft_envs.exceptions.SoftEnvsError`
  or Gymnasium's own), never another exception; a keyword set the constructor accepts resets
  and steps; a NaN, inf or wrong-shape action is refused, a valid or out-of-box one accepted;
* observations lie inside ``observation_space``, rewards are finite, the ``reward_<term>``
  entries of ``info`` sum to the reward;
* after ``close`` every call raises a typed error, and no PyBullet client is left connected —
  also when the constructor failed;
* **replay**: the same seed, options and actions give the same observations and rewards, bit
  for bit, whatever ran before.

A failure is a hypothesis falsifying example: the shortest sequence of calls that breaks an
invariant. :func:`fuzz` runs a budget of sequences and reports them.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from soft_envs.bench.fuzz_keywords import ACTION_KINDS, REJECTED_KINDS, keywords, make_action, reset_options
from soft_envs.exceptions import ClosedEnvironmentError, SoftEnvsError
from soft_envs.sim.bullet import pybullet

TYPED_ERRORS = (SoftEnvsError, gym.error.Error)
MAX_PYBULLET_CLIENTS = 1024  # PyBullet's table of connections


class InvariantError(AssertionError):
    """An invariant broken by a sequence (its message says which)."""


def connected_clients() -> int:
    """How many PyBullet connections this process holds."""
    return sum(pybullet.getConnectionInfo(physicsClientId=i)["isConnected"] for i in range(MAX_PYBULLET_CLIENTS))


@dataclass
class Counts:
    """What a fuzzing run did."""

    sequences: int = 0
    calls: int = 0
    steps: int = 0  # accepted steps (a vector step counts once per sub-env)
    replays: int = 0
    refused: int = 0  # typed errors (expected ones included)
    constructions_refused: int = 0


COUNTS = Counts()


@dataclass
class Episode:
    """The calls that make an episode: reset's seed and options, the accepted actions, and what they gave."""

    seed: int
    options: Any
    actions: list = field(default_factory=list)
    observations: list = field(default_factory=list)
    rewards: list = field(default_factory=list)


def _flat(obs: Any) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.ravel(np.asarray(obs[k], dtype=np.float64)) for k in sorted(obs)])
    return np.ravel(np.asarray(obs, dtype=np.float64))


class EnvMachine(RuleBasedStateMachine):
    """The fuzzer's state machine over ``ENV_IDS`` (single envs, or vector envs with ``VECTOR``)."""

    ENV_IDS: tuple[str, ...] = ()
    VECTOR = False

    def __init__(self) -> None:
        super().__init__()
        COUNTS.sequences += 1
        self.env = None
        self.env_id = ""
        self.kwargs: dict[str, Any] = {}
        self.closed = False
        self.baseline = connected_clients()
        self.episode: Episode | None = None  # the current episode, while it is replayable
        self.episodes: list[Episode] = []
        self.can_step = False
        self.num_envs, self.mode = 1, None
        self.fresh_replays = 0
        self.autoreset = np.zeros(1, dtype=bool)  # vector: the sub-envs that reset at the next step
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        # No cyclic garbage collection inside a sequence: an object that holds a PyBullet client
        # is freed at once or not at all, so a leaked client is found every time, not by chance.
        self._gc_was_enabled = gc.isenabled()
        gc.disable()

    # ------------------------------------------------------------------ helpers
    def _make(self):
        # Without Gymnasium's PassiveEnvChecker: in Gymnasium 1.4 it raises its own TypeError at the
        # first step when the first reset raised (its saved reset data stays None), after the step ran.
        # gym.make_vec builds its sub-envs from the spec, so the vector envs get a spec without it.
        spec = dataclasses.replace(gym.spec(self.env_id), disable_env_checker=True)
        if self.VECTOR:  # mode None: the env's native vector form where it has one, else Gymnasium's sync one
            return gym.make_vec(spec, num_envs=self.num_envs, vectorization_mode=self.mode, **self.kwargs)
        return gym.make(spec, **self.kwargs)

    def _call(self, what: str, fn, *, must_succeed: bool = False, must_refuse: bool = False):
        """``fn()``: its result, or ``None`` after a typed error; anything else is a defect."""
        COUNTS.calls += 1
        try:
            result = fn()
        except Exception as exc:
            if not (_typed(exc) or self._gymnasium_vector() and isinstance(exc, (ValueError, TypeError))):
                raise InvariantError(f"{what}: untyped {type(exc).__name__}: {exc}") from exc
            COUNTS.refused += 1
            if must_succeed:
                raise InvariantError(f"{what}: expected a result, got {type(exc).__name__}: {exc}") from exc
            return None
        if must_refuse:
            raise InvariantError(f"{what}: expected a typed error, got a result")
        return result

    def _gymnasium_vector(self) -> bool:
        """Whether the env is one of Gymnasium's own vector envs (which refuse a batch of the wrong
        size or a scalar with a plain ``ValueError`` / ``TypeError`` of their own, before any sub-env
        sees it)."""
        return self.VECTOR and isinstance(self.env, (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv))

    def _check_clients(self, when: str) -> None:
        now = connected_clients()
        if now != self.baseline:
            raise InvariantError(f"{when}: {now - self.baseline} PyBullet client(s) left connected")

    def _spaces(self):
        return self.env.observation_space

    def _check_obs(self, obs: Any, what: str) -> None:
        space = self._spaces()
        flat = _flat(obs)
        if not np.all(np.isfinite(flat)):
            where = np.flatnonzero(~np.isfinite(flat))[:8].tolist()
            raise InvariantError(f"{what}: observation has NaN/inf at {where}")
        if not space.contains(obs):
            raise InvariantError(f"{what}: observation outside observation_space: {_outside(space, obs)}")

    def _check_step(self, result, what: str) -> None:
        obs, reward, terminated, truncated, info = result
        self._check_obs(obs, what)
        rewards = np.atleast_1d(np.asarray(reward, dtype=np.float64))
        if not np.all(np.isfinite(rewards)):
            raise InvariantError(f"{what}: reward {reward!r} is not finite")
        for flag in (terminated, truncated):
            if not np.all(np.isin(np.asarray(flag), (True, False))):
                raise InvariantError(f"{what}: terminated/truncated {flag!r} not boolean")
        terms = [k for k in info if k.startswith("reward_")]
        if not self.VECTOR:
            total = math.fsum(float(info[k]) for k in terms) if terms else float(reward)
            if terms and not math.isclose(total, float(reward), rel_tol=1e-9, abs_tol=1e-12):
                named = [(k, info[k]) for k in terms]
                raise InvariantError(f"{what}: reward terms {named} sum to {total!r}, not {reward!r}")
            return
        for i in range(rewards.size):  # sub-envs whose info carries every term this step
            if terms and all(info.get(f"_{k}", np.ones(rewards.size, bool))[i] for k in terms):
                total = math.fsum(float(info[k][i]) for k in terms)
                if not math.isclose(total, rewards[i], rel_tol=1e-9, abs_tol=1e-12):
                    raise InvariantError(f"{what}: sub-env {i}: reward terms sum to {total!r}, not {rewards[i]!r}")

    def _action(self, kind: str, seed: int) -> Any:
        if not self.VECTOR:
            return make_action(kind, self.env.action_space.shape, seed)
        single = self.env.single_action_space.shape
        if kind in ("wrong_shape", "scalar"):
            return make_action(kind, (self.num_envs,) + single, seed)
        rows = [make_action("valid", single, seed + 1 + i) for i in range(self.num_envs)]
        rows[seed % self.num_envs] = np.asarray(make_action(kind, single, seed), dtype=np.float64) \
            if kind != "list" else make_action(kind, single, seed)
        return np.array(rows, dtype=np.float64)

    def _record(self, obs: Any, action: Any = None, reward: Any = None) -> None:
        if self.episode is None:
            return
        if action is not None:
            self.episode.actions.append(action)
            self.episode.rewards.append(np.asarray(reward, dtype=np.float64).copy())
        self.episode.observations.append(_flat(obs).copy())

    # ------------------------------------------------------------------ rules
    @initialize(data=st.data())
    def make(self, data) -> None:
        self.env_id = data.draw(st.sampled_from(self.ENV_IDS), label="env_id")
        self.kwargs = data.draw(keywords(self.env_id), label="kwargs")
        self.num_envs = data.draw(st.integers(1, 3), label="num_envs") if self.VECTOR else 1
        self.mode = data.draw(st.sampled_from((None, "sync")), label="vectorization_mode") if self.VECTOR else None
        self.env = self._call(f"make({self.env_id}, {self.kwargs})", self._make)
        if self.env is None:
            COUNTS.constructions_refused += 1
            self._check_clients("after a refused construction")
        elif data.draw(st.integers(0, 9), label="no reset at once") < 9:
            self.reset(data.draw(st.integers(0, 5), label="seed"), data)
            # a few steps at once too (hypothesis enables a random subset of the rules per sequence)
            kinds = data.draw(st.lists(st.sampled_from(ACTION_KINDS), max_size=4), label="first steps")
            for k, kind in enumerate(kinds):
                self._step(kind, 7919 * k)

    @precondition(lambda self: self.env is None)
    @rule(data=st.data())
    def make_another(self, data) -> None:
        """The constructor refused the last keyword set: another one."""
        self.make(data)

    @precondition(lambda self: self.env is not None and not self.closed)
    @rule(seed=st.one_of(st.none(), st.integers(0, 5), st.integers(0, 2**31 - 1)), data=st.data())
    def reset(self, seed, data) -> None:
        options = data.draw(reset_options(self.env_id), label="options")
        unknown = options is not None and "unknown_option" in options  # every env refuses an unknown option
        plain = options is None or not (set(options) & {"goal", "unknown_option"})
        result = self._call(f"reset(seed={seed}, options={options})",
                            lambda: self.env.reset(seed=seed, options=options), must_succeed=plain,
                            must_refuse=unknown)
        self.episode = None
        if result is None:
            self.can_step = False  # a refused reset leaves the env as it was; the episode is not replayable
            return
        self._check_obs(result[0], f"reset(seed={seed}, options={options})")
        self.can_step = True
        self.autoreset = np.zeros(self.num_envs, dtype=bool)
        if seed is not None:
            self.episode = Episode(seed, options)
            self.episodes.append(self.episode)
            self._record(result[0])

    @precondition(lambda self: self.env is not None and not self.closed)
    @rule(kinds=st.lists(st.sampled_from(ACTION_KINDS), min_size=1, max_size=6), seed=st.integers(0, 2**16))
    def step(self, kinds, seed) -> None:
        """A few steps, each with an action of its kind."""
        for k, kind in enumerate(kinds):
            self._step(kind, seed + k)

    def _step(self, kind: str, seed: int) -> None:
        action = self._action(kind, seed)
        what = f"step({kind} action)"
        if not self.can_step:  # before a reset: a typed error (ResetNeeded)
            self._call(what + " before reset", lambda: self.env.step(action), must_refuse=True)
            return
        rejected = kind in REJECTED_KINDS
        if rejected and self.VECTOR:  # a sub-env that autoresets at this step ignores its action
            bad_rows = range(self.num_envs) if kind in ("wrong_shape", "scalar") else [seed % self.num_envs]
            rejected = not all(self.autoreset[i] for i in bad_rows)
        result = self._call(what, lambda: self.env.step(action), must_succeed=kind not in REJECTED_KINDS,
                            must_refuse=rejected)
        if result is None:
            if self._gymnasium_vector():
                self.episode = None  # Gymnasium's vector envs step the sub-envs before a later one refuses
            return
        COUNTS.steps += self.num_envs
        self._check_step(result, what)
        self._record(result[0], action, result[1])
        if self.VECTOR:
            self.autoreset = np.logical_or(result[2], result[3])

    @precondition(lambda self: self.env is not None and not self.closed)
    @rule()
    def render(self) -> None:
        if self.VECTOR:
            return
        frame = self._call("render()", self.env.render, must_succeed=self.can_step)
        if frame is not None and self.env.unwrapped.render_mode == "rgb_array":
            shape = (self.env.unwrapped.height, self.env.unwrapped.width, 3)
            if not (isinstance(frame, np.ndarray) and frame.shape == shape and frame.dtype == np.uint8):
                got = f"{type(frame).__name__} {getattr(frame, 'shape', '')}"
                raise InvariantError(f"render(): a {got}, not uint8 {shape}")

    @precondition(lambda self: self.env is not None and self.episodes and not self.closed)
    @rule(data=st.data())
    def replay(self, data) -> None:
        """The same seed, options and actions again in this env: the same episode."""
        episode = data.draw(st.sampled_from(self.episodes), label="episode")
        self.autoreset = self._replay(self.env, episode, "replay")
        self.can_step = True
        self.episode = Episode(episode.seed, episode.options, list(episode.actions), list(episode.observations),
                               list(episode.rewards))
        self.episodes.append(self.episode)

    @precondition(lambda self: self.env is not None and self.fresh_replays < 2
                  and any(e.actions for e in self.episodes))
    @rule(data=st.data())
    def replay_in_a_fresh_env(self, data) -> None:
        self.fresh_replays += 1
        episode = data.draw(st.sampled_from([e for e in self.episodes if e.actions]), label="episode")
        fresh = self._call("make again", self._make, must_succeed=True)
        try:
            self._replay(fresh, episode, "replay in a fresh env")
        finally:
            fresh.close()

    def _replay(self, env, episode: Episode, what: str) -> np.ndarray:
        """Replay ``episode`` in ``env``; returns which sub-envs autoreset at the next step."""
        COUNTS.replays += 1
        obs, _ = self._call(f"{what}: reset(seed={episode.seed})",
                            lambda: env.reset(seed=episode.seed, options=episode.options), must_succeed=True)
        _compare(_flat(obs), episode.observations[0], f"{what}: reset(seed={episode.seed}, options={episode.options})")
        ended = np.zeros(self.num_envs, dtype=bool)
        for k, action in enumerate(episode.actions):
            obs, reward, terminated, truncated, _ = self._call(f"{what}: step {k + 1}", lambda a=action: env.step(a),
                                                               must_succeed=True)
            COUNTS.steps += self.num_envs
            _compare(_flat(obs), episode.observations[k + 1], f"{what}: observation after step {k + 1} of "
                     f"{len(episode.actions)} (seed {episode.seed})")
            _compare(np.asarray(reward, dtype=np.float64), episode.rewards[k], f"{what}: reward of step {k + 1}")
            ended = np.logical_or(terminated, truncated)
        return np.atleast_1d(ended)

    @precondition(lambda self: self.env is not None and not self.closed)
    @rule()
    def close(self) -> None:
        self._call("close()", self.env.close, must_succeed=True)
        self.closed = True
        self.can_step = False
        self._check_clients("after close()")

    @precondition(lambda self: self.closed)
    @rule(method=st.sampled_from(("step", "reset", "render", "close")))
    def call_after_close(self, method) -> None:
        if method == "close":  # closing again is harmless
            self._call("close() again", self.env.close, must_succeed=True)
            self._check_clients("after a second close()")
            return
        if self.VECTOR and method == "render":
            return
        calls = {"step": lambda: self.env.step(self._action("valid", 0)), "reset": lambda: self.env.reset(seed=0),
                 "render": self.env.render}
        try:
            calls[method]()
        except ClosedEnvironmentError:
            return
        except Exception as exc:
            if _typed(exc):
                return
            raise InvariantError(f"{method}() after close(): untyped {type(exc).__name__}: {exc}") from exc
        if not (self.VECTOR and method == "reset"):
            raise InvariantError(f"{method}() after close() gave a result instead of an error")

    @invariant()
    def no_client_leaked_by_a_failed_call(self) -> None:
        if self.env is None:
            self._check_clients("after a refused construction")

    def teardown(self) -> None:
        try:
            if self.env is not None and not self.closed:
                self.env.close()
                self._check_clients("after close() at the end")
        finally:
            self._warnings.__exit__(None, None, None)
            gc.collect(0)  # everything the sequence made is still in the youngest generation
            if self._gc_was_enabled:
                gc.enable()


def _typed(exc: BaseException) -> bool:
    """A typed error: the package's, Gymnasium's, or Python's own for an unknown keyword."""
    return isinstance(exc, TYPED_ERRORS) or isinstance(exc, TypeError) and "unexpected keyword argument" in str(exc)


def _compare(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    if got.shape != expected.shape or not np.array_equal(got, expected):
        diff = np.abs(got - expected).max() if got.shape == expected.shape else f"shape {got.shape} vs {expected.shape}"
        raise InvariantError(f"{what} differs from the first run (max |difference| {diff})")


def _outside(space: gym.Space, obs: Any) -> str:
    """Where ``obs`` leaves ``space`` (first few entries)."""
    if isinstance(space, gym.spaces.Dict):
        return "; ".join(f"{key}: {_outside(sub, obs[key])}" for key, sub in space.spaces.items()
                         if not sub.contains(obs[key]))
    arr = np.asarray(obs)
    if not isinstance(space, gym.spaces.Box) or arr.shape != space.shape:
        return f"shape {arr.shape} / dtype {arr.dtype}, space {space}"
    bad = np.flatnonzero((arr < space.low) | (arr > space.high))[:4]
    return ", ".join(f"[{i}] = {arr.flat[i]:.4g} not in [{space.low.flat[i]:.4g}, {space.high.flat[i]:.4g}]"
                     for i in bad) or f"dtype {arr.dtype}"


def machine(env_ids: Sequence[str], vector: bool = False) -> type[EnvMachine]:
    """A state machine class over ``env_ids`` (vector envs through ``gym.make_vec`` with ``vector``)."""
    return type("VectorEnvMachine" if vector else "EnvMachine", (EnvMachine,),
                {"ENV_IDS": tuple(env_ids), "VECTOR": bool(vector)})


@dataclass
class FuzzReport:
    """A fuzzing run: what it did and the failures it found (each a minimal sequence)."""

    counts: Counts
    failures: list[str]
    seconds: float


def fuzz(env_ids: Sequence[str], sequences: int, *, vector: bool = False, seed: int = 0, max_calls: int = 12,
         stop_on_failure: bool = True) -> FuzzReport:
    """Run ``sequences`` random call sequences (each at most ``max_calls`` calls after the
    construction) over ``env_ids``; reproducible from ``seed``.

    With ``stop_on_failure`` the first failure raises (hypothesis's minimal example in the
    exception's notes); otherwise the run restarts after a failure (next seed) and lists each
    distinct one in :attr:`FuzzReport.failures`.
    """
    from soft_envs import clock

    global COUNTS
    COUNTS = Counts()
    start = clock.now()
    failures: list[str] = []
    cls = machine(env_ids, vector)
    remaining, attempt = int(sequences), 0
    while remaining > 0:
        before = COUNTS.sequences
        options = settings(max_examples=remaining, stateful_step_count=max_calls, deadline=None, database=None,
                           suppress_health_check=list(HealthCheck), print_blob=False,
                           phases=(Phase.generate, Phase.shrink))
        factory = hypothesis_seed(seed * 1000 + attempt)(lambda: cls())
        try:
            run_state_machine_as_test(factory, settings=options)
            remaining = 0
        except Exception as exc:  # noqa: BLE001 - a failure of the machine is the finding
            if stop_on_failure:
                raise
            notes = "\n".join(getattr(exc, "__notes__", []))
            failures.append(f"{type(exc).__name__}: {exc}\n{notes}")
            remaining -= max(COUNTS.sequences - before, 1)
            attempt += 1
    return FuzzReport(COUNTS, failures, clock.now() - start)
