"""benchmarks/heads_summary: the one-page summary carries each recorded heads page's cells."""

from __future__ import annotations

import statistics

from benchmarks import heads_summary as S
from benchmarks.common import load_result


def test_summary_has_the_rerank_and_width_cells_of_their_pages():
    out = S.collect()
    runs = load_result("heads_rerank")["results"]["runs"]
    rs2 = [r["test_ppl"] for r in runs if r["head"] == "rs2:100+mi"]
    assert out["rerank_test_ppl"]["rs2:100+mi"] == {"mean": round(statistics.mean(rs2), 2), "seeds": len(rs2),
                                                    "model_time_ratio": out["rerank_test_ppl"]["rs2:100+mi"]
                                                    ["model_time_ratio"]}
    width = [r["test_ppl"] for r in load_result("heads_bottleneck")["results"]["runs"]
             if r["head"] == "mos3" and r["dim"] == 32]
    assert out["bottleneck_test_ppl"]["mos3:32"]["mean"] == round(statistics.mean(width), 2)
    page = S.markdown({"results": out})
    assert "| mos3 | " in page and "heads_rerank.md" in page


def test_summary_has_the_pretrained_cells_of_their_page():
    out = S.collect()
    res = load_result("heads_pretrained")["results"]
    for head in res["heads"]:
        ppl = [r["test_ppl"] for r in res["runs"] if r["head"] == head]
        time = res["model_seconds"][head] / res["model_seconds"]["softmax"]
        assert out["pretrained_test_ppl"][head] == {"mean": round(statistics.mean(ppl), 2), "seeds": len(ppl),
                                                    "model_time_ratio": round(time, 2)}
    assert "heads_pretrained.md" in S.markdown({"results": out})
