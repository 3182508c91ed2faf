"""A scripted push for ``PCCPush-v0``: approach behind the box on its push line, then push with feedback
on the box's position, every tip target turned into the arm's set-point by IK.

:class:`ScriptedPushAgent` reads the tip, the box and its goal from the observation (world frame) and
the arm's mount from the env's public keywords (``mount_height``, ``base_orientation``) and model. Its
phases:

1. **approach**: the tip to a point above the push's start — behind the box on the line from its goal
   through it, ``box_size/2 + body_radius + standoff`` from its centre — at ``hover`` above the box's
   top, so that the arm never sweeps through the box on the way;
2. **descend**: the tip down to the push's start at the box's mid-height;
3. **push**: every step the push line is the current one (box to goal) and the tip aims ``press``
   [m] into the box's back face on it, ``press`` growing while the box lags ``push_speed`` (the soft
   arm's force grows with how far its set-point is beyond the face; slower near the goal): the box's
   own motion moves the aim (feedback on the box's position), a box drifting sideways turns the line
   under it; once the box is within ``done`` [m] of its goal the tip backs off ``back_off`` along the
   line (the push stops, the box slides to rest), and a box that ends farther than the success
   threshold is pushed again;
4. **back**: a tip that slipped off the box's back (beside it, or level with its centre) backs off
   along the line before the next approach, so that it does not drag the box.

The IK is the PCC arm's TRR (:func:`~soft_envs.agents.ik.trr`), warm-started from its previous solution,
on the nominal model in the base frame (world ``p_w = R p_b + (0, 0, mount_height)``).
"""

from __future__ import annotations

import numpy as np

from soft_envs.agents.ik.result import IKResult
from soft_envs.agents.ik.trust_region import trr
from soft_envs.exceptions import InvalidParameterError, check_positive
from soft_envs.geometry import quaternion_to_matrix

PHASES = ("approach", "descend", "push", "back", "retreat")
#: Control steps in a phase before a tip at rest near its target counts as arrived.
SETTLE_STEPS = 10
#: The hanging arm's reach [m] from its axis at the box's mid-height (the nominal model's, by SQP): the
#: targets are kept within it.
REACH = 0.08
#: The IK's time budget per control step [s] (its solves take ~1 ms; an unreachable aim gets the period).
STEP_BUDGET = 0.05


def within_reach(point: np.ndarray) -> np.ndarray:
    """``point`` [m, world] moved towards the arm's axis to at most :data:`REACH` from it."""
    radius = float(np.linalg.norm(point[:2]))
    return point if radius <= REACH else np.append(point[:2] * (REACH / radius), point[2])


