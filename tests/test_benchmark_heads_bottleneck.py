"""benchmarks/heads_bottleneck: each run is the quickstart LM with the head's input width set, and the page
compares every head with the softmax at the same width."""

from __future__ import annotations

from benchmarks import common
from benchmarks import heads_bottleneck as B


def test_jobs_change_the_head_width_only():
    import dataclasses

    from genfeat.heads.config import HEADS
    from genfeat.recipes import lm

    job, cfg, base = B.job("mos3", 32, 1), B.config("mos3", 32, 1), lm.quickstart()
    assert job.name == "mos3-d32-seed1" and job.group == "mos3-d32" and job.tags == {"head": "mos3", "dim": 32,
                                                                                     "seed": 1}
    assert cfg.model.head == dataclasses.replace(HEADS["mos3"], input_dim=32) and cfg.seed == 1
    assert dataclasses.replace(cfg, seed=base.seed, model=dataclasses.replace(cfg.model, head=base.model.head)) == base


def test_page_and_plot(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    runs = [{"head": h, "dim": d, "seed": s, "test_ppl": base + (s - 1)} for s in (0, 1, 2)
            for h, d, base in (("softmax", 32, 200.0), ("mos3", 32, 180.0), ("softmax", 128, 150.0),
                               ("mos3", 128, 155.0))]
    record = {"name": B.NAME, "results": {"dims": [32, 128], "heads": ["softmax", "mos3"], "runs": runs}}
    page = B.markdown(record)
    assert "| Softmax | 200.00 ± 1.00 | 150.00 ± 1.00 |" in page
    assert "| MoS (K=3) - Softmax | -20.00 | +5.00 |" in page
    B.plot(record)
    assert (tmp_path / f"{B.NAME}.png").stat().st_size > 1000
