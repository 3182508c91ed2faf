"""``PCCTrack-v0``'s arms, row-wise: the env logic around the soft-arm core, written once.

:class:`PCCArms` holds ``n`` arms of one :class:`~soft_envs.envs.pcc_track.PCCTrackEnv`
configuration and does, for any rows of them, what an episode of the env does: the reset (start
on the trajectory, realism applied to the arm, the chambers and the sensor, the generalised force
that holds the start), actions to commands (the configuration set-point and its ramp, the residual
aim, held torques or pressures), the physics steps with the paper's PD + feed-forward law on its
ticks and the pressure regulators, the validity check that stops an arm driven out of the PCC
model, the tip readings through the sensor, the observation, the reward terms and ``info``. The
single env is ``n = 1`` of it, the native vector env (:mod:`soft_envs.envs.pcc_track_vector`)
``n = N``.

The body (``body=``): the batched soft-arm core (:class:`~soft_envs.sim.batched_bodies.BatchedPCCBody`,
both envs' default) or one PyBullet arm with PyBullet's terms
(:class:`~soft_envs.sim.arm_rows.PCCBodyRows`, ``backend="pybullet"``, the reference). On the batched
core, :meth:`PCCArms.simulate`'s physics steps run compiled, a block of arms' whole period in one call
(:mod:`soft_envs.sim.pcc_period`: the law, the chambers, the step, the validity check), the blocks in
the core's threads, equal to the numpy loop to rounding; the numpy loop stays for PyBullet's arm, a scene, a task's
per-step hooks (the push's box) and a tip payload the law does not know. Arrays are ``(n, …)``, SI
units, the arm's base frame.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from soft_envs.envs.pcc_parts import ResidualAim
from soft_envs.envs.pcc_ramp import command_step, ramp_setpoints
from soft_envs.envs.vector_parts import BatchedSensor, store_tips
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.sim import threads
from soft_envs.sim.actuators import BatchedPDFeedforward, BatchedPressureRegulator
from soft_envs.sim.batched_bodies import MAX_PCC_RATE, BatchedPCCBody
from soft_envs.sim.batched_kernels import batch_point_state
from soft_envs.sim.batched_types import ArmState
from soft_envs.sim.bullet import STANDARD_GRAVITY
from soft_envs.sim.pcc_period import pcc_period
from soft_envs.sim.period_kernels import pcc_observation

STATE_FIELDS = tuple(f.name for f in fields(ArmState))  # (u, w, a, c, rest, time, fresh): pcc_period's order


def soft_arms(env: Any, n_arms: int, num_threads: int | None = None) -> BatchedPCCBody:
    """``n_arms`` arms of ``env``'s model, payload, gravity and damping on the batched core (turned by the
    env's ``base_orientation``, a quaternion ``(x, y, z, w)``, where it has one: a hanging arm)."""
    return BatchedPCCBody(env.model, n_arms, gravity=STANDARD_GRAVITY if env.gravity else 0.0,
                          rayleigh_stiffness=env.rayleigh_stiffness, payload=env.payload, num_threads=num_threads,
                          base_orientation=np.asarray(getattr(env, "base_orientation", (0.0, 0.0, 0.0, 1.0))))


