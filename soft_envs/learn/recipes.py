"""Recipes of ``soft-envs train-rl``: algorithm, hyper-parameters and env keywords per env, as data.

A :class:`Recipe` names a Stable-Baselines3 algorithm (``SAC``, ``TD3``, ``PPO`` or sb3-contrib's
``RecurrentPPO``), its hyper-parameters (SB3's names) and the env keywords it trains with;
:data:`RECIPES` holds one per env id (and named variants). How each was chosen is in its
``note``; the measured figures are in BENCHMARKS.md's ``learned`` section.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from soft_envs.agents.learned.policy import ACTIVATIONS
from soft_envs.exceptions import InvalidParameterError, check_integer, check_positive

ALGORITHMS = ("SAC", "TD3", "PPO", "RECURRENTPPO")
#: The scripted gaits a policy may modulate (:mod:`soft_envs.learn.gait_residual`, which is not imported
#: here: it needs the controllers).
BASE_GAITS = ("trot",)
OFF_POLICY = ("SAC", "TD3")
#: Who trains a recipe: Stable-Baselines3 (``sb3``), or rsl_rl's PPO over a native vector env
#: (``rsl_rl``: :mod:`soft_envs.learn.parallel`; ``batch_size`` is then the minibatch size,
#: ``desired_kl`` the adaptive learning rate's target and ``init_std`` the policy's initial
#: action noise).
LEARNERS = ("sb3", "rsl_rl", "skrl")
#: The learners over a native vector env (``skrl``: skrl's SAC, :mod:`soft_envs.learn.offpolicy`;
#: ``batch_size`` the minibatch, ``gradient_steps`` the updates after each step of every env).
PARALLEL_LEARNERS = ("rsl_rl", "skrl")
#: Upper bounds of a recipe's sizes, checked by :meth:`Recipe.validate` before anything is built
#: (SB3 allocates a replay buffer and PPO a rollout at once).
MAX_NET_WIDTH = 65_536  # units per hidden layer
MAX_NET_LAYERS = 64  # hidden layers
MAX_BATCH_SIZE = 1 << 24  # samples per (mini)batch
MAX_BUFFER_SIZE = 10**8  # transitions of the replay buffer
MAX_ENVS = 1 << 20  # parallel envs (soft_envs.envs.vector_base.MAX_NUM_ENVS)
MAX_ROLLOUT = 1 << 26  # transitions of one rollout, n_envs × n_steps
MAX_UPDATE_COUNT = 100_000  # train_freq, gradient_steps, n_epochs
MAX_SAMPLED_GOALS = 1_000  # HER's relabelled goals per real one
MAX_STANDARDIZE_SAMPLES = 10**7  # random-action steps behind the input statistics
MAX_LEARNING_STARTS = 10**12  # env steps before the first update (soft_envs.learn.train.MAX_TIMESTEPS)
#: Each size field of :class:`Recipe` and its bound.
SIZE_BOUNDS = {"batch_size": MAX_BATCH_SIZE, "buffer_size": MAX_BUFFER_SIZE, "train_freq": MAX_UPDATE_COUNT,
               "gradient_steps": MAX_UPDATE_COUNT, "n_sampled_goal": MAX_SAMPLED_GOALS, "n_envs": MAX_ENVS,
               "n_steps": MAX_ROLLOUT, "n_epochs": MAX_UPDATE_COUNT, "standardize_samples": MAX_STANDARDIZE_SAMPLES}
#: The envs with a goal-conditioned (``Dict``) form.
GOAL_CONDITIONED_ENVS = ("soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0", "soft_envs/PCCReach-v0",
                         "soft_envs/PCCPush-v0", "soft_envs/QuadrupedPose-v0",
                         "soft_envs/HexapodPose-v0")


@dataclass
class Recipe:
    """Algorithm and hyper-parameters (Stable-Baselines3 names) and the env keywords.

    ``net_arch`` is the hidden layers of the actor and of the critic; ``her`` selects the
    goal-conditioned env (``goal_conditioned=True``) with SB3's ``HerReplayBuffer``
    (``n_sampled_goal`` relabelled goals per real one, ``goal_selection_strategy``);
    ``action_noise`` is the standard deviation of TD3's Gaussian exploration noise (normalised
    actions); ``n_envs``, ``n_steps``, ``n_epochs``, ``gae_lambda``, ``ent_coef``, ``clip_range``
    are PPO's (``n_envs`` parallel envs: the native vector env where one exists; with
    ``learner="skrl"`` ``ent_coef`` is SAC's initial entropy coefficient); ``activation`` is
    the hidden layers' of the parallel learners' networks (one of ``ACTIVATIONS`` of
    :mod:`soft_envs.agents.learned.policy`, what a numpy policy runs);
    ``privileged_critic`` gives rsl_rl's critic the vector env's privileged observation beside the
    policy's (an asymmetric actor-critic: the critic sees the robot the episode drew);
    ``zero_output`` starts rsl_rl's actor with a zero output layer (a residual policy starts as the
    law it corrects: its mean action is 0 until it learns otherwise); ``env_kwargs``
    are ``gym.make`` keywords; ``standardize`` standardises the networks' input
    (:class:`~soft_envs.learn.layers.StandardizedInput`, statistics of ``standardize_samples``
    random-action steps); ``base_gait`` makes the policy a modulation of that scripted gait
    (:mod:`soft_envs.learn.gait_residual`; ``""``: the policy sets the joint targets itself).

    Sizes are bounded (:meth:`validate`): ``net_arch`` up to :data:`MAX_NET_LAYERS` layers of up to
    :data:`MAX_NET_WIDTH` units, the counts up to their :data:`SIZE_BOUNDS` (``batch_size`` up to
    :data:`MAX_BATCH_SIZE`, ``buffer_size`` :data:`MAX_BUFFER_SIZE`, ``n_envs`` :data:`MAX_ENVS`,
    ``n_envs × n_steps`` :data:`MAX_ROLLOUT`, ``train_freq``, ``gradient_steps``, ``n_epochs``
    :data:`MAX_UPDATE_COUNT`, ``n_sampled_goal`` :data:`MAX_SAMPLED_GOALS`, ``standardize_samples``
    :data:`MAX_STANDARDIZE_SAMPLES`, ``learning_starts`` :data:`MAX_LEARNING_STARTS`).
    """

    env_id: str = "soft_envs/PeterReach-v0"
    algo: str = "SAC"
    gamma: float = 0.5
    net_arch: tuple[int, ...] = (256, 256)
    learning_rate: float = 1e-3
    batch_size: int = 256
    buffer_size: int = 1_000_000
    learning_starts: int = 1000
    train_freq: int = 1
    gradient_steps: int = 1
    her: bool = True
    n_sampled_goal: int = 4
    goal_selection_strategy: str = "future"
    action_noise: float = 0.1
    standardize: bool = True
    standardize_samples: int = 2000
    n_envs: int = 1
    n_steps: int = 1024
    n_epochs: int = 10
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip_range: float = 0.2
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"n_modules": 2, "kinematic": True})
    base_gait: str = ""
    learner: str = "sb3"
    desired_kl: float = 0.01
    init_std: float = 1.0
    activation: str = "elu"
    privileged_critic: bool = False
    zero_output: bool = False
    note: str = ""

    def validate(self) -> Recipe:
        """Raise :class:`InvalidParameterError` on a bad value; return ``self``."""
        if self.algo.upper() not in ALGORITHMS:
            raise InvalidParameterError(f"algo must be one of {ALGORITHMS}; got {self.algo!r}")
        if not 0.0 <= self.gamma < 1.0:
            raise InvalidParameterError(f"gamma must be in [0, 1); got {self.gamma!r}")
        if not self.net_arch or len(self.net_arch) > MAX_NET_LAYERS:
            raise InvalidParameterError(f"net_arch needs 1 to {MAX_NET_LAYERS} hidden layers; got "
                                        f"{len(self.net_arch)}")
        for width in self.net_arch:
            check_integer("net_arch width", width, minimum=1, maximum=MAX_NET_WIDTH)
        check_positive("learning_rate", self.learning_rate, 1.0)
        for name, bound in SIZE_BOUNDS.items():
            check_integer(name, getattr(self, name), minimum=1, maximum=bound)
        if self.n_envs * self.n_steps > MAX_ROLLOUT:
            raise InvalidParameterError(f"a rollout of n_envs × n_steps = {self.n_envs * self.n_steps} transitions is "
                                        f"more than {MAX_ROLLOUT}")
        check_integer("learning_starts", self.learning_starts, minimum=0, maximum=MAX_LEARNING_STARTS)
        if self.goal_selection_strategy not in ("future", "final", "episode"):
            raise InvalidParameterError("goal_selection_strategy must be 'future', 'final' or 'episode'; "
                                        f"got {self.goal_selection_strategy!r}")
        check_positive("action_noise", self.action_noise, 10.0)
        if self.her and not self.off_policy:
            raise InvalidParameterError(f"HER needs an off-policy algorithm {OFF_POLICY}; got {self.algo!r}")
        if not 0.0 < self.gae_lambda <= 1.0 or not 0.0 < self.clip_range < 1.0 or self.ent_coef < 0:
            raise InvalidParameterError("PPO needs gae_lambda in (0, 1], clip_range in (0, 1), ent_coef >= 0")
        if self.learner not in LEARNERS:
            raise InvalidParameterError(f"learner must be one of {LEARNERS}; got {self.learner!r}")
        if self.learner == "rsl_rl" and (self.algo.upper() != "PPO" or self.her or self.base_gait):
            raise InvalidParameterError("the rsl_rl learner trains PPO on a native vector env: no HER, no base gait")
        if self.learner == "skrl" and (self.algo.upper() != "SAC" or self.her or self.base_gait):
            raise InvalidParameterError("the skrl learner trains SAC on a native vector env: no HER, no base gait")
        check_positive("desired_kl", self.desired_kl, 10.0)
        check_positive("init_std", self.init_std, 100.0)
        if self.privileged_critic and self.learner != "rsl_rl":
            raise InvalidParameterError("privileged_critic is the rsl_rl learner's (its critic's observation groups)")
        if self.activation not in ACTIVATIONS:
            raise InvalidParameterError(f"activation must be one of {ACTIVATIONS}; got {self.activation!r}")
        if not isinstance(self.env_kwargs, dict):
            raise InvalidParameterError(f"env_kwargs must be a dict; got {self.env_kwargs!r}")
        if self.base_gait and (self.base_gait not in BASE_GAITS or self.env_id != "soft_envs/QuadrupedWalk-v0"):
            raise InvalidParameterError(f"base_gait must be one of {BASE_GAITS} on QuadrupedWalk-v0; got "
                                        f"{self.base_gait!r} on {self.env_id}")
        return self

    @property
    def off_policy(self) -> bool:
        return self.algo.upper() in OFF_POLICY

    def replace(self, **changes: Any) -> Recipe:
        """A copy with ``changes`` (``env_kwargs`` merged into the recipe's)."""
        if "env_kwargs" in changes:
            changes["env_kwargs"] = dict(self.env_kwargs) | dict(changes["env_kwargs"] or {})
        return dataclasses.replace(self, **changes)

    def make_kwargs(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``gym.make`` keywords: the recipe's, ``goal_conditioned`` with HER, then ``extra``."""
        kwargs = dict(self.env_kwargs)
        if self.her or self.env_id in GOAL_CONDITIONED_ENVS:
            kwargs["goal_conditioned"] = bool(self.her)
        return kwargs | dict(extra or {})


_PPO: dict[str, Any] = dict(algo="PPO", her=False, gamma=0.99, learning_rate=3e-4, batch_size=256, n_envs=4,
                            n_steps=512, net_arch=(256, 256), ent_coef=0.0)

#: rsl_rl PPO over a native vector env (:mod:`soft_envs.learn.parallel`): legged_gym's loop (25 steps per env a
#: rollout, an adaptive learning rate), with more updates per sample than its defaults (minibatches of 1,600, 8
#: epochs, a KL target of 0.02, an initial action std of 0.3): on a CPU the samples cost, unlike on a GPU. Soft
#: PETER, seed 0, 3 CPU-min, 50 held-out goals within 1 mm: 40 % with 5 epochs of 4 minibatches and a KL of 0.01,
#: 94 % with 8 epochs and a KL of 0.02 (initial std 0.5); 100 held-out goals on seed 1: 78 % at std 0.5, 87 % at 0.3.
_PARALLEL: dict[str, Any] = dict(algo="PPO", learner="rsl_rl", her=False, gamma=0.5, learning_rate=1e-3, n_envs=256,
                                 n_steps=25, batch_size=1600, n_epochs=8, gae_lambda=0.95, ent_coef=0.0,
                                 net_arch=(128, 128), init_std=0.3, desired_kl=0.02, standardize_samples=4096)

#: skrl SAC over a native vector env (:mod:`soft_envs.learn.offpolicy`): FastTD3's scheme on a CPU, many envs feeding
#: one replay buffer, several updates of large minibatches after each step of them all.
#: Soft PETER, seed 0, 3 CPU-min, 100 held-out goals within 1 mm: 64 envs and 2 updates of 512 a step, 32 %; 4 updates
#: of 1,024, 23 %; 32 envs and 4 updates of 512, 36 %; with an initial entropy coefficient of 0.01 (skrl: 0.2) instead,
#: 44 % (64 envs, 2 of 512), 44 % (64 envs, 4 of 256) and 56 % (32 envs, 4 of 512, this recipe).
_OFF_PARALLEL: dict[str, Any] = dict(algo="SAC", learner="skrl", her=False, gamma=0.5, learning_rate=1e-3, n_envs=32,
                                     batch_size=512, gradient_steps=4, buffer_size=300_000, learning_starts=2048,
                                     ent_coef=0.01, net_arch=(128, 128), standardize_samples=4096)

_PETER_SOFT_REALISTIC = Recipe(
    gamma=0.9, net_arch=(128, 128),
    env_kwargs={"n_modules": 2, "realism": "realistic", "action_mode": "delta", "history": 2},
    note="a new robot every episode: the policy must close the loop on the measured error, so the "
         "action moves the set-points (delta) and the observation holds the last two steps")

_PCC_RESIDUAL = Recipe(
    env_id="soft_envs/PCCTrack-v0", her=False, gamma=0.9, learning_rate=1e-3,
    env_kwargs={"tracking_weight": 100.0, "action_type": "residual", "realism": "realistic",
                "action_mode": "delta", "delta_scale": 0.1, "max_episode_steps": 100},
    note="a correction of the tip's aim on top of the paper's PD + feed-forward law, trained on a new "
         "arm every episode: a zero action is the law itself, so exploration starts from a tracking "
         "arm; the action moves the correction (delta, 10 % of its range a step); 100-step episodes "
         "(5 s) give more starts per budget, evaluation runs the whole spiral")

#: name -> recipe. The names of the form of an env id are that env's default recipe.
RECIPES: dict[str, Recipe] = {
    "soft_envs/PeterReach-v0": Recipe(
        env_kwargs={"n_modules": 2, "kinematic": True},
        note="the kinematic env is a goal-conditioned contextual bandit with feedback (the tip is a function "
             "of the action alone): gamma 0.5 keeps the critic's target near the step's own reward; HER "
             "relabels every step with the tip it reached; standardised input (goals vary by mm about 0.12 m)"),
    "peter-soft": Recipe(
        net_arch=(128, 128), env_kwargs={"n_modules": 2},
        note="soft physics, ideal: the same as the kinematic recipe; the arm settles within the 0.1 s step "
             "(instant actuation), so the contextual-bandit view still holds"),
    "peter-soft-realistic": _PETER_SOFT_REALISTIC,
    "peter-soft-parallel-sac": Recipe(**_OFF_PARALLEL, env_kwargs={"n_modules": 2, "kinematic": False},
                                      note="skrl SAC on 32 soft arms at once, 4 updates of 512 transitions after "
                                           "each step of them all, initial entropy coefficient 0.01; gamma 0.5 as "
                                           "the other PETER recipes"),
    "peter-soft-parallel": Recipe(**(_PARALLEL | {"net_arch": (64, 64), "activation": "relu"}),
                                  env_kwargs={"n_modules": 2, "kinematic": False},
                                  note="rsl_rl PPO on 256 soft arms at once (--n-envs sets more); gamma 0.5 as "
                                       "the SAC recipe (the ideal arm settles within a step); networks of 64 "
                                       "ReLU units a layer, which an update costs 2.1x less than 128 ELU units "
                                       "(ELU's exponential costs as much as a layer's product on a CPU): 3 "
                                       "CPU-min, seeds 0, 1, 2, 100 held-out goals within 1 mm: 96, 94, "
                                       "94 % and in other runs 93, 95, 84 % and 91, 96, 92 % (128 ELU units: "
                                       "91, 93, 91 %)"),
    "peter-soft-realistic-parallel": Recipe(
        **(_PARALLEL | {"gamma": 0.9, "desired_kl": 0.05}),
        env_kwargs={"n_modules": 2, "kinematic": False, "realism": "realistic", "action_mode": "task", "history": 2,
                    "success_reward": 1.0},
        note="rsl_rl PPO on 256 realistic soft arms with task-space actions (the action moves the tip up to 2 mm a "
             "step through the nominal model's Jacobian: the policy learns a feedback on the measured error, not "
             "the arm's inverse kinematics), a two-step history, the bonus within 1 mm, gamma 0.9 (the valves' delay "
             "and the legs' 10 mm/s spread an action's effect over a second) and a KL target of 0.05 (the adaptive "
             "learning rate fell to its floor at 0.02 as the action std shrank). 10 CPU-min, 100 held-out goals within "
             "1 mm, seeds 0, 1, 2: 90, 89, 91 % (soft-envs bench learner --full); seed 0 at a KL of 0.02: 83 % (seed "
             "1: 89 %), an initial std of 0.15: 79 %; with delta actions on "
             "the set-points instead: 29 % (53 % after 20 CPU-min); with those, 64 ReLU units a layer 6 %, an "
             "initial std of 0.15 0 %, a privileged critic 4 %"),
    "peter-soft-realistic-residual": Recipe(
        **(_PARALLEL | {"gamma": 0.9, "init_std": 0.1, "zero_output": True}),
        env_kwargs={"n_modules": 2, "kinematic": False, "realism": "realistic", "action_mode": "task", "history": 2,
                    "success_reward": 1.0, "task_feedback": 0.2, "task_residual_radius": 1e-3,
                    "distance_weight": 1000.0},
        note="peter-soft-realistic-parallel as a residual on the proportional law on the measured tip (task_feedback "
             "0.2), the actor's output starting at zero (the law itself) with an std of 0.1, acting in proportion "
             "to the error within 1 mm of the goal (task_residual_radius), the distance in millimetres "
             "(distance_weight 1000 /m: within the 1 mm bonus a tenth of a millimetre is worth 0.1 a step). 10 "
             "CPU-min, seeds 0, 1, 2, 1,000 held-out goals the drawn arms can reach (seeds from 4,000,000): "
             "within 1 mm 99.8, 99.9, 99.8 %, mean 0.220, 0.225, 0.239 mm, p95 0.401, 0.415, 0.462 mm, median "
             "steps to 1 mm 23, 24, 23; the law alone 100 %, 0.239 mm, 0.366 mm, 24 steps. Ablation, seed 0 or 1, "
             "200 goals from 3,000,000 (the law: 99.5 %, 0.230, 0.383 mm): the distance in centimetres (100 /m) "
             "99.5 %, 0.304, 0.521 mm (a residual bias b holds the tip b x 10 mm off the law's equilibrium); in "
             "millimetres without the radius 0.218, 0.380 mm (seed 0) and 0.248, 0.440 mm (seed 1); with it "
             "0.216-0.242, 0.398-0.450 mm; without the residual (peter-soft-realistic-parallel, shipped before): "
             "92.0 %, 0.508, 1.335 mm"),
    "peter-obstacles-residual": Recipe(
        **(_PARALLEL | {"gamma": 0.95, "init_std": 0.5, "zero_output": True, "desired_kl": 0.01, "n_steps": 50,
                        "batch_size": 3200}),
        env_kwargs={"n_modules": 2, "kinematic": False, "realism": "realistic", "action_mode": "task", "history": 2,
                    "success_reward": 1.0, "task_feedback": 0.2, "task_residual_radius": 5e-3,
                    "task_residual_deadband": 2e-3, "distance_weight": 1000.0, "obstacles": 3,
                    "collision_weight": 200.0},
        note=("peter-soft-realistic-residual around three spheres near the straight path (obstacles=3, their "
              "centres and radii observed): the law drives the tip straight at the goal and the residual learns the"
              " way around, a touch costing 200 a step (collision_weight; a step's distance term is about -24 at "
              "the start), the residual's authority growing from none at 2 mm from the goal to all of it at 7 mm "
              "(task_residual_deadband 2 mm, radius 5 mm: the law alone arrives and holds the goal), an initial std "
              "of 0.5 (a detour needs millimetres a step), whole 50-step episodes per rollout, gamma 0.95 and a KL "
              "target of 0.01. 20 CPU-min on 200 held-out realistic goals (seeds from 4,000,000): seeds 0 and 1 "
              "94 and 90 % success without a collision (within 1 mm 100 and 99 %, collision-free 94 and 90 %); "
              "the law alone 76 % (100 % within 1 mm). Without the deadband (the radius alone, the policy shipped "
              "before): 90 % (within 1 mm 96 %, collision-free 93 %): within the radius a residual of 1 still "
              "outweighs the law (its share |e| / 5 mm of 2 mm a step against the law's 0.2 |e|), and the policy "
              "unsettled the arrival. Also tried with the deadband, seed 0: 400 a touch 90 % (collision-free 92 "
              "%); a shaping term on the true body's clearance to each sphere (40 a step times its shortfall from "
              "a 2 mm margin) 90 % (collision-free 92 %), and from a 5 mm margin without the deadband 30 % (the "
              "policy held the tip off goals near a sphere: collision-free 96 %, within 1 mm 32 %). Before the "
              "deadband, seed 0, 50 goals from "
              "1,000,000 (the law: 63 % of 100): a touch costing 50, the radius 1 mm, an std of 0.3, gamma 0.9, "
              "25-step rollouts, KL 0.02: 72 % collision-free after 10 CPU-min (the std fell to 0.05 in 3 minutes);"
              " 100 a touch, an std of 0.5 and an entropy bonus of 0.005: 84 % collision-free but 0 % within 1 mm "
              "(the residual held the tip 2 mm off, radius 1 mm); radius 5 mm: 82-84 % success at 1-2 M steps, "
              "falling to 56 % at 3.5 M; with gamma 0.95: 82-84 %, 72 % at 3.5 M; this recipe (no entropy bonus, KL"
              " 0.01, 50-step rollouts, 200 a touch): 88-94 % along the run")),
    "peter-soft-realistic-success": _PETER_SOFT_REALISTIC.replace(
        env_kwargs={"success_reward": 1.0},
        note="peter-soft-realistic with a bonus of 1 a step within 1 mm of the measured tip: the distance "
             "term's slope, 0.1 a millimetre, is below what the critic resolves at -1 to -10 a step"),
    "soft_envs/PCCTrack-v0": Recipe(
        env_id="soft_envs/PCCTrack-v0", her=False, gamma=0.9, env_kwargs={"tracking_weight": 100.0},
        note="configuration set-points through the paper's PD + feed-forward law; tracking error in cm "
             "(O(1) a step); no HER (the goal moves with time, the phase is observed)"),
    "pcc-realistic": Recipe(
        env_id="soft_envs/PCCTrack-v0", her=False, gamma=0.9, net_arch=(128, 128),
        env_kwargs={"tracking_weight": 100.0, "realism": "realistic", "action_mode": "delta", "delta_scale": 0.05,
                    "history": 2},
        note="a new arm every episode and the 100-150 ms regulator delay: the episode starts on the path, a "
             "zero action holds the set-point (delta, 5 % of the range a step; the spiral needs about 1 %) and the "
             "observation holds the last two steps"),
    "pcc-residual": _PCC_RESIDUAL,
    "soft_envs/PCCReach-v0": Recipe(
        env_id="soft_envs/PCCReach-v0", her=False, gamma=0.9, net_arch=(128, 128),
        env_kwargs={"obstacles": 3, "tracking_weight": 100.0, "action_mode": "delta", "delta_scale": 0.1},
        note="obstacle reach: configuration set-points moved by the action (delta, 10 % of the range a step) so "
             "that the arm's path is the policy's to shape around the three spheres it observes; distance in cm"),
    "soft_envs/PCCPush-v0": Recipe(
        env_id="soft_envs/PCCPush-v0", her=False, gamma=0.95, net_arch=(128, 128),
        env_kwargs={"action_mode": "delta", "delta_scale": 0.05},
        note="push: set-points moved by the action (delta, 5 % of the range a step: a slow tip does not set "
             "the hanging arm swinging); the box's distance (weight 10) and the tip's to the box (shaping)"),
    "pcc-push-parallel": Recipe(
        **(_PARALLEL | dict(env_id="soft_envs/PCCPush-v0", gamma=0.98, init_std=0.5, n_envs=64, n_steps=50,
                            batch_size=800, desired_kl=0.01)),
        env_kwargs={"action_type": "smooth", "action_mode": "task", "task_step": 0.003, "object_weight": 100.0,
                    "reach_weight": 10.0, "reach_behind": 0.025},
        note="push on rsl_rl PPO over 64 arms: the tip moved up to 3 mm a step in the world (the smooth set-point's "
             "task-space action), the box's distance and the tip's to the push's start behind the box "
             "(reach_behind 25 mm, where the body meets its back face) in centimetres and decimetres. Not yet a "
             "push: 30 CPU-min, seed 0, 100 held-out episodes: 13 % within 1 cm (2.4 M steps; the scripted push "
             "on the same boxes 100 %). Tried, seed 0: the shaping on the box's centre (reach_behind 0), 20 "
             "CPU-min: 2 %, with a two-step history 6 %; reach_weight 30: 7 %; 5 mm a step and a KL target of "
             "0.03: 7 %"),
    "pcc-residual-parallel": Recipe(**(_PARALLEL | dict(env_id="soft_envs/PCCTrack-v0", gamma=0.9, n_envs=64,
                                                        batch_size=800)),
                                    env_kwargs=dict(_PCC_RESIDUAL.env_kwargs),
                                    note="pcc-residual on rsl_rl PPO: 64 realistic arms at once (the env's two "
                                         "Gauss-Newton solves per arm and step cap it near 420 env-steps/s, so few "
                                         "envs), delta actions through the closed-loop wrapper; 15 CPU-min, seeds "
                                         "0, 1, 2: RMS 3.16, 3.14, 3.16 mm against the law's 7.71 mm on the same 50 "
                                         "held-out realistic episodes (SAC, pcc-residual-spread: 5.86 mm in 60 "
                                         "CPU-min)"),
    "pcc-residual-spread": _PCC_RESIDUAL.replace(
        env_kwargs={"realism": {"preset": "realistic", "regulator_delay": [0.0, 0.15]}},
        note="pcc-residual over arms from the ideal one to the realistic ones: the regulator's dead time "
             "drawn from 0 (ideal) to 150 ms, not 100-150 ms (every other realistic range already holds its "
             "ideal value), so the policy must read the delay from the error it sees, not assume it"),
    "pcc-residual-ideal": _PCC_RESIDUAL.replace(
        env_kwargs={"realism": "ideal"},
        note="pcc-residual on the ideal arm, where the law alone tracks to a third of a millimetre: the "
             "policy must learn to leave the law alone, and any correction it keeps is its own error"),
    "soft_envs/QuadrupedWalk-v0": Recipe(
        env_id="soft_envs/QuadrupedWalk-v0", her=False, gamma=0.99, learning_rate=3e-4, learning_starts=5000,
        env_kwargs={},
        note="SAC, the sample-efficient choice for a 60-min budget on 2 cores"),
    "quadruped-walk-ppo": Recipe(
        env_id="soft_envs/QuadrupedWalk-v0", **(_PPO | {"n_envs": 8}),
        env_kwargs={"healthy_reward": 0.5, "fall_weight": 10.0},
        note="PPO on 8 envs; standing is worth 0.5 a step and a fall costs 10 (the env's defaults, 0.05 and 0, "
             "let the policy trade a fall for speed)"),
    "quadruped-walk-gait": Recipe(
        env_id="soft_envs/QuadrupedWalk-v0", **(_PPO | {"n_envs": 8}), base_gait="trot",
        env_kwargs={"healthy_reward": 0.5, "fall_weight": 10.0, "action_rate_weight": 2.0, "slip_weight": 10.0,
                    "reversal_weight": 0.3},
        note="PPO modulating the Bézier trot (soft_envs.learn.gait_residual: stride, a cadence that may only slow, "
             "and a joint residual of 10 % of the range, through a 50 ms filter; Iscen et al. 2018's policies "
             "modulating trajectory generators): the servo gait is the starting point; prices on the action's rate, "
             "on the stance feet's slip (1 mm/s of slip costs what 1 cm/s of speed earns) and on each reversal of a "
             "joint target (0.3, the judged figure priced where it is made; at 0 the policy reversed up to 11 times "
             "a second, at 0.1 it walked slower than the trot, seed 0, 40 CPU-min) keep it one"),
    "soft_envs/QuadrupedPose-v0": Recipe(env_id="soft_envs/QuadrupedPose-v0", gamma=0.9, learning_rate=3e-4,
                                         env_kwargs={}),
    "soft_envs/HexapodPose-v0": Recipe(env_id="soft_envs/HexapodPose-v0", gamma=0.5, env_kwargs={}),
}


#: ``soft-envs train-rl --n-envs N`` with ``N`` at least this picks the parallel learner's recipe of the env.
PARALLEL_MIN_ENVS = 64
#: The recipe ``soft-envs train-rl --n-envs N`` (``N`` ≥ :data:`PARALLEL_MIN_ENVS`) takes for an env id:
#: the parallel learner's.
PARALLEL_RECIPES = {"soft_envs/PeterReach-v0": "peter-soft-parallel"}


@dataclass(frozen=True)
class Goal:
    """A learned baseline's goal: the policy ``stem`` (``STEM.zip`` in the policies
    folder) trained with recipe ``recipe`` and ``seed`` for ``minutes`` of budget, evaluated on
    the ``soft-envs evaluate`` task ``task`` under ``presets`` next to the IK controllers ``ik``;
    ``target`` says what it must reach, judged under ``judged`` (default: every preset)."""

    stem: str
    label: str
    recipe: str
    minutes: float
    task: str
    presets: tuple[str, ...]
    ik: tuple[str, ...]
    target: str
    seed: int = 0
    judged: tuple[str, ...] | None = None

    @property
    def judged_presets(self) -> tuple[str, ...]:
        """The presets the target is judged under (the others are shown, not judged)."""
        return self.presets if self.judged is None else self.judged


#: The goals of BENCHMARKS.md's ``learned`` section, trained and evaluated by
#: ``soft-envs bench learned --full --train`` (:mod:`soft_envs.bench.learned`).
GOALS: tuple[Goal, ...] = (
    Goal("peter_soft", "soft PeterReach, ideal", "peter-soft", 30.0, "peter-2", ("ideal",), ("trr-feedback",),
         "≥ 90 % of held-out goals within 1 mm"),
    Goal("peter_real", "soft PeterReach, realistic (a new robot every episode)", "peter-soft-realistic-success",
         60.0, "peter-2", ("realistic",), ("trr-feedback",), "≥ 90 % within 5 mm and ≥ 50 % within 1 mm"),
    Goal("peter_residual", "soft PeterReach, realistic: a residual on the proportional law on the measured tip, "
         "goals each drawn arm can reach", "peter-soft-realistic-residual", 10.0, "peter-2", ("realistic",),
         ("task-feedback", "trr-feedback"), "≥ 99 % within 1 mm, mean and p95 ≤ the law's (task-feedback) on the "
         "same goals"),
    Goal("peter_obstacles", "soft PeterReach around three spheres, realistic: a residual on the proportional law, "
         "a penalty for every step that touches one", "peter-obstacles-residual", 20.0, "peter-2-obstacles",
         ("realistic",), ("task-feedback", "trr-obstacles-feedback", "sqp-obstacles-feedback"),
         "success (within 1 mm, no collision) ≥ the obstacle-aware IK's (TRR with a barrier, SQP; closed on the "
         "tip) on the same goals"),
    Goal("pcc_residual_ideal", "PCCTrack spiral, ideal arm: a residual on the PD + feed-forward law, trained ideal",
         "pcc-residual-ideal", 10.0, "pcc-spiral", ("ideal",), ("pd-ff",),
         "RMS tracking error ≤ 2× the law's (ideal)"),
    Goal("pcc_residual", "PCCTrack spiral, realistic arms: a residual on the PD + feed-forward law, trained on arms "
         "from the ideal to the realistic ones", "pcc-residual-spread", 60.0, "pcc-spiral", ("ideal", "realistic"),
         ("pd-ff",), "RMS tracking error ≤ the law's (realistic)", judged=("realistic",)),
    Goal("quadruped_walk", "QuadrupedWalk on servos, PPO modulating the Bézier trot", "quadruped-walk-gait", 40.0,
         "quadruped-walk", ("ideal",), ("trot",),
         "faster than the Bézier trot on the same seeds, no falls, stance slip ≤ the trot's, ≤ 10 command "
         "reversals/s per joint, joints within the servos' speed"),
)


def recipe_for(name: str) -> Recipe:
    """A copy of the recipe called ``name`` (an env id or a variant of :data:`RECIPES`)."""
    if name not in RECIPES:
        raise InvalidParameterError(f"unknown recipe {name!r}; choose from {sorted(RECIPES)}")
    return dataclasses.replace(RECIPES[name], env_kwargs=dict(RECIPES[name].env_kwargs))
