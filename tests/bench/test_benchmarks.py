"""The benchmark harness (``soft_envs.bench``) on small sizes, and micro-benchmarks of the hot paths.

The micro-benchmarks (pytest-benchmark) run once as ordinary tests in the suite
(``--benchmark-disable`` in pyproject); time them with
``pytest tests/bench/test_benchmarks.py --benchmark-enable``. No timing is asserted here: the
figures go to BENCHMARKS.md through ``soft-envs bench``.
"""

from __future__ import annotations

import numpy as np
import pytest

from soft_envs import clock
from soft_envs.agents.ik import trr, trr_batch
from soft_envs.agents.learned import shipped_names
from soft_envs.robots import Peter

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("kinematics", ["tilted", "pcc"])
def test_forward_and_jacobian_single(benchmark, kinematics):
    arm = Peter(3, kinematics=kinematics)
    t = arm.sample(RNG)
    J = benchmark(arm.jacobian, t)
    assert J.shape == (3, 9)


@pytest.mark.parametrize("kinematics", ["tilted", "pcc"])
def test_forward_batch_of_10000(benchmark, kinematics):
    arm = Peter(3, kinematics=kinematics)
    t = arm.sample(RNG, 10_000)
    tips = benchmark(arm.forward, t)
    assert tips.shape == (10_000, 3)


def test_trr_single_target(benchmark):
    arm = Peter(2)
    target = arm.forward(arm.sample(RNG))
    res = benchmark(trr, arm, target)
    assert res.success


def test_trr_batch_of_1000(benchmark):
    arm = Peter(2)
    targets = arm.forward(arm.sample(RNG, 1000))
    res = benchmark(trr_batch, arm, targets)
    assert res.success.all()


# ------------------------------------------------------------------------------ the harness
def test_chain_ik_comparison_table_shape():
    from soft_envs.bench.chain_ik import comparison

    # budgets never expire: the table checks the solvers, not the machine
    with clock.use_clock(clock.ScaledClock(1e-6)):
        table, success = comparison(n_targets=3, n_transpose=1, seed=0)
    lines = table.splitlines()
    assert len(lines) == 2 + 2 * 8  # header, rule, 8 rows per robot
    assert all(line.count("|") == 13 for line in lines)
    assert success[("KUKA iiwa", "dls")] == 1.0 and success[("Franka Panda", "dls")] == 1.0
    assert success[("KUKA iiwa", "chain_ik")] == 1.0 and success[("Franka Panda", "chain_ik")] == 1.0
    assert success[("KUKA iiwa", "batch")] == 1.0 and success[("Franka Panda", "batch")] == 1.0
    assert set(success) >= {("KUKA iiwa", "pybullet, one call"), ("Franka Panda", "pybullet looped")}


@pytest.mark.parametrize("peer", ["missing", "installed"])
def test_compiled_lm_tables_shape(monkeypatch, peer):
    """``chain_ik`` next to roboticstoolbox's ``ik_LM``: a row each per robot (a row saying so when
    roboticstoolbox is missing), the batched rates after them."""
    from soft_envs.bench import chain_ik, ik_peers

    if peer == "missing":
        def missing(*args, **kwargs):
            raise ModuleNotFoundError("No module named 'roboticstoolbox'", name="roboticstoolbox")

        monkeypatch.setattr(ik_peers, "rtb_solver", missing)
    else:
        pytest.importorskip("roboticstoolbox")
    with clock.use_clock(clock.ScaledClock(1e-6)):  # budgets never expire
        text, figures = chain_ik.compiled_tables(n_targets=4, seed=0, rounds=2, batch_targets=6)
    single, batched = text.split("\n\n")
    assert len(single.splitlines()) == 2 + 2 * 2 and all(line.count("|") == 16 for line in single.splitlines())
    assert ("not installed" in single) == (peer == "missing")
    assert len(batched.splitlines()) in (2 + 2, 2 + 2 * 2)  # 1 thread, and every CPU where there are several
    for robot in chain_ik.ROBOTS:
        assert figures[(robot, "chain_ik")]["success"] == 1.0
        assert figures[(robot, "chain_ik_batch threads=1")]["success"] == 1.0
        if peer == "installed":
            assert figures[(robot, "ik_LM")]["success"] >= 0.5


