"""A scripted push for ``PCCPush-v0``: approach behind the box on its push line, push with feedback on the
box's position, re-approach when it drifts off the line, every tip target turned into the arm's set-point
by IK.

:class:`ScriptedPushAgent` reads the tip, the box and its goal from the observation (world frame) and
the arm's mount from the env's public keywords (``mount_height``, ``base_orientation``) and model. Its
phases:

1. **approach**: the tip to a point above the push's start — behind the box on the line from its goal
   through it, ``box_size/2 + body_radius + standoff`` from its centre — at ``hover`` above the box's
   top, so that the arm never sweeps through the box on the way; **side** instead where the straight way
   to the push's start at the box's mid-height keeps clear of the box (its corners and the body's radius);
2. **descend**: the tip down to the push's start at the box's mid-height;
3. **push**: every step the push line is the current one (box to goal; held once the box is within
   ``hold_line`` of its goal) and the tip aims ``press`` [m] into the box's back face on it, ``press``
   growing while the box lags ``push_speed``, from ``press`` at each push's start (the soft arm's force
   grows with how far its set-point is beyond the face; slower near the goal): the box's own motion moves
   the aim (feedback on the box's position). The push ends — the aim drops to the measured tip, so that the
   arm stops pressing at once — when the box is within ``done`` [m] of its goal (**retreat**), or when the
   tip is no longer behind the box on its line: more than ``max_side`` beside it (the box drifted or
   turned) or level with its back face (the box passed its goal) (**back**, then a new approach on the new
   line: the lateral correction);
4. **back** and **retreat**: the tip backs off ``back_off`` [m] straight away from the box's centre,
   off it; after the retreat a box farther than ``repush`` from its goal is pushed again.

The IK is the PCC arm's TRR (:func:`~soft_envs.agents.ik.trr`), warm-started from its previous solution,
on the nominal model in the base frame (world ``p_w = R p_b + (0, 0, mount_height)``), stepping in the
coordinates of :class:`~soft_envs.agents.ik.smooth_view.StrainView` (the bends' components and the
elongations as strains). In the model's ``(ΔL, θ, φ)`` its minimum-norm steps moved the tip mostly by
elongations (a millimetre of ``ΔL`` moves the tip a millimetre for the norm of a thousandth of a radian of
bend, which moves it ~0.06 mm): from the straight arm one
segment contracted and another stretched by ~6 mm, tens of kPa of opposite common pressure in their
chambers, and the realistic chambers' scatter (±5 % gain, up to 3 % droop) turned those pressures into a
bend that threw the tip 20-30 mm past its aim, a swing the realistic law's weak gains damp for seconds:
on 80 seeds (0-79) the push succeeded on 59 % of realistic arms that way, on 100 % in these coordinates
(the ideal arms: 100 % both). The arm's sag and
its model's errors (a realistic arm's stiffness, its payload) put the tip off the nominal IK's target:
the aim is corrected by the tip's measured miss of where the aim was :data:`LAG_STEPS` control steps
before (the chambers' dead time and the arm's lag behind a moving aim), only while the tip is free of
the box and the table and not swinging (:meth:`~ScriptedPushAgent._free`: a contact holds the tip off
its aim, and a correction that grew against it snaps the arm when it lets go).
"""

from __future__ import annotations

import numpy as np

from soft_envs.agents.ik.result import IKResult
from soft_envs.agents.ik.smooth_view import StrainView
from soft_envs.agents.ik.trust_region import trr
from soft_envs.exceptions import InvalidParameterError, check_positive
from soft_envs.geometry import quaternion_to_matrix

