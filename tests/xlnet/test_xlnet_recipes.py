"""The XLNet pretraining and fine-tuning recipes end to end on a small corpus in the BBC News layout."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from genfeat.cli import main
from genfeat.data.plm import PretrainStream
from genfeat.data.tokenizers import SentencePieceTokenizer
from genfeat.errors import ConfigError
from genfeat.models.xlnet.inference import finetune_network
from genfeat.recipes import xlnet_classify, xlnet_race, xlnet_squad
from tests.recipe_data import TOPICS


def test_pretrain_stream_layout():
    tok = np.arange(10, 2010)
    s = PretrainStream(tok, batch_size=2, seq_len=20, reuse_len=8, num_predict=4, sep_id=1, cls_id=2, seed=0)
    b1, b2 = next(s), next(s)
    x, seg = b1["input_ids"], b1["token_type_ids"]
    assert x.shape == (2, 20) and (x[:, -1] == 2).all() and ((x == 1).sum(1) == 2).all()
    assert seg[0, -1] == 2 and seg[0, 0] == 0 and set(seg[0].tolist()) == {0, 1, 2}
    assert torch.equal(b2["input_ids"][:, 0], b1["input_ids"][:, 8])  # the next sequence starts reuse_len later
    assert torch.equal(x[1, :8], torch.arange(10 + 1000, 10 + 1008))  # row 1 reads its own slice
    assert not ((x == 1) | (x == 2)).gather(1, b1["target_pos"]).any()  # functional tokens are never targets
    state = s.state_dict()
    b3 = next(s)
    s.load_state_dict(state)
    assert all(torch.equal(b3[k], v) for k, v in next(s).items())  # exact resume
    with pytest.raises(ValueError, match="too few"):
        PretrainStream(tok[:30], 2, 20, 8, 4, 1, 2)


def test_sentencepiece_special_ids_and_round_trip(tmp_path):
    words = {c: w.split() for c, w in TOPICS.items()}
    lines = [" ".join(w[(i + j) % len(w)] for i in range(12)) for w in words.values() for j in range(30)]
    tok = SentencePieceTokenizer.train(lines, 60)
    assert [tok.ids[p] for p in ("<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>")] \
        == list(range(9))
    text = "shares profits market film music"
    assert tok.decode(tok.encode(text)) == text
    assert tok.word_start[tok.encode(text)].sum() == 5  # one word start per word
    tok.save(tmp_path / "t.json")
    from genfeat.data.tokenizers import load_tokenizer, save_tokenizer

    assert load_tokenizer(tmp_path / "t.json").encode(text) == tok.encode(text)
    save_tokenizer(tok, tmp_path / "run")  # a run directory: spiece.model is what SentencePiece and HF read
    import sentencepiece as spm

    assert spm.SentencePieceProcessor(model_file=str(tmp_path / "run" / "spiece.model")).encode(text) == \
        tok.encode(text)


@pytest.mark.parametrize("objective", ["plm", "mlm"])
def test_pretrain_then_classify(bbc_corpus, tmp_path, objective):
    pre = tmp_path / f"pre-{objective}"
    main(["run", "xlnet_pretrain", "--preset", "tiny", "--objective", objective, "--out", str(pre)])
    summary = json.loads((pre / "summary.json").read_text())
    assert summary["objective"] == objective and np.isfinite(summary["valid_loss"]) and summary["steps"] == 6
    for init in ("pretrained", "scratch"):
        out = tmp_path / f"clf-{objective}-{init}"
        main(["run", "xlnet_classify", "--preset", "tiny", "--pretrained", str(pre), "--init", init,
              "--out", str(out)])
        s = json.loads((out / "summary.json").read_text())
        assert s["labels"] == 10 and 0.0 <= s["test_accuracy"] <= 1.0 and s["init"] == init


def test_classify_body_init_keeps_fresh_embeddings(bbc_corpus, tmp_path):
    from genfeat.models.xlnet.heads import XLNetClassifier
    from genfeat.train.checkpoint import load_weights

    pre = tmp_path / "pre"
    main(["run", "xlnet_pretrain", "--preset", "tiny", "--out", str(pre)])
    sd = load_weights(pre / "model.safetensors")
    models = {}
    for init in ("pretrained", "body", "scratch"):
        torch.manual_seed(0)
        models[init] = finetune_network(XLNetClassifier, pre, init, 0.1, 5)[0].transformer
    emb = {k: m.word_embedding.weight for k, m in models.items()}
    assert torch.equal(emb["pretrained"], sd["transformer.word_embedding.weight"])
    assert torch.equal(emb["body"], emb["scratch"]) and not torch.equal(emb["body"], emb["pretrained"])
    body, pretrained = models["body"].state_dict(), models["pretrained"].state_dict()
    assert all(torch.equal(v, pretrained[k]) for k, v in body.items() if k != "word_embedding.weight")
    configs = (xlnet_classify.XLNetClassifyConfig, xlnet_race.XLNetRaceConfig, xlnet_squad.XLNetSquadConfig)
    for config in configs:  # never a silent scratch run
        with pytest.raises(ConfigError, match="init must be"):
            config(init="pretrianed")


def test_classify_needs_a_pretrained_run(bbc_corpus, tmp_path):
    with pytest.raises(ConfigError, match="pretrained"):
        xlnet_classify.run(xlnet_classify.tiny(), tmp_path)
    with pytest.raises(ConfigError, match="not an xlnet_pretrain run"):
        xlnet_classify.run(xlnet_classify.XLNetClassifyConfig(pretrained=str(tmp_path)), tmp_path)


def test_pretrain_documents_join_corpora(bbc_corpus, tmp_path):
    from genfeat.data.plm_corpus import pretrain_documents

    lm = tmp_path / "lm"
    lm.mkdir()
    for split, n in (("train", 450), ("valid", 30), ("test", 30)):
        (lm / f"{split}.txt").write_text("".join(f"{split} line {i}\n" for i in range(n)))
    bbc = pretrain_documents("bbc-news")
    both = pretrain_documents(f"bbc-news+dir:{lm}")
    for k, n_lm in (("train", 3), ("valid", 1)):  # the LM text in 200-line documents after the articles
        assert both[k][: len(bbc[k])] == bbc[k] and len(both[k]) == len(bbc[k]) + n_lm
        assert both[k][len(bbc[k])].split("\n")[0] == f"{k} line 0"
    assert both["train"][-1].count("\n") == 49  # lines 400-449
    assert not set(both["train"]) & set(both["valid"])
    limited = pretrain_documents(f"bbc-news+dir:{lm}", limit_docs=2)
    assert [len(v) for v in limited.values()] == [4, 3]  # the limit applies to each corpus


def test_pretrain_stream_bi_data():
    tok = np.arange(10, 2010)
    ws = np.zeros(2100, bool)
    ws[::2] = True
    s = PretrainStream(tok, batch_size=4, seq_len=20, reuse_len=8, num_predict=4, sep_id=1, cls_id=2, seed=0,
                       word_start=ws, bi_data=True)
    x = next(s)["input_ids"]
    assert torch.equal(x[0, :8], torch.arange(10, 18))  # forward rows
    assert torch.equal(x[2, :8], torch.arange(2009, 2001, -1))  # reversed rows read the corpus backwards
    with pytest.raises(ValueError, match="even"):
        PretrainStream(tok, 3, 20, 8, 4, 1, 2, bi_data=True)


@pytest.mark.parametrize("bi_data", [False, True])
def test_pretrain_stream_ranks_share_one_batch(bi_data):
    """Two ranks' streams (one seed) hold the rows of one process's batches, every draw included; with bi_data
    each rank holds its forward rows, then the same reversed rows."""
    tok = np.arange(10, 4010)
    make = lambda r, w: PretrainStream(tok, 4, 20, 8, 4, 1, 2, seed=3, bi_data=bi_data, rank=r, world_size=w)  # noqa: E731
    one, ranks = make(0, 1), [make(r, 2) for r in range(2)]
    rows = [[0, 2], [1, 3]] if bi_data else [[0, 1], [2, 3]]
    for _ in range(3):
        full, parts = next(one), [next(s) for s in ranks]
        for r in range(2):
            assert all(torch.equal(parts[r][k], full[k][rows[r]]) for k in full)
    with pytest.raises(ValueError, match="split over 3 ranks"):
        PretrainStream(tok, 4, 20, 8, 4, 1, 2, rank=0, world_size=3)


@pytest.fixture
def pretrained_run(bbc_corpus, tmp_path) -> Path:
    run = tmp_path / "pre"
    main(["run", "xlnet_pretrain", "--preset", "tiny", "--out", str(run)])
    return run


def test_glue_classification_and_regression(pretrained_run, tmp_path):
    rng = random.Random(1)
    words = " ".join(TOPICS.values()).split()
    for task, header, label in (("SST-2", "sentence\tlabel", lambda: str(rng.randint(0, 1))),
                                ("STS-B", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
                                 "sentence2\tscore", lambda: f"{rng.uniform(0, 5):.3f}")):
        d = tmp_path / task
        d.mkdir()
        for split, n in (("train", 40), ("dev", 10)):
            lines = [header]
            for i in range(n):
                s1, s2 = (" ".join(rng.choice(words) for _ in range(6)) for _ in range(2))
                lines.append(f"{s1}\t{label()}" if task == "SST-2" else
                             f"{i}\tmain\tf\t2012\t{i}\tnone\tnone\t{s1}\t{s2}\t{label()}")
            (d / f"{split}.tsv").write_text("\n".join(lines) + "\n")
        out = tmp_path / f"run-{task}"
        few = ["--labels_per_class", "0"] if task == "SST-2" else []  # regression: every label, whatever it says
        main(["run", "xlnet_classify", "--preset", "tiny", "--task", task, "--data_dir", str(d), *few,
              "--pretrained", str(pretrained_run), "--out", str(out)])
        s = json.loads((out / "summary.json").read_text())
        assert s["test_examples"] == 10 and s["labels"] == 36  # 10% of train held out for validation
        assert ("test_pearson" in s) == (task == "STS-B") and ("test_accuracy" in s) == (task == "SST-2")
    with pytest.raises(ConfigError, match="data_dir"):
        xlnet_classify.run(xlnet_classify.XLNetClassifyConfig(task="MRPC", pretrained=str(pretrained_run)), tmp_path)


def test_race_and_squad_recipes(pretrained_run, race_files, squad_json, tmp_path):  # resume: test_recipe_matrix
    assert main(["run", "xlnet_race", "--preset", "tiny", "--data_dir", str(race_files), "--pretrained",
                 str(pretrained_run), "--out", str(tmp_path / "race")]) == 0
    s = json.loads((tmp_path / "race" / "summary.json").read_text())
    assert 0 <= s["test_acc"] <= 1 and "test_acc_high" in s and "test_acc_middle" not in s
    assert main(["run", "xlnet_squad", "--preset", "tiny", "--train_file", str(squad_json), "--dev_file",
                 str(squad_json), "--pretrained", str(pretrained_run), "--out", str(tmp_path / "squad")]) == 0
    s = json.loads((tmp_path / "squad" / "summary.json").read_text())
    assert s["dev_questions"] == 4 and s["dev_f1_best_threshold"] >= s["dev_f1"] - 1e-9
    assert set(json.loads((tmp_path / "squad" / "predictions.json").read_text())) == {"a0", "a1", "a2", "b"}


def test_pretrain_run_holds_a_hugging_face_directory(bbc_corpus, tmp_path):
    """hf/ in an xlnet_pretrain run: transformers' AutoModelForCausalLM and AutoTokenizer read it, with the run's
    kept weights (the same logits as genfeat's model on one segment) and the same token ids."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from genfeat.models.xlnet import XLNetLM
    from genfeat.models.xlnet.inference import load_pretrained
    from genfeat.train.checkpoint import load_model_weights

    pre = tmp_path / "pre"
    assert main(["run", "xlnet_pretrain", "--preset", "tiny", "--out", str(pre)]) == 0
    text = "shares profits market film music"
    tok, cfg, weights = load_pretrained(pre)
    hf_tok = AutoTokenizer.from_pretrained(str(pre / "hf"))
    assert hf_tok(text, add_special_tokens=False)["input_ids"] == tok.encode(text)
    hf = AutoModelForCausalLM.from_pretrained(str(pre / "hf")).eval()
    ours = XLNetLM(cfg)
    load_model_weights(ours, weights)
    ours.eval()
    x = torch.tensor([tok.encode(text)])
    with torch.no_grad():
        ref = hf(input_ids=x).logits
        mine = ours(x)[0].scores
    assert torch.allclose(mine, ref, atol=1e-4), (mine - ref).abs().max()


def test_pretraining_task_scores_held_out_batches_without_touching_the_training_memory():
    """tasks.pretraining: the training objective keeps its memory across an evaluation (a fresh objective reads
    the held-out batches, in order, with theirs), the network's mode comes back, and the selection metric is
    checked."""
    from genfeat.losses.plm import PretrainingLoss
    from genfeat.models.xlnet import XLNetConfig, XLNetLM
    from genfeat.tasks.pretraining import MultiCLSPretraining, PermutationLMPretraining

    torch.manual_seed(0)
    net = XLNetLM(XLNetConfig(vocab_size=40, n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32, mem_len=8,
                              reuse_len=8, dropout=0.5))
    s = PretrainStream(np.arange(3, 2003) % 37 + 3, batch_size=2, seq_len=20, reuse_len=8, num_predict=4, sep_id=1,
                       cls_id=2, seed=0)
    valid = [next(s) for _ in range(3)]
    task = PermutationLMPretraining("plm", valid)
    task.loss(net, next(s))  # training: the objective now holds a memory
    memory = {k: [t.clone() for t in v] if isinstance(v, (list, tuple)) else v
              for k, v in task.loss.state_dict().items()}
    net.train()
    got = task.evaluate(net, "valid")
    assert net.training
    net.eval()
    fresh, total, count = PretrainingLoss("plm"), 0.0, 0
    with torch.no_grad():
        for b in valid:
            loss, n = fresh(net, b)
            total, count = total + float(loss) * n, count + n
    assert got == {"valid_loss": total / count}
    after = task.loss.state_dict()
    assert after.keys() == memory.keys() and all(
        all(torch.equal(a, b) for a, b in zip(after[k], v, strict=True)) if isinstance(v, list) else after[k] == v
        for k, v in memory.items())
    with pytest.raises(ValueError, match="loss"):
        PermutationLMPretraining("plm", valid, metric="ppl")
    with pytest.raises(ValueError, match="positive_first"):
        MultiCLSPretraining(valid, metric="accuracy")
    assert MultiCLSPretraining(valid, "positive_first", "max").mode == "max"
