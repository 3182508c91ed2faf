"""What the stateful fuzzer (:mod:`soft_envs.bench.fuzz`) feeds the environments: keyword sets,
reset options and actions, valid and invalid, as hypothesis strategies.

Each keyword draws from a mix of values inside its documented range and values a user might
pass by mistake (zero, negative, NaN, inf, a wrong type, too large). Sizes stay small enough that
a sequence takes a fraction of a second (the cost of a step grows with ``frame_skip``, the
hexapod's continuation with ``1 / max_input_step``): the fuzzer looks for wrong answers, not for
slow ones.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

NAN, INF = math.nan, math.inf
BAD_NUMBERS = (0.0, -1.0, NAN, INF, -INF, "1", None, True)


def _mostly(good: st.SearchStrategy, bad: tuple) -> st.SearchStrategy:
    """``good`` seven times in eight, else one of ``bad`` (shrinking goes towards ``good``)."""
    return st.integers(0, 7).flatmap(lambda k: st.sampled_from(bad) if k == 7 else good)


def _number(low: float, high: float, *bad: Any, exact: tuple = ()) -> st.SearchStrategy:
    """A float in ``[low, high]`` (or one of ``exact``) mostly, else one of ``bad`` + the usual mistakes."""
    good = st.floats(low, high, allow_nan=False, allow_infinity=False)
    if exact:
        good = st.one_of(good, st.sampled_from(exact))
    return _mostly(good, tuple(bad) + BAD_NUMBERS)


def _integer(low: int, high: int, *bad: Any) -> st.SearchStrategy:
    good = st.one_of(st.integers(low, high), st.just(np.int64(low)))
    return _mostly(good, tuple(bad) + (0, -1, 2.5, "3", None, True))


def _choice(*values: Any, bad: tuple = ("nope", None, 3)) -> st.SearchStrategy:
    return _mostly(st.sampled_from(values), bad)


BOOL = st.sampled_from((True, False, True, False, 1, np.bool_(True)))


def _realism(table) -> st.SearchStrategy:
    """``"ideal"``/``"realistic"``, a dict of overrides (values or ranges inside, at and outside
    each perturbation's valid interval), or a mistake."""
    names = [p.name for p in table]
    by_name = {p.name: p for p in table}

    @st.composite
    def overrides(draw) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if draw(st.booleans()):
            out["preset"] = draw(_mostly(st.sampled_from(("ideal", "realistic")), ("mars",)))
        for name in draw(st.lists(st.sampled_from(names), max_size=4, unique=True)):
            p = by_name[name]
            low = max(p.valid[0], -1e3)
            high = min(p.valid[1], low + 1e3)
            value = st.floats(low, high, allow_nan=False)
            kind = draw(_mostly(st.sampled_from(("value", "range", "realistic", "edge")),
                                ("outside", "nan", "reversed")))
            if kind == "value":
                out[name] = draw(value)
            elif kind == "range":
                a, b = sorted((draw(value), draw(value)))
                out[name] = (a, b)
            elif kind == "realistic":
                out[name] = p.realistic
            elif kind == "edge":
                out[name] = draw(st.sampled_from((low, high)))
            elif kind == "outside":
                out[name] = draw(st.sampled_from((low - 1.0, high + 1.0, -1e9, 1e9)))
            elif kind == "nan":
                out[name] = NAN
            else:
                out[name] = (high, low) if high > low else (low + 1.0, low)
        if draw(st.integers(0, 9)) == 9:
            out["warp_drive"] = 1.0
        return out

    return st.one_of(_mostly(st.sampled_from(("ideal", "realistic", None)), ("noisy", 3)), overrides())


def _common(time_steps: tuple, frame_skip: tuple[int, int]) -> dict[str, st.SearchStrategy]:
    return {
        "render_mode": _mostly(st.sampled_from((None, "rgb_array")), ("video", "human")),
        "width": _integer(8, 40, 5000),
        "height": _integer(8, 40, 5000),
        "time_step": _number(min(time_steps), max(time_steps), 2.0, 1e-7, exact=time_steps),
        "frame_skip": _integer(frame_skip[0], frame_skip[1], 10**7),
        "action_rate_weight": _number(0.0, 2.0, -0.5),
        "action_mode": _choice("absolute", "delta"),
        "history": _integer(0, 3, 65, 10**6),
    }


def keyword_strategies(env_id: str) -> dict[str, st.SearchStrategy]:
    """Keyword -> strategy of its values, for ``gym.make(env_id, **kwargs)``."""
    short = env_id.split("/")[-1]
    if short == "PeterReach-v0":
        from soft_envs.envs.peter_reach import PETER_REALISM

        return _common((1 / 240, 1 / 480, 1e-3, 0.01), (1, 30)) | {
            "n_modules": _integer(1, 4, 5, 10**6),
            "links_per_module": _integer(1, 6, 40, 10**6),
            "kinematic": BOOL,
            "kinematics": _choice("pcc", "tilted"),
            "goal_conditioned": BOOL,
            "distance_weight": _number(0.0, 200.0),
            "success_threshold": _number(1e-4, 1e-2),
            "payload": _number(0.0, 0.5, 5.0, exact=(0.0, 0.0)),
            "gravity": BOOL,
            "physics": _choice("soft", "stiff"),
            "actuation": _choice("pneumatic", "instant"),
            "leg_stiffness": _number(200.0, 5000.0, 1e9),
            "vent_rate": _number(0.005, 0.05, 1e-3),
            "command_delay": _number(0.0, 0.5, 6.0, exact=(0.0,)),
            "rayleigh_stiffness": _number(0.0, 0.02),
            "solver_iterations": _integer(1, 150, 10**9),
            "radius": _number(0.02, 0.1, 1.0, 2.0, exact=(1.0,)),
            "gap": _number(0.0, 0.05, 2.0),
            "realism": _realism(PETER_REALISM),
        }
    if short == "PCCTrack-v0":
        from soft_envs.envs.pcc_track import PCC_REALISM
        from soft_envs.trajectories import TRAJECTORIES

        return _common((5e-3, 2.5e-3, 1e-3, 2e-3, 1e-2), (1, 30)) | {
            "n_segments": _integer(1, 3, 9, 10**6),
            "command_ramp_time": _number(0.0, 1.0, 1e9),
            "links_per_segment": _integer(1, 8, 60, 10**6),
            "segment_length": _number(0.03, 0.1, 5.0),
            "trajectory": _choice(*TRAJECTORIES),
            "time_scale": _number(0.5, 3.0),
            "trajectory_scale": st.one_of(st.none(), _number(0.5, 2.0)),
            "action_type": _choice("configuration", "torque", "pressure"),
            "physics": _choice("soft", "stiff"),
            "actuation": st.one_of(st.none(), _choice("pressure", "direct")),
            "max_pressure": _number(1e4, 5e4, 1e9),
            "regulator_time_constant": _number(0.0, 0.05, 20.0),
            "regulator_delay": _number(0.0, 0.2, 20.0),
            "controller_period": st.one_of(st.none(), _number(1e-3, 2e-2, 3e-3, exact=(5e-3, 1e-2))),
            "kp": _number(0.0, 200.0),
            "kv": _number(0.0, 10.0),
            "compensate_damping": BOOL,
            "stiffness_error": _number(-0.3, 0.3, -2.0),
            "payload": _number(0.0, 0.02, 1.0, exact=(0.0,)),
            "gravity": BOOL,
            "rayleigh_stiffness": st.one_of(st.none(), _number(1e-4, 1e-2)),
            "random_start": BOOL,
            "start_straight": BOOL,
            "tracking_weight": _number(0.0, 10.0),
            "success_threshold": _number(1e-4, 1e-2),
            "goal_conditioned": BOOL,
            "realism": _realism(PCC_REALISM),
        }
    if short in ("QuadrupedWalk-v0", "QuadrupedPose-v0"):
        from soft_envs.envs.quadruped_base import QUADRUPED_REALISM

        out = _common((2e-3, 1e-3, 1e-4, 5e-3, 1e-2), (1, 20)) | {
            "reset_noise_scale": _number(0.0, 0.2, 10.0),
            "ground_friction": _number(0.1, 2.0, 1e6),
            "solver_iterations": _integer(1, 100),
            "realism": _realism(QUADRUPED_REALISM),
        }
        if short == "QuadrupedWalk-v0":
            return out | {name: _number(0.0, 2.0) for name in ("forward_weight", "healthy_reward", "lateral_weight",
                                                              "orientation_weight", "torque_weight")}
        return out | {"goal_range": _number(0.0, 0.5, 1.0), "goal_conditioned": BOOL,
                      "orientation_weight": _number(0.0, 2.0), "slip_weight": _number(0.0, 20.0),
                      "success_threshold": _number(1e-3, 0.1)}
    if short == "HexapodPose-v0":
        from soft_envs.envs.hexapod_pose import HEXAPOD_REALISM

        return _common((0.05, 0.01, 0.1), (1, 4)) | {
            "goal_conditioned": BOOL,
            "position_weight": _number(0.0, 20.0),
            "orientation_weight": _number(0.0, 2.0),
            "success_threshold": _number(1e-4, 1e-2),
            "success_angle_threshold": _number(1e-3, 0.1),
            "goal_range": _number(0.05, 1.0, 1.5),
            "max_input_step": _number(5e-3, 0.02, 1e-9),
            # two values: each new one costs a new reference solution
            "n_steps": _mostly(st.sampled_from((24, 32)), (0, 1, 2.5, "3", None, 10**6)),
            "rod_render_radius": _number(1e-3, 5e-3),
            "realism": _realism(HEXAPOD_REALISM),
        }
    return {}


@functools.cache
def keywords(env_id: str, max_size: int = 4) -> st.SearchStrategy:
    """A keyword set for ``gym.make(env_id, **kwargs)``: a few keywords of the env, none to
    ``max_size`` (a quarter of the sets: an unknown keyword)."""
    table = keyword_strategies(env_id)
    if not table:  # an env this module does not know: its defaults
        return st.just({})

    @st.composite
    def draw_set(draw) -> dict[str, Any]:
        names = draw(st.lists(st.sampled_from(sorted(table)), max_size=max_size, unique=True))
        out = {name: draw(table[name]) for name in names}
        if draw(st.integers(0, 15)) == 15:
            out["not_a_keyword"] = 1
        return out

    return draw_set()


@functools.cache
def reset_options(env_id: str) -> st.SearchStrategy:
    """``reset``'s ``options``: none, empty, an unknown key (which must be refused), or
    (QuadrupedPose) a goal of any orientation, of a wrong shape or NaN."""
    goal = st.one_of(
        st.tuples(*[st.floats(-7.0, 7.0, allow_nan=False)] * 3),
        st.tuples(*[st.floats(-0.3, 0.3, allow_nan=False)] * 3),
        st.sampled_from(((0.0, 0.0, 4.0), (0.0, 2.0, 0.0), (np.pi, 0.0, -np.pi), (NAN, 0.0, 0.0), (1.0, 2.0),
                         "up", (0.0, 0.0, 1e9))))
    options = [st.none(), st.none(), st.just({}), st.just({"unknown_option": 1})]
    if env_id.endswith("QuadrupedPose-v0"):
        options += [st.builds(lambda g: {"goal": g}, goal)] * 2
    return st.one_of(*options)


ACTION_KINDS = ("valid", "valid", "valid", "valid", "clipped", "extreme", "int", "list", "nan", "inf",
                "wrong_shape", "scalar")
REJECTED_KINDS = ("nan", "inf", "wrong_shape", "scalar")


def make_action(kind: str, shape: tuple[int, ...], seed: int) -> Any:
    """An action of ``kind`` for a ``Box(-1, 1, shape)`` space; ``kind`` in :data:`REJECTED_KINDS`
    must be refused with a ``ValueError``, the others accepted (clipped where outside)."""
    rng = np.random.default_rng(seed)
    if kind == "valid":
        return rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    if kind == "clipped":
        return rng.uniform(-3.0, 3.0, shape)
    if kind == "extreme":
        return rng.choice([-1e30, 1e30, -1.0, 1.0, 0.0], size=shape)
    if kind == "int":
        return rng.integers(-1, 2, size=shape)
    if kind == "list":
        return rng.uniform(-1.0, 1.0, shape).tolist()
    if kind in ("nan", "inf"):
        action = rng.uniform(-1.0, 1.0, shape)
        action.flat[int(rng.integers(action.size))] = NAN if kind == "nan" else -INF
        return action
    if kind == "wrong_shape":
        return rng.uniform(-1.0, 1.0, (shape[0] + 1,) + shape[1:]) if rng.integers(2) else \
            rng.uniform(-1.0, 1.0, shape + (1,))
    return 0.5  # "scalar"
