"""The one run record: fixed summary keys, metric naming, the report's table."""

import json

import pytest

from genfeat.train.record import write_record

FIXED = {"params", "steps", "best_step", "wall_s", "train_s", "world_size", "device", "versions", "machine"}


def test_summary_has_the_fixed_keys_and_the_report_a_table(tmp_path):
    s = write_record(tmp_path, "A run", {"valid_acc": 0.5, "test_acc": 0.25, "test_errors": 3}, params=10, steps=4,
                     best_step=2, wall_s=1.23, train_s=0.5, details={"method": "x"}, notes=["A note."])
    assert FIXED <= set(s) and s == json.loads((tmp_path / "summary.json").read_text())
    assert s["valid_acc"] == 0.5 and s["test_errors"] == 3 and s["method"] == "x" and s["versions"]["torch"]
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# A run\n") and "| split | acc | errors |" in report
    assert "| valid | 0.5000 |  |" in report and "| test | 0.2500 | 3 |" in report
    assert "weights of step 2" in report and report.rstrip().endswith("A note.")


def test_small_metrics_keep_their_digits(tmp_path):
    """5 decimals, but a value under 0.01 keeps 4 significant digits (facets' loss of -4.3e-05 was -4e-05)."""
    s = write_record(tmp_path, "A run", {"valid_loss": -4.3217e-05, "valid_ppl": 123.4567891, "test_acc": 0.0},
                     params=1, steps=1, best_step=1, wall_s=1.0, train_s=1.0)
    assert s["valid_loss"] == -4.322e-05 and s["valid_ppl"] == 123.45679 and s["test_acc"] == 0.0


@pytest.mark.parametrize("metrics, details", [({"accuracy": 1.0}, {}), ({"val_acc": 1.0}, {}),
                                              ({"test_acc": 1.0}, {"params": 3}), ({"test_acc": 1.0}, {"machine": 1})])
def test_metric_names_and_fixed_keys_are_enforced(tmp_path, metrics, details):
    with pytest.raises(ValueError):
        write_record(tmp_path, "x", metrics, params=1, steps=1, best_step=None, wall_s=0, train_s=0, details=details)
    assert not (tmp_path / "summary.json").exists()


def test_the_record_names_the_device_the_run_was_set_up_on(tmp_path, monkeypatch):
    """A single-process run on an accelerator is recorded on it, not on the CPU (`distributed.setup` remembers the
    device it resolved; "meta" stands in for a GPU here)."""
    import torch

    from genfeat.train import distributed as D

    monkeypatch.setattr(D, "_run_device", None)
    monkeypatch.setattr(D, "resolve_device", lambda name="auto", local_rank=0: torch.device("meta"))
    assert D.setup("auto").device == torch.device("meta") and D.current().device == torch.device("meta")
    s = write_record(tmp_path, "x", {"test_acc": 1.0}, params=1, steps=1, best_step=None, wall_s=0, train_s=0)
    assert s["device"] == "meta" and s["machine"]["device"] == "meta"


def test_record_fit_takes_the_fit_and_the_clock(tmp_path):
    """record_fit: steps, training time and best step from the FitResult (best step None with last_weights), the
    wall time since `started`."""
    import time

    from genfeat.train.loop import FitResult
    from genfeat.train.record import record_fit

    fit = FitResult(step=12, count=0, wall_time=3.0, unit="tokens", best_metric=1.0, best_step=8, start_step=0,
                    train_time=2.5)
    s = record_fit(tmp_path, "t", {"test_acc": 0.5}, fit=fit, started=time.perf_counter() - 4.0, params=7)
    assert (s["steps"], s["best_step"], s["train_s"], s["params"]) == (12, 8, 2.5, 7) and 4.0 <= s["wall_s"] < 60
    last = record_fit(tmp_path, "t", {"test_acc": 0.5}, fit=fit, started=time.perf_counter(), params=7,
                      last_weights=True)
    assert last["best_step"] is None
