"""benchmarks.interactive_latency against a real server subprocess on the tiny prose run: every load-test request
is accounted for, refusals carry Retry-After, memory is sampled per block of requests."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")


def test_app_latency_accounts_for_every_request(prose_run, monkeypatch):
    from benchmarks.interactive_latency import app_latency

    monkeypatch.setenv("GENFEAT_DATA", str(prose_run.parent / "data"))
    res = app_latency(prose_run, n_prompts=2, clients=7, requests=40, words=10)
    load = res["load"]
    assert load["completed"] + load["refused_429"] + load["refused_503"] == 7 and load["other"] == 0
    assert load["completed"] >= 1 and load["retry_after_on_refusals"] and load["server_alive"]
    assert load["p50_s"] <= load["p95_s"]
    assert len(res["rss_mib"]) == 40 // 20 + 1 and all(r > 0 for r in res["rss_mib"])
    assert 0 < res["first_token_s"]["median_client"] and res["decode_tokens_per_s"] > 0
    assert res["options_s"]["median"] <= res["options_s"]["max"]
