"""Shared parts of the quadruped environments: the PyBullet body, spaces, observation.

Action (``Box(-1, 1, (12,))``, float32): joint position targets, normalised per joint,
``q = lower + (a + 1)/2 · (upper − lower)`` [rad]; legs in the order front-left, front-right,
rear-left, rear-right (seed legs 1–4), ``(abduction, hip, knee)`` per leg. The targets go to
hobby servos as the hardware drives them (:mod:`soft_envs.sim.servo`): a 50 Hz PWM frame (a
target is heard at the next frame, so only every other 10 ms command acts), a proportional
drive with a 0.5° deadband, and a DC motor's torque–speed line from the stall torque (0.22 N m)
to the no-load speed (10.5 rad/s) of ``urdf/quadruped/README.md`` — no joint is driven faster.

Observation (flat ``Box``, float32, SI units; values clipped into the bounds):

=============  ===============================================================
slice          content
=============  ===============================================================
``[0:4]``      body orientation quaternion ``(x, y, z, w)`` in the world
``[4:7]``      body angular velocity [rad/s], body frame
``[7:10]``     body linear velocity [m/s], body frame
``[10:22]``    joint angles [rad]
``[22:34]``    joint velocities [rad/s]
``[34:38]``    foot contacts: 1.0 where a foot is within 1 mm of the ground, else 0.0
``[38]``       body height above the ground [m]
=============  ===============================================================

Physics: ``time_step = 1/500`` s, ``frame_skip = 5`` (100 Hz control, ``dt = 0.01`` s), 50
solver iterations, gravity 9.81 m/s², flat ground with friction 1.0 (feet 1.0). Why: the legs
weigh a few grams, so contacts need a short step to stay quiet, and 100 Hz matches the seed's
gait of 100 samples per cycle at a 1 s cycle (one sample per step; faster gaits skip samples).

Realism (``realism=``, :mod:`soft_envs.sim.realism`; table :data:`QUADRUPED_REALISM`): the
simulated robot may differ from ``env.model``, the nominal model a controller plans with — the
ground's friction (a factor on the ``ground_friction`` keyword: the floor is
``ground_friction · friction_scale``), each servo's strength (stall torque and no-load speed, a
supply factor), drive band, motor time constant and zero offset (the joint sits at
``target + offset``, its angle reads ``true − offset``), the trunk's mass and a payload on it,
a command delay (whole control periods: the servos act on the action of that many steps
before), and noise and latency on
the measured state (joint angles and velocities, IMU orientation and angular velocity, body
velocity; contacts and height are delayed, not noisy). The observation shows the measured
state; the rewards, ``info`` and the fall test use the true state. ``reset_noise_scale``
(the task's own draw of the initial joint angles) is unchanged by realism. ``info["realism"]``
of the reset holds the values drawn. ``reset(options={"keep_robot": True})`` keeps them (a new episode, the same robot).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.base import MAX_SOLVER_ITERATIONS, SoftEnv
from soft_envs.envs.gait_meter import GaitMeter
from soft_envs.exceptions import InvalidParameterError, check_integer, check_nonnegative
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots.quadruped import JOINT_NAMES, LEG_NAMES, Quadruped
from soft_envs.sim.bullet import STANDARD_GRAVITY, pybullet
from soft_envs.sim.realism import DelayedSensor, Perturbation
from soft_envs.sim.servo import ServoBank, ServoParameters

_SERVO = ("urdf/quadruped/README.md: MG90S-class micro servos rated 2.2 kg·cm at 6 V; the MG90S "
          "data sheet gives 1.8 kg·cm at 4.8 V (−18 %)")
#: The quadruped's sim-to-real perturbations (``realism=``).
QUADRUPED_REALISM: tuple[Perturbation, ...] = (
    Perturbation("friction_scale", "1", "factor on the ground's lateral friction (the ground_friction keyword)",
                 (0.5, 1.5), "assumption: rubber feet on floors from polished tile (μ ≈ 0.5) to rubber mats; "
                 "pybullet_envs' Minitaur randomizer draws its foot friction in 0.8–1.5", ideal=1.0,
                 valid=(0.01, 10.0)),
    Perturbation("motor_strength", "1", "factor on each servo's stall torque and no-load speed (both "
                 "proportional to its supply voltage)", (0.8, 1.1),
                 f"{_SERVO}: a sagging supply; +10 % for unit-to-unit scatter (assumption)", ideal=1.0,
                 valid=(0.05, 5.0), per_element=True),
    Perturbation("servo_band", "rad", "position error at which each servo's drive saturates (its stiffness is "
                 "stall torque / band)", (0.06, 0.15),
                 "assumption: analog servo amplifiers reach full drive 3–9° off target (soft_envs.sim.servo)",
                 ideal=ServoParameters().band, valid=(0.01, 1.0), per_element=True),
    Perturbation("servo_time_constant", "s", "mechanical time constant of each servo's motor", (0.006, 0.02),
                 "assumption: micro DC motors of 10–20 mm with their gear train (soft_envs.sim.servo)",
                 ideal=ServoParameters().time_constant, valid=(0.001, 0.2), per_element=True),
    Perturbation("joint_offset", "rad", "zero error of each servo: the joint sits at target + offset, its "
                 "angle reads true − offset", (-0.035, 0.035),
                 "assumption: servo horns sit on splined shafts and each servo's zero is trimmed by eye, ±2° "
                 "left; seed 001 §IV: the actuators' resolution bounds the precision", valid=(-0.3, 0.3),
                 per_element=True),
    Perturbation("trunk_mass_error", "1", "relative error of the trunk's mass (0.240 kg) and inertia",
                 (-0.2, 0.2), "assumption: the trunk mass is itself an estimate (urdf/quadruped/README.md); "
                 "pybullet_envs' Minitaur randomizer uses ±20 % for the base mass", valid=(-0.9, 10.0)),
    Perturbation("payload", "kg", "mass added to the trunk (spread like the trunk's)", (0.0, 0.1),
                 "assumption: a camera or sensor board, up to 20 % of the robot's 0.456 kg", valid=(0.0, 2.0)),
    Perturbation("command_delay", "s", "age of the targets the servos act on (whole control periods)",
                 (0.0, 0.02), "assumption: the controller's computation and its I2C write to the PWM driver, up "
                 "to two control periods (the 50 Hz PWM frame itself is in the servo model)", valid=(0.0, 60.0)),
    Perturbation("joint_angle_noise", "rad", "standard deviation of each measured joint angle", (0.003, 0.01),
                 "assumption: the servos' potentiometers read by a 10-bit ADC (0.2° a count) with their "
                 "non-linearity, 0.2–0.6°", valid=(0.0, 0.5)),
    Perturbation("joint_velocity_noise", "rad/s", "standard deviation of each measured joint velocity",
                 (0.05, 0.3), "assumption: velocities differenced from the noisy angles and low-pass "
                 "filtered", valid=(0.0, 10.0)),
    Perturbation("orientation_noise", "rad", "standard deviation of the measured body orientation per axis",
                 (0.002, 0.01), "assumption: an MPU-6050-class IMU with a complementary filter, 0.1–0.6° "
                 "under the servos' vibration", valid=(0.0, 0.5)),
    Perturbation("angular_velocity_noise", "rad/s", "standard deviation of the measured angular velocity "
                 "per axis", (0.01, 0.05), "assumption: the gyroscope's noise and the servos' vibration",
                 valid=(0.0, 5.0)),
    Perturbation("linear_velocity_noise", "m/s", "standard deviation of the measured body velocity per axis",
                 (0.01, 0.05), "assumption: a real robot estimates it (leg odometry and IMU), it measures "
                 "nothing of it directly", valid=(0.0, 5.0)),
    Perturbation("observation_latency", "s", "age of the measured state (whole control periods)", (0.0, 0.02),
                 "assumption: potentiometers and IMU read over I2C at 100 Hz, one or two periods old",
                 valid=(0.0, 60.0)),
)
#: Noise of the 39 measured values (see the observation table), by perturbation name.
_NOISE_SLICES = (("orientation_noise", slice(0, 4)), ("angular_velocity_noise", slice(4, 7)),
                 ("linear_velocity_noise", slice(7, 10)), ("joint_angle_noise", slice(10, 22)),
                 ("joint_velocity_noise", slice(22, 34)))
_PLANT_REALISM = ("friction_scale", "motor_strength", "servo_band", "servo_time_constant", "joint_offset",
                  "trunk_mass_error", "payload")
#: [m] height the body is lifted to at a reset so that every contact point is dropped (far above
#: Bullet's contact breaking distance, 0.02 m, and the robot's size).
CONTACT_CLEARANCE = 10.0



class QuadrupedBody:
    """The quadruped URDF loaded into a client, with its joints in the robot's order.

    Args:
        client: a :class:`BulletClient`.
        robot: the :class:`Quadruped` model (its URDF is loaded).
        servo: the servos' nominal :class:`~soft_envs.sim.servo.ServoParameters`.
        time_step: [s] the physics step (the servos are driven every step: :meth:`step`).
    """

    def __init__(self, client, robot: Quadruped, servo: ServoParameters, time_step: float) -> None:
        self.client = client
        self.robot = robot
        with robot.urdf_path() as path:
            self.id = client.loadURDF(str(path), [0, 0, robot.stance_height + robot.foot_radius],
                                      [0, 0, 0, 1], flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        joints = {}
        links = {}
        for i in range(client.getNumJoints(self.id)):
            info = client.getJointInfo(self.id, i)
            joints[info[1].decode()] = i
            links[info[12].decode()] = i
        self.joint_ids = [joints[Quadruped.joint_name(leg, j)] for leg in LEG_NAMES for j in JOINT_NAMES]
        self.foot_ids = [links[Quadruped.foot_link_name(leg)] for leg in LEG_NAMES]
        for j in range(client.getNumJoints(self.id)):  # no default velocity motors
            client.setJointMotorControl2(self.id, j, pybullet.VELOCITY_CONTROL, force=0.0)
        dynamics = client.getDynamicsInfo(self.id, -1)
        self.trunk_mass = float(dynamics[0])  # [kg], nominal (the URDF's)
        self.trunk_inertia = np.array(dynamics[2], dtype=float)  # [kg m²], principal, nominal
        self.servos = ServoBank(12, servo, time_step)
        self._driving = np.zeros(12, dtype=bool)  # the servos whose motor acted in the last step
        self._limit_joint_speeds()
        self.offsets = np.zeros(12)  # [rad], each servo's zero error
        self.peak_speed = 0.0  # [rad/s] largest joint speed since the last read_servo_meters()
        self.work = 0.0  # [J] Σ ∫|τ q̇| dt of the servos since the last read_servo_meters()

    def set_servo_imperfections(self, supply: np.ndarray | float, offsets: np.ndarray, band: np.ndarray | float,
                                time_constant: np.ndarray | float) -> None:
        """Per-servo ``supply`` (12,) (factor on stall torque and no-load speed), zero ``offsets``
        (12,) [rad] (the joint goes to ``target + offset``, the servo reads its angle as
        ``true − offset``), proportional ``band`` [rad] and motor ``time_constant`` [s]."""
        self.servos.set_scatter(supply, band, time_constant)
        self.offsets = np.asarray(offsets, dtype=float).reshape(12).copy()
        self._limit_joint_speeds()

    def _limit_joint_speeds(self) -> None:
        """Clamp each joint's speed in the solver at its servo's no-load speed: the geared rotor,
        some 50 times the leg's inertia about the joint, cannot be spun faster by the light legs
        (nor does the motor drive it faster: :mod:`soft_envs.sim.servo`)."""
        for j, speed in zip(self.joint_ids, self.servos.no_load_speeds()):
            self.client.changeDynamics(self.id, j, maxJointVelocity=float(speed))

    def mass(self) -> float:
        """[kg] the robot's whole mass (its trunk's as set now)."""
        links = range(-1, self.client.getNumJoints(self.id))
        return float(sum(self.client.getDynamicsInfo(self.id, i)[0] for i in links))

    def set_trunk_mass(self, mass: float) -> None:
        """Give the trunk ``mass`` [kg], its inertia scaled with it (the same distribution)."""
        scale = float(mass) / self.trunk_mass
        self.client.changeDynamics(self.id, -1, mass=float(mass),
                                   localInertiaDiagonal=(self.trunk_inertia * scale).tolist())

    def reset(self, q: np.ndarray, position=(0.0, 0.0, 0.0), orientation=(0.0, 0.0, 0.0, 1.0)) -> None:
        """Place the body (frame at ``position`` [m]) at rest with the servos' readings ``q`` (12,) [rad].

        Bullet keeps each pair's contact manifold across ``resetBasePositionAndOrientation``: points
        still within the breaking distance stay, with the impulses that warm-start the solver and
        their friction anchors, so the next steps would depend on how the last episode ended. The
        body is first lifted :data:`CONTACT_CLEARANCE` above everything and the collision pass run,
        which empties every manifold it has; each reset then starts from the same, empty, contacts
        (the same seed and actions give the same episode whatever ran before)."""
        self.client.resetBasePositionAndOrientation(self.id, [0.0, 0.0, CONTACT_CLEARANCE], [0.0, 0.0, 0.0, 1.0])
        self.client.performCollisionDetection()
        self.client.resetBasePositionAndOrientation(self.id, list(position), list(orientation))
        self.client.resetBaseVelocity(self.id, [0, 0, 0], [0, 0, 0])
        q = np.asarray(q, dtype=float).ravel()
        true = q + self.offsets if np.any(self.offsets) else q
        for j, value in zip(self.joint_ids, true):
            self.client.resetJointState(self.id, j, float(value), 0.0)
        self.servos.reset(true)
        self._driving[:] = False
        self.peak_speed, self.work = 0.0, 0.0

    def command(self, q: np.ndarray) -> None:
        """Servo targets ``q`` (12,) [rad]: what the next PWM frame carries (:mod:`soft_envs.sim.servo`)."""
        q = np.asarray(q, dtype=float).ravel()
        self.servos.command(q + self.offsets if np.any(self.offsets) else q)

    def step(self) -> None:
        """One physics step: the servos drive their velocity motors from the joints' state, then
        the world steps; the peak joint speed and the servos' work are accumulated."""
        angle, speed, torque = self.joint_state()
        self.peak_speed = max(self.peak_speed, float(np.max(np.abs(speed))))
        self.work += float(np.abs(torque * speed).sum()) * self.servos.time_step
        target, limit = self.servos.drive(angle, speed)
        self._driving = limit > 0.0
        self.client.setJointMotorControlArray(self.id, self.joint_ids, pybullet.VELOCITY_CONTROL,
                                              targetVelocities=target.tolist(), forces=limit.tolist())
        self.client.stepSimulation()

    def read_servo_meters(self) -> tuple[float, float]:
        """``(peak joint speed [rad/s], servo work [J])`` since the last call; restarts both."""
        out = (self.peak_speed, self.work)
        self.peak_speed, self.work = 0.0, 0.0
        return out

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(true angles [rad], velocities [rad/s], servo torques [N m])``, each (12,) (a servo
        reads its angle as ``true − offset``; the torque its motor applied in the last physics
        step, 0 where its gears were apart — Bullet keeps reporting a motor's last torque)."""
        states = self.client.getJointStates(self.id, self.joint_ids)
        return (np.array([s[0] for s in states]), np.array([s[1] for s in states]),
                np.where(self._driving, [s[3] for s in states], 0.0))

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """``(position [m], quaternion (x, y, z, w))`` of the body frame in the world."""
        pos, orn = self.client.getBasePositionAndOrientation(self.id)
        return np.array(pos), np.array(orn)

    def base_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        """``(linear [m/s], angular [rad/s])`` velocity of the body in the world frame."""
        lin, ang = self.client.getBaseVelocity(self.id)
        return np.array(lin), np.array(ang)

    def feet_world(self) -> np.ndarray:
        """``(4, 3)`` foot centres in the world [m] (exact: the feet's inertial origins)."""
        return np.array([s[0] for s in self.client.getLinkStates(self.id, self.foot_ids)])

    def contact_slip_velocity(self) -> np.ndarray:
        """``(4, 2)`` horizontal velocity [m/s] of each foot's lowest point (the contact point on
        flat ground): ``v_centre + ω × (−r ẑ)``. Zero when a foot rolls without sliding."""
        states = self.client.getLinkStates(self.id, self.foot_ids, computeLinkVelocity=1)
        v = np.array([s[6] for s in states])
        w = np.array([s[7] for s in states])
        r = self.robot.foot_radius
        # ω × (0, 0, −r) = (−r ω_y, r ω_x, 0)
        return np.stack([v[:, 0] - r * w[:, 1], v[:, 1] + r * w[:, 0]], axis=-1)

    def foot_contacts(self, ground: int, distance: float = 1e-3) -> np.ndarray:
        """``(4,)`` 1.0 where a foot is within ``distance`` [m] of ``ground`` (or penetrates it).

        A geometric query (``getClosestPoints``), so it does not depend on Bullet's cached
        contact manifolds: the same state always gives the same contacts."""
        return np.array([1.0 if self.client.getClosestPoints(self.id, ground, distance, f, -1) else 0.0
                         for f in self.foot_ids])

    def body_touches(self, ground: int) -> bool:
        """True when anything but a foot (body, thighs, shins) touches ``ground``."""
        feet = set(self.foot_ids)
        return any(c[3] not in feet for c in self.client.getContactPoints(self.id, ground))


class QuadrupedBaseEnv(SoftEnv):
    """Common base of ``QuadrupedWalk-v0`` and ``QuadrupedPose-v0`` (spaces and physics above).

    Args:
        reset_noise_scale: half-width of the uniform noise on the initial joint angles [rad].
        ground_friction: lateral friction of the ground (feet: 1.0; Bullet multiplies them);
            realism's ``friction_scale`` multiplies it.
        solver_iterations: PyBullet constraint-solver iterations, 1 to
            :data:`~soft_envs.envs.base.MAX_SOLVER_ITERATIONS`.
        time_step: physics time step [s]; frame_skip: physics steps per ``env.step``.
        realism: ``"ideal"`` (default), ``"realistic"`` or a dict (:data:`QUADRUPED_REALISM`).
        **kwargs: :class:`SoftEnv` keywords (``render_mode``, ``width``, ``height``,
            ``action_rate_weight``).
    """

    #: The registered id, whose ``max_episode_steps`` bounds the delays (realism).
    env_id = "soft_envs/QuadrupedWalk-v0"

    def __init__(self, *, reset_noise_scale: float = 0.0, ground_friction: float = 1.0,
                 solver_iterations: int = 50, time_step: float = 1.0 / 500.0, frame_skip: int = 5,
                 **kwargs: Any) -> None:
        check_nonnegative(reset_noise_scale=reset_noise_scale, ground_friction=ground_friction)
        self.reset_noise_scale = float(reset_noise_scale)
        self.ground_friction = float(ground_friction)
        self.solver_iterations = check_integer("solver_iterations", solver_iterations, minimum=1,
                                               maximum=MAX_SOLVER_ITERATIONS)
        self.model = Quadruped()
        super().__init__(time_step=time_step, frame_skip=frame_skip, use_physics=True, **kwargs)
        try:
            for name in ("command_delay", "observation_latency"):
                self.realism.limit(name, ENVIRONMENTS[self.env_id][1] * self.dt, "one episode")
        except InvalidParameterError:
            self.close()
            raise
        self.action_space = spaces.Box(-1.0, 1.0, shape=(12,), dtype=np.float32)
        self.observation_high = np.concatenate([
            np.ones(4), np.full(3, 50.0), np.full(3, 10.0), np.full(12, np.pi), np.full(12, 100.0),
            np.ones(4), [2.0]]).astype(np.float32)
        self.observation_low = -self.observation_high
        self.observation_low[34:38] = 0.0
        plane = self.client.createCollisionShape(pybullet.GEOM_PLANE)
        plane_visual = self.client.createVisualShape(pybullet.GEOM_BOX, halfExtents=[20.0, 20.0, 0.0005],
                                                     visualFramePosition=[0, 0, -0.0005],
                                                     rgbaColor=[0.85, 0.85, 0.8, 1.0])
        self.ground = self.client.createMultiBody(0.0, plane, plane_visual)
        self.client.changeDynamics(self.ground, -1, lateralFriction=self.ground_friction)
        self.servo = ServoParameters(stall_torque=self.model.servo_torque, no_load_speed=self.model.servo_speed)
        self.body = QuadrupedBody(self.client, self.model, self.servo, self.time_step)
        self.gait = GaitMeter(self.dt, self.body.mass(), reversal_threshold=self.servo.deadband)
        self.joint_targets = self.model.standing_configuration().ravel()
        self._cache: dict[str, Any] = {}
        self.sensor = DelayedSensor()  # the measured state (realism)
        self.command_line = DelayedSensor()  # the servos' delayed targets (realism)
        self._measured = np.zeros(39)

    def _physics_parameters(self) -> dict[str, Any]:
        return {"gravity": STANDARD_GRAVITY, "solver_iterations": self.solver_iterations}

    # ------------------------------------------------------------------ conversions
    def _model_to_action(self, q: np.ndarray) -> np.ndarray:
        return super()._model_to_action(q.ravel())  # (4, 3) per leg or (12,)

    # ------------------------------------------------------------------ realism
    def _realism_table(self) -> tuple[Perturbation, ...]:
        return QUADRUPED_REALISM

    def realism_sizes(self) -> dict[str, int]:
        return {"motor_strength": 12, "joint_offset": 12, "servo_band": 12, "servo_time_constant": 12}

    def _apply_realism(self) -> None:
        """Give the ground, the servos, the trunk and the sensors this episode's perturbations."""
        drawn = self.perturbations
        if any(not self.realism.is_ideal(name) for name in _PLANT_REALISM):
            self.client.changeDynamics(self.ground, -1, lateralFriction=self.ground_friction * drawn["friction_scale"])
            self.body.set_servo_imperfections(drawn["motor_strength"], drawn["joint_offset"], drawn["servo_band"],
                                              drawn["servo_time_constant"])
            self.body.set_trunk_mass(self.body.trunk_mass * (1.0 + drawn["trunk_mass_error"]) + drawn["payload"])
        noise = np.zeros(39)
        for name, part in _NOISE_SLICES:
            noise[part] = drawn[name]
        noise[0:4] *= 0.5  # a quaternion's components move by half the rotation angle
        self.sensor = DelayedSensor(noise, int(round(drawn["observation_latency"] / self.dt)), rng=self.realism_rng)
        self.command_line = DelayedSensor(0.0, int(round(drawn["command_delay"] / self.dt)))

    # ------------------------------------------------------------------ state
    def _read_state(self, reset: bool = False) -> None:
        """The true state (cache) and, under realism, its measurement through the sensor
        (``reset``: the first reading of an episode)."""
        pos, orn = self.body.base_pose()
        lin, ang = self.body.base_velocity()
        rot = quaternion_to_matrix(np.asarray(orn))
        q, qd, tau = self.body.joint_state()
        self._cache = {"position": pos, "quaternion": orn, "rotation": rot, "linear": lin, "angular": ang,
                       "q": q, "qd": qd, "torque": tau, "contacts": self.body.foot_contacts(self.ground),
                       "feet": self.body.feet_world()}
        if reset:
            self.body.read_servo_meters()
            self.gait.mass = self.body.mass()  # this episode's (realism moves the trunk's)
            self.gait.reset(self.joint_targets, self._cache["contacts"], pos)
        if not self.realism.is_ideal():
            true = self._state_vector()
            true[10:22] -= self.perturbations["joint_offset"]  # the servos' own readings
            measured = self.sensor.reset(true) if reset else self.sensor.read(true)
            measured[0:4] /= np.linalg.norm(measured[0:4])
            self._measured = measured

    def _state_vector(self) -> np.ndarray:
        s = self._cache
        rot_t = s["rotation"].T
        return np.concatenate([s["quaternion"], rot_t @ s["angular"], rot_t @ s["linear"], s["q"], s["qd"],
                               s["contacts"], [s["position"][2]]])

    def _base_observation(self) -> np.ndarray:
        obs = self._state_vector() if self.realism.is_ideal() else self._measured
        return self._clip_observation(obs, self.observation_low, self.observation_high)

    def _observed_quaternion(self) -> np.ndarray:
        """The body quaternion ``(x, y, z, w)`` the observation shows (true, or measured under realism)."""
        return self._cache["quaternion"] if self.realism.is_ideal() else self._measured[0:4]

    def fallen(self) -> bool:
        """Body below 4 cm, tilted more than 50°, or touching the ground with anything but feet."""
        s = self._cache
        return bool(s["position"][2] < 0.04 or s["rotation"][2, 2] < np.cos(np.radians(50.0))
                    or self.body.body_touches(self.ground))

    # ------------------------------------------------------------------ hooks
    def _stand(self, noise: np.ndarray | None = None) -> None:
        """Place the robot standing (joint angles + ``noise`` [rad]) with this episode's realism."""
        if not self.realism.is_ideal():
            self._apply_realism()
        q = self.model.standing_configuration().ravel()
        if noise is not None:
            q = np.clip(q + noise, self.model.lower, self.model.upper)
        self.joint_targets = q
        self.body.reset(q, position=(0.0, 0.0, self.model.stance_height + self.model.foot_radius))
        self.command_line.reset(q)

    def _command(self) -> np.ndarray:
        return self.joint_targets

    def _apply_action(self, action: np.ndarray) -> None:
        self.joint_targets = self.action_to_model(action)
        if self.realism.is_ideal():
            self.body.command(self.joint_targets)
        else:
            self.body.command(self.command_line.read(self.joint_targets))

    def simulate(self, n_steps: int | None = None) -> None:
        """Step the servos and the physics ``n_steps`` (default ``frame_skip``) times, then read the state."""
        for _ in range(self.frame_skip if n_steps is None else n_steps):
            self.body.step()
            self._after_physics_step()
        self._read_state()
        peak, work = self.body.read_servo_meters()
        self.gait.update(self.joint_targets, self._cache["contacts"], self.body.contact_slip_velocity(),
                         self._cache["position"], peak, work)

    def _after_physics_step(self) -> None:
        """Hook: called after every physics step (the pose env integrates its feet's sliding)."""

    def _camera(self) -> dict[str, Any]:
        pos = self._cache.get("position", np.zeros(3))
        return {"target": (float(pos[0]), float(pos[1]), 0.05), "distance": 0.55, "yaw": 35.0, "pitch": -25.0}