class ScriptedPushAgent:
    """The scripted push (module docstring).

    Args:
        env: a ``PCCPush-v0`` env (wrapped or not) with ``action_type="configuration"``.
        hover: the approach's height above the box's top [m].
        standoff: the push's start, this far behind the box's back face beyond the body's radius [m].
        press, max_press: how far into the box's back face the tip aims while pushing, at first and at
            most [m]; push_speed: the box's speed [m/s] below which the press grows (above which it
            shrinks), by ``press_gain`` times the difference per second — ``approach_rate`` [1/s]
            times the box's distance to its goal where that is less (slowing down near the goal).
        aim_gain, max_correction, settle_speed: the free tip's aim moves by ``aim_gain`` times its miss
            once it moves slower than ``settle_speed`` [m/s], by at most ``max_correction`` [m] in all.
        side_gain: while pushing, the aim moves by this times the tip's offset beside the line through
            the box's centre (default 0: off; 0.2 halved the success on 40 seeds).
        tip_speed: how fast the aim moves to a phase's target [m/s].
        back_off: the retreat's distance back along the push line [m].
        arrive: the tip within this of a phase's target ends the phase [m].
        done: the box within this of its goal ends the push [m] (default half the success threshold).
        **trr_options: passed to :func:`~soft_envs.agents.ik.trr` (``timeout`` default :data:`STEP_BUDGET`).
    """

    def __init__(self, env, *, hover: float = 0.012, standoff: float = 0.008, press: float = 0.01,
                 max_press: float = 0.05, push_speed: float = 0.01, approach_rate: float = 1.0,
                 press_gain: float = 0.5, side_gain: float = 0.0,
                 aim_gain: float = 0.5, max_correction: float = 0.03, settle_speed: float = 0.01,
                 tip_speed: float = 0.03, back_off: float = 0.015, arrive: float = 0.003,
                 done: float | None = None, **trr_options) -> None:
        self.env = env.unwrapped
        if self.env.action_type != "configuration":
            raise InvalidParameterError("ScriptedPushAgent sends configuration set-points: use "
                                        "action_type='configuration'")
        self.model = self.env.model
        self.hover, self.standoff = check_positive("hover", hover), check_positive("standoff", standoff)
        self.press, self.arrive = check_positive("press", press), check_positive("arrive", arrive)
        self.max_press = check_positive("max_press", max_press)
        self.push_speed, self.press_gain = check_positive("push_speed", push_speed), float(press_gain)
        self.approach_rate = check_positive("approach_rate", approach_rate)
        self.side_gain = float(side_gain)
        self.aim_gain, self.max_correction = float(aim_gain), check_positive("max_correction", max_correction)
        self.settle_speed = check_positive("settle_speed", settle_speed)
        self.tip_speed = check_positive("tip_speed", tip_speed)
        self.back_off = check_positive("back_off", back_off)
        self.done = 0.5 * float(self.env.success_threshold) if done is None else check_positive("done", done)
        self.trr_options = {"timeout": STEP_BUDGET} | trr_options
        self.rotation = quaternion_to_matrix(np.asarray(self.env.base_orientation, dtype=float))
        self.base = np.array([0.0, 0.0, float(self.env.mount_height)])
        self.half = 0.5 * float(self.env.box_size)
        self.behind = self.half + self.model.body_radius + self.standoff
        self.phase = PHASES[0]
        self.last_result: IKResult | None = None
        self._solution: np.ndarray | None = None
        self._correction = np.zeros(3)  # [m]: the aim's offset that the arm's sag and lag call for
        self._press = self.press  # [m]: how far into the box the tip aims now
        self._aim: np.ndarray | None = None  # [m, world]: the aim, moving to the target at ``tip_speed``
        self._lift = np.zeros(3)  # [m, world]: where the retreat goes
        self._phase_steps = 0  # control steps in the phase so far

    def reset(self, obs=None, info=None) -> None:
        """A new episode: the approach, the IK started from the reset's set-point (``info["setpoint"]``)."""
        self.phase = PHASES[0]
        self.last_result = None
        self._correction, self._press, self._aim = np.zeros(3), self.press, None
        self._phase_steps = 0
        self._solution = None if info is None or "setpoint" not in info else np.asarray(info["setpoint"], float)

    def target(self, obs) -> np.ndarray:
        """The tip's target [m, world] for this observation (advancing the phase)."""
        obs = np.asarray(obs, dtype=float)
        tip, box, goal = obs[0:3], obs[3:6], obs[6:9]
        line = goal[:2] - box[:2]
        distance = float(np.linalg.norm(line))
        direction = line / distance if distance > 1e-9 else np.array([1.0, 0.0])
        start = np.append(box[:2] - self.behind * direction, box[2])
        above = start + np.array([0.0, 0.0, self.half + self.model.body_radius + self.hover])
        speed = float(np.linalg.norm(obs[15:18]))
        phase = self.phase
        if self.phase == "retreat" and distance > float(self.env.success_threshold) \
                and self._arrived(tip, self._lift, speed):
            self.phase = "approach"  # (the box slid or was knocked off its goal: push it again)
        if self.phase == "back" and self._arrived(tip, self._lift, speed):
            # behind the box on the new line already: straight to the push's start; else over the box
            self.phase = "descend" if (tip[:2] - box[:2]) @ direction < -self.behind + self.arrive else "approach"
        if self.phase == "push" and (distance < self.done or self._off_line(tip, box, direction)):
            # done, or the tip slipped off the box's back: back off along the line, off the box
            self.phase = "retreat" if distance < self.done else "back"
            self._lift = within_reach(np.append(tip[:2] - self.back_off * direction, tip[2]))
        if self.phase == "approach" and self._arrived(tip, within_reach(above), speed):
            self.phase = "descend"
        if self.phase == "descend" and self._arrived(tip, within_reach(start), speed):
            self.phase = "push"
        self._phase_steps = self._phase_steps + 1 if self.phase == phase else 0
        if self.phase == "approach":
            return within_reach(above)
        if self.phase == "descend":
            return within_reach(start)
        if self.phase == "push":  # the press grows while the box lags the push speed (the arm is soft:
            # its force grows with how far its set-point is beyond the box's face)
            # (slower near the goal: the box slides on after the push, ~v²/(2 μ g))
            wanted = min(self.push_speed, self.approach_rate * distance)
            speed = float(np.asarray(obs, dtype=float)[18:20] @ direction)
            self._press = float(np.clip(self._press + self.press_gain * (wanted - speed) * self.env.dt,
                                        self.press, self.max_press))
            return np.append(box[:2] - (self.behind - self.standoff - self._press) * direction, box[2])
        return self._lift  # retreat or back: back along the push line, off the box

    def _arrived(self, tip: np.ndarray, target: np.ndarray, speed: float) -> bool:
        """Whether the tip has arrived at a phase's ``target``: within ``arrive`` of it, or come to rest
        (slower than ``settle_speed``) near it after :data:`SETTLE_STEPS` steps of the phase with the aim
        there (the soft arm may rest a few mm off its aim: its sag, a contact)."""
        if np.linalg.norm(tip - target) < self.arrive:
            return True
        aimed = self._aim is not None and np.linalg.norm(self._aim - target) < 1e-9
        return bool(aimed and self._phase_steps >= SETTLE_STEPS and speed < self.settle_speed
                    and np.linalg.norm(tip - target) < 4 * self.arrive)

    def _off_line(self, tip: np.ndarray, box: np.ndarray, direction: np.ndarray) -> bool:
        """Whether the tip has left the box's back: its axis more than half the box's size plus the body's
        radius beside the line (it no longer pushes on the back face), or level with the box's centre."""
        offset = tip[:2] - box[:2]
        side = abs(offset[0] * direction[1] - offset[1] * direction[0])
        return bool(side > self.half + self.model.body_radius or offset @ direction > 0.0)

    def act(self, obs) -> np.ndarray:
        """The normalised configuration set-point that puts the tip at :meth:`target`."""
        values = np.asarray(obs, dtype=float)
        target = self.target(obs)
        if self._aim is None:
            self._aim = values[0:3].copy()
        step = target - self._aim  # the aim moves at the tip speed (a slow aim excites no swing)
        length = float(np.linalg.norm(step))
        limit = self.tip_speed * float(self.env.dt)
        self._aim = target if length <= limit else self._aim + step * (limit / length)
        target = self._aim
        if self.phase == "push" and self.side_gain:  # the aim moves against the tip's measured offset beside
            # the push line through the box's centre (the arm yields sideways; off-centre, the push turns the box)
            line = values[6:8] - values[3:5]
            across = np.array([-line[1], line[0]]) / max(float(np.linalg.norm(line)), 1e-9)
            side = float(across @ (values[0:2] - values[3:5]))
            self._correction[:2] = np.clip(self._correction[:2] - self.side_gain * side * across,
                                           -self.max_correction, self.max_correction)
        elif self.phase != "push" and np.linalg.norm(values[15:18]) < self.settle_speed:
            # the tip is free and has settled: the aim moves by the measured miss (the arm's sag)
            miss = target - values[0:3]
            self._correction = np.clip(self._correction + self.aim_gain * miss, -self.max_correction,
                                       self.max_correction)
        local = self.rotation.T @ (target + self._correction - self.base)
        result = trr(self.model, local, self._solution, **self.trr_options)
        self.last_result, self._solution = result, result.solution
        return self.env.model_to_action(result.solution)
