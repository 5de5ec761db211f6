"""The benchmarks' sweep harness (`benchmarks.sweep`): which jobs a worker trains, what it records, the device it
names, and the one mean ± spread formatter."""

from __future__ import annotations

import json
import socket

import pytest
from benchmarks import common
from benchmarks.common import mean_std
from benchmarks.sweep import Job, Sweep

from genfeat.train.checkpoint import CHECKSUMS, STATE, WEIGHTS
from tests.test_run_claims import _dead_pid


@pytest.fixture
def calls(monkeypatch):
    """The runs the sweep starts, as (job name, resume): `run_recipe` answered by a stand-in writing a summary."""
    import benchmarks.sweep

    made: list = []

    def run_recipe(recipe, cfg, run_dir, preset=None, resume=False):
        made.append((cfg["name"], resume))
        device = cfg["device"]
        machine = {"torch_threads": 3, "cpu": "x", "cpu_count": 16, "device": device, "torch": "2.11", "python": "3.12"}
        summary = {"test_accuracy": 0.5, "device": device,
                   "machine": machine | ({"gpu": "NVIDIA H200"} if device.startswith("cuda") else {})}
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return summary

    monkeypatch.setattr(benchmarks.sweep, "run_recipe", run_recipe)
    return made


def _job(name, calls, device="cpu", needs=(), group=""):
    return Job(name, {"row": name.split("-")[0], "seed": int(name[-1])}, "lm", {"name": name, "device": device},
               group=group, needs=needs)


def test_a_job_runs_its_recipe_into_its_directory(ptb_dir, tmp_path):
    """The real `run_recipe`: the run has its config.yaml and summary, and the record is the summary's."""
    import dataclasses

    import yaml

    from genfeat.registry import get_preset, get_recipe

    cfg = get_preset(get_recipe("lm")[0], "tiny")
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, corpus=f"dir:{ptb_dir}"))
    [rec] = Sweep(tmp_path).results([Job("tiny-seed0", {"row": "tiny", "seed": 0}, "lm", cfg, preset="tiny")])
    saved = yaml.safe_load((tmp_path / "tiny-seed0" / "config.yaml").read_text())
    assert saved["recipe"] == "lm" and saved["preset"] == "tiny"
    assert rec["test_ppl"] == json.loads((tmp_path / "tiny-seed0" / "summary.json").read_text())["test_ppl"]


def test_trains_once_then_reads_the_finished_run(tmp_path, calls):
    jobs = [_job("a-seed0", calls), _job("b-seed1", calls)]
    first = Sweep(tmp_path).results(jobs)
    assert calls == [("a-seed0", False), ("b-seed1", False)]
    assert Sweep(tmp_path).results(jobs) == first and len(calls) == 2  # read back, not retrained
    assert first[0] == {"test_accuracy": 0.5, "device": "cpu", "torch_threads": 3, "row": "a", "seed": 0}


def test_collect_only_and_needs_select_the_workers_share(tmp_path, calls):
    assert Sweep(tmp_path, collect=True).results([_job("a-seed0", calls)]) == [] and not calls
    jobs = [_job("a-seed0", calls, group="g1"), _job("b-seed0", calls, group="g2")]
    assert [r["row"] for r in Sweep(tmp_path, only=["g2"]).results(jobs)] == ["b"]
    waiting = _job("c-seed0", calls, needs=(tmp_path / "a-seed0",))
    assert Sweep(tmp_path, only=["c"]).results([waiting]) == []  # its pretraining run is not finished
    Sweep(tmp_path).results(jobs)
    assert [r["row"] for r in Sweep(tmp_path).results([waiting])] == ["c"]


def test_a_stopped_run_resumes_from_its_checkpoint(tmp_path, calls):
    ckpt = tmp_path / "a-seed0" / "checkpoints" / "step_00000004"
    ckpt.mkdir(parents=True)
    for f in (WEIGHTS, STATE, CHECKSUMS):
        (ckpt / f).write_bytes(b"")
    (tmp_path / "a-seed0" / ".owner").write_text(f"{socket.gethostname()} {_dead_pid()}\n")  # its worker is gone
    Sweep(tmp_path).results([_job("a-seed0", calls)])
    assert calls == [("a-seed0", True)]


def test_a_run_killed_before_its_first_checkpoint_starts_again(tmp_path, calls):
    run = tmp_path / "a-seed0"
    run.mkdir()
    (run / "config.yaml").write_text("recipe: lm\n")
    (run / "metrics.jsonl").write_text("{}\n")
    (run / ".owner").write_text(f"{socket.gethostname()} {_dead_pid()}\n")
    Sweep(tmp_path).results([_job("a-seed0", calls)])
    assert calls == [("a-seed0", False)] and not (run / "metrics.jsonl").exists()


def test_machine_is_what_the_runs_report(tmp_path, monkeypatch, calls):
    gpu, both, cpu = Sweep(tmp_path), Sweep(tmp_path), Sweep(tmp_path)
    gpu.results([_job("a-seed0", calls, device="cuda:0")])
    both.results([_job("a-seed0", calls, device="cuda:0"), _job("b-seed0", calls, device="cpu")])
    cpu.results([_job("b-seed0", calls, device="cpu")])  # read back: the block comes from its summary.json
    assert gpu.machine() == {"cpu": "x", "cpu_count": "16", "torch_threads": "3", "device": "cuda:0",
                             "torch": "2.11", "python": "3.12", "gpu": "NVIDIA H200"}
    assert both.machine()["device"] == "cpu + cuda:0" and both.machine()["gpu"] == "NVIDIA H200 + cpu"
    assert "gpu" not in cpu.machine() and cpu.machine()["cpu"] == "x"
    # the page's header names the runs' machine, not the one that renders it
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    page = common.write_results("t", {}, "{header}", machine=gpu.machine()).read_text()
    assert "Machine: x (16 cores, 3 torch threads), device NVIDIA H200, torch 2.11, Python 3.12" in page
    page = common.write_results("t", {}, "{header}", machine=gpu.machine() | {"torch_threads": 1}).read_text()
    assert "(16 cores, 1 torch thread)" in page


def test_a_page_recorded_with_another_setting_is_not_overwritten(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    common.write_results("p", {"lrs": [3e-5], "steps": 200, "acc": 0.5}, "{header}", setting=("lrs", "steps"))
    common.write_results("p", {"lrs": [3e-5], "steps": 200, "acc": 0.6}, "{header}", setting=("lrs", "steps"))
    with pytest.raises(ValueError,
                       match=r"p\.json records another setting \(lrs \[3e-05\] recorded, \[0\.0001\] now\)"):
        common.write_results("p", {"lrs": [1e-4], "steps": 200, "acc": 0.7}, "{header}", setting=("lrs", "steps"))
    assert common.load_result("p")["results"]["acc"] == 0.6  # the recorded page stands
    common.write_results("p", {"lrs": [1e-4], "acc": 0.7}, "{header}")  # no setting given: written as before


def test_mean_std_and_standard_error():
    assert mean_std([1.0, 2.0, 3.0]) == "2.00 ± 1.00"
    assert mean_std([1.0, 2.0, 3.0], 3, spread="se") == "2.000 ± 0.577"
    assert mean_std([0.5], 1, scale=100) == "50.0" and mean_std([]) == "–"
    with pytest.raises(ValueError, match="spread"):
        mean_std([1.0, 2.0], spread="var")
