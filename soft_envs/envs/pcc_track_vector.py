"""The native vector form of ``soft_envs/PCCTrack-v0``: ``N`` PCC arms on the batched soft-arm core.

``gym.make_vec("soft_envs/PCCTrack-v0", num_envs=N, …)`` returns a :class:`PCCTrackVectorEnv`
(the registered ``vector_entry_point``) for every ``action_type`` but ``"residual"`` and physics: the single env's
spaces, rewards, ``info`` keys, realism and keywords, every sub-env an episode of the single env
(:mod:`soft_envs.envs.vector_base`).

Per physics step, as ``PCCTrackEnv.simulate`` for one arm: the paper's PD + feed-forward law on
its ticks (:class:`~soft_envs.sim.batched_actuators.BatchedPDFeedforward`, configuration actions,
the set-point interpolated over the control period) or the held torque/pressure action; the
chambers (:class:`~soft_envs.sim.batched_actuators.BatchedPressureRegulator`, per-arm dead time,
each arm's chamber map scaled by its drawn gains and droops) or direct actuation; one step of
the batched core (:class:`~soft_envs.sim.batched_bodies.BatchedPCCBody`: per-arm segment mass,
payload, stiffness); an arm driven out of the PCC model's validity is put back at its last valid
state, at rest, stays there for the rest of the step and terminates with the single env's
``termination_reason``. Reset: the start configuration on the trajectory is the single env's
(``PCCTrackEnv.start_configuration``, one Gauss–Newton solve per reset). The observation, the
reward terms, ``compute_reward``, the action mapping and the draws are the single env's own
functions (vectorised).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.pcc_parts import track_observation
from soft_envs.envs.pcc_ramp import command_step, ramp_setpoint
from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.vector_base import SoftVectorEnv
from soft_envs.envs.vector_parts import BatchedSensor
from soft_envs.exceptions import InvalidParameterError
from soft_envs.sim import threads
from soft_envs.sim.batched_actuators import BatchedPDFeedforward, BatchedPressureRegulator
from soft_envs.sim.batched_arm import ArmState, terms
from soft_envs.sim.batched_bodies import BatchedPCCBody
from soft_envs.sim.bullet import STANDARD_GRAVITY

ENV_ID = "soft_envs/PCCTrack-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PCCTrackVectorEnv(SoftVectorEnv[PCCTrackEnv]):
    """``num_envs`` PCCTrack arms (module docstring).

    Args:
        num_envs: number of sub-envs.
        max_episode_steps: episode length [steps] (the registered 400; ``None``: no limit).
        autoreset_mode: ``"NextStep"`` (default), ``"SameStep"`` or ``"Disabled"``.
        num_threads: threads that step the arms (default: the cores this process may use; the
            results are the same for any number, :mod:`soft_envs.sim.threads`).
        **kwargs: :class:`~soft_envs.envs.pcc_track.PCCTrackEnv` keywords.
    """

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, num_threads: int | None = None,
                 **kwargs: Any) -> None:
        num_threads = threads.check_threads(num_threads)
        single = PCCTrackEnv(**kwargs)
        if single.action_type == "residual":
            single.close()
            raise InvalidParameterError("the native PCCTrack vector env takes no action_type='residual' (one "
                                        "Gauss–Newton solve per arm and step): use vectorization_mode='sync'")
        super().__init__(single, num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode)
        model, n, n_dof = single.model, self.num_envs, single.model.n_dof
        self.body = BatchedPCCBody(model, n, gravity=STANDARD_GRAVITY if single.gravity else 0.0,
                                   rayleigh_stiffness=single.rayleigh_stiffness, payload=single.payload,
                                   num_threads=num_threads)
        self.body.set_stiffness(None, single.nominal_stiffness)
        law = single.controller
        self.controller = BatchedPDFeedforward(model, law.kp, law.kv, compensate_damping=law.compensate_damping,
                                               stiffness_error=law.stiffness_error, known_payload=law.known_payload)
        self.regulator: BatchedPressureRegulator | None = None
        if single.regulator is not None:
            self.regulator = BatchedPressureRegulator(n, n_dof, max_pressure=single.regulator.max_pressure,
                                                      time_constant=single.regulator_time_constant,
                                                      delay=single.regulator_delay)
        #: Each arm's chamber map ``(N, n, n)`` (the nominal one scaled by its realism), or ``None``.
        self.plant_pressure_maps: np.ndarray | None = None
        self.setpoint = np.zeros((n, n_dof))
        self.previous_setpoint = np.zeros((n, n_dof))
        self.command_value = np.zeros((n, n_dof))  # torque [N, N m] or pressure [Pa] actions
        self.tau = np.zeros((n, n_dof))
        self.physics_steps = np.zeros(n, dtype=np.int64)
        self.saturated = np.zeros(n, dtype=bool)
        self.time = np.zeros(n)  # [s] on the trajectory
        self.stop_code = np.zeros(n, dtype=np.int64)  # BatchedPCCBody.model_violation codes (0: running)
        self.stop_reason = np.full(n, None, dtype=object)
        self.goal = np.zeros((n, 3))
        self.tip = np.zeros((n, 3))
        self.tip_velocity = np.zeros((n, 3))
        self.measured_tip = np.zeros((n, 3))
        self.measured_velocity = np.zeros((n, 3))
        realism = single.realism
        self.realistic = not realism.is_ideal()
        if self.realistic:
            self.sensor = BatchedSensor(n, 6, int(round(realism.ranges["observation_latency"][1] / single.dt)))
            self._new_masses = not (realism.is_ideal("mass_error") and realism.is_ideal("payload"))

    # ------------------------------------------------------------------ hooks
    def _apply_realism(self, rows: np.ndarray) -> None:
        """The drawn perturbations of ``rows`` on their arms, chambers and sensor (``PCCTrackEnv._apply_realism``)."""
        single, body = self.single, self.body
        d = {name: values[rows] for name, values in self.perturbations.items()}
        if self._new_masses:
            arms = [single.arm_with_mass(single.model.segment_mass * (1.0 + e)) for e in d["mass_error"].tolist()]
            body.set_model(rows, arms, single.payload + d["payload"])
        body.set_stiffness(rows, single.nominal_stiffness * (1.0 + d["stiffness_error"])[:, None])
        if self.regulator is not None:
            if self.plant_pressure_maps is None:
                self.plant_pressure_maps = np.repeat(single.pressure_map[None], self.num_envs, axis=0)
            self.plant_pressure_maps[rows] = single.pressure_map * (d["chamber_gain"] * (1.0 - d["pressure_droop"]))[
                :, None, :]
            self.regulator.set_delay(rows, single.regulator_delay + d["regulator_delay"])
        latency = np.rint(d["observation_latency"] / single.dt).astype(np.int64)
        noise = np.zeros((rows.size, 6))
        noise[:, :3] = d["observation_noise"][:, None]  # tip [m]; velocity noise-free
        self.sensor.configure(rows, noise, latency, [self.realism_rngs[i] for i in rows.tolist()])

    def _gravity_torque(self, rows: np.ndarray) -> np.ndarray:
        """``G`` ``(len(rows), n)`` of the arms ``rows`` at their states."""
        state = self.body.state
        part = ArmState(*(getattr(state, f.name)[rows] for f in fields(state)))
        return terms(self.body.topology, self.body.params.take(rows), part, with_mass=False)[2]

    def _reset_arms(self, rows: np.ndarray, tasks: list, options: dict[str, Any]) -> None:
        single, body = self.single, self.body
        if self.realistic:
            self._apply_realism(rows)
        t0 = np.array(tasks, dtype=float)
        n_dof = single.model.n_dof
        starts = np.zeros((rows.size, n_dof)) if single.start_straight else \
            np.array([single.start_configuration(t) for t in t0.tolist()])
        body.reset_configuration(rows, starts)
        self.stop_code[rows] = 0
        self.stop_reason[rows] = None
        self.time[rows] = t0
        self.setpoint[rows] = body.configuration[rows]
        self.previous_setpoint[rows] = self.setpoint[rows]
        # at rest on the start: the generalised force that holds it there (elasticity and gravity)
        hold = body.elastic_torque()[rows] + self._gravity_torque(rows)
        self.tau[rows] = hold
        self.physics_steps[rows] = 0
        self.saturated[rows] = False
        if self.regulator is not None:
            held = hold @ single.pressure_inverse.T
            self.regulator.reset(rows, held)
            self.regulator.saturated[rows] = False
            self.command_value[rows] = held if single.action_type == "pressure" else hold
        else:
            self.command_value[rows] = hold
        self.goal[rows] = single.trajectory.position(self.time[rows])
        if self.realistic:
            self._read_tips(rows, reset=True)

    def _apply_actions(self, actions: np.ndarray) -> None:
        single = self.single
        target = single.action_to_model(actions)
        step = command_step(single.model, single.action_type, single.torque_limits, single.pressure_action_limit,
                            single.dt, single.command_ramp_time)  # PCCTrackEnv._apply_action, row by row
        if single.action_type == "configuration":
            self.previous_setpoint = self.setpoint
            self.setpoint = ramp_setpoint(single.model, self.setpoint, target, step)
        else:
            if step is not None:
                target = self.command_value + np.clip(target - self.command_value, -step, step)
            self.command_value = target

    def _actuate(self, k: int, steps: int, u_from, u_to, active: np.ndarray) -> None:
        """The command of physics step ``k`` of ``steps`` of the ``active`` arms (``PCCTrackEnv._actuate``)."""
        single, regulator = self.single, self.regulator
        configuration = single.action_type == "configuration"
        tick = active & (self.physics_steps % single.steps_per_control == 0)
        if configuration:
            if tick.any():  # the set-point at the end of the law's hold (independent of the physics step)
                s = min((k + single.steps_per_control) / steps, 1.0)
                u_d = (1 - s) * u_from + s * u_to
                tau = self.controller.torque_smooth(self.body, u_d, include_damping=True)
                self.tau[tick] = tau[tick]
            commanded = tick
        else:
            self.tau[active] = self.command_value[active]
            commanded = active
        if regulator is not None and commanded.any():
            setpoint = self.tau if single.action_type == "pressure" else self.tau @ single.pressure_inverse.T
            regulator.command(setpoint, self.body.state.time, mask=commanded)
            self.saturated |= regulator.saturated & commanded

    def _simulate(self) -> None:
        single, body, regulator = self.single, self.body, self.regulator
        steps, dt = single.frame_skip, single.time_step
        u_from = u_to = None
        if single.action_type == "configuration":
            u_from = single.model.to_smooth(self.previous_setpoint)
            u_to = single.model.to_smooth(self.setpoint)
        self.saturated[:] = False
        for k in range(steps):
            active = self.stop_code == 0
            if not active.any():
                break
            last_valid = body.snapshot()
            with np.errstate(over="ignore", invalid="ignore"):
                self._actuate(k, steps, u_from, u_to, active)
                if regulator is not None:
                    held = regulator.pressures
                    start = self._chamber_torque(regulator.acting(body.state.time))
                    end = self._chamber_torque(regulator.advance(dt, body.state.time))
                    regulator.pressures = np.where(active[:, None], regulator.pressures, held)
                    body.step(dt, start, torque_end=end, active=active)
                else:
                    body.step(dt, self.tau, active=active)
                self.physics_steps[active] += 1
                code = np.where(active, body.model_violation(), 0)
            stopped = np.flatnonzero(code)
            if stopped.size:
                for i in stopped.tolist():
                    self.stop_reason[i] = body.violation_reason(int(code[i]), body.state.u[i])
                self.stop_code[stopped] = code[stopped]
                body.restore(stopped, last_valid, at_rest=True)
        self.time += steps * dt
        self.goal = single.trajectory.position(self.time)

    def _chamber_torque(self, pressures: np.ndarray) -> np.ndarray:
        """Generalised forces ``(N, n)`` of chamber pressures ``(N, n)`` [Pa] through each arm's map."""
        if self.plant_pressure_maps is None:
            return pressures @ self.single.pressure_map.T
        return np.einsum("bij,bj->bi", self.plant_pressure_maps, pressures)

    def _read_tips(self, rows, reset: bool = False) -> None:
        """True tips of ``rows`` and their measurements (as ``PCCTrackEnv._read_tip``)."""
        tip, velocity = (x[rows] for x in self.body.tip_state())
        self.tip[rows], self.tip_velocity[rows] = tip, velocity
        if not self.realistic:
            self.measured_tip[rows], self.measured_velocity[rows] = tip, velocity
            return
        state = np.concatenate((tip, velocity), axis=1)
        measured = self.sensor.reset(rows, state) if reset else self.sensor.read(rows, state)
        self.measured_tip[rows], self.measured_velocity[rows] = measured[:, :3], measured[:, 3:]

    def _observe(self, rows):
        self._read_tips(rows)
        single, state = self.single, self.body.state
        u, w = state.u[rows], state.w[rows]
        return track_observation(self.measured_tip[rows], self.goal[rows], self.measured_velocity[rows],
                                 self.controller.state(u), self.controller.state_rate(u, w),
                                 2 * np.pi * self.time[rows] / single.trajectory.period, single.observation_high,
                                 self.goal_conditioned)

    def _reward_terms(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        single = self.single
        if self.goal_conditioned:
            return single.goal_terms(self.measured_tip.astype(np.float32), self.goal.astype(np.float32))
        return {"tracking": -single.tracking_weight * np.linalg.norm(self.goal - self.measured_tip, axis=-1)}

    def _terminated(self) -> np.ndarray:
        return self.stop_code != 0

    def _extra_info(self, rows) -> dict[str, Any]:
        single = self.single
        if self.goal_conditioned:
            error = single.distances(self.tip[rows].astype(np.float32), self.goal[rows].astype(np.float32))
        else:
            error = np.linalg.norm(self.goal[rows] - self.tip[rows], axis=-1)
        info = {"tracking_error": error, "is_success": error < single.success_threshold, "time": self.time[rows].copy(),
                "setpoint": self.setpoint[rows].copy()}
        if self.regulator is not None:
            info["pressures"] = self.regulator.pressures[rows].copy()
            info["pressure_saturated"] = self.saturated[rows].copy()
        stopped = self.stop_code[rows] != 0
        if stopped.any():
            info["termination_reason"] = self.stop_reason[rows].copy()
            info["_termination_reason"] = stopped
        return info

    def _commands(self, rows) -> np.ndarray:
        return self.setpoint[rows] if self.single.action_type == "configuration" else self.command_value[rows]

    def _sync_render(self) -> None:
        single, state = self.single, self.body.state
        single.goal = self.goal[0].copy()
        single.body.set_state(state.u[0], reference=state.c[0])


def make_pcc_track_vector(num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                          autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                          **kwargs: Any) -> PCCTrackVectorEnv:
    """The ``vector_entry_point`` of ``soft_envs/PCCTrack-v0``."""
    return PCCTrackVectorEnv(num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode, **kwargs)
