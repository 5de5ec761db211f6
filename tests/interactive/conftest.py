"""A small trained interactive run shared by the app's tests (API and browser)."""

from __future__ import annotations

import pytest

from genfeat.cli import main


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("interactive-small") / "run"
    assert main(["run", "interactive", "--preset", "tiny", "--out", str(out), "--generator_train.max_steps", "60",
                 "--train.max_steps", "40", "--data.chain.n_docs", "400", "--data.eval_prompts", "10",
                 "--data.condition_prompts", "10"]) == 0
    return out