PHASES = ("approach", "side", "descend", "push", "back", "retreat")
#: Control steps in a phase before a tip at rest near its target counts as arrived.
SETTLE_STEPS = 10
#: The hanging arm's reach [m] from its axis at the box's mid-height (the nominal model's, by SQP): the
#: targets are kept within it.
REACH = 0.08
#: The IK per control step: a local solve warm-started from the last set-point (no random restarts: they
#: jump the arm to another branch) to :data:`IK_TOLERANCE` [m] (far below the push's millimetres) in at
#: most :data:`IK_ITERATIONS` evaluations (~1 ms a solve, ~15 ms for an aim beyond reach, on one core of
#: this workplace's CPU); :data:`STEP_BUDGET` [s] is a safety cap only — a wall-clock limit that ends
#: solves would make the set-points depend on the machine's load (the contact is chaotic: 1e-7 of a
#: set-point changed the box's end by millimetres).
IK_TOLERANCE, IK_ITERATIONS, STEP_BUDGET = 1e-5, 60, 0.5
#: The clearance [m] kept between the arm's body and the box's corners on a move at the box's height
#: (the tip rests up to ~2 mm off its aim: the soft arm's sag).
CLEARANCE = 0.003
#: A push's start is at least this much nearer the arm's axis than the box [m] (the env's task draw,
#: ``soft_envs.envs.pcc_push.INSIDE``: the arm comes from inside, never sweeping its body over the box).
INSIDE = 0.005
#: The box moved more than this [m] while the tip made for the push's start: it was knocked, plan anew.
KNOCKED = 0.002
#: The aim's correction compares the tip with the aim this many control steps before (0.2 s at 20 Hz:
#: the realistic regulators' 0.1-0.15 s dead time and their lag).
LAG_STEPS = 4
#: The tip counts as free (:meth:`ScriptedPushAgent._free`) with its body this far [m] clear of the box
#: and the table.
FREE_GAP = 0.001
#: The largest turn [rad] of a push's line from the box-to-goal bearing (a start beyond reach) and its step.
MAX_TURN, TURN_STEP = np.radians(60.0), np.radians(5.0)


def within_reach(point: np.ndarray) -> np.ndarray:
    """``point`` [m, world] moved towards the arm's axis to at most :data:`REACH` from it."""
    radius = float(np.linalg.norm(point[:2]))
    return point if radius <= REACH else np.append(point[:2] * (REACH / radius), point[2])


def box_yaw(obs: np.ndarray) -> float:
    """The box's yaw [rad] (modulo 90°, a cube's) from its observed ``(sin, cos)(4 yaw)``."""
    return 0.25 * float(np.arctan2(obs[21], obs[22]))