def test_quadruped_table2_error_probability_falls_with_the_initial_distance():
    from soft_envs.bench.quadruped import table2_probabilities

    probabilities = table2_probabilities(n_targets=40, seed=1)
    near, far = probabilities[0.6], probabilities[5.0]
    assert near[0] == 1.0 and near[4] == 1.0  # error < 1e-10 and < 1e-14 cm at 0.6 cm: always
    assert far[0] < near[0] and far[4] < 0.5  # 5 cm without splitting: rarely
    for row in probabilities.values():  # stricter thresholds are never more probable
        assert all(a >= b for a, b in zip(row, row[1:]))


def test_the_shipped_ablation_networks_are_found():
    from soft_envs.bench.neural import ABLATIONS, ablation_network

    assert all(ablation_network(2, name) is not None for name in ABLATIONS)


def test_a_peer_that_is_not_installed_gives_a_row_not_an_error(monkeypatch):
    from soft_envs.bench import ik_peers
    from soft_envs.bench.chain_ik import load_robot, random_targets

    def missing(chain):
        raise ModuleNotFoundError("No module named 'nothing_here'", name="nothing_here")

    monkeypatch.setitem(ik_peers.PEERS, "roboticstoolbox `ik_LM`", missing)
    chain = load_robot("KUKA iiwa")
    _, positions, quats = random_targets(chain, 2, 0)
    out = ik_peers.run_peer("roboticstoolbox `ik_LM`", chain, positions, quats)
    assert isinstance(out, str) and "not installed" in out and "peers" in out


@pytest.mark.parametrize("peer, module", [("roboticstoolbox `ik_LM`", "roboticstoolbox"),
                                          ("TRAC-IK (pytracik), 50 ms", "pytracik")])
def test_installed_peers_solve_our_targets(peer, module):
    """Only where the optional ``peers`` extra is installed (skipped otherwise)."""
    pytest.importorskip(module)
    from soft_envs.bench import ik_peers
    from soft_envs.bench.chain_ik import _errors, load_robot, random_targets

    for robot in ("KUKA iiwa", "Franka Panda"):
        chain = load_robot(robot)
        _, positions, quats = random_targets(chain, 5, 1)
        solutions, seconds = ik_peers.run_peer(peer, chain, positions, quats)
        assert solutions.shape == (5, chain.n_dof) and np.all(seconds > 0)
        pos_err, ori_err = _errors(chain, solutions, positions, quats)
        assert np.mean((pos_err < 1e-5) & (ori_err < 1e-5)) >= 0.6


def test_realism_stages_grow_from_the_model_gap_to_the_whole_preset():
    from soft_envs.bench import realism
    from soft_envs.envs.peter_reach import PETER_REALISM

    stages = [realism.stage_realism(names) for _, names in realism.STAGES]
    assert stages[0] == {} and stages[-1] == "realistic"
    assert all(set(a) < set(b) for a, b in zip(stages[:-2], stages[1:-1]))  # each stage adds a group
    ranges = {p.name: p.realistic for p in PETER_REALISM}
    assert all(stages[-2][name] == ranges[name] for name in stages[-2])
    errors = realism.stage_errors(stages[-1], 1, seed=0)
    assert errors["TRR closed loop"][0] < 1e-3 < errors["TRR"][0]


def test_the_soak_reports_steps_episodes_and_memory():
    from soft_envs.bench.endurance import soak

    kind, steps, episodes, start, warm, end = soak("soft_envs/PeterReach-v0", 1.0, num_envs=2)
    assert kind and steps > 0 and episodes >= 0 and 0 < start <= warm + 50 and end > 0


def test_the_fuzzing_rows_run_each_env_in_a_child_and_count_what_it_did():
    from soft_envs.bench.endurance import fuzz_in_child

    counts, failures, seconds = fuzz_in_child(["soft_envs/QuadrupedWalk-v0"], 5, False, seed=1, deadline=300)
    assert failures == [] and counts["sequences"] >= 5 and counts["calls"] > 0 and seconds > 0


def test_hexapod_throughput_and_solve_tables():
    from soft_envs.bench.hexapod import env_throughput, solve_inputs
    from soft_envs.robots.cosserat import Hexapod6PFS

    text = env_throughput(n_steps=3, seed=0, rounds=1)
    assert "| compiled |" in text and "| numpy reference |" in text and "Speed-up:" in text
    hexa = Hexapod6PFS()
    cold, walk = solve_inputs(hexa, 4, 30, seed=1)
    assert cold.shape == (4, 6) and walk.shape == (30, 6)
    assert np.all(np.abs(cold) <= hexa.input_limit) and np.all(np.abs(walk) <= hexa.input_limit)
    assert np.max(np.abs(np.diff(walk, axis=0))) < 0.01  # a walk of ~1 mm steps


