"""`genfeat.run_recipe`, the one way the CLI, the API and the benchmarks run a recipe: config.yaml is written
for a run started from Python, a resume continues it, and a config of another recipe is refused."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
import yaml

import genfeat
from genfeat.errors import ConfigError
from genfeat.registry import get_preset, get_recipe
from genfeat.train.checkpoint import latest_checkpoint, load_weights


def _tiny_lm(ptb_dir):
    cfg = get_preset(get_recipe("lm")[0], "tiny")
    return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, corpus=f"dir:{ptb_dir}"))


def test_a_python_run_records_its_config_and_resumes(ptb_dir, tmp_path):
    cfg = _tiny_lm(ptb_dir)
    summary = genfeat.run_recipe("lm", cfg, tmp_path / "a")
    assert summary == json.loads((tmp_path / "a" / "summary.json").read_text())
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert saved["recipe"] == "lm" and saved["preset"] == "custom" and saved["cpu_threads"] >= 1
    assert saved["config"]["data"]["corpus"] == f"dir:{ptb_dir}"
    b = tmp_path / "b"
    shutil.copytree(tmp_path / "a", b)
    last = latest_checkpoint(b)
    shutil.rmtree(last)
    again = genfeat.run_recipe(None, run_dir=b, resume=True)  # the recorded config, from its checkpoint
    assert again["test_ppl"] == summary["test_ppl"]
    wa, wb = (load_weights(r / last.relative_to(b) / "model.safetensors") for r in (tmp_path / "a", b))
    assert all((wa[k] == wb[k]).all() for k in wa)
    with pytest.raises(ConfigError, match="is a `lm --preset custom` run"):
        genfeat.run_recipe("facets", run_dir=b, resume=True)
    with pytest.raises(ConfigError, match="not empty"):
        genfeat.run_recipe("lm", cfg, b)


def test_a_config_of_another_recipe_is_refused(tmp_path):
    facets = get_preset(get_recipe("facets")[0], "tiny")
    with pytest.raises(ConfigError, match="takes a LMRunConfig, got FacetRunConfig"):
        genfeat.run_recipe("lm", facets, tmp_path / "run")
    assert not (tmp_path / "run").exists()