class PCCArms:
    """``n_arms`` PCC arms of ``env``'s configuration (module docstring).

    Args:
        env: the env whose keywords, model, law and realism the arms take (read, never changed).
        n_arms: number of arms.
        body: the arms' body (module docstring).
    """

    def __init__(self, env: Any, n_arms: int, body: Any) -> None:
        model = env.model
        n, n_dof = int(n_arms), model.n_dof
        self.env, self.model, self.n_arms, self.body = env, model, n, body
        body.set_stiffness(None, env.nominal_stiffness)
        law = env.controller
        self.controller = BatchedPDFeedforward(model, law.kp, law.kv, compensate_damping=law.compensate_damping,
                                               stiffness_error=law.stiffness_error, known_payload=law.known_payload)
        self.regulator: BatchedPressureRegulator | None = None
        if env.actuation == "pressure":
            self.regulator = BatchedPressureRegulator(n, n_dof, max_pressure=model.pressure.max_pressure,
                                                      time_constant=env.regulator_time_constant,
                                                      delay=env.regulator_delay)
        #: Each arm's chamber map ``(n, n_dof, n_dof)`` (the nominal one scaled by its realism), or ``None``.
        self.plant_pressure_maps: np.ndarray | None = None
        self.segment_mass = np.full(n, model.segment_mass)  # each arm's simulated segment mass [kg]
        self.setpoint = np.zeros((n, n_dof))  # configuration set-points (configuration, smooth, residual)
        self.previous_setpoint = np.zeros((n, n_dof))
        self.command_value = np.zeros((n, env.command_space.shape[0]))  # torques, pressures or residual aims
        self.tau = np.zeros((n, n_dof))  # the generalised force commanded [N, N m]
        self.physics_steps = np.zeros(n, dtype=np.int64)
        self.saturated = np.zeros(n, dtype=bool)  # a regulator clipped its set-point this step
        self.time = np.zeros(n)  # [s] on the trajectory
        self.stop_code = np.zeros(n, dtype=np.int64)  # the body's violation codes (0: running)
        self.stop_reason = np.full(n, None, dtype=object)
        self.goal = np.zeros((n, 3))
        self.tip, self.tip_velocity = np.zeros((n, 3)), np.zeros((n, 3))
        self.measured_tip, self.measured_velocity = np.zeros((n, 3)), np.zeros((n, 3))
        realism = env.realism
        self.realistic = not realism.is_ideal()
        latency = realism.ranges["observation_latency"][1] if "observation_latency" in realism.ranges else 0.0
        self.sensor = BatchedSensor(n, 6, int(round(latency / env.dt)))
        self._new_masses = not (realism.is_ideal("mass_error") and realism.is_ideal("payload"))
        self.aims = [ResidualAim(model, env.trajectory) for _ in range(n)] if env.action_type == "residual" else []
        self._period_tips: tuple[Any, np.ndarray] | None = None  # (the body's state, its tips (n, 6))
        #: (previous set-point, set-point, their smooth forms) as :meth:`command` ramped them.
        self._smooth_setpoints: tuple[np.ndarray, ...] | None = None
        #: Run the periods compiled where :attr:`compiled` allows (False: the numpy loop; equal to rounding).
        self.compiled_periods = True

    @property
    def compiled(self) -> bool:
        """Whether the next period runs compiled, block by block in the core's threads
        (:mod:`soft_envs.sim.pcc_period`): the batched core without a scene, no per-step hook of a task
        (:meth:`per_step_hooks`) and no tip payload the law does not know (else the numpy loop of
        :meth:`simulate`)."""
        body = self.body
        if not (self.compiled_periods and isinstance(body, BatchedPCCBody)) or body.scene is not None \
                or self.per_step_hooks():
            return False
        return not (self.env.setpoint_driven and np.any(body.payload - self.controller.known_payload))

    def per_step_hooks(self) -> bool:
        """Whether :meth:`external_torque` or :meth:`after_physics_step` act at every physics step (a task
        that has them overrides this; none here)."""
        return False

    # ------------------------------------------------------------------ reset
    def reset(self, rows: np.ndarray, tasks: list, perturbations: dict[str, np.ndarray],
              realism_rngs: list[np.random.Generator | None]) -> None:
        """New episodes for ``rows``: ``tasks`` are the start times on the trajectory [s]; each arm at
        rest on its start (the straight arm with ``start_straight``), held there by its command;
        ``perturbations`` (``{name: (len(rows), …)}``) applied."""
        env, body, regulator = self.env, self.body, self.regulator
        self._period_tips = None
        self._smooth_setpoints = None
        if self.realistic:
            self._apply_realism(rows, perturbations, realism_rngs)
        starts = self.start_configurations(tasks)
        body.reset_configuration(rows, starts)
        self.stop_code[rows] = 0
        self.stop_reason[rows] = None
        self.time[rows] = self.start_times(tasks)
        self.setpoint[rows] = body.configuration[rows]
        self.previous_setpoint[rows] = self.setpoint[rows]
        # at rest on the start: the generalised force that holds it there (elasticity and gravity)
        hold = body.elastic_torque()[rows] + body.gravity_torque(index=rows)
        self.tau[rows] = hold
        self.physics_steps[rows] = 0
        self.saturated[rows] = False
        held = hold
        if regulator is not None:
            held = hold @ env.pressure_inverse.T
            regulator.reset(rows, held)
            regulator.saturated[rows] = False
        if env.action_type == "residual":
            self.command_value[rows] = 0.0
            for i in rows.tolist():
                self.aims[i].reset(self.setpoint[i])
        else:
            self.command_value[rows] = held if env.action_type == "pressure" else hold
        self.reset_task(rows, tasks)
        self.read_tips(rows, reset=True)

    def start_times(self, tasks: list) -> np.ndarray:
        """The episodes' start times [s] of the reset's ``tasks`` (trajectory times here; hook)."""
        return np.array(tasks, dtype=float)

    def start_configurations(self, tasks: list) -> np.ndarray:
        """The arms' start configurations ``(k, n)`` for the reset's ``tasks``: at rest on the trajectory's
        point (the straight arm with ``start_straight``; hook)."""
        if self.env.start_straight:
            return np.zeros((len(tasks), self.model.n_dof))
        return np.array([self.env.start_configuration(t) for t in self.start_times(tasks).tolist()])

    def reset_task(self, rows: np.ndarray, tasks: list) -> None:
        """The task's state of ``rows`` after their arms were reset: the goal on the trajectory (hook)."""
        self.goal[rows] = self.env.trajectory.position(self.time[rows])

    def external_torque(self) -> np.ndarray | None:
        """A generalised force ``(n, n_dof)`` on the arms this physics step besides their actuation (a
        free object's reaction; hook: none here)."""
        return None

    def after_physics_step(self) -> None:
        """What the task does after every physics step of every arm (hook; nothing here)."""

    def advance_goal(self) -> None:
        """The goals after a control period (the trajectory's point at the arms' time; hook)."""
        self.goal = self.env.trajectory.position(self.time)

    def _apply_realism(self, rows: np.ndarray, drawn: dict[str, np.ndarray],
                       realism_rngs: list[np.random.Generator | None]) -> None:
        """The drawn perturbations of ``rows`` on their arms, chambers and sensor."""
        env, body = self.env, self.body
        if self._new_masses:
            self.segment_mass[rows] = self.model.segment_mass * (1.0 + drawn["mass_error"])
            body.set_model(rows, [self.plant(i) for i in rows.tolist()], env.payload + drawn["payload"])
        body.set_stiffness(rows, env.nominal_stiffness * (1.0 + drawn["stiffness_error"])[:, None])
        if self.regulator is not None:
            if self.plant_pressure_maps is None:
                self.plant_pressure_maps = np.repeat(env.pressure_map[None], self.n_arms, axis=0)
            scale = drawn["chamber_gain"] * (1.0 - drawn["pressure_droop"])
            self.plant_pressure_maps[rows] = env.pressure_map * scale[:, None, :]
            self.regulator.set_delay(rows, env.regulator_delay + drawn["regulator_delay"])
        latency = np.rint(drawn["observation_latency"] / env.dt).astype(np.int64)
        noise = np.zeros((rows.size, 6))
        noise[:, :3] = drawn["observation_noise"][:, None]  # tip [m]; velocity noise-free
        self.sensor.configure(rows, noise, latency, realism_rngs)

    def plant(self, row: int) -> PCCArm:
        """The arm ``row`` really is (its drawn segment mass; the payload is the body's)."""
        return self.env.arm_with_mass(float(self.segment_mass[row]))

    # ------------------------------------------------------------------ step
    def command(self, target: np.ndarray) -> None:
        """Every arm's action in model units ``(n, …)``: a configuration or its smooth form (ramped
        towards), a residual aim [m] (turned into a set-point on the trajectory), torques or pressures
        (held, ramped)."""
        env = self.env
        target = np.array(target, dtype=float).reshape(self.n_arms, -1)
        if env.action_type == "residual":
            self.command_value = target
            target = np.array([aim.setpoint(t + env.dt, c) for aim, t, c in
                               zip(self.aims, self.time.tolist(), target, strict=True)])
        elif env.action_type == "smooth":  # (ΔL, a, b) into the bend disk, then (ΔL, θ, φ) nearest the set-point
            target = self.model.from_smooth(self.model.project_smooth(target), reference=self.setpoint)
        step = command_step(self.model, "configuration" if env.setpoint_driven else env.action_type,
                            env.torque_limits, env.pressure_action_limit, env.dt, env.command_ramp_time)
        if env.setpoint_driven:
            self.previous_setpoint = self.setpoint
            self.setpoint, *smooth = ramp_setpoints(self.model, self.setpoint, target, step)
            self._smooth_setpoints = (self.previous_setpoint, self.setpoint, *smooth)
        else:
            if step is not None:
                target = self.command_value + np.clip(target - self.command_value, -step, step)
            self.command_value = target

    def smooth_setpoints(self) -> tuple[np.ndarray, np.ndarray]:
        """The smooth forms ``(n, n_dof)`` of the period's set-points, before and after its command (the
        law's interpolation ends; kept from :meth:`command` while neither set-point has changed)."""
        kept = self._smooth_setpoints
        if kept is not None and kept[0] is self.previous_setpoint and kept[1] is self.setpoint:
            return kept[2], kept[3]
        return self.model.to_smooth(self.previous_setpoint), self.model.to_smooth(self.setpoint)

    def _actuate(self, k: int, steps: int, u_from, u_to, active: np.ndarray, every: bool) -> None:
        """The command of physics step ``k`` of ``steps`` of the ``active`` arms (``every``: all are):
        the PD + feed-forward law on its ticks (set-points interpolated over the control period), else
        the held torque or pressure; to the regulators (chambers) or the arm."""
        env, regulator = self.env, self.regulator
        tick = active & (self.physics_steps % env.steps_per_control == 0)
        if env.setpoint_driven:
            if tick.any():  # the set-point at the end of the law's hold (independent of the physics step)
                s = min((k + env.steps_per_control) / steps, 1.0)
                u_d = (1 - s) * u_from + s * u_to
                self.tau[tick] = self.controller.torque_smooth(self.body, u_d, include_damping=True)[tick]
            commanded, all_commanded = tick, bool(tick.all())
        else:
            if every:
                self.tau[:] = self.command_value
            else:
                self.tau[active] = self.command_value[active]
            commanded, all_commanded = active, every
        if regulator is not None and (all_commanded or commanded.any()):
            setpoint = self.tau if env.action_type == "pressure" else self.tau @ env.pressure_inverse.T
            regulator.command(setpoint, self.body.state.time, mask=None if all_commanded else commanded)
            self.saturated |= regulator.saturated & commanded

    def simulate(self, n_steps: int) -> None:
        """``n_steps`` physics steps under the current commands; an arm driven out of the PCC model
        goes back to its last valid state, at rest, and stays there (:attr:`stop_reason`)."""
        env, body, regulator = self.env, self.body, self.regulator
        dt = env.time_step
        self._period_tips = None
        if self.compiled:
            self._simulate_blocks(n_steps)
            self.time += n_steps * dt
            self.advance_goal()
            return
        u_from = u_to = None
        if env.setpoint_driven:
            u_from, u_to = self.smooth_setpoints()
        self.saturated[:] = False
        for k in range(n_steps):
            active = self.stop_code == 0
            every = bool(active.all())  # (the common case: no masks to apply)
            if not (every or active.any()):
                break
            moving = None if every else active
            last_valid = body.snapshot()
            with np.errstate(over="ignore", invalid="ignore"):
                self._actuate(k, n_steps, u_from, u_to, active, every)
                if regulator is not None:
                    held = regulator.pressures
                    start = self._chamber_torque(regulator.acting(body.state.time))
                    end = self._chamber_torque(regulator.advance(dt, body.state.time))
                    if not every:
                        regulator.pressures = np.where(active[:, None], regulator.pressures, held)
                    extra = self.external_torque()
                    if extra is not None:
                        start, end = start + extra, end + extra
                    body.step(dt, start, torque_end=end, active=moving)
                else:
                    extra = self.external_torque()
                    body.step(dt, self.tau if extra is None else self.tau + extra, active=moving)
                self.after_physics_step()
                self.physics_steps[active] += 1
                code = body.model_violation()
                if not every:
                    code = np.where(active, code, 0)
            if not code.any():
                continue
            stopped = np.flatnonzero(code)
            if stopped.size:
                for i in stopped.tolist():
                    self.stop_reason[i] = body.violation_reason(int(code[i]), body.state.u[i])
                self.stop_code[stopped] = code[stopped]
                body.restore(stopped, last_valid, at_rest=True)
        self.time += n_steps * dt
        self.advance_goal()

    def _simulate_blocks(self, n_steps: int) -> None:
        """:meth:`simulate`'s physics steps compiled: the whole period of a block of arms in one call of
        :func:`~soft_envs.sim.pcc_period.pcc_period` (the law, the chambers, the core's step, the
        validity check), the blocks in the core's threads."""
        env, body, regulator, model = self.env, self.body, self.regulator, self.model
        n, n_dof, dt = self.n_arms, model.n_dof, env.time_step
        driven = env.setpoint_driven
        if driven:
            u_from, u_to = (np.ascontiguousarray(x) for x in self.smooth_setpoints())
        else:
            u_from = u_to = np.zeros((n, n_dof))
        self.saturated[:] = False
        law = self.controller
        flags = [env.steps_per_control, driven, env.action_type == "pressure", regulator is not None,
                 self.plant_pressure_maps is not None, bool(np.any(body.params.rayleigh[:, 0])),
                 bool(law.compensate_damping), 0]
        lengths = np.ascontiguousarray(model.segment_lengths, dtype=float)
        if regulator is not None:
            lagged = regulator.time_constant > 0.0
            decay = np.exp(-dt / np.where(lagged, regulator.time_constant, 1.0))
            maps = self.plant_pressure_maps if self.plant_pressure_maps is not None else np.zeros((1, 1, 1))
            chambers = (np.ascontiguousarray(env.pressure_inverse, dtype=float),
                        np.ascontiguousarray(env.pressure_map, dtype=float), maps, float(regulator.max_pressure),
                        lagged, decay)
            flags[7] = regulator.setpoint.reserve(n_steps)
            dead = (*regulator.setpoint.queue, regulator.delay)
            regulator.pressures = np.ascontiguousarray(regulator.pressures, dtype=float)
            regulator.saturated = np.array(regulator.saturated, dtype=np.bool_)
            pressures, held_saturation = regulator.pressures, regulator.saturated
        else:
            chambers = (np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1, 1)), 0.0, np.zeros(n, dtype=np.bool_),
                        np.zeros(n))
            dead = (np.zeros((n, n_dof)), np.zeros((n, 1, n_dof)), np.full((n, 1), np.inf), np.zeros((n, 1), np.int64),
                    np.zeros(n))
            pressures, held_saturation = np.zeros((n, n_dof)), np.zeros(n, dtype=np.bool_)
        active = self.stop_code == 0
        start = body.state
        out = ArmState(np.empty_like(start.u), np.empty_like(start.w), np.empty_like(start.a), np.empty_like(start.c),
                       start.rest, np.empty_like(start.time), np.empty_like(start.fresh))
        codes, violation, tips = np.zeros(n, dtype=np.int64), np.zeros((n, n_dof)), np.empty((n, 6))
        topology, params = body.topology.arrays, body.params
        # (writeable, as the vector env's: a single env's read-only views would compile a second specialization)
        arm_params = tuple(np.require(x, requirements=("C", "W")) for x in
                           (params.mass, params.inertia, params.gravity, params.stiffness, params.rayleigh))
        integrator = (float(dt), *body.alpha_parameters, int(body.corrector_passes))
        validity = (model.per_segment, 0.5 * lengths, MAX_PCC_RATE)
        law_constants = (float(law.kp), float(law.kv), 1.0 + float(law.stiffness_error), lengths)
        inverse, pmap, maps, bound, lagged, decay = chambers

        def run_block(rows: slice) -> None:
            per_arm = (maps[rows] if flags[4] else maps, lagged[rows], decay[rows])
            pcc_period(
                topology, tuple(x[rows] for x in arm_params), tuple(getattr(start, f)[rows] for f in STATE_FIELDS),
                tuple(getattr(out, f)[rows] for f in STATE_FIELDS if f != "rest"), active[rows],
                self.physics_steps[rows], (n_steps, *flags), law_constants, (u_from[rows], u_to[rows]),
                self.command_value[rows], self.tau[rows], (inverse, pmap, per_arm[0], bound, *per_arm[1:]),
                tuple(x[rows] for x in dead), pressures[rows], (held_saturation[rows], self.saturated[rows]),
                integrator, validity, (codes[rows], violation[rows]))
            batch_point_state(*topology, out.u[rows], out.w[rows], out.c[rows], tips[rows])

        threads.run_blocks(run_block, n, body.num_threads)
        body.state = out  # (a new state: the body's terms of the old one are not reused)
        if regulator is not None:
            regulator.setpoint.took(n_steps)
        for i in np.flatnonzero(codes).tolist():
            self.stop_reason[i] = body.violation_reason(int(codes[i]), violation[i])
            self.stop_code[i] = codes[i]
        self._period_tips = (body.state, tips)

    def _chamber_torque(self, pressures: np.ndarray) -> np.ndarray:
        """Generalised forces ``(n, n_dof)`` of chamber pressures ``(n, n_dof)`` [Pa] through each arm's map."""
        if self.plant_pressure_maps is None:
            return pressures @ self.env.pressure_map.T
        return np.einsum("bij,bj->bi", self.plant_pressure_maps, pressures)

    # ------------------------------------------------------------------ readings
    def read_tips(self, rows, reset: bool = False) -> None:
        """True tips of ``rows`` and their measurements; ``reset``: the sensor starts over."""
        cached = self._period_tips
        if cached is not None and cached[0] is self.body.state:  # (read at the period's end, in its blocks)
            tip, velocity = cached[1][rows, :3], cached[1][rows, 3:]
        else:
            tip, velocity = (x[rows] for x in self.body.tip_state())
        store_tips(self, rows, tip, velocity, reset)

    def observation(self, rows, on_clip=None):
        """The observations of ``rows`` (the sensor advances one sample; ``on_clip(count)``: the
        entries clipped into the space)."""
        self.read_tips(rows)
        env, state = self.env, self.body.state
        phase = 2 * np.pi * self.time[rows] / env.trajectory.period
        parts = [np.ascontiguousarray(x[rows], dtype=float) for x in (self.measured_tip, self.goal,
                                                                      self.measured_velocity, state.u, state.w)]
        high = np.ascontiguousarray(env.observation_high, dtype=float)
        obs = np.empty((parts[0].shape[0], high.shape[0]), dtype=np.float32)  # (track_observation, compiled)
        count = pcc_observation(*parts, np.ascontiguousarray(self.model.segment_lengths, dtype=float), np.sin(phase),
                                np.cos(phase), high, obs)
        if on_clip is not None:
            on_clip(int(count))
        if env.goal_conditioned:
            return {"observation": obs[..., 9:], "achieved_goal": obs[..., 0:3], "desired_goal": obs[..., 3:6]}
        return obs

    def reward_terms(self) -> dict[str, np.ndarray]:
        """The task's reward terms of every arm ``{name: (n,)}``, from the measured tips."""
        env = self.env
        if env.goal_conditioned:
            return env.goal_terms(self.measured_tip.astype(np.float32), self.goal.astype(np.float32))
        return {"tracking": -env.tracking_weight * np.linalg.norm(self.goal - self.measured_tip, axis=-1)}

    def tracking_error(self, rows) -> np.ndarray:
        """True tip-to-goal distances [m] (goal-conditioned: of the goals rounded to float32 as the
        observation shows them, so that ``compute_reward`` reproduces the reward)."""
        if self.env.goal_conditioned:
            return self.env.distances(self.tip[rows].astype(np.float32), self.goal[rows].astype(np.float32))
        return np.linalg.norm(self.goal[rows] - self.tip[rows], axis=-1)

    def info(self, rows) -> dict[str, Any]:
        """``info`` entries of ``rows`` (tracking error, success, time, set-point, the chambers' state
        and, for stopped arms, ``termination_reason`` with its ``_termination_reason`` mask)."""
        error = self.tracking_error(rows)
        info: dict[str, Any] = {"tracking_error": error, "is_success": error < self.env.success_threshold,
                                "time": self.time[rows].copy(), "setpoint": self.setpoint[rows].copy()}
        if self.regulator is not None:
            info["pressures"] = self.regulator.pressures[rows].copy()
            info["pressure_saturated"] = self.saturated[rows].copy()
        stopped = self.stop_code[rows] != 0
        if stopped.any():
            info["termination_reason"] = self.stop_reason[rows].copy()
            info["_termination_reason"] = stopped
        return info

    def terminated(self) -> np.ndarray:
        """``(n,)``: the arms stopped outside the PCC model (their episodes end)."""
        return self.stop_code != 0

    def commands(self, rows) -> np.ndarray:
        """The commands held by ``rows``, in model units (the previous action of a first step)."""
        kind = self.env.action_type
        if kind == "smooth":
            return self.model.to_smooth(self.setpoint[rows])
        return self.setpoint[rows] if kind == "configuration" else self.command_value[rows]