@pytest.mark.slow
def test_learning_on_a_robot_beats_its_nominal_model_and_finds_its_parameters():
    from soft_envs.bench import learn_on_robot

    result = learn_on_robot.robot_run("realistic", 1001, [7, 8], (40,), learners=("TRR, calibrated",),
                                baselines=("TRR, nominal model",))
    errors = result["errors"]
    assert errors["TRR, calibrated|40"].mean() < 0.3 * errors["TRR, nominal model"].mean()
    assert result["samples"] == 40 and result["steps"] == 40 * 50  # read at the 5 s episode's end
    fitted, truth = result["fitted"], result["truth"]
    np.testing.assert_allclose(fitted["leg_gain"], truth["leg_gain"], atol=0.1)
    assert "`leg_gain` [1]" in learn_on_robot._identification_table([result], 40)


def test_a_learned_goal_is_judged_only_under_its_judged_presets():
    from soft_envs.bench.learned import _verdict
    from soft_envs.learn.recipes import Goal

    rms = {("pd-ff", "ideal"): np.array([0.3e-3]), ("pd-ff", "realistic"): np.array([7.7e-3]),
           ("me", "ideal"): np.array([5.0e-3]), ("me", "realistic"): np.array([6.0e-3])}
    both = Goal("g", "label", "pcc-residual", 30.0, "pcc-spiral", ("ideal", "realistic"), ("pd-ff",), "target")
    text, met = _verdict(both, {}, "me", rms)
    assert not met and "ideal: RMS 5.00 mm vs the law's 0.30 mm" in text
    realistic_only = Goal("g", "label", "pcc-residual", 30.0, "pcc-spiral", ("ideal", "realistic"), ("pd-ff",),
                          "target", judged=("realistic",))
    text, met = _verdict(realistic_only, {}, "me", rms)
    assert met and "(shown, not judged)" in text
    ideal_only = Goal("g", "label", "pcc-residual", 30.0, "pcc-spiral", ("ideal",), ("pd-ff",), "target")
    text, met = _verdict(ideal_only, {}, "me", {k: v for k, v in rms.items() if k[1] == "ideal"})
    assert not met and "realistic" not in text


def test_a_learned_walk_is_judged_on_its_gait_not_only_its_speed():
    """Faster than the trot and no falls is not enough — a vibrating gait (many command
    reversals, skating feet) fails its goal."""
    from soft_envs.bench.learned import _walk_verdict
    from soft_envs.learn.recipes import Goal

    goal = Goal("walk", "label", "quadruped-walk-gait", 60.0, "quadruped-walk", ("ideal",), ("trot",), "target")
    servo_gait = {"gait_stance_slip_speed": 0.002, "gait_command_reversals_per_second": 8.0,
                  "gait_peak_joint_speed": 10.0}
    trot = {"gait_stance_slip_speed": 0.003, "gait_command_reversals_per_second": 9.9, "gait_peak_joint_speed": 10.5}

    def metrics(x: float, figures: dict) -> dict:
        return {("me", "ideal"): np.full(3, x), ("me", "ideal", "fell"): np.zeros(3, bool),
                ("me", "ideal", "figures"): [figures] * 3, ("trot", "ideal"): np.full(3, 0.5),
                ("trot", "ideal", "fell"): np.zeros(3, bool), ("trot", "ideal", "figures"): [trot] * 3}

    text, met = _walk_verdict(goal, metrics(0.8, servo_gait), "me")
    assert met and "fails" not in text
    vibrating = servo_gait | {"gait_command_reversals_per_second": 50.0, "gait_stance_slip_speed": 0.3}
    text, met = _walk_verdict(goal, metrics(3.0, vibrating), "me")
    assert not met and "reversals ≤ 10/s" in text and "slip ≤ the trot's" in text
    text, met = _walk_verdict(goal, metrics(0.4, servo_gait), "me")
    assert not met and "faster than the trot" in text


