"""The soft-envs command line."""

from __future__ import annotations

import pytest

from soft_envs.cli import main


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "soft_envs/PeterReach-v0" in out and "peter" in out


def test_bench_peter_prints_table_and_updates_its_section(tmp_path, capsys):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\n<!-- bench:other -->\nkept\n<!-- /bench:other -->\n")
    assert main(["bench", "peter", "--update", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Table 1" in out and "paper (2–4)" in out and "steps/s" in out
    text = path.read_text()
    assert "kept" in text and text.count("<!-- bench:peter -->") == 1
    assert main(["bench", "peter", "--update", str(path)]) == 0  # rewrites, does not append
    assert path.read_text().count("<!-- bench:peter -->") == 1


def test_unknown_bench_and_demo_fail_cleanly(capsys):
    assert main(["bench", "nope"]) == 2
    assert main(["demo", "nope"]) == 2


def test_demo_writes_a_gif_headless(tmp_path):
    out = tmp_path / "peter.gif"
    assert main(["demo", "peter", "--steps", "3", "--output", str(out)]) == 0
    assert out.stat().st_size > 1000


def test_help_exits_cleanly():
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


def test_version(capsys):
    import soft_envs

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"soft-envs {soft_envs.__version__}"


def test_evaluate_help_and_list_name_every_task_and_controller(capsys):
    from soft_envs.evaluate import TASKS

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    helptext = capsys.readouterr().out
    assert main(["evaluate", "--list"]) == 0
    listing = capsys.readouterr().out
    for text in (helptext, listing):
        for task in TASKS.values():
            assert task.name in text and all(c in text for c in task.controllers)
