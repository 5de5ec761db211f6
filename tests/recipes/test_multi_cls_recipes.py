"""`genfeat run multi_cls_pretrain` and `multi_cls_classify` end to end on a small BERT checkpoint and articles in
the BBC News layout: continued pretraining, exact resume, fine-tuning from the pretraining run (Multi-CLS with its
facet heads) and from the plain checkpoint (BERT), the per-seed labeled subsets."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest
import torch

from genfeat.cli import main
from genfeat.errors import ConfigError
from genfeat.models.bert import BertConfig, BertModel, save_pretrained
from genfeat.recipes.multi_cls_pretrain import PRETRAIN_METRICS
from tests.recipe_data import COMMON, TOPICS


def test_pretrain_then_classify(bert_dir, bbc_articles, tmp_path):
    pre = tmp_path / "pre"
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(bert_dir), "--out", str(pre)]) == 0
    s = json.loads((pre / "summary.json").read_text())
    parts = s["valid_mlm"] + s["valid_so"] + s["valid_tfidf"] + s["valid_mcqt"]
    assert s["k"] == 2 and s["valid_loss"] == pytest.approx(parts, rel=1e-4)  # the unweighted sum of the four
    assert s["mlm_head"] == "fresh"  # a plain BertModel directory has no MLM head to continue from
    assert set(PRETRAIN_METRICS) <= set(s)  # the names a bad train.early_stop_metric is checked against
    assert s["valid_mcqt"] >= 2 * np.log1p(3 * np.exp(-2)) - 1e-4  # Eq. 5.3's floor with 2N = 4 candidates
    logged = [json.loads(r) for r in (pre / "metrics.jsonl").read_text().splitlines()]
    per_seq = [r for r in logged if "tokens" in r][-1]["tokens"] / (6 * 3 * 2)  # 6 steps of 2 triples
    assert 10 < per_seq <= 48  # tokens/s counts the real input tokens of a sequence (max_len 48), not sequences
    for name, source in (("mcls", pre), ("plain", bert_dir)):
        out = tmp_path / name
        assert main(["run", "multi_cls_classify", "--preset", "tiny", "--pretrained", str(source),
                     "--out", str(out)]) == 0
        c = json.loads((out / "summary.json").read_text())
        assert c["k"] == (2 if name == "mcls" else 0) and c["labels"] == 10
        evals = [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "valid_accuracy" in r]
        assert c["valid_accuracy"] == pytest.approx(max(r["valid_accuracy"] for r in evals))  # the selected weights
        assert "test_ece" in c and "test_macro_f1" in c
        # the run's predictions rebuilt from its directory: the recorded test accuracy, facets, dropout passes
        from genfeat.tasks.multi_cls_predictions import predict_run

        pred = predict_run(out, dropout_passes=3)
        acc = float((pred["probs"].argmax(-1) == pred["labels"]).float().mean())
        assert acc == pytest.approx(c["test_accuracy"], abs=1e-6)
        assert ("facet_emb" in pred) == (name == "mcls") and pred["dropout_probs"].shape == (3, *pred["probs"].shape)
        if name == "mcls":  # the facet embeddings are the ones the probabilities came from (one encoder pass)
            from genfeat.models.multi_cls.inference import load_classifier
            from genfeat.train.checkpoint import load_model_weights

            clf, _, _ = load_classifier(str(source), pred["probs"].size(-1))
            load_model_weights(clf, out / "model.safetensors")
            torch.testing.assert_close(torch.softmax(clf.out(pred["facet_emb"].sum(1)), -1), pred["probs"])
        assert not torch.allclose(pred["dropout_probs"][0], pred["dropout_probs"][1])  # dropout was on


def test_classifier_starts_from_the_pretrained_facet_heads(bert_dir, bbc_articles, tmp_path):
    from genfeat.models.multi_cls.inference import load_classifier
    from genfeat.train.checkpoint import load_weights

    pre = tmp_path / "pre"
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(bert_dir), "--out", str(pre)]) == 0
    w = load_weights(pre / "model.safetensors")
    clf, _, k = load_classifier(str(pre), 5)
    assert k == 2 and torch.equal(clf.pooler.weight, w["facet_heads.weight"])
    assert torch.equal(clf.encoder.inserted["1"], w["encoder.inserted.1"])
    assert torch.equal(clf.encoder.bert.layers[0].attn.qkv.weight, w["encoder.bert.layers.0.attn.qkv.weight"])


def test_classify_config_rejects_an_unknown_aggregation():
    """Checked with the config: a plain-BERT run (K = 0) never builds the facet pooler that reads it."""
    from genfeat.recipes.multi_cls_classify import MultiCLSClassifyConfig

    with pytest.raises(ConfigError, match="aggregation"):
        MultiCLSClassifyConfig(aggregation="mean")


def test_classify_on_glue_and_superglue_files(bert_dir, tmp_path):
    """A GLUE TSV task and a SuperGLUE JSONL pair task, as sentence (pair) classification and regression."""
    words = sorted(TOPICS["sport"].split() + TOPICS["tech"].split())
    rng = random.Random(1)
    glue, sg, sts = tmp_path / "sst2", tmp_path / "cb", tmp_path / "stsb"
    for d in (glue, sg, sts):
        d.mkdir()
    for split, n in (("train", 40), ("dev", 12)):
        rows = [(" ".join(rng.choice(words) for _ in range(6)), rng.randint(0, 1)) for _ in range(n)]
        (glue / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
        (sts / f"{split}.tsv").write_text("index\tsentence1\tsentence2\tscore\n" + "".join(
            f"{i}\t{t}\t{t[::-1]}\t{2.5 + y}\n" for i, (t, y) in enumerate(rows)))
        js = "".join(json.dumps({"premise": t, "hypothesis": t.split()[0], "label": ["entailment", "neutral"][y]})
                     + "\n" for t, y in rows)
        (sg / f"{'val' if split == 'dev' else 'train'}.jsonl").write_text(js)
    for task, d, metric in (("SST-2", glue, "accuracy"), ("CB", sg, "accuracy"), ("STS-B", sts, "pearson")):
        out = tmp_path / f"run-{task}"
        assert main(["run", "multi_cls_classify", "--preset", "tiny", "--pretrained", str(bert_dir), "--task", task,
                     "--data_dir", str(d), "--out", str(out)]) == 0
        s = json.loads((out / "summary.json").read_text())
        assert f"test_{metric}" in s and (("test_ece" in s) == (metric == "accuracy"))


def test_texts_leave_room_for_the_facet_tokens(bert_dir, bbc_articles, tmp_path):
    """A BERT of exactly max_len (24) positions: pretraining and fine-tuning cut texts to max_len - K, so the K facet
    tokens fit (a text cut to max_len would overflow the position table by K)."""
    from genfeat.models.bert import from_pretrained

    bert, _ = from_pretrained(bert_dir)
    short = tmp_path / "bert24"
    save_pretrained(BertModel(dataclasses.replace(bert.cfg, max_len=24)), short)
    (short / "vocab.txt").write_text((bert_dir / "vocab.txt").read_text())
    pre = tmp_path / "pre"
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(short), "--data.max_len", "24",
                 "--out", str(pre)]) == 0
    logged = [json.loads(r) for r in (pre / "metrics.jsonl").read_text().splitlines()]
    per_seq = [r for r in logged if "tokens" in r][-1]["tokens"] / (6 * 3 * 2)
    assert per_seq > 18  # the sequences do fill the budget of 24 - 2
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--pretrained", str(pre), "--max_len", "24",
                 "--out", str(tmp_path / "c")]) == 0


def test_released_script_flag_freezes_the_inserted_maps_and_fine_tuning_adds_a_zero_bias(bert_dir, bbc_articles,
                                                                                         tmp_path):
    """train_inserted_layers_in_pretraining=false: the inserted maps and L^SO keep their initial values (the released
    script's optimizer leaves them out); fine-tuning with insert_bias gives the maps the reference's trainable bias,
    starting at zero."""
    from safetensors.torch import load_file

    from genfeat.config import override
    from genfeat.models.bert import from_pretrained
    from genfeat.models.multi_cls.inference import build_pretrainer, load_classifier
    from genfeat.recipes import multi_cls_pretrain as R
    from genfeat.train.seed import seed_everything

    out = tmp_path / "frozen"
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(bert_dir),
                 "--train_inserted_layers_in_pretraining", "false", "--out", str(out)]) == 0
    cfg = override(R.pretrain_tiny(), {"init": str(bert_dir)})
    seed_everything(cfg.seed)  # the recipe's own initialisation, rebuilt
    bert, _ = from_pretrained(bert_dir)
    fresh = build_pretrainer(cfg.objective, cfg.model, bert).state_dict()
    trained = load_file(str(out / "model.safetensors"))
    changed = [k for k, v in fresh.items() if not torch.equal(v, trained[k])]
    assert changed and not [k for k in changed if k.startswith(("encoder.inserted.", "so_proj."))]
    model, _, k = load_classifier(str(out), 5, insert_bias=True)
    assert k == 2 and set(model.encoder.inserted_bias) == set(model.encoder.inserted)
    assert all(float(b.detach().abs().max()) == 0.0 for b in model.encoder.inserted_bias.values())


def test_facet_ids_must_be_reserved_tokens(bert_dir, bbc_articles, tmp_path):
    """A vocabulary whose ids 1..K are real words: refused with one line, not trained on."""
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in bert_dir.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    vocab = (bert_dir / "vocab.txt").read_text().splitlines()
    (bad / "vocab.txt").write_text("\n".join([vocab[0], *vocab[6:9], *vocab[1:6], *vocab[9:]]) + "\n")
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(bad), "--out",
                 str(tmp_path / "p")]) == 2


def test_mtl_baseline_pretrains_the_pooled_cls_and_fine_tunes_plain_bert(bert_dir, bbc_articles, tmp_path):
    """Table 5.1's MTL: no facet tokens, QT and SO on BERT's tanh-pooled [CLS]; fine-tuning is plain BERT whose
    [CLS] summary layer is the pooler MTL trained."""
    from genfeat.models.bert import from_pretrained
    from genfeat.models.multi_cls.inference import load_classifier

    out = tmp_path / "mtl"
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(bert_dir), "--objective", "mtl",
                 "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["k"] == 0 and s["objective"] == "mtl"
    assert s["valid_loss"] == pytest.approx(s["valid_mlm"] + s["valid_so"] + s["valid_tfidf"] + s["valid_mcqt"],
                                            rel=1e-4)
    model, _, k = load_classifier(str(out), 5)
    assert k == 0 and not hasattr(model.transformer, "inserted")
    from safetensors.torch import load_file

    trained = load_file(str(out / "model.safetensors"))
    init = from_pretrained(bert_dir)[0].pooler.weight
    assert not torch.equal(trained["encoder.pooler.weight"], init)  # MTL trains the pooler ...
    assert torch.equal(model.sequence_summary.summary.weight, trained["encoder.pooler.weight"])  # ... and keeps it
    c = tmp_path / "c"
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--pretrained", str(out), "--out", str(c)]) == 0
    assert json.loads((c / "summary.json").read_text())["k"] == 0
    assert main(["run", "multi_cls_pretrain", "--preset", "tiny", "--init", str(bert_dir), "--objective", "mtl",
                 "--train_inserted_layers_in_pretraining", "false", "--out", str(tmp_path / "bad")]) == 2


def test_mtl_losses_read_the_pooled_cls():
    from genfeat.models.multi_cls import MTLPretrainer
    from tests.models.test_multi_cls_mechanism import _pretraining_batch

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=120, d_model=16, n_layer=2, n_head=2, d_inner=32, max_len=32,
                                dropout=0.0, attn_dropout=0.0)).double().eval()
    pre = MTLPretrainer(bert).double()
    batch = _pretraining_batch()
    base = pre.losses(batch)
    with torch.no_grad():
        bert.pooler.weight.add_(0.5 * torch.randn_like(bert.pooler.weight))
    moved = pre.losses(batch)
    for name in ("mcqt", "so"):  # the pooled [CLS] feeds QT and SO
        assert abs(float(moved[name]) - float(base[name])) > 1e-9
    for name in ("mlm", "tfidf"):  # not the text objectives
        assert float(moved[name]) == pytest.approx(float(base[name]), abs=1e-12)
    assert pre.sentence_embeddings(batch).shape == (6, 1, 16)


def test_classify_on_your_own_files_with_facets_from_a_plain_checkpoint(bert_dir, tmp_path):
    """`--task dir:PATH` end to end (CSV files, quoted texts), K = 2 facets built on a plain BERT directory (no
    pretraining run), test.csv as the test split; and the one-line refusals of a task the recipe does not know
    and of an option the task does not read."""
    rng = random.Random(0)
    d = tmp_path / "mine"
    d.mkdir()
    for split, n in (("train", 30), ("valid", 10), ("test", 12)):
        lines = ["text,label"]
        for i in range(n):
            topic = list(TOPICS)[i % 2]
            words = TOPICS[topic].split() + COMMON
            lines.append('"' + " ".join(rng.choice(words) for _ in range(8)) + f', really",{topic}')
        (d / f"{split}.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--task", f"dir:{d}", "--pretrained", str(bert_dir),
                 "--k", "2", "--labels", "0", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["k"] == 2 and s["labels"] == 30 and s["test_examples"] == 12
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--task", "polarity"]) == 2
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--data_dir", str(d)]) == 2
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--label_column", "y"]) == 2


def test_recipe_help_lists_the_fields(capsys):
    assert main(["run", "multi_cls_classify", "--preset", "tiny", "--help"]) == 0
    out = capsys.readouterr().out
    assert "presets: bbc (default), tiny" in out and "--task str = 'bbc'" in out and "dir:PATH" in out
    assert "--max_len int = 32" in out and "--train.lr float" in out  # the preset's values, sections flattened


def test_bad_inputs_of_classification_are_one_line(bert_dir, tmp_path, capsys):
    """A split file that is not UTF-8 (GLUE TSV, SuperGLUE JSONL, your own CSV) names its line; a max_len past the
    encoder's positions, a dropout outside [0, 1) and an LM run as --pretrained are wrong commands (exit 2)."""
    base = ["run", "multi_cls_classify", "--preset", "tiny", "--pretrained", str(bert_dir)]
    latin1 = "caf\xe9 news".encode("latin-1")
    glue, sg, own = tmp_path / "sst2", tmp_path / "cb", tmp_path / "own"
    for d in (glue, sg, own):
        d.mkdir()
    for split in ("train", "dev"):
        (glue / f"{split}.tsv").write_bytes(b"sentence\tlabel\nsport news\t1\n" + latin1 + b"\t0\n")
    (sg / "train.jsonl").write_bytes(b'{"premise": "a", "hypothesis": "b", "label": "neutral"}\n' + latin1 + b"\n")
    (sg / "val.jsonl").write_bytes((sg / "train.jsonl").read_bytes())
    good = tmp_path / "good"
    good.mkdir()
    for split in ("train", "test"):
        (own / f"{split}.csv").write_bytes(b"text,label\n" + latin1 + b",x\n")
        (good / f"{split}.csv").write_text("text,label\n" + "".join(f"sport news {i},{i % 2}\n" for i in range(20)))
    cases = [
        ([*base, "--task", "SST-2", "--data_dir", str(glue)], 1, f"{glue / 'train.tsv'}:3: not UTF-8 text (byte 0xe9)"),
        ([*base, "--task", "CB", "--data_dir", str(sg)], 1, f"{sg / 'train.jsonl'}:2: not UTF-8 text (byte 0xe9)"),
        ([*base, "--task", f"dir:{own}"], 1, f"{own / 'train.csv'}:2: not UTF-8 text (byte 0xe9)"),
        ([*base, "--task", f"dir:{good}", "--max_len", "100000"], 2,
         "max_len 100000 is longer than the pretrained encoder's 64 positions"),
        ([*base, "--dropout", "1.5"], 2, "dropout must be in [0, 1) (a dropout probability), got '1.5'"),
    ]
    lm_run = tmp_path / "lm-run"  # what a `genfeat run lm` directory holds that the classifier would look at
    lm_run.mkdir()
    (lm_run / "config.yaml").write_text("recipe: lm\npreset: tiny\nconfig: {sample: {prompt: the}}\n")
    (lm_run / "model.safetensors").write_bytes(b"")
    cases.append((["run", "multi_cls_classify", "--preset", "tiny", "--pretrained", str(lm_run), "--task",
                   f"dir:{good}"], 2,
                  f"pretrained: {lm_run} is a 'lm' run; give a multi_cls_pretrain run or a BERT directory"))
    for i, (args, code, message) in enumerate(cases):
        assert main([*args, "--out", str(tmp_path / f"out{i}")]) == code, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (args, err)
        assert not (tmp_path / f"out{i}").exists()
