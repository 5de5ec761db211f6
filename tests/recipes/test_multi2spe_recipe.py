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
    from genfeat.models.bert import BertModel
    from genfeat.models.multi_cls.paper import build_paper_encoder
    from genfeat.recipes.multi2spe import PaperModelConfig

    torch.manual_seed(0)
    mc = PaperModelConfig()
    model = build_paper_encoder(BertModel(mc.bert), mc.k, mc.insert_after).eval()
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
    monkeypatch.setattr(pr, "embed_papers", lambda model, table, batch_size=64, idx=None, desc=None: emb[idx])
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

    from genfeat.data.debian_papers import debian_papers, domain_queries

    rows = [("libx", "libs", "", "a library"), ("liby", "contrib/libs", "libx", "another library"),
            ("tool", "utils", "libx (>= 1), liby | libz", "a tool"), ("py-a", "python", "tool", "a python module"),
            ("old", "oldlibs", "libx", "transitional package")]
    _write_package_lists(tmp_path, [(n, sec, d, syn, f"long text of {n}") for n, sec, d, syn in rows])
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


# ------------------------------------------------------------------------ the Debian world (spec §5-§6)
SECTIONS = {"libs": "business", "utils": "tech", "python": "politics", "games": "sport"}


def _debian_lists(root) -> None:
    """200 packages, 50 a Section, each citing 2-3 earlier packages mostly of its own Section; texts of the fixture
    BERT's words (`tests.recipe_data.TOPICS`)."""
    import random

    from tests.recipe_data import COMMON, TOPICS

    rng = random.Random(0)
    names = [f"{s}-{i}" for s in SECTIONS for i in range(50)]
    rows = []
    for n, name in enumerate(names):
        section = name.split("-")[0]
        words = TOPICS[SECTIONS[section]].split()
        earlier = [m for m in names[:n] if m.startswith(section)] or names[:n]
        deps = sorted(set(rng.sample(earlier, min(3, len(earlier))) + ([rng.choice(names[:n])] if n > 20 else [])))
        rows.append((name, section, ", ".join(deps), " ".join(rng.choice(words) for _ in range(4)),
                     " ".join(rng.choice(words + COMMON) for _ in range(30))))
    _write_package_lists(root, rows)


def _write_package_lists(root, rows) -> None:
    """Packages + Translation-en of (name, section, depends, synopsis, long description) rows."""
    import hashlib

    pk, tr = [], []
    for name, section, deps, synopsis, long in rows:
        md5 = hashlib.md5(name.encode()).hexdigest()
        pk.append(f"Package: {name}\nSection: {section}\nDepends: {deps}\nDescription: {synopsis}\n"
                  f"Description-md5: {md5}")
        tr.append(f"Package: {name}\nDescription-md5: {md5}\nDescription-en: {synopsis}\n {long}")
    (root / "Packages").write_text("\n\n".join(pk) + "\n")
    (root / "Translation-en").write_text("\n\n".join(tr) + "\n")


def _debian(monkeypatch, tmp_path):
    from genfeat.data import debian_papers as P
    from genfeat.data import paper_sources as S

    _debian_lists(tmp_path)
    monkeypatch.setattr(S, "debian_papers", lambda root=None: P.debian_papers(tmp_path))
    return S


SMALL = {"test_queries": 8, "valid_queries": 6, "train_queries": 30, "test_negatives": (10, 4), "n_neg": 4,
         "field_papers": 16, "field_min": 10, "max_share": 0.3}


def test_the_debian_world_keeps_held_out_queries_and_candidates_out_of_training(monkeypatch, tmp_path):
    S = _debian(monkeypatch, tmp_path)
    dc = S.PaperDataConfig(source="debian", **SMALL)
    encode = lambda titles, abstracts: [np.arange(3 + len(t.split())) for t in titles]  # noqa: E731
    w = S.load_papers(dc, 0, encode)
    assert set(w.splits) == {"valid", "test_cite_10", "test_cocite_10", "test_cite_4", "test_cocite_4"}
    held = np.unique(np.concatenate([q.papers() for q in w.splits.values()]))
    assert len(w.triplets) and not np.isin(w.triplets, held).any()
    test_q = w.splits["test_cite_10"].queries
    assert np.array_equal(test_q, w.splits["test_cite_4"].queries)
    assert not np.isin(test_q, w.splits["valid"].queries).any()
    sections = w.fields[test_q]
    assert max(np.unique(sections, return_counts=True)[1]) <= max(1, int(0.3 * 8))  # multi-domain test queries
    cites = S.debian_papers().cites
    for split, n_neg in (("test_cite_10", 10), ("valid", 4)):
        sq = w.splits[split]
        for q, pos, cand in zip(sq.queries, sq.positives, sq.candidates, strict=True):
            assert np.array_equal(cand[: len(pos)], pos) and np.isin(pos, cites[q]).all()
            assert len(cand) == len(pos) + n_neg
            assert not np.isin(cand[len(pos):], cites[q]).any() and q not in cand
    negatives = np.unique(np.concatenate([c[len(p):] for sq in w.splits.values()
                                          for p, c in zip(sq.positives, sq.candidates, strict=True)]))
    assert len(negatives) <= int(0.1 * len(w.papers))  # drawn from the evaluation pool (eval_pool 0.1)
    assert len(w.triplets) >= 0.6 * 5 * 30  # the pool leaves training most of the graph
    fit, score = w.field_split
    assert not np.intersect1d(fit, score).size and not np.isin(np.concatenate([fit, score]), held).any()
    same = S.load_papers(dc, 1, encode)  # another run seed: the same queries, other triplets
    assert np.array_equal(same.splits["test_cite_10"].queries, test_q)
    single = S.load_papers(S.PaperDataConfig(source="debian", train_field="games", **SMALL), 0, encode)
    assert set(single.fields[single.triplets[:, 0]].tolist()) == {"games"}
    with pytest.raises(Exception, match="tokenizer"):
        S.load_papers(dc, 0)


