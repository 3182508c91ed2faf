"""``PeterReach-v0``'s arms, row-wise: the env logic around the soft-arm core, written once.

:class:`PeterArms` holds ``n`` arms of one :class:`~soft_envs.envs.peter_reach.PeterReachEnv`
configuration (the env it is built from gives the model, the keywords and the realism table) and
does, for any rows of them, what an episode of the env does: the reset (goal, realism applied to
the legs, the sensor and the simulated arm), actions to leg commands, the physics steps, the
validity check that stops an arm driven out of the PCC model, the tip readings through the sensor,
the observation, the reward terms and ``info``. The single env is ``n = 1`` of it, the native
vector env (:mod:`soft_envs.envs.peter_reach_vector`) ``n = N``; so a sub-env's episode is the
single env's by construction, and the two differ only in what the Gymnasium API asks of each.

The body it drives (``body=``):

* soft physics: the batched soft-arm core (:class:`~soft_envs.sim.batched_bodies.BatchedSoftPeter`,
  the default of both envs), or one PyBullet arm with PyBullet's terms
  (:class:`~soft_envs.sim.arm_rows.PeterBodyRows`, ``backend="pybullet"``, the reference);
* ``physics="stiff"``: PyBullet's position servos (:class:`~soft_envs.sim.arm_rows.ServoRows`);
* ``kinematic=True``: none — the tip is :meth:`Peter.forward_arms` of the commands (ideal) or of
  the legs' true state on each arm's own leg radius (under realism).

On the batched core without obstacles, :meth:`PeterArms.simulate`'s loop over the physics steps of
a period runs compiled, block of arms by block in the core's threads (:mod:`soft_envs.sim.arm_period`,
:func:`~soft_envs.sim.period_kernels.peter_legs`), with the numpy loop's numbers to the bit (the
numpy loop stays: PyBullet's arm, obstacles, ``compiled_periods=False``).

Arrays are ``(n, …)``, SI units; the tip is in the goals' frame (the arm's base turned by its
drawn tilt), the measured tip is what the sensor reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from soft_envs.envs.contact_tally import ContactTally
from soft_envs.envs.obstacle_course import sphere_rows, split_task
from soft_envs.envs.peter_parts import PLANT_REALISM, reach_observation
from soft_envs.envs.vector_parts import BatchedSensor, store_tips
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix
from soft_envs.robots.peter import Peter
from soft_envs.sim.actuators import BatchedPneumaticLegs
from soft_envs.sim.arm_period import PeriodArrays, StateViews, run_period
from soft_envs.sim.batched_bodies import BatchedSoftPeter
from soft_envs.sim.batched_kernels import peter_validity
from soft_envs.sim.bullet import STANDARD_GRAVITY
from soft_envs.sim.period_kernels import peter_legs

MAX_RATE = 1e3  # [m/s, rad/s]: beyond it the arm is driven beyond its model
SINGULAR = "the arm's mass matrix became singular: it collapsed beyond the PCC model"


def soft_arms(env: Any, n_arms: int, num_threads: int | None = None) -> BatchedSoftPeter:
    """``n_arms`` soft arms of ``env``'s model, payload, gravity and damping on the batched core."""
    return BatchedSoftPeter(env.model, n_arms, payload=env.payload, gravity=STANDARD_GRAVITY if env.gravity else 0.0,
                            rayleigh_stiffness=env.rayleigh_stiffness, num_threads=num_threads)