def square_distance(a: np.ndarray, b: np.ndarray, centre: np.ndarray, half: float, yaw: float) -> float:
    """The least distance [m] from the segment ``a``–``b`` to a square of half-edge ``half`` [m] at
    ``centre`` turned by ``yaw`` [rad] (in the plane: ``(2,)`` each; the segment sampled every ~1 mm)."""
    n = int(min(max(np.linalg.norm(b - a) / 1e-3, 1.0), 200.0)) + 1
    points = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a) - centre
    c, s = np.cos(yaw), np.sin(yaw)
    local = np.abs(points @ np.array([[c, -s], [s, c]])) - half  # in the square's frame, |x| - half
    outside = np.linalg.norm(np.maximum(local, 0.0), axis=1) + np.minimum(local.max(axis=1), 0.0)
    return float(outside.min())


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
        aim_gain, max_correction: the aim moves by ``aim_gain`` times the free tip's miss (of the aim
            :data:`LAG_STEPS` steps before) a step, by at most ``max_correction`` [m] in all.
        settle_speed: a tip slower than this [m/s] near a phase's target has come to rest there.
        side_gain: while pushing, the aim moves by this times the tip's offset beside the line through
            the box's centre (default 0: off).
        tip_speed: how fast the aim moves to a phase's target [m/s].
        back_off: the back's and the retreat's distance away from the box [m].
        arrive: the tip within this of a phase's target ends the phase [m].
        done: the box within this of its goal ends the push [m] (default 0.3 of the success threshold).
        repush: a box farther than this from its goal after the retreat is pushed again [m] (default
            half the success threshold).
        max_side: the tip farther than this beside the push line ends the push for a new approach [m].
        hold_line: the push line is held once the box is within this of its goal [m] (its bearing is
            ill-defined close to it).
        reach_margin: a push's start is kept this far inside :data:`REACH` [m]; min_gain: a push that
            would bring the box less than this nearer its goal is not made [m] (:meth:`_plan`).
        min_travel: the push ends when the box has less than this left to go along its line [m] (the
            rest of the way is beside the line: pushing on sends it past).
        **trr_options: passed to :func:`~soft_envs.agents.ik.trr` (defaults: ``timeout``
            :data:`STEP_BUDGET`, ``tol`` :data:`IK_TOLERANCE`, ``max_iterations`` :data:`IK_ITERATIONS`,
            ``restarts=0``).
    """

    def __init__(self, env, *, hover: float = 0.012, standoff: float = 0.008, press: float = 0.01,
                 max_press: float = 0.05, push_speed: float = 0.01, approach_rate: float = 1.0,
                 press_gain: float = 1.5, side_gain: float = 0.0,
                 aim_gain: float = 0.1, max_correction: float = 0.03, settle_speed: float = 0.01,
                 tip_speed: float = 0.03, back_off: float = 0.01, arrive: float = 0.003,
                 done: float | None = None, repush: float | None = None, max_side: float = 0.015,
                 hold_line: float = 0.008, reach_margin: float = 0.003, min_gain: float = 0.002,
                 min_travel: float = 0.002, height_gain: float = 0.2, **trr_options) -> None:
        self.env = env.unwrapped
        if self.env.action_type != "configuration":
            raise InvalidParameterError("ScriptedPushAgent sends configuration set-points: use "
                                        "action_type='configuration'")
        self.model = self.env.model
        self.view = StrainView(self.model)  # the coordinates the IK steps in
        threshold = float(self.env.success_threshold)
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
        self.done = 0.5 * threshold if done is None else check_positive("done", done)
        self.repush = 0.7 * threshold if repush is None else check_positive("repush", repush)
        self.max_side = check_positive("max_side", max_side)
        self.hold_line = check_positive("hold_line", hold_line)
        self.reach_margin, self.min_gain = float(reach_margin), check_positive("min_gain", min_gain)
        self.min_travel, self.height_gain = float(min_travel), float(height_gain)
        self.trr_options = {"timeout": STEP_BUDGET, "tol": IK_TOLERANCE, "max_iterations": IK_ITERATIONS,
                            "restarts": 0} | trr_options
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
        self._lift = np.zeros(3)  # [m, world]: where the back and the retreat go
        self._line: np.ndarray | None = None  # the push line held near the goal (unit, world x-y)
        self._end: np.ndarray | None = None  # [m, world]: where the push takes the box (:meth:`_plan`)
        self._planned = np.zeros(3)  # [m, world]: the box when the push was planned
        self._phase_steps = 0  # control steps in the phase so far
        self._aims: list[np.ndarray] = []  # the aims of the last LAG_STEPS + 1 control steps [m, world]

    def reset(self, obs=None, info=None) -> None:
        """A new episode: the approach, the IK started from the reset's set-point (``info["setpoint"]``)."""
        self.phase = PHASES[0]
        self.last_result = None
        self._correction, self._press, self._aim, self._line, self._end = np.zeros(3), self.press, None, None, None
        self._phase_steps = 0
        self._aims = []
        self._lift = np.zeros(3) if obs is None else np.asarray(obs, dtype=float)[0:3].copy()
        self._solution = None if info is None or "setpoint" not in info else np.asarray(info["setpoint"], float)

    def _plan(self, box: np.ndarray, goal: np.ndarray) -> np.ndarray | None:
        """The next push's end [m, world] for the box at ``box``, or ``None`` for no push: the box pushed
        towards its ``goal`` along the line nearest the box-to-goal bearing (turned by up to
        :data:`MAX_TURN` in steps of :data:`TURN_STEP`) whose start behind the box is within reach
        (``reach_margin`` inside :data:`REACH`), to the goal's foot on it; none where that leaves the box
        less than ``min_gain`` nearer its goal. The start is :data:`INSIDE` nearer the arm's axis than the
        box (the arm comes from inside: its body, leaning to the axis above the tip, clears the box)."""
        error = goal[:2] - box[:2]
        distance = float(np.linalg.norm(error))
        if distance < 1e-9:
            return None
        bearing = float(np.arctan2(error[1], error[0]))
        for turn in np.arange(0.0, MAX_TURN + 1e-9, TURN_STEP):
            for angle in (bearing + turn, bearing - turn) if turn else (bearing,):
                direction = np.array([np.cos(angle), np.sin(angle)])
                start = box[:2] - self.behind * direction
                radius = float(np.linalg.norm(start))
                if radius > REACH - self.reach_margin or radius > np.linalg.norm(box[:2]) - INSIDE:
                    continue
                if distance * (1.0 - abs(np.sin(turn))) < self.min_gain:  # the distance it would gain
                    return None
                return np.append(box[:2] + (error @ direction) * direction, goal[2])
        return None

    def target(self, obs) -> np.ndarray:
        """The tip's target [m, world] for this observation (advancing the phase)."""
        obs = np.asarray(obs, dtype=float)
        tip, box, goal = obs[0:3], obs[3:6], obs[6:9]
        distance = float(np.linalg.norm(goal[:2] - box[:2]))  # [m] the box's distance to its goal
        yaw = box_yaw(obs)
        speed = float(np.linalg.norm(obs[15:18]))
        phase = self.phase
        if self._end is None and phase == "approach":  # the episode's first push
            self._end, self._planned = self._plan(box, goal), box.copy()
        if phase in ("back", "retreat") and self._arrived(tip, self._lift, speed) \
                and (phase == "back" or distance > self.repush):
            self._end, self._planned = self._plan(box, goal), box.copy()  # a new push on the new line
            if self._end is not None:
                self.phase = "side" if self._clear(tip, box, yaw) else "approach"
            else:
                self.phase = "retreat"
        if self._end is None:
            self.phase = "retreat" if self.phase != "back" else self.phase
            self._phase_steps = self._phase_steps + 1 if self.phase == phase else 0
            if phase not in ("back", "retreat"):
                self._lift = tip.copy()
            return self._lift
        direction, left = self._direction(box, self._end)
        start = np.append(box[:2] - self.behind * direction, box[2])
        above = start + np.array([0.0, 0.0, self.half + self.model.body_radius + self.hover])
        knocked = self.phase in ("approach", "side", "descend") \
            and np.linalg.norm(box[:2] - self._planned[:2]) > KNOCKED
        finished = min(left, distance) < self.done or (self._end - box)[:2] @ direction < self.min_travel
        if knocked or self.phase == "push" and (finished or self._off_line(tip, box, direction)):
            # done (or next to its end, the rest of the way beside the line), or the tip is no longer
            # behind the box on its line (or it knocked the box on its way there): stop pressing, back
            # away from it
            self.phase = "retreat" if self.phase == "push" and finished else "back"
            self._aim = tip.copy()
            away = tip[:2] - box[:2]
            away = away / max(float(np.linalg.norm(away)), 1e-9)
            self._lift = within_reach(np.append(tip[:2] + self.back_off * away, tip[2]))
        if self.phase == "approach" and phase == "approach" and self._phase_steps == 0 \
                and self._clear(tip, box, yaw):
            self.phase = "side"
        if self.phase == "approach" and self._arrived(tip, within_reach(above), speed):
            self.phase = "descend"
        if self.phase in ("descend", "side") and self._arrived(tip, start, speed):
            self.phase = "push"
            self._line = direction
            self._press = self.press  # each push starts pressing lightly (the last one's press was for its line)
        self._phase_steps = self._phase_steps + 1 if self.phase == phase else 0
        if self.phase == "approach":  # up beside the box first, then over it
            if phase != "approach":
                self._lift = tip.copy()
            if tip[2] < above[2] - 4 * self.arrive:
                return within_reach(np.append(self._lift[:2], above[2]))
            return within_reach(above)
        if self.phase in ("descend", "side"):
            return start
        if self.phase == "push":  # the press grows while the box lags the push speed (the arm is soft:
            # its force grows with how far its set-point is beyond the box's face)
            # (slower near the goal: the box slides on after the push, ~v²/(2 μ g))
            wanted = min(self.push_speed, self.approach_rate * left)
            speed = float(obs[18:20] @ direction)
            self._press = float(np.clip(self._press + self.press_gain * (wanted - speed) * self.env.dt,
                                        self.press, self.max_press))
            return within_reach(np.append(box[:2] - (self.behind - self.standoff - self._press) * direction,
                                          box[2]))
        return self._lift  # back or retreat: away from the box

    def _direction(self, box: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, float]:
        """The push line's direction (unit, x-y) and the box's distance to the push's ``end`` [m]: box to
        end, held while pushing once the box is within ``hold_line`` of it."""
        line = end[:2] - box[:2]
        distance = float(np.linalg.norm(line))
        if self.phase == "push" and self._line is not None and distance < self.hold_line:
            return self._line, distance
        direction = line / distance if distance > 1e-9 else np.array([1.0, 0.0])
        if self.phase == "push":
            self._line = direction
        return direction, distance

    def _clear(self, tip: np.ndarray, box: np.ndarray, yaw: float) -> bool:
        """Whether the straight way from ``tip`` to the point ``back_off`` behind the push's start keeps the
        body :data:`CLEARANCE` clear of the box (at its yaw): the tip may go there at the box's height."""
        assert self._end is not None
        direction, _ = self._direction(box, self._end)
        ready = box[:2] - (self.behind + self.back_off) * direction
        gap = square_distance(tip[:2], ready, box[:2], self.half, yaw)
        return gap > self.model.body_radius + CLEARANCE

    def _arrived(self, tip: np.ndarray, target: np.ndarray, speed: float) -> bool:
        """Whether the tip has arrived at a phase's ``target``: within ``arrive`` of it, or come to rest
        (slower than ``settle_speed``) near it after :data:`SETTLE_STEPS` steps of the phase with the aim
        there (the soft arm may rest a few mm off its aim: its sag, a contact)."""
        if np.linalg.norm(tip - target) < self.arrive:
            return True
        aimed = self._aim is not None and np.linalg.norm(self._aim - target) < self.arrive  # (the box is seen
        # through the camera's noise: a target behind it moves a little every step)
        return bool(aimed and self._phase_steps >= SETTLE_STEPS and speed < self.settle_speed
                    and np.linalg.norm(tip - target) < 4 * self.arrive)

    def _off_line(self, tip: np.ndarray, box: np.ndarray, direction: np.ndarray) -> bool:
        """Whether the tip is no longer behind the box on the push line: more than ``max_side`` beside it,
        or not behind the box's back face (the box passed its goal)."""
        offset = tip[:2] - box[:2]
        side = abs(offset[0] * direction[1] - offset[1] * direction[0])
        return bool(side > self.max_side or offset @ direction > -self.half)

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
        if self.phase == "push" and self.side_gain and self._line is not None:  # the aim moves against the
            # tip's measured offset beside the push line through the box's centre (the arm yields sideways)
            across = np.array([-self._line[1], self._line[0]])
            side = float(across @ (values[0:2] - values[3:5]))
            self._correction[:2] = np.clip(self._correction[:2] - self.side_gain * side * across,
                                           -self.max_correction, self.max_correction)
        self._aims = [*self._aims[-LAG_STEPS:], target.copy()]
        if self.phase == "push":  # the aim's height moves by the tip's measured drop (pressed on, the arm
            # bends down towards the table, whose friction then holds it); the push's aims, into the box,
            # are no measure of the free tip's miss
            self._aims.clear()
            self._correction[2] = float(np.clip(self._correction[2] + self.height_gain * (target[2] - values[2]),
                                                -self.max_correction, self.max_correction))
        elif len(self._aims) > LAG_STEPS and self._free(values):
            # the aim moves by the free tip's miss of where the aim was (the arm's sag, its model's errors)
            miss = self._aims[0] - values[0:3]
            self._correction = np.clip(self._correction + self.aim_gain * miss, -self.max_correction,
                                       self.max_correction)
        local = self.rotation.T @ (target + self._correction - self.base)
        result = self.view.solve(trr, local, self._solution, **self.trr_options)
        self.last_result, self._solution = result, result.solution
        return self.env.model_to_action(result.solution)

    def _free(self, obs: np.ndarray) -> bool:
        """Whether the tip's miss measures the arm's sag: the tip no faster than twice ``tip_speed`` (not
        swinging) and its body :data:`FREE_GAP` clear of the table and of the box (a contact holds it
        off its aim)."""
        tip, box = obs[0:3], obs[3:6]
        clear = self.model.body_radius + FREE_GAP
        if np.linalg.norm(obs[15:18]) > 2.0 * self.tip_speed or tip[2] < clear:
            return False
        gap = square_distance(tip[:2], tip[:2], box[:2], self.half, box_yaw(obs))
        return bool(max(gap, tip[2] - box[2] - self.half) > clear)