def test_the_embedding_cache_embeds_what_a_split_reads_once_per_state_of_the_weights():
    from genfeat.tasks.paper_ranking import EmbeddingCache

    torch.manual_seed(0)
    net = _CountingEncoder()  # a stand-in encoder: facets (b, 2, 3) from the ids
    table = PaperTable.build([np.arange(1, 2 + i % 4) for i in range(10)])
    cache = EmbeddingCache(table, batch_size=3)
    emb = cache(net, np.array([4, 2, 2, 7])).clone()
    assert net.rows == 3 and not emb[[0, 1, 3]].any()
    assert torch.allclose(emb[[2, 4, 7]], embed_papers(net, table, idx=torch.tensor([2, 4, 7])))
    net.rows = 0
    assert torch.equal(cache(net, np.array([2, 7, 9]))[[2, 7]], emb[[2, 7]]) and net.rows == 1  # only 9 was new
    with torch.no_grad():
        net.w.add_(1.0)  # the weights moved: everything again
    again = cache(net, np.array([2]))[2].clone()
    assert net.rows == 2 and torch.allclose(again, embed_papers(net, table, idx=torch.tensor([2]))[0])
    assert not torch.allclose(again, emb[2])
    net(torch.ones(1, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.long)).sum().backward()
    torch.optim.AdamW(net.parameters(), lr=0.1, fused=True).step()  # leaves the version counters as they were
    net.rows = 0
    cache(net, np.array([2]))
    assert net.rows == 1


class _CountingEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3))
        self.rows = 0

    def forward(self, ids, attention_mask):
        self.rows += len(ids)
        s = (ids * attention_mask).sum(1, keepdim=True).float()  # (b, 1)
        return torch.stack([s * self.w, 2 * s * self.w], 1)  # (b, 2, 3)