class PeterArms:
    """``n_arms`` PETER arms of ``env``'s configuration (module docstring).

    Args:
        env: the env whose keywords, model and realism the arms take (read, never changed).
        n_arms: number of arms.
        body: the arms' body (module docstring) or ``None`` (``kinematic=True``).
    """

    def __init__(self, env: Any, n_arms: int, body: Any = None) -> None:
        model = env.model
        n, n_dof = int(n_arms), model.n_dof
        self.env, self.model, self.n_arms, self.body = env, model, n, body
        self.servo = hasattr(body, "command")  # PyBullet's position servos hold the commands themselves
        self.soft = body is not None and not self.servo
        self.inflation_times = np.zeros((n, n_dof))  # commanded set-points [s]
        self.goal = np.zeros((n, 3))  # [m], the goals' frame
        self.tip, self.tip_velocity = np.zeros((n, 3)), np.zeros((n, 3))  # true [m], [m/s]
        self.measured_tip, self.measured_velocity = np.zeros((n, 3)), np.zeros((n, 3))
        realism = env.realism
        self.realistic = not realism.is_ideal()
        self.legs = BatchedPneumaticLegs(n, n_dof, rest_length=model.leg_length_at_rest, fill_rate=model.leg_rate,
                                         vent_rate=env.vent_rate, delay=env.command_delay,
                                         instant=env.actuation == "instant" or env.kinematic)
        latency = realism.ranges["observation_latency"][1] if "observation_latency" in realism.ranges else 0.0
        self.sensor = BatchedSensor(n, 6, int(round(latency / env.dt)))
        self.clock = np.zeros(n)  # [s] since each kinematic arm's reset
        self.base_rotation = np.repeat(np.eye(3)[None], n, axis=0)  # base frame -> goals' frame
        # each arm's leg-circle radius [m], module mass [kg], leg stiffness [N/m], extra payload [kg]
        self.radius = np.full(n, model.radius)
        self.module_mass = np.full(n, model.module_mass)
        self.leg_stiffness = np.full(n, model.leg_stiffness)
        self.extra_payload = np.zeros(n)
        self.stopped = np.zeros(n, dtype=bool)  # left the PCC model: held still until its reset
        self.stop_reason = np.full(n, None, dtype=object)
        self._tilted = not realism.is_ideal("base_tilt")
        self._leg_directions = (np.cos(model.leg_angles), np.sin(model.leg_angles))  # the legs' feet on their circle
        self._plant_realism = any(not realism.is_ideal(name) for name in PLANT_REALISM if name in realism.table)
        # obstacles (env.course): their draws, the body's scene and what the contact did this episode
        count = env.course.count if env.course is not None else 0
        self.obstacles = np.zeros((n, count, 4))  # centre [m] (goals' frame), radius [m]
        #: The contacts with the obstacles this episode (``info``'s ``collisions``, ``penetration``, ...).
        self.tally = ContactTally(n, count)
        self.scene = body.add_scene(count) if count and self.soft else None
        #: Run the periods compiled where :attr:`compiled` allows (False: the numpy loop; the same numbers).
        self.compiled_periods = True
        self._period_tips: tuple[Any, np.ndarray] | None = None  # (the body's state, its tips (n, 6))

    @property
    def compiled(self) -> bool:
        """Whether the periods run compiled, block by block in the core's threads (:mod:`soft_envs.sim.arm_period`;
        with obstacles, their contact and its tally too): the batched core (else the numpy loop of
        :meth:`simulate`, the same numbers)."""
        return self.compiled_periods and isinstance(self.body, BatchedSoftPeter)

    @property
    def touching(self) -> np.ndarray:
        """``(n, M)``: the obstacles each arm touched at the last physics step."""
        return self.tally.touching

    # ------------------------------------------------------------------ reset
    def reset(self, rows: np.ndarray, tasks: list, perturbations: dict[str, np.ndarray],
              realism_rngs: list[np.random.Generator | None]) -> None:
        """New episodes for ``rows``: goals the nominal tips of ``tasks`` (inflation times [s]), the
        arms at rest at zero inflation, ``perturbations`` (``{name: (len(rows), …)}``) applied."""
        body, legs = self.body, self.legs
        self._period_tips = None
        self.inflation_times[rows] = 0.0
        times, obstacles = split_task(tasks, self.model.n_dof)
        self.goal[rows] = self.model.forward_arms(times)
        self.stopped[rows] = False
        self.stop_reason[rows] = None
        self.clock[rows] = 0.0
        if self.realistic:
            self._apply_realism(rows, perturbations, realism_rngs)
        if self.scene is not None:
            self.obstacles[rows] = obstacles
            self.scene.set_shapes(rows, sphere_rows(obstacles, self.base_rotation[rows]))
            self.tally.reset(rows)
        legs.reset(rows, self.inflation_times[rows])
        if body is not None:
            body.reset_inflation(rows, self.inflation_times[rows])
        if self.soft and self.realistic:  # the legs' offsets at rest
            imperfect = rows[~legs.perfect[rows]]
            if imperfect.size:
                u = body.arc_of_legs(legs.actual_lengths[imperfect], imperfect)
                body.reset(imperfect, u, reference=np.zeros(3 * self.model.n_modules), rest=u)
        self.read_tips(rows, reset=True)

    def _apply_realism(self, rows: np.ndarray, drawn: dict[str, np.ndarray],
                       realism_rngs: list[np.random.Generator | None]) -> None:
        """The drawn perturbations of ``rows`` on their legs, sensor and arm."""
        env, model = self.env, self.model
        self.legs.set_imperfections(rows, drawn["leg_gain"] * drawn["supply_gain"][:, None], drawn["leg_offset"],
                                    drawn["leak_rate"])
        self.legs.set_delay(rows, env.command_delay + drawn["command_delay"])
        latency = np.rint(drawn["observation_latency"] / env.dt).astype(np.int64)
        noise = np.zeros((rows.size, 6))
        noise[:, :3] = drawn["observation_noise"][:, None]  # tip [m]; velocity noise-free
        self.sensor.configure(rows, noise, latency, realism_rngs)
        tilt = np.concatenate((drawn["base_tilt"], np.zeros((rows.size, 1))), axis=1)
        self.base_rotation[rows] = quaternion_to_matrix(quaternion_from_rotation_vector(tilt))
        self.radius[rows] = model.radius * (1.0 + drawn["radius_error"])
        if "mass_error" in drawn:  # (physics only)
            self.module_mass[rows] = model.module_mass * (1.0 + drawn["mass_error"])
            self.leg_stiffness[rows] = model.leg_stiffness * (1.0 + drawn["leg_stiffness_error"])
            self.extra_payload[rows] = drawn["payload"]
        if self.soft and self._plant_realism:  # the simulated arms become the plants
            self.body.set_model(rows, [self.plant(i) for i in rows.tolist()], env.payload + self.extra_payload[rows])
            self.body.set_base_orientation(rows, quaternion_from_rotation_vector(tilt))

    def plant(self, row: int) -> Peter:
        """The arm ``row`` really is (its drawn radius, module mass and leg stiffness; the env's
        kinematics) — the nominal :attr:`model` under ``"ideal"``."""
        if not self._plant_realism:
            return self.model
        return self.model.with_parameters(radius=float(self.radius[row]), kinematics=self.model.kinematics,
                                          module_mass=float(self.module_mass[row]),
                                          leg_stiffness=float(self.leg_stiffness[row]))

    # ------------------------------------------------------------------ step
    def command(self, inflation_times: np.ndarray) -> None:
        """Every arm's new set-points ``(n, 3N)`` [s] (to the legs, or the servos)."""
        self.inflation_times = np.array(inflation_times, dtype=float).reshape(self.n_arms, -1)
        if self.servo:
            self.body.command(self.inflation_times)
        elif self.soft:
            self.legs.command(self.inflation_times, self.body.state.time)
        elif self.realistic:
            self.legs.command(self.inflation_times, self.clock)

    def simulate(self, n_steps: int) -> None:
        """``n_steps`` physics steps of ``time_step``: the legs' rest lengths move and the arms
        integrate; an arm that leaves the PCC model goes back to its last valid state, at rest, and
        stays there (:attr:`stopped`, :attr:`stop_reason`) until its reset."""
        dt, body, legs = self.env.time_step, self.body, self.legs
        if self.servo:
            body.advance(n_steps)
            return
        if body is None:
            if self.realistic:  # the kinematic legs over the period
                legs.advance(n_steps * dt, self.clock)
                self.clock += n_steps * dt
            return
        self._period_tips = None
        if self.compiled:
            self._simulate_blocks(n_steps)
            return
        zero = np.zeros((self.n_arms, body.n_dof))
        scene = self.scene
        if scene is not None:
            self.tally.start_period()
        for _ in range(n_steps):
            active = ~self.stopped
            if not active.any():
                break
            last_valid = body.snapshot()
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    rest_end = body.arc_of_legs(legs.advance(dt, body.state.time))
                    body.step(dt, zero, rest_end=rest_end, active=active)
                reasons = self.violations(active)
            except np.linalg.LinAlgError:
                reasons = {int(i): SINGULAR for i in np.flatnonzero(active)}
            if scene is not None:
                self.tally.record(scene)
            if reasons:
                stopped = np.array(sorted(reasons))
                self.stopped[stopped] = True
                self.stop_reason[stopped] = [reasons[i] for i in stopped.tolist()]
                body.restore(stopped, last_valid, at_rest=True)

    def _simulate_blocks(self, n_steps: int) -> None:
        """:meth:`simulate`'s loop compiled, block by block in the core's threads (:func:`run_period`)."""
        body, legs = self.body, self.legs
        arrays = PeriodArrays.zeros(self.n_arms, body.n_dof, moving_rest=True)
        period = _LegsPeriod(legs, body, arrays.rest_end, self._leg_directions, 0.5 * self.model.leg_length_at_rest,
                             self.env.time_step)
        scene, tally = self.scene, self.tally
        if scene is not None:
            tally.start_period()
        result = run_period(body, n_steps, self.env.time_step, ~self.stopped, arrays, period.block, scene=scene,
                            record=None if scene is None else lambda rows: tally.record(scene, rows=rows))
        for i in np.flatnonzero(result.codes).tolist():
            self.stopped[i] = True
            self.stop_reason[i] = self._reason(i, int(result.codes[i]), result.violation[i])
        self._period_tips = (body.state, result.tips)

    def violations(self, rows: np.ndarray) -> dict[int, str]:
        """``{arm: why}`` for the arms of the bool mask ``rows`` whose state is outside the PCC model's
        validity. Valid: finite; every leg longer than half its length at zero inflation (a heavier
        load than the legs carry — kilograms on soft legs — crushes them through that; the model has
        no end stop); every module bent by at most π (beyond it the arc folds through itself); rates
        below 1e3 per second (m/s, rad/s)."""
        if not self.soft:
            return {}
        body, half = self.body, 0.5 * self.model.leg_length_at_rest
        u = body.state.u
        code = peter_validity(u, body.state.w, np.ascontiguousarray(rows, dtype=np.bool_), body.reference_length,
                              np.ascontiguousarray(body.radius, dtype=float), *self._leg_directions, half, MAX_RATE)
        return {i: self._reason(i, int(code[i]), u[i]) for i in np.flatnonzero(code).tolist()}

    def _reason(self, i: int, code: int, u: np.ndarray) -> str:
        """The ``termination_reason`` of arm ``i`` for its validity ``code`` at the state ``u`` ``(n,)``."""
        if code == 1:
            return "the state is not finite"
        if code == 2:
            body = self.body  # (the batched core's legs of u; PyBullet's single arm: its own, at u)
            legs = body.legs_of_arc(u[None], [i])[0] if isinstance(body, BatchedSoftPeter) else body.leg_lengths()[i]
            shortest = 1e3 * float(legs.min())
            full = 1e3 * self.model.leg_length_at_rest
            return (f"a leg crushed to {shortest:.1f} mm (< half its {full:.1f} mm): the load is "
                    "more than the legs carry, beyond the PCC model")
        if code == 3:
            bend = float(np.hypot(u[1::3], u[2::3]).max())
            return f"a module bent by {np.degrees(bend):.0f}° > 180°: beyond the PCC model"
        return "a rate above 1e3 /s: the arm is driven beyond its model"

    def terminated(self) -> np.ndarray:
        """``(n,)``: the arms stopped outside the PCC model (their episodes end)."""
        return self.stopped.copy()

    def commands(self, rows) -> np.ndarray:
        """The set-points ``rows`` hold [s] (the previous action of a first step)."""
        return self.inflation_times[rows]

    def time(self) -> np.ndarray:
        """Each arm's time since its reset ``(n,)`` [s] (soft physics, or kinematic under realism; else 0)."""
        return self.body.state.time.copy() if self.soft else self.clock.copy()

    # ------------------------------------------------------------------ readings
    def read_tips(self, rows, reset: bool = False) -> None:
        """True tips of ``rows`` (:attr:`tip`, :attr:`tip_velocity`) and their measurements
        (:attr:`measured_tip`, :attr:`measured_velocity`); ``reset``: the sensor starts over."""
        cached = self._period_tips
        if cached is not None and self.body is not None and cached[0] is self.body.state:
            tip, velocity = cached[1][rows, :3], cached[1][rows, 3:]  # (read at the period's end, in its blocks)
        elif self.body is not None:
            tip, velocity = (x[rows] for x in self.body.tip_state())
        elif not self.realistic:
            self.tip[rows] = self.measured_tip[rows] = self.model.forward_arms(self.inflation_times[rows])
            return
        else:
            tip = self.model.forward_arms(self.legs.inflation[rows], self.radius[rows])
            velocity = self.tip_velocity[rows]
        if self._tilted:  # the base frame -> the goals' frame
            tip = np.einsum("bij,bj->bi", self.base_rotation[rows], tip)
            velocity = np.einsum("bij,bj->bi", self.base_rotation[rows], velocity)
        store_tips(self, rows, tip, velocity, reset)

    def observation(self, rows):
        """The observations of ``rows`` (the sensor advances one sample)."""
        self.read_tips(rows)
        env = self.env
        obs = reach_observation(self.measured_tip[rows], self.goal[rows], self.measured_velocity[rows],
                                env.model_to_action(self.inflation_times[rows]), env.goal_conditioned)
        if not self.obstacles.shape[1]:
            return obs
        seen = self.obstacles[rows].reshape(self.goal[rows].shape[0], -1).astype(np.float32)
        if isinstance(obs, dict):
            obs["observation"] = np.concatenate((obs["observation"], seen), axis=-1)
            return obs
        return np.concatenate((obs, seen), axis=-1)

    def reward_terms(self) -> dict[str, np.ndarray]:
        """The task's reward terms of every arm, ``{name: (n,)}``, from the measured tips (and the
        touches of the last period: ``collision``)."""
        terms = self.env.goal_terms(self.measured_tip.astype(np.float32), self.goal.astype(np.float32))
        if self.env.collision_weight > 0.0:
            terms["collision"] = self.tally.collision_term(self.env.collision_weight)
        return terms

    def info(self, rows) -> dict[str, Any]:
        """``info`` entries of ``rows``: true ``distance`` [m] and ``is_success``, the set-points,
        the legs' state (soft physics or realism) and, for stopped arms, ``termination_reason``
        (with its ``_termination_reason`` mask)."""
        env = self.env
        distance = env.distances(self.tip[rows].astype(np.float32), self.goal[rows].astype(np.float32))
        info: dict[str, Any] = {"distance": distance, "is_success": distance < env.success_threshold,
                                "inflation_times": self.inflation_times[rows].copy()}
        if self.scene is not None:  # a goal reached through a collision is no success
            self.tally.add_info(rows, info)
        if self.soft or self.realistic:
            info["leg_inflation"] = self.legs.inflation[rows]
        stopped = self.stopped[rows]
        if stopped.any():
            info["termination_reason"] = self.stop_reason[rows].copy()
            info["_termination_reason"] = stopped.copy()
        return info