@pytest.mark.parametrize(("task", "controller", "figure"), [
    ("peter-2", "trr-feedback", "leg rate / its limit"), ("pcc-spiral", "pd-ff", "pressure / bound"),
    ("quadruped-pose", "body-pose", "peak joint speed / servo")])
def test_the_plausibility_audit_reads_each_envs_actuators_within_their_limits(task, controller, figure):
    """The IK controllers drive actuators that hold their physical limits (ratios ≤ 1)."""
    from soft_envs.bench.plausibility import _episode

    result = _episode((task, controller, 3_000_000, "ideal"))
    assert 0.0 < result["actuators"][figure] <= 1.0 + 1e-9
    assert result["reversals"] >= 0.0 and 0.0 <= result["at_bounds"] <= 1.0


def test_the_audit_reads_how_deep_and_how_hard_an_arm_touches_an_obstacle():
    """The obstacle-blind TRR presses into a sphere on this seed: the deepest penetration within the
    contact's 1 mm and the normal force within what the legs can push (both read, both ≤ 1)."""
    import gymnasium as gym

    from soft_envs.bench.plausibility import _episode, legs_push

    result = _episode(("peter-2-obstacles", "trr-feedback", 3_000_001, "ideal"))
    assert not result["success"]
    assert 0.0 < result["actuators"]["penetration / 1 mm"] <= 1.0
    assert 0.0 < result["actuators"]["contact force / legs' push"] <= 1.0
    env = gym.make("soft_envs/PeterReach-v0", obstacles=1, payload=0.2).unwrapped
    # six legs of 1.3 × 1300 N/m over 20 mm, and (1.2 × 0.24 + 0.2 + 0.5) kg of weight
    assert legs_push(env) == pytest.approx(6 * 1.3 * 1300 * 0.02 + (1.2 * 0.24 + 0.7) * 9.81)
    env.close()


def test_the_audit_flags_a_ratio_beyond_its_limit_not_one_rounded_at_it():
    from soft_envs.bench.plausibility import beyond_limit

    assert not beyond_limit(1.0000000000000187)  # a leg filling at its cap, measured over a step
    assert beyond_limit(1.01) and not beyond_limit(0.99)


@pytest.mark.parametrize("task", shipped_names())
def test_a_shipped_policy_drives_its_actuators_within_their_physical_limits(task):
    """What a shipped policy learned is physically real: in the preset of its card, every actuator
    figure of the audit (leg rates, pressures, pressure reversals against the regulators'
    bandwidth, joint speeds) holds its limit."""
    from soft_envs.bench.plausibility import _RATIOS, _episode, shipped_preset

    result = _episode((task, "learned", 3_000_000, shipped_preset(task)))
    ratios = {name: value for name, value in result["actuators"].items() if name in _RATIOS}
    assert ratios and all(value <= 1.0 + 1e-9 for value in ratios.values()), ratios


def test_learned_goals_not_rerun_are_carried_from_the_previous_section_without_machine_paths():
    from soft_envs.bench.learned import _carried, _without_machine_paths

    previous = ("<!-- bench:learned -->\n## title\n\nRegenerate: x. Policies from `/home/me/runs/learned`; each.\n\n"
                "| policy | goal | budget | reached | met |\n|---|---|---|---|---|\n"
                "| **a** | ga | 1 min | ra | yes |\n| **b** | gb | 2 min | rb | no |\n\n"
                "| policy | recipe |\n|---|---|\n| **a**: A | `ra` |\n| **b**: B | `rb` |\n\n"
                "`soft-envs evaluate --tasks t --controllers sb3:SAC:/home/me/runs/learned/a.zip` (1 s):\n\n"
                "| task | controller |\n|---|---|\n| t | **a** |\n\n"
                "`soft-envs evaluate --tasks u --controllers sb3:SAC:/home/me/runs/learned/b.zip` (1 s):\n\n"
                "| task | controller |\n|---|---|\n| u | **b** |\n\nRMS of b\n\n| controller | preset |\n|---|---|\n"
                "| **b** | ideal |\n<!-- /bench:learned -->")
    verdicts, policies, parts = _carried(_without_machine_paths(previous), ["b"])
    assert verdicts == ["| **b** | gb | 2 min | rb | no |"] and policies == ["| **b**: B | `rb` |"]
    assert len(parts) == 1 and parts[0].startswith("`soft-envs evaluate --tasks u") and "RMS of b" in parts[0]
    assert parts[0].endswith("| **b** | ideal |")  # the RMS table stays in its part, not among the verdicts
    assert "/home/me" not in parts[0] and "$SOFT_ENVS_POLICIES/b.zip" in parts[0]
    shipped = previous.replace("\n<!-- /bench:learned -->", "\n\nShipped policies (x) against their cards:\n\n"
                               "| policy | verdict |\n|---|---|\n| `p` | holds |\n<!-- /bench:learned -->")
    # the shipped policies' table is regenerated by every run, never carried
    assert _carried(_without_machine_paths(shipped), ["b"])[2] == parts
    relative = previous.replace("/home/me/runs/learned", "rl_runs/walk_rev0.3")  # a folder the tree ignores
    assert "rl_runs" not in _without_machine_paths(relative)


