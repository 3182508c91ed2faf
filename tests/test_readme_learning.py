"""The "Learning on the robot" snippet of docs/realism.md (moved there from the README) runs as written
(on a smaller sample budget)."""

from __future__ import annotations

import pathlib
import re

import pytest

pytest.importorskip("torch")

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "realism.md"


def learning_snippet() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Learning on the robot")
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


@pytest.mark.slow
def test_the_readme_workflow_runs_and_learning_beats_the_nominal_model(monkeypatch, capsys):
    from soft_envs.agents.nn import finetune

    small = finetune.FinetuneRecipe(residual_epochs=30, epochs=2, targets=300)
    monkeypatch.setattr(finetune, "FinetuneRecipe", lambda: small)  # the recipe's budget, not the workflow
    code = learning_snippet()
    assert "collect_samples(env, 300," in code and "keep_robot" in code
    namespace: dict = {}
    exec(compile(code.replace("collect_samples(env, 300,", "collect_samples(env, 25,"), str(PAGE), "exec"),
         namespace)
    distance = float(capsys.readouterr().out.split()[-1])
    env, model = namespace["env"], namespace["env"].unwrapped.model
    from soft_envs.agents.ik import trr

    obs, _ = env.reset(seed=1, options={"keep_robot": True})
    nominal = trr(model, obs[3:6]).solution
    for _ in range(50):
        obs, _, _, _, info = env.step(env.unwrapped.model_to_action(nominal))
    assert distance < 1e-3 < info["distance"]  # calibrated: below a millimetre; the nominal model: above
    assert namespace["network"].metadata["finetune"]["samples"] == 25
    env.close()