def test_the_debian_preset_trains_minilm_shaped_bert_and_records_every_protocol(monkeypatch, tmp_path, bert_dir):
    _debian(monkeypatch, tmp_path)
    out = tmp_path / "run"
    small = [f"--data.{k}={list(v) if isinstance(v, tuple) else v}" for k, v in SMALL.items()]
    assert main(["run", "multi2spe", "--preset", "debian", "--model.init", str(bert_dir), "--model.insert_after",
                 "[2, 3]", "--data.max_len", "40", *small, "--train.max_steps", "6", "--train.eval_every", "3",
                 "--train.warmup_steps", "1", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    for split in ("test_cite_10", "test_cocite_10", "test_cite_4", "test_cocite_4"):
        assert 0 <= s[f"{split}_ap"] <= 1 and 0 <= s[f"{split.replace('test_', 'test_untrained_')}_ap"] <= 1
    assert 0 <= s["test_field_f1"] <= 100 and 0 <= s["test_untrained_field_f1"] <= 100
    assert s["protocol"]["test_negatives"] == [10, 4] and s["protocol"]["valid_negatives"] == 4
    assert s["field_papers"]["fit"] == 8 and s["effective_weight_sum_max"] < 1e-5
    # genfeat embed: SPECTER's format in and out, each paper as the model embeds it alone
    from genfeat.models.multi_cls.inference import load_paper_run
    from genfeat.tasks.paper_ranking import encode_papers

    papers = tmp_path / "papers.jsonl"
    rows = [{"paper_id": "p1", "title": "market shares", "abstract": "the bank said profits"},
            {"paper_id": "p2", "title": "film music", "abstract": None},
            {"paper_id": "p3", "title": "a very long match report " * 20, "abstract": "goal " * 50}]
    papers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    emb_file = tmp_path / "emb.jsonl"
    assert main(["embed", str(out), "--in", str(papers), "--out", str(emb_file), "--facets", "--batch-size", "2"]) == 0
    got = [json.loads(line) for line in emb_file.read_text().splitlines()]
    assert [g["paper_id"] for g in got] == ["p1", "p2", "p3"] and len(got[0]["facets"]) == 3
    model, tok, max_len = load_paper_run(out)
    assert max_len == 40 - 2
    ids = encode_papers(tok, [r["title"] for r in rows], [r["abstract"] or "" for r in rows], max_len)
    assert len(ids[2]) == max_len  # cut to leave room for the facet tokens
    for g, i in zip(got, ids, strict=True):
        alone = model.encode(torch.as_tensor(i)[None])[0]
        assert np.allclose(g["embedding"], alone.detach().numpy(), atol=1e-4)
        assert np.allclose(np.sum(g["facets"], 0), g["embedding"], atol=1e-4)
    # genfeat affinity on a multi2spe run: the max cosine over each reviewer's papers
    from tests.recipe_data import TOPICS

    venue, reviewers = tmp_path / "venue", ["~A_1", "~B_1"]
    (venue / "archives").mkdir(parents=True)
    areas = {"~A_1": "business", "~B_1": "sport"}
    for r, area in areas.items():
        words = TOPICS[area].split()
        (venue / "archives" / f"{r}.jsonl").write_text("".join(
            json.dumps({"content": {"title": " ".join(words[i: i + 3]), "abstract": " ".join(words[i:])}}) + "\n"
            for i in range(4)))
    (venue / "submissions.json").write_text(json.dumps({
        f"sub{i}": {"content": {"title": " ".join(TOPICS[a].split()[i: i + 2]), "abstract": TOPICS[a]}}
        for i, a in enumerate(("business", "tech"))}))
    aff = tmp_path / "aff.csv"
    assert main(["affinity", str(out), "--archives", str(venue / "archives"), "--submissions",
                 str(venue / "submissions.json"), "--out", str(aff)]) == 0
    lines = [line.split(",") for line in aff.read_text().splitlines()]
    assert [(s, r) for s, r, _ in lines] == [(f"sub{i}", r) for i in range(2) for r in reviewers]
    from genfeat.data.openreview import read_archives, read_submissions

    arch, subs = read_archives(venue / "archives"), read_submissions(venue / "submissions.json")

    def unit(texts):
        e = torch.stack([model.encode(torch.as_tensor(i)[None])[0]
                         for i in encode_papers(tok, [t for t, _ in texts], [a for _, a in texts], max_len)])
        return torch.nn.functional.normalize(e.detach(), dim=-1)

    want = [float((unit(arch[r]) @ unit([(t, a)])[0]).max()) for _, t, a in subs for r in reviewers]
    assert np.allclose([float(x) for *_, x in lines], want, atol=1e-4)
    assert main(["affinity", str(out), "--archives", str(venue / "archives"), "--submissions",
                 str(venue / "submissions.json"), "--out", str(aff), "--method", "max-facet"]) == 2
    (out / "tokenizer.json").unlink()  # a run that read token ids cannot embed text
    assert main(["embed", str(out), "--in", str(papers), "--out", str(emb_file)]) == 2


def test_papers_jsonl_names_the_bad_line(tmp_path):
    from genfeat.data.scidocs import read_papers_jsonl
    from genfeat.errors import DataError

    f = tmp_path / "p.jsonl"
    f.write_text('{"paper_id": "a", "title": "T", "abstract": null}\n\n{"paper_id": "b", "title": "U"}\n')
    assert read_papers_jsonl(f) == [("a", "T", ""), ("b", "U", "")]
    for bad, line in (('{"title": "no id"}', 2), ("{not json", 2)):
        f.write_text('{"paper_id": "a", "title": "T"}\n' + bad + "\n")
        with pytest.raises(DataError, match=f"p.jsonl:{line}: "):
            read_papers_jsonl(f)
    f.write_text("\n")
    with pytest.raises(DataError, match="no papers"):
        read_papers_jsonl(f)


def test_field_scores_fit_on_one_half_and_score_the_other():
    from genfeat.data.paper_sources import PaperWorld
    from genfeat.recipes.multi2spe import field_scores
    from genfeat.tasks.paper_ranking import EmbeddingCache, field_macro_f1

    torch.manual_seed(0)
    net = _CountingEncoder()
    papers = [np.arange(1, 2 + i % 7) for i in range(40)]
    flip = np.random.default_rng(0).random(40) < 0.3  # noisy labels: scoring the fitted half would look better
    fields = np.array(["a" if (len(p) < 4) != f else "b" for p, f in zip(papers, flip, strict=True)])
    fit, score = np.arange(0, 40, 2), np.arange(1, 40, 2)
    world = PaperWorld(papers, np.zeros((0, 3), np.int64), {}, fields, (fit, score))
    table = PaperTable.build(papers)
    got = field_scores(world, EmbeddingCache(table), net, "x_")
    emb = embed_papers(net, table).numpy()
    want = field_macro_f1(emb[fit], fields[fit], emb[score], fields[score])
    assert got == {"test_x_field_f1": want["f1"], "test_x_field_C": want["C"]}