def test_the_learned_section_names_its_policies_by_the_folders_variable(monkeypatch, tmp_path):
    from pathlib import Path

    from soft_envs.bench.learned import _shown

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOFT_ENVS_POLICIES", "rl_runs/walk_rev0.3")
    folder = Path("rl_runs/walk_rev0.3")
    assert _shown(folder) == "$SOFT_ENVS_POLICIES"
    assert _shown(folder / "quadruped_walk.zip") == "$SOFT_ENVS_POLICIES/quadruped_walk.zip"
    assert _shown(Path("/elsewhere/peter.zip")) == "$SOFT_ENVS_POLICIES/peter.zip"


def test_reliability_messages_name_no_temporary_folder_of_this_machine():
    import os
    import tempfile

    from soft_envs.bench.reliability import _message

    path = os.path.join(tempfile.gettempdir(), "tmpk3j2x", "robot.urdf")
    text = _message(ValueError(f"{path}: two joints are named 'j'"))
    assert tempfile.gettempdir() not in text and text.startswith("ValueError: $TMPDIR/…/robot.urdf: two joints")


def test_the_learner_bench_measures_the_env_and_every_learner_in_one_process():
    pytest.importorskip("rsl_rl")
    from soft_envs.bench import learner

    wall, cpu = learner.env_rate(16, 1, 5, seed=0)
    assert wall > 0 and cpu > 0
    rates = learner.rsl_rate(16, 1, 1, seed=0)
    assert rates["wall"] > 0 and 0.0 < rates["rollout"] < 1.0
    assert min(learner.sb3_rate(16, 1, 1, seed=0)) > 0
    pytest.importorskip("skrl")
    sac = learner.sac_rate(16, 1, 2, seed=0)
    assert sac["wall"] > 0 and 0.0 < sac["rollout"] < 1.0


def test_the_shipped_table_shows_every_kind_of_card_figure(monkeypatch):
    """Reach fractions, tracking errors (against the law) and the walk's distance all have a row."""
    from soft_envs.bench import learned
    from soft_envs.learn import shipped
    from soft_envs.learn.train import EvalResult

    walked = EvalResult(np.array([2.2, 2.3]), terminated=np.zeros(2, bool), metric="x")
    walk = shipped.Verdict("quadruped-walk", "mean_m", 2.2, walked, 0.22, max_falls=0.1)
    reach = shipped.Verdict("peter-2", "within_1mm", 0.93, EvalResult(np.array([5e-4, 8e-4])), 0.1)
    law = EvalResult(np.array([7e-3]), rms=np.array([7e-3]), metric="tracking_error")
    track = shipped.Verdict("pcc-spiral", "rms_m", 3e-3, EvalResult(np.array([3e-3]), rms=np.array([3.1e-3]),
                                                                    metric="tracking_error"), 3e-4, True, law)
    monkeypatch.setattr(shipped, "verify_all", lambda episodes: [walk, reach, track])
    text = learned._shipped_table(2)
    assert "distance walked (mean)" in text and "2.250 m" in text and "RMS tracking error" in text
    assert "within 1 mm" in text and text.count("holds") == 3


def test_the_contact_bench_measures_the_cost_and_the_solvers_around_obstacles():
    from soft_envs.bench.contact import cost_table, ik_table

    cost = cost_table((1,), steps=2).splitlines()
    assert len(cost) == 3 and cost[2].startswith("| 1 |") and cost[2].endswith("× |")
    solvers = ik_table(goals=3).splitlines()
    assert len(solvers) == 5  # header, rule, the blind TRR, TRR with a barrier, SQP with constraints
    assert all(row.count("%") == 2 for row in solvers[2:])
