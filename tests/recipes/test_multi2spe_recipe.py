"""Multi²SPE's data, task and recipe: SPECTER's triplets and the SciDocs-style queries on hand-made graphs, the
padding-free embedding pass, the sampled-candidate ranking against hand-computed AP / nDCG, the synthetic graph of
spec §13.2, and a short tiny run that must learn (spec §13.2's S1)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from genfeat.cli import main
from genfeat.data.paper_synthetic import SyntheticPapersConfig, synthetic_papers
from genfeat.data.paper_triplets import RankingQueries, cite_queries, cocite_queries, specter_triplets
from genfeat.tasks.paper_ranking import PaperTable, TripletLoss, candidate_scores, citation_task, embed_papers

# 0 cites 1, 2; 1 cites 3, 4; 2 cites 4; 3 cites nothing; 4 cites 5; 5 cites 0
GRAPH = [np.array(c) for c in ([1, 2], [3, 4], [4], [], [5], [0])]


def test_specter_triplets_positives_cited_hard_negatives_two_hops_away():
    rng = np.random.default_rng(0)
    t = specter_triplets(GRAPH, np.array([0, 1, 3]), 6, rng, per_query=40, hard_fraction=1.0)
    assert len(t) == 80 and set(t[:, 0].tolist()) == {0, 1}  # 3 cites nothing: no triplet
    for q, p, n in t.tolist():
        assert p in GRAPH[q] and n not in GRAPH[q] and n != q
    hard0 = {n for q, p, n in t.tolist() if q == 0}
    assert hard0 <= {3, 4}  # cited by 1 or 2, not by 0
    easy = specter_triplets(GRAPH, np.array([0]), 6, rng, per_query=200, hard_fraction=0.0)
    assert set(easy[:, 2].tolist()) == {3, 4, 5}
    banned = specter_triplets(GRAPH, np.array([0, 1, 4]), 6, rng, per_query=50, hard_fraction=0.3,
                              exclude=np.array([4, 2]))
    assert not np.isin(banned, [4, 2]).any() and len(banned)


def test_cite_and_cocite_queries():
    rng = np.random.default_rng(1)
    cq = cite_queries(GRAPH, np.array([0, 3, 1]), 6, rng, n_pos=1, n_neg=10)
    assert cq.queries.tolist() == [0, 1]  # 3 cites nothing
    for q, pos, cand in zip(cq.queries, cq.positives, cq.candidates, strict=True):
        assert len(pos) == 1 and pos[0] in GRAPH[q] and cand[0] == pos[0]
        negs = cand[1:]
        assert q not in negs and not np.isin(negs, GRAPH[q]).any() and len(set(negs)) == len(negs)
    # co-citation: 4 is cited by 1 and 2; 1 also cites 3 -> 3 co-cited with 4 once; 0 cites 1, 2 -> co-cited once
    co = cocite_queries(GRAPH, np.array([4, 1]), 6, rng, n_pos=5, n_neg=10)
    got = dict(zip(co.queries.tolist(), [p.tolist() for p in co.positives], strict=True))
    assert got == {4: [3], 1: [2]}
    assert co.papers().tolist() == sorted(set(co.queries) | {int(c) for cs in co.candidates for c in cs})


def test_embedding_pass_is_padding_free_and_keeps_the_order():
    from genfeat.recipes.multi2spe import BERT_UNUSED, PaperModelConfig, build_encoder

    torch.manual_seed(0)
    model = build_encoder(PaperModelConfig(), BERT_UNUSED.get).eval()
    rng = np.random.default_rng(0)
    papers = [np.concatenate([[101], rng.integers(2000, 3000, n), [102]]) for n in (30, 3, 12, 7, 30)]
    table = PaperTable.build(papers)
    ids, mask = table.rows(torch.tensor([1, 3]))
    assert ids.shape == (2, 9) and mask.sum(1).tolist() == [5, 9]
    emb = embed_papers(model, table, batch_size=2)
    for i, p in enumerate(papers):  # each paper alone, no padding at all
        one = model.encode(torch.as_tensor(p)[None])[0]
        assert torch.allclose(emb[i], one, atol=1e-5)
    assert embed_papers(model, table, facets=True).shape == (5, 3, 64)


def test_sampled_candidate_ranking_matches_hand_computed_ap_and_ndcg(monkeypatch):
    import genfeat.tasks.paper_ranking as pr

    # query 0 ranks candidates [1, 2, 3, 4, 5] by -L2 as [pos, neg, pos, neg, neg]; 6, 7 are closer but are not
    # candidates
    emb = torch.tensor([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [0.5], [0.6]])
    monkeypatch.setattr(pr, "embed_papers", lambda model, table, batch_size=64: emb)
    table = PaperTable.build([np.array([101, 102])] * 8)
    split = RankingQueries(np.array([0]), [np.array([1, 3])], [np.array([1, 3, 2, 4, 5])])
    task = citation_task(table, {"test": split}, TripletLoss(table), score="l2")
    res = task.evaluate(torch.nn.Linear(1, 1), "test")
    assert res["test_ap"] == pytest.approx((1 / 1 + 2 / 3) / 2, abs=1e-4)
    assert res["test_ndcg"] == pytest.approx(1.5 / (1 + 1 / np.log2(3)), abs=1e-4)  # 0.9197
    got = candidate_scores(torch.ones(1, 2), torch.tensor([[2.0, 2.0], [1.0, -1.0]]), "cosine")[0]
    assert got.tolist() == pytest.approx([1.0, 0.0])


def test_synthetic_graph_follows_spec_13_2():
    g = synthetic_papers(SyntheticPapersConfig())
    assert len(g.ids) == 480 and all(len(p) == 1 + 6 + 1 + 34 + 1 for p in g.ids)
    assert all(p[0] == 101 and p[7] == 102 and p[-1] == 102 for p in g.ids)
    assert 0.2 < g.cross_domain.mean() < 0.4
    assert all(g.domain[g.secondary[i]] != g.domain[g.primary[i]] for i in np.flatnonzero(g.cross_domain))
    shares = []
    for i, c in enumerate(g.cites):
        assert i not in c and len(c) == 6
        mine = {g.primary[i], g.secondary[i]} - {-1}
        shares.append(all(({g.primary[j], g.secondary[j]} - {-1}) & mine for j in c))
    assert all(shares)  # every citation shares a topic
    assert g.train_queries.tolist() == list(range(384)) and g.test_queries.tolist() == list(range(384, 480))
    again = synthetic_papers(SyntheticPapersConfig())
    assert all(np.array_equal(a, b) for a, b in zip(g.ids, again.ids, strict=True))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("m2spe") / "run"
    assert main(["run", "multi2spe", "--preset", "tiny", "--out", str(out), "--train.eval_every", "200"]) == 0
    return out


def test_tiny_run_learns_and_keeps_eq_5_5(tiny_run):
    s = json.loads((tiny_run / "summary.json").read_text())
    assert s["effective_weight_sum_max"] < 1e-5 and s["embedding_std_min"] > 0  # S1
    losses = [json.loads(ln)["loss"] for ln in (tiny_run / "metrics.jsonl").read_text().splitlines()
              if '"loss"' in ln and "valid_ap" not in ln]
    fifth = max(1, len(losses) // 5)
    assert np.mean(losses[-fifth:]) < np.mean(losses[:fifth]) - 0.05  # S1: the training loss falls
    assert s["test_ap"] > s["test_untrained_ap"] + 0.02 and s["test_ap"] > 0.152  # S2: above random (15.2)
    assert 0 <= s["test_cross_ap"] <= 1 and s["queries"]["test_cross"] > 10


def test_debian_papers_cite_their_dependencies_and_carry_their_section(tmp_path):
    import hashlib

    from genfeat.data.debian_papers import debian_papers, domain_queries

    pk, tr = [], []
    rows = [("libx", "libs", "", "a library"), ("liby", "contrib/libs", "libx", "another library"),
            ("tool", "utils", "libx (>= 1), liby | libz", "a tool"), ("py-a", "python", "tool", "a python module"),
            ("old", "oldlibs", "libx", "transitional package")]
    for name, section, deps, synopsis in rows:
        md5 = hashlib.md5(name.encode()).hexdigest()
        pk.append(f"Package: {name}\nSection: {section}\nDepends: {deps}\nDescription: {synopsis}\n"
                  f"Description-md5: {md5}")
        tr.append(f"Package: {name}\nDescription-md5: {md5}\nDescription-en: {synopsis}\n long text of {name}")
    (tmp_path / "Packages").write_text("\n\n".join(pk) + "\n")
    (tmp_path / "Translation-en").write_text("\n\n".join(tr) + "\n")
    g = debian_papers(tmp_path)
    assert g.names == ["libx", "liby", "py-a", "tool"]  # sorted; the transitional package dropped
    cites = {g.names[i]: [g.names[j] for j in c] for i, c in enumerate(g.cites)}
    assert cites == {"libx": [], "liby": ["libx"], "py-a": ["tool"], "tool": ["libx", "liby"]}
    assert g.fields.tolist() == ["libs", "libs", "python", "utils"] and g.titles[3] == "a tool"
    assert "long text of tool" in g.abstracts[3]
    rng = np.random.default_rng(0)
    assert domain_queries(g.fields, range(4), 5, rng, field="libs").tolist() == [0, 1]
    multi = domain_queries(np.array(["a"] * 8 + ["b"] * 2), range(10), 4, rng, max_share=0.5)
    assert len(multi) == 4 and (multi >= 8).sum() == 2  # at most half from field a


def test_scidocs_files_read_into_queries_under_its_missing_paper_policy(tmp_path):
    from genfeat.data.scidocs import qrel_queries, read_labels, read_metadata, read_qrels

    (tmp_path / "meta.json").write_text(json.dumps({"q1": {"paper_id": "q1", "title": "T", "abstract": None},
                                                    "a": {"paper_id": "a", "title": "A", "abstract": "x"}}))
    assert read_metadata(tmp_path / "meta.json") == {"q1": ("T", ""), "a": ("A", "x")}
    (tmp_path / "test.qrel").write_text("q1 0 a 1\nq1 0 b 0\nq1 0 gone 1\nq1 0 c 0\nq2 0 a 1\n")
    qrels = read_qrels(tmp_path / "test.qrel")
    assert qrels == {"q1": {"a": 1, "b": 0, "gone": 1, "c": 0}, "q2": {"a": 1}}
    index = {"q1": 0, "a": 1, "b": 2, "c": 3}
    rq, policy = qrel_queries(qrels, index)
    assert rq.queries.tolist() == [0] and rq.positives[0].tolist() == [1] and rq.candidates[0].tolist() == [1, 2, 3]
    assert policy == {"queries_skipped": 1, "candidates_dropped": 1}
    (tmp_path / "train.csv").write_text("pid,class_label\na,3\nb,7\n")
    assert read_labels(tmp_path / "train.csv") == [("a", "3"), ("b", "7")]
    (tmp_path / "bad.qrel").write_text("q1 a 1\n")
    with pytest.raises(Exception, match="bad.qrel:1"):
        read_qrels(tmp_path / "bad.qrel")


def test_field_classification_follows_scidocs_grid():
    from genfeat.tasks.paper_ranking import SVM_C_GRID, field_macro_f1

    assert SVM_C_GRID == pytest.approx([1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0])
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 30)
    x = rng.normal(size=(90, 8)) + 3 * np.eye(8)[y]
    res = field_macro_f1(x[::2], y[::2], x[1::2], y[1::2])
    assert res["f1"] > 90 and res["C"] in SVM_C_GRID
    noise = field_macro_f1(rng.normal(size=(45, 8)), y[::2], rng.normal(size=(45, 8)), y[1::2])
    assert noise["f1"] < 60
