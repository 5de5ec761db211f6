"""benchmarks/transformer_xl_ptb: the same two presets on any word-level corpus, one page per corpus."""

from __future__ import annotations

import json

from benchmarks import transformer_xl_ptb as B
from benchmarks.common import RESULTS


def test_corpus_changes_the_data_only():
    ptb, austen = B.config("ptb", "ptb"), B.config("ptb", "austen", seed=2, steps=3000)
    assert austen.data.corpus == "austen" and austen.model == ptb.model and austen.seed == 2
    assert ptb.data.vocab_size == 0 and austen.data.vocab_size == B.VOCAB  # PTB comes with its 10k vocabulary
    assert austen.train.max_steps == 3000 and austen.train.eval_every == 1000
    vanilla = B.config("ptb_vanilla", "kjv")
    assert vanilla.model.mem_len == 0 and vanilla.model.pos_enc == "absolute" and vanilla.data.corpus == "kjv"
    assert B.job("ptb", "austen", 1, 3000).name != B.job("ptb", "austen", 1, 1500).name
    assert B.job("ptb_vanilla", "austen", 1, 3000).share == "ptb_vanilla"
    assert B.page_name("austen") == "transformer_xl_austen" and B.page_name("ptb") == "transformer_xl_ptb"


def test_recorded_ptb_page_renders_with_its_reading():
    record = json.loads((RESULTS / "transformer_xl_ptb.json").read_text())
    page = B.markdown(record)
    assert "on PTB (equal parameters" in page and "Vanilla - Transformer-XL: +39.5 test ppl" in page
    assert "## Reading" in page  # the interpretation lives in the .reading.md, not in the code
    assert "(D1 expects a positive gap: holds)" in page


def test_the_page_says_whether_d2_holds():
    """The verdict follows the recorded memory sweep: a rise from the shortest to the longest evaluation memory
    fails D2, a fall holds it."""
    record = json.loads((RESULTS / "transformer_xl_ptb.json").read_text())
    txl = record["results"]["transformer_xl"]
    keys = sorted((k for k in txl[0] if k.startswith("test_ppl_mem")), key=lambda k: int(k[12:]))
    assert " ".join(B.markdown(record).split()).count("(D2 expects no rise: fails)") == 1  # PTB: 145.28 -> 146.69
    for run in txl:
        run[keys[-1]] = run[keys[0]] - 1.0
    assert "(D2 expects no rise: holds)" in " ".join(B.markdown(record).split())


def test_training_memory_changes_transformer_xl_only():
    txl, van = B.config("ptb", "austen", steps=3000, mem=256), B.config("ptb_vanilla", "austen", steps=3000, mem=256)
    assert txl.model.mem_len == 256 and txl.eval.mem_len == 512 and txl.model.tgt_len == 64
    assert van == B.config("ptb_vanilla", "austen", steps=3000)  # the vanilla runs serve every memory
    assert B.job("ptb", "austen", 0, 3000, mem=256).name == "ptb-seed0-steps3000-mem256"
    assert B.job("ptb_vanilla", "austen", 0, 3000, mem=256).name == B.job("ptb_vanilla", "austen", 0, 3000).name
    assert B.page_name("austen", 256) == "transformer_xl_austen_mem256"


def test_training_memory_page_rows():
    from benchmarks import transformer_xl_memory as M

    run = {"valid_ppl": 1.0, "train_s": 10.0}
    record = {"seeds": [0, 1], "results": {"corpus": "austen", "steps": 3, "mems": [64, 256], "runs": [
        run | {"mem": 64, "seed": 1, "test_ppl": 92.0}, run | {"mem": 64, "seed": 0, "test_ppl": 90.0},
        run | {"mem": 0, "seed": 0, "test_ppl": 110.0}]}}
    rows = M.rows(record)
    assert rows[0].startswith("| Transformer-XL, training memory 64 | memory 128 |") and "| 90.00, 92.00 |" in rows[0]
    assert "**91.00 ± 1.41**" in rows[0] and len(rows) == 2  # no runs of M = 256: no row
    assert rows[1].startswith("| vanilla (no memory) | non-overlapping segments |")
