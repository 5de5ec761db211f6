"""Real prose for the interactive generators: words aligned to BPE tokens, the content vocabulary, the rows both
generators train on, Table 4.1's prompts, and the prose recipe end to end on a small BPE LM (a genfeat `lm` run's
hf/, as the prose preset starts from) with GloVe-format vectors."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from tests.recipe_data import COMMON, TOPICS

from genfeat.data.future_words import next_content_words
from genfeat.data.prose_topics import (
    content_vocabulary,
    encode_stream,
    generator_rows,
    option_rows,
)
from genfeat.data.stop_words import stop_list
from genfeat.data.tokenizers import HFTokenizer
from genfeat.tasks.prose_options import continuation_nll, prose_prompts, words_of

LINES = ["The minister's election campaign said shares rose.", "Investors  bought  the mobile phone firm's stake!",
         "Growth, profits and sales: the economy's bank said it was fine."]


@pytest.fixture(scope="module")
def tok():
    words = [w for ws in TOPICS.values() for w in ws.split()] + COMMON
    rng = random.Random(0)
    text = [" ".join(rng.choice(words) for _ in range(12)) + "." for _ in range(300)] + LINES * 5
    return HFTokenizer.train(text, "bpe", 120)  # a small vocabulary: words split into several pieces


def test_words_align_to_the_token_they_start_in(tok):
    index = {"minister": 0, "election": 1, "shares": 2, "stake": 3, "firm": 4, "economy": 5}
    s = encode_stream(LINES, tok, index)
    assert np.array_equal(s.ids, np.concatenate([tok.hf().encode(ln + "\n").ids for ln in LINES]))
    pieces = [tok.decode(s.ids[a: b]).strip() for a, b in zip(s.word_starts, np.append(s.word_starts[1:],
                                                                                       len(s.ids)), strict=True)]
    words = [w for ln in LINES for w in words_of(ln)]
    assert len(pieces) == len(words) == len(s.word_rows)
    for p, w in zip(pieces, words, strict=True):  # each word's tokens begin with the word itself
        assert p.lower().startswith(w.removesuffix("'s")), (p, w)
    got = [w for w, r in zip(words, s.word_rows, strict=True) if r >= 0]
    assert got == ["minister's", "election", "shares", "firm's", "stake", "economy's"]  # 's dropped for the table


def test_content_vocabulary_needs_a_vector_a_count_and_no_stop_word():
    lines = ["the market said the market fell", "Market said fell, zzz zzz zzz"]
    vocab = content_vocabulary(lines, ["market", "said", "fell", "the"], stop_list(), 2)
    assert vocab == ["market", "fell", "said"]  # 3, 2, 2 (ties alphabetical); "the" a stop word, "zzz" no vector


def test_future_of_a_window_equals_the_whole_streams(tok):
    index = {w: i for i, w in enumerate(sorted({w for ln in LINES for w in words_of(ln)}))}
    s = encode_stream(LINES * 4, tok, index)
    s.word_rows[::3] = -1  # some stop words
    whole = next_content_words(s.word_starts, s.word_rows, len(s.ids), 5)
    for start in (0, 7, 31):
        assert np.array_equal(s.future(start, 20, 5), whole[start: start + 20])
    rows = generator_rows(s, 16, 5)
    assert rows["input_ids"].shape[1] == 17
    assert len(rows["input_ids"]) == (len(s.ids) - 1) // 16
    for b in range(len(rows["input_ids"])):
        assert torch.equal(rows["input_ids"][b], torch.as_tensor(s.ids[16 * b: 16 * b + 17]))
        assert torch.equal(rows["future"][b], torch.as_tensor(whole[16 * b: 16 * b + 16]))


def test_option_prompts_end_on_a_word_and_target_what_follows(tok):
    rng = random.Random(1)
    words = [w for ws in TOPICS.values() for w in ws.split()] + COMMON
    lines = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(12)]
    index = {w: i for i, w in enumerate(sorted(set(words) - set(COMMON[:8])))}
    s = encode_stream(lines, tok, index)
    pad = tok.vocab_size
    rows = option_rows(s, 4, 5, 12, 9, pad, seed=0)
    starts = set(s.word_starts.tolist())
    whole = next_content_words(s.word_starts, s.word_rows, len(s.ids), 4)
    ids = s.ids.tolist()
    for prompt, target, mask in zip(rows["input_ids"], rows["targets"], rows["target_mask"], strict=True):
        p = prompt[prompt != pad].tolist()
        assert 5 <= len(p) <= 12
        ends = [e for e in range(len(p), len(ids) + 1) if ids[e - len(p): e] == p and e in starts]
        assert ends, "a prompt ends where a word begins"
        assert any(target[mask].tolist() == [r for r in whole[e - 1] if r >= 0] for e in ends)
        assert mask.any()


def test_prompts_of_n_words(tok):
    index = {w: i for i, w in enumerate(sorted({w for ln in LINES for w in words_of(ln)}))}
    s = encode_stream(LINES * 6, tok, index)
    for p in prose_prompts(s, 5, 4, 3, seed=1, max_tokens=100):
        text = tok.decode(p.ids)
        assert len(words_of(text)) == 4
        assert len(p.future_rows) <= 3 and len(p.prompt_rows) <= 4


def test_continuation_nll_scores_the_continuation_only():
    from genfeat.models.gpt import GPTConfig, build_gpt_lm

    lm = build_gpt_lm(GPTConfig(vocab_size=30, n_layer=1, n_head=1, d_model=8, max_len=16)).eval()
    s, n = continuation_nll(lm, [1, 2, 3], [4, 5])
    logp = lm(torch.tensor([[1, 2, 3, 4]]))[0].log_probs()[0]
    assert n == 2 and s == pytest.approx(-(logp[2, 4] + logp[3, 5]).item(), rel=1e-5)


def test_prose_recipe_writes_a_run_the_app_can_read(prose_run):
    from genfeat.models.interactive.inference import load_run

    summary = json.loads((prose_run / "summary.json").read_text())
    scores = summary
    for method in ("ours", "kmeans_local", "sample_local", "kmeans_global", "lda_global", "sample_global"):
        for key in ("sim", "sim_diff", "sim_short", "sim_short_diff"):
            assert np.isfinite(scores[f"test_{method}_{key}"]), (method, key)
    gen = load_run(prose_run)
    V = gen.tokenizer.vocab_size
    assert gen.lm.backbone.cfg.vocab_size == V and gen.lm.backbone.cfg.max_len == 64
    ids = gen.tokenizer.encode("The minister said the election campaign")
    topics = gen.options(ids)
    assert topics.words.shape == (3, 5) and all(0 <= w < len(gen.words) for w in topics.words.flatten().tolist())
    cont = list(gen.stream(ids, gen.conditions(topics, [0, 2], [gen.words.index("market")]), 6))
    assert len(cont) == 6 and all(0 <= t < V for t in cont)


def test_prose_app_encodes_text_with_the_runs_tokenizer(prose_run):
    from fastapi.testclient import TestClient

    from genfeat.models.interactive.inference import load_run
    from genfeat.serve.interactive import create_app

    gen = load_run(prose_run)
    client = TestClient(create_app(gen))
    r = client.post("/api/options", json={"prompt": "Investors bought shares, the market said."})
    assert r.status_code == 200 and len(r.json()["topics"]) == 3
    r = client.post("/api/generate", json={"prompt": "Investors bought shares", "topics": [1], "words": ["Market"],
                                           "max_new_tokens": 5})
    assert r.status_code == 200
    events = [ln for ln in r.text.splitlines() if ln.startswith("data:")]
    done = json.loads(events[-1][5:])
    text = "".join(json.loads(e[5:])["text"] for e in events[1:-1])
    assert done["tokens"] == 5 and not done["stopped"]
    assert text == gen.tokenizer.decode(list(gen.stream(gen.tokenizer.encode("Investors bought shares"),
                                                        gen.conditions(gen.options(gen.tokenizer.encode(
                                                            "Investors bought shares")), [1],
                                                            [gen.words.index("market")]), 5)))
    r = client.post("/api/generate", json={"prompt": "Investors", "words": ["zzzz"]})
    assert r.status_code == 422 and "zzzz" in r.json()["detail"]


def test_continuation_table_runs_ours_pplm_and_plain_on_the_same_prompts(prose_run):
    from genfeat.models.gpt.hf import from_pretrained
    from genfeat.models.interactive.inference import load_run
    from genfeat.tasks.prose_options import continuation_table

    gen = load_run(prose_run)
    judge = from_pretrained(prose_run.parent / "lm" / "hf")
    s = encode_stream(["Investors bought shares and the market said the bank fell.",
                       "The minister won the election campaign vote."] * 3, gen.tokenizer,
                      {w: i for i, w in enumerate(gen.words)})
    prompts = prose_prompts(s, 4, 5, 3, seed=0, max_tokens=40)
    res = continuation_table(gen, judge, prompts, gen.tokenizer, new=6, seed=0)
    assert set(res) == {"ours", "pplm", "plain", "prompts"} and 1 <= res["prompts"]["n"] <= 4
    for name in ("ours", "pplm", "plain"):
        r = res[name]
        assert 0 <= r["topic"] <= 3 and r["word"] <= r["token"] and r["seconds"] > 0
        assert 1 < r["ppl"] < 10 * gen.tokenizer.vocab_size and 0 < r["dist1"] <= 100 and 0 < r["dist2"] <= 100
