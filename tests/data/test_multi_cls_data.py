"""Multi-CLS BERT's pretraining batches (spec multi-cls-bert.md §3, §5.1): sentence splitting, the [A; P; H]
layout of consecutive sentence groups, SO swaps, the MLM masker, TF-IDF targets, exact resume and rank shares."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.data.multi_cls import TripleBatches
from genfeat.data.sentence_split import split_sentences

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS,
                                         *[f"s{i}" for i in range(200)], "."])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return tk


def _docs(n_docs=4, n_sents=12):
    """Sentence i of a document starts with the marker s{i}, so the order of sentences can be read back."""
    rng = np.random.default_rng(0)
    return [[f"s{i} " + " ".join(rng.choice(WORDS[2 * d: 2 * d + 4], 5)) + " ." for i in range(n_sents)]
            for d in range(n_docs)]  # overlapping word sets: words shared by fewer documents weigh more


def test_split_sentences_rule():
    text = 'Mr. Smith went to Washington. He said "Hello!" Then J. Doe left, e.g. at noon.\n\nNew paragraph'
    assert split_sentences(text) == ["Mr. Smith went to Washington.", 'He said "Hello!"',
                                     "Then J. Doe left, e.g. at noon.", "New paragraph"]


def test_triples_are_consecutive_groups_with_so_swaps():
    tk = _tokenizer()
    it = TripleBatches(_docs(), tk, n_triples=3, budget=64, seed=0)
    b = next(it)
    N = 3
    assert b["input_ids"].shape[0] == 3 * N and b["so_labels"].shape == (3 * N,)
    sep, s0 = tk.token_to_id("[SEP]"), tk.token_to_id("s0")
    for i in range(N):  # the sentence markers of A_i, P_i, H_i increase (each group follows the previous one)
        firsts = []
        for row in (i, N + i, 2 * N + i):
            ids, labels = b["input_ids"][row], b["mlm_labels"][row]
            ids = torch.where(labels != -100, labels, ids)  # undo the MLM corruption
            marks = [t - s0 for t in ids.tolist() if s0 <= t < s0 + 200]
            segs = np.split(np.array(ids.tolist()), np.flatnonzero(np.array(ids.tolist()) == sep))
            a = [t - s0 for t in segs[0].tolist() if s0 <= t < s0 + 200]
            bseg = [t - s0 for t in segs[1].tolist() if s0 <= t < s0 + 200]
            swapped = bool(b["so_labels"][row])
            assert (min(a) > max(bseg)) == swapped  # an SO swap puts the later segment first
            firsts.append(min(marks))
        assert firsts == sorted(firsts) and len(set(firsts)) == 3
    assert (b["token_type_ids"][b["attention_mask"] == 0] == 0).all()
    assert b["input_ids"].shape[1] <= 64


def test_mlm_never_masks_special_tokens_and_predicts_15_percent():
    tk = _tokenizer()
    b = next(TripleBatches(_docs(), tk, n_triples=4, budget=48, seed=1))
    special = {tk.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")}
    labels = b["mlm_labels"]
    assert all(t not in special for t in labels[labels != -100].tolist())
    for row in range(labels.size(0)):
        ids = torch.where(labels[row] != -100, labels[row], b["input_ids"][row])
        n_text = sum(1 for t in ids[b["attention_mask"][row].bool()].tolist() if t not in special)
        assert (labels[row] != -100).sum() == min(80, max(1, round(0.15 * n_text)))
    masked = b["input_ids"][labels != -100] == tk.token_to_id("[MASK]")
    assert 0.5 < masked.float().mean() <= 1.0  # 80% of the predicted positions in expectation


def test_tfidf_targets_are_rescaled_per_sentence():
    b = next(TripleBatches(_docs(), _tokenizer(), n_triples=2, budget=64, seed=2))
    t = b["tfidf"]
    assert t.min() >= 0 and t.max() <= 10 + 1e-5 and (t[b["attention_mask"] == 0] == 0).all()
    assert (t == 10).sum() > 0  # every sentence's most document-specific token reaches 10


def test_resume_and_rank_shares():
    tk = _tokenizer()
    it = TripleBatches(_docs(), tk, n_triples=4, budget=48, seed=3)
    next(it)
    state = it.state_dict()
    want = next(it)
    it.load_state_dict(state)
    got = next(it)
    assert all(torch.equal(want[k], got[k]) for k in want)
    parts = [TripleBatches(_docs(), tk, n_triples=4, budget=48, seed=3, rank=r, world_size=2) for r in (0, 1)]
    for p in parts:
        next(p)
    halves = [next(p) for p in parts]
    for part in range(3):  # rows [A; P; H]: rank 0 keeps triples 0-1 of each part, rank 1 triples 2-3
        for r, h in enumerate(halves):
            for i in range(2):
                row, full_row = 2 * part + i, 4 * part + 2 * r + i
                n = int(h["attention_mask"][row].sum())
                assert n == int(want["attention_mask"][full_row].sum())
                for k in ("input_ids", "mlm_labels", "token_type_ids", "tfidf"):
                    assert torch.equal(h[k][row, :n], want[k][full_row, :n])
                assert h["so_labels"][row] == want["so_labels"][full_row]


def test_too_short_documents_are_refused():
    with pytest.raises(Exception, match="sentences"):
        TripleBatches([["one .", "two ."]], _tokenizer(), 2, 32, 0)


def test_documents_of_line_corpora_are_chunked_and_deduplicated(tmp_path):
    from genfeat.data.sentences import documents

    lines = [f"Line {i} says hello. It repeats." for i in range(30)]
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("\n".join(lines) + "\n")
    docs = documents(f"dir:{tmp_path}", lines_per_doc=10, dedupe=False)
    assert len(docs["train"]) == 3
    assert docs["train"][0][:3] == ["Line 0 says hello.", "It repeats.", "Line 1 says hello."]
    deduped = documents(f"dir:{tmp_path}", lines_per_doc=10)
    flat = [s for k in ("train", "valid") for d in deduped[k] for s in d]
    assert flat.count("It repeats.") == 1 and len(flat) == 31  # 30 distinct lines + one "It repeats."
    assert deduped["valid"] == []  # every valid line was seen in train: its documents are empty and dropped
