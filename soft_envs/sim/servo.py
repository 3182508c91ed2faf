"""Hobby position servos as the hardware drives them (the quadruped's MG90S-class servos).

A hobby servo is a DC motor behind a gearbox, driven by a proportional controller that compares
the commanded angle with a potentiometer on the output shaft. What that allows, and what a
PyBullet position motor does not hold, is modelled per servo:

* **command frame** — the target arrives as a PWM pulse every ``frame_period`` (50 Hz, 20 ms:
  SG90/MG90S data sheets, 500–2400 µs pulses in a 20 ms frame). A target written between two
  frames is seen at the next frame; a newer one written before it replaces it. So a controller
  that changes its targets every 10 ms is heard every other time.
* **proportional drive** — the motor's duty is ``d = clip((e ∓ deadband)/band, −1, 1)`` for the
  error ``e = target − angle`` beyond the ``deadband`` (MG90S: 5 µs ≈ 0.5° on a 500–2400 µs
  range over 180°), saturating at ``band`` (assumption: 0.1 rad ≈ 6°: an analog servo drives
  with full torque a few degrees off target; it makes the servo about 2.2 N m/rad stiff).
* **DC motor** — at duty ``d`` and shaft speed ``ω`` the motor gives the torque
  ``τ = τ_stall (d − ω/ω₀)``, capped at ``±τ_stall`` (its stall current): stall torque at rest,
  falling linearly to zero at the no-load speed ``ω₀`` (MG90S: 2.2 kg·cm = 0.22 N m at 6 V;
  0.1 s/60° = 10.5 rad/s at 4.8 V — the slower of the data sheet's two speeds), and braking
  when the shaft turns faster than ``d ω₀``. The rotor's inertia, reflected through the gears,
  makes the unloaded speed follow ``d ω₀`` with the motor's mechanical time constant
  ``time_constant`` (assumption: 10 ms, the range of micro DC motors of 10–20 mm).
* **gear play** — ``backlash`` (assumption: 1° at the horn, what metal-gear micro servos show;
  plastic gears more): when the motor reverses, the gears part and the output gets no torque
  until the motor side has crossed the play; a flank only pushes.

In PyBullet the servo is a velocity motor solved implicitly with the joints (stable for the
light legs at any gain): each physics step it aims at the unloaded motor's speed one step ahead,
``ω + (d ω₀ − ω)(1 − e^{−Δt/T})``, with at most the torque ``τ_stall |d − ω/ω₀|`` of the
torque–speed line at the present speed. So the servo never drives its shaft faster than ``ω₀``
under any command sequence, and holds a load with the stiffness ``τ_stall/band``; the body also
clamps each joint's speed at ``ω₀`` in the solver (the geared rotor, far heavier than a leg,
is not spun faster by the leg: :class:`~soft_envs.envs.quadruped_base.QuadrupedBody`).

The response this gives (``tests/sim/test_servo.py``, nominal values, the hip of a hanging leg):
a 60° step gets within 2° in 0.11 s (data sheet, no load: 0.1 s per 60°) at the no-load speed; a
3° step reaches 63 % in about 20 ms after its frame — the lag of tens of milliseconds of hobby
servos; within the deadband and the play a held joint rests up to about 1° off its target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.quadruped import SERVO_SPEED, SERVO_TORQUE


@dataclass(frozen=True)
class ServoParameters:
    """The parameters of one hobby servo (SI units; sources in the module docstring).

    Attributes:
        stall_torque: [N m] torque at rest with full drive.
        no_load_speed: [rad/s] speed at full drive and no load (the servo's speed limit).
        frame_period: [s] period of the PWM frame that carries the target.
        band: [rad] position error at which the drive saturates.
        deadband: [rad] error the servo ignores.
        time_constant: [s] mechanical time constant of the motor (rotor inertia through the gears).
        backlash: [rad] total play of the gear train at the output.
    """

    stall_torque: float = SERVO_TORQUE
    no_load_speed: float = SERVO_SPEED
    frame_period: float = 0.02
    band: float = 0.1
    deadband: float = math.radians(0.5)
    time_constant: float = 0.01
    backlash: float = math.radians(1.0)

    def __post_init__(self) -> None:
        for name in ("stall_torque", "no_load_speed", "frame_period", "band", "time_constant"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InvalidParameterError(f"servo {name} must be a positive finite number; got {value!r}")
        if not (math.isfinite(self.deadband) and 0.0 <= self.deadband < self.band):
            raise InvalidParameterError(f"servo deadband must be in [0, band); got {self.deadband!r}")
        if not (math.isfinite(self.backlash) and self.backlash >= 0.0):
            raise InvalidParameterError(f"servo backlash must be >= 0; got {self.backlash!r}")


class ServoBank:
    """``n`` hobby servos sharing one PWM frame clock.

    Args:
        n: number of servos.
        parameters: their nominal :class:`ServoParameters` (default: the quadruped's MG90S-class
            servos, :data:`~soft_envs.robots.quadruped.SERVO_TORQUE` and ``SERVO_SPEED``).
        time_step: [s] the physics step :meth:`drive` is called at.

    Per-servo ``supply`` (a factor on stall torque and no-load speed, both proportional to the
    supply voltage), ``band`` and ``time_constant`` may be set by :meth:`set_scatter` (realism).
    """

    def __init__(self, n: int, parameters: ServoParameters, time_step: float) -> None:
        if not (math.isfinite(time_step) and time_step > 0):
            raise InvalidParameterError(f"time_step must be positive; got {time_step!r}")
        self.n = int(n)
        self.parameters = parameters
        self.time_step = float(time_step)
        self.supply = np.ones(self.n)
        self.band = np.full(self.n, parameters.band)
        self.time_constant = np.full(self.n, parameters.time_constant)
        self.latched = np.zeros(self.n)  # [rad] the targets the servos act on
        self.pending = np.zeros(self.n)  # [rad] the targets of the next frame
        self.time = 0.0  # [s] since the reset
        self._next_frame = parameters.frame_period
        self.gap = np.zeros(self.n)  # [rad] motor side − output, in [−backlash/2, backlash/2]
        self.motor_speed = np.zeros(self.n)  # [rad/s] the motor side's speed (at the output's scale)
        self.flank = np.zeros(self.n)  # +1 / −1: the gears touch on that side; 0: in the play

    def set_scatter(self, supply: np.ndarray | float, band: np.ndarray | float,
                    time_constant: np.ndarray | float) -> None:
        """Per-servo ``supply`` factor, proportional ``band`` [rad] and ``time_constant`` [s]."""
        self.supply = np.broadcast_to(np.asarray(supply, dtype=float), (self.n,)).copy()
        self.band = np.broadcast_to(np.asarray(band, dtype=float), (self.n,)).copy()
        self.time_constant = np.broadcast_to(np.asarray(time_constant, dtype=float), (self.n,)).copy()

    def no_load_speeds(self) -> np.ndarray:
        """``(n,)`` each servo's no-load speed [rad/s] (its supply factor applied)."""
        return self.parameters.no_load_speed * self.supply

    def reset(self, targets: np.ndarray) -> None:
        """A new episode at time 0: the servos act on ``targets`` [rad] from the start (a frame
        begins now)."""
        self.latched = np.asarray(targets, dtype=float).reshape(self.n).copy()
        self.pending = self.latched.copy()
        self.time = 0.0
        self._next_frame = self.parameters.frame_period
        self.gap = np.zeros(self.n)
        self.motor_speed = np.zeros(self.n)
        self.flank = np.zeros(self.n)

    def command(self, targets: np.ndarray) -> None:
        """Write the targets [rad] the next PWM frame carries (a later write replaces them)."""
        self.pending = np.asarray(targets, dtype=float).reshape(self.n).copy()

    def drive(self, angle: np.ndarray, speed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One physics step from the shaft ``angle`` [rad] and ``speed`` [rad/s] (n,): the
        velocity motors' ``(target speeds [rad/s], torque limits [N m])``; advances the clock."""
        p = self.parameters
        if self.time >= self._next_frame - 1e-9:  # a frame begins: the servos read the latest target
            self.latched = self.pending.copy()
            while self._next_frame <= self.time + 1e-9:
                self._next_frame += p.frame_period
        error = self.latched - angle
        beyond = np.maximum(np.abs(error) - p.deadband, 0.0)
        duty = np.sign(error) * np.minimum(beyond / self.band, 1.0)
        no_load = p.no_load_speed * self.supply
        stall = p.stall_torque * self.supply
        blend = -np.expm1(-self.time_step / self.time_constant)
        half = 0.5 * p.backlash
        # Engaged gears: the motor side moves with the output. They part where the unloaded motor
        # would fall behind the output on the flank that pushes (a flank can only push).
        engaged = self.flank != 0
        self.motor_speed = np.where(engaged, speed, self.motor_speed)
        free = self.motor_speed + (duty * no_load - self.motor_speed) * blend
        parting = engaged & (self.flank * (free - speed) < 0.0)
        if half == 0.0:  # no play: always engaged
            parting[:] = False
            self.flank = np.where(self.flank == 0, 1.0, self.flank)
        self.flank = np.where(parting, 0.0, self.flank)
        # In the play the motor side runs free and the output gets no torque until a flank is met.
        loose = self.flank == 0
        self.gap = np.where(loose, self.gap + (free - speed) * self.time_step, self.gap)
        meets = loose & (np.abs(self.gap) >= half)
        self.flank = np.where(meets, np.sign(self.gap), self.flank)
        self.gap = np.clip(self.gap, -half, half)
        self.motor_speed = free
        target = np.where(self.flank != 0, free, speed)
        limit = np.where(self.flank != 0, stall * np.minimum(np.abs(duty - speed / no_load), 1.0), 0.0)
        self.time += self.time_step
        return target, limit