class _LegsPeriod:
    """What a compiled period of PETER's arms needs (:meth:`PeterArms._simulate_blocks`): the legs' arrays,
    advanced in place by :func:`~soft_envs.sim.period_kernels.peter_legs`, and the validity's constants."""

    def __init__(self, legs: BatchedPneumaticLegs, body: BatchedSoftPeter, rest_end: np.ndarray,
                 directions: tuple[np.ndarray, np.ndarray], half: float, dt: float) -> None:
        self.body, self.rest_end, self.directions, self.half = body, rest_end, directions, half
        self.radius = np.ascontiguousarray(body.radius, dtype=float)
        self.per_arm = (legs.lengths, legs.extension, *legs.command_delay.queue, legs.vent_rate, legs.gain,
                        legs.offset, legs.leak_rate, legs.perfect, body.legs_to_arc)
        self.constants = (legs.fill_rate, legs.rest_length, body.reference_length, legs.instant,
                          bool(legs.perfect.all()), dt)

    def block(self, rows: slice) -> _LegsBlock:
        return _LegsBlock(self, rows)


class _LegsBlock:
    """The rows ``rows`` of a :class:`_LegsPeriod` (:class:`~soft_envs.sim.arm_period.Block`)."""

    def __init__(self, period: _LegsPeriod, rows: slice) -> None:
        lengths, extension, *queue, vent, gain, offset, leak, perfect, to_arc = (x[rows] for x in period.per_arm)
        self.period = period
        self.legs = (lengths, extension, tuple(queue))
        self.rest = (vent, gain, offset, leak, perfect, to_arc, *period.constants)
        self.rest_end, self.radius = period.rest_end[rows], period.radius[rows]

    def before(self, k: int, state: StateViews) -> None:
        """The legs advanced over step ``k`` (from each arm's time) and their rest configuration."""
        peter_legs(*self.legs, state[5], *self.rest, self.rest_end)

    def check(self, state: StateViews, active: np.ndarray) -> np.ndarray:
        """:func:`~soft_envs.sim.batched_kernels.peter_validity` of the stepped ``active`` arms."""
        period = self.period
        return peter_validity(state[0], state[1], active, period.body.reference_length, self.radius,
                              *period.directions, period.half, MAX_RATE)

    def idle(self, k: int, state: StateViews) -> None:
        """The stopped arms' legs go on moving while the batch steps (as in the numpy loop)."""
        peter_legs(*self.legs, state[5], *self.rest, np.empty_like(self.rest_end))
