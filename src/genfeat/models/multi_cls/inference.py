"""Building and loading Multi-CLS BERT networks (thesis C §5.2) outside a training run: the pretrainer of an
objective, a finished `genfeat run multi_cls_pretrain` directory, and the classifier fine-tuning starts from.

    build_pretrainer(objective, model, bert, hard_negatives, batch_groups)   K facets (multi_cls) or MTL's [CLS]
    load_pretraining_run(run)            -> (pretrainer with the run's weights, the BERT directory it continued)
    load_classifier(pretrained, n_labels, dropout, k, aggregation, insert_bias) -> (classifier, tokenizer, K)

`pretrained` is a pretraining run (its K, inserted maps and facet heads: the pooler's W_O starts from the heads;
an MTL run gives plain BERT whose [CLS] summary layer starts from the pooler MTL trained) or a BERT directory /
`minilm-l6` (plain BERT, K = 0; with k > 0, K facets built on it: identity inserted maps, W_O = I + noise).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from torch import nn

from genfeat.config import from_dict, load_yaml, recorded_run
from genfeat.errors import CheckpointError, ConfigError
from genfeat.models.bert import BertModel, bert_dir, from_pretrained
from genfeat.models.bert.hf import config_from_hf
from genfeat.models.bert.tokenizer import load_wordpiece
from genfeat.models.multi_cls.model import MultiCLSClassifier, MultiCLSConfig, MultiCLSEncoder, check_facet_tokens
from genfeat.models.multi_cls.pretrain import MTLPretrainer, MultiCLSPretrainer
from genfeat.nn.task_heads import SequenceClassifier
from genfeat.train.checkpoint import WEIGHTS, load_model_weights

PRETRAIN_RECIPE = "multi_cls_pretrain"
BRING = "give a multi_cls_pretrain run or a BERT directory (an HF folder with config.json, or minilm-l6)"


def build_pretrainer(objective: str, model: MultiCLSConfig, bert: BertModel, hard_negatives: bool = True,
                     batch_groups: int = 1) -> MultiCLSPretrainer | MTLPretrainer:
    """The continued-pretraining network on `bert`: K facets (`objective` multi_cls, `model`) or Table 5.1's MTL
    baseline (mtl: the objectives on the tanh-pooled [CLS], `model` not read)."""
    if objective == "mtl":
        return MTLPretrainer(bert, hard_negatives, batch_groups)
    return MultiCLSPretrainer(MultiCLSEncoder(bert, model), hard_negatives, batch_groups)


def is_pretraining_run(path: str | Path) -> bool:
    """Whether `path` holds a finished run (config.yaml and weights) rather than a BERT directory."""
    return (Path(path) / "config.yaml").is_file() and (Path(path) / WEIGHTS).is_file()


def load_pretraining_run(run: str | Path) -> tuple[MultiCLSPretrainer | MTLPretrainer, Path, str]:
    """(the pretrainer with the run's weights, the BERT directory it continued from, its objective)."""
    saved = recorded_run(run, PRETRAIN_RECIPE, (WEIGHTS,), BRING)["config"]
    objective = saved.get("objective", "multi_cls")
    model = from_dict(MultiCLSConfig, saved.get("model", {}), "model.")
    data = saved.get("data", {})
    src = bert_dir(saved.get("init", "minilm-l6"))
    bert = BertModel(config_from_hf(json.loads((src / "config.json").read_text())))  # weights: the run's
    pre = build_pretrainer(objective, model, bert, data.get("hard_negatives", True), data.get("batch_groups", 1))
    load_model_weights(pre, Path(run) / WEIGHTS)
    return pre, src, objective


def load_classifier(pretrained: str, n_labels: int, dropout: float = 0.1, k: int = 0, aggregation: str = "reparam",
                    insert_bias: bool = False) -> tuple[nn.Module, Any, int]:
    """(classifier in training mode, its tokenizer, K) for `pretrained` (module docstring)."""
    if is_pretraining_run(pretrained):
        if k:
            raise ConfigError(f"k: {pretrained} is a pretraining run, which sets its own facets; k applies to a BERT "
                              "directory")
        recipe = load_yaml(Path(pretrained) / "config.yaml").get("recipe")
        if recipe != PRETRAIN_RECIPE:
            raise ConfigError(f"pretrained: {pretrained} is a {recipe!r} run; {BRING}")
        pre, src, objective = load_pretraining_run(pretrained)
        if objective == "mtl":  # plain BERT on the pooled [CLS] that MTL trained: the summary layer is its pooler
            bert = pre.bert
            clf = SequenceClassifier(bert.train(), bert.cfg.d_model, n_labels, dropout, pool="first")
            clf.sequence_summary.summary.load_state_dict(bert.pooler.state_dict())
            bert.pooler.requires_grad_(False)
            return clf, load_wordpiece(src), 0
        pc = pre.encoder.cfg
        mc = dataclasses.replace(pc, aggregation=aggregation, insert_bias=insert_bias or pc.insert_bias)
        enc = MultiCLSEncoder(pre.encoder.bert, mc)
        missing, unexpected = enc.load_state_dict(pre.encoder.state_dict(), strict=False)
        if unexpected or any(not n.startswith("inserted_bias.") for n in missing):  # new biases start at zero
            raise CheckpointError(f"{pretrained}: the encoder does not match its config (missing {missing[:3]}, "
                                  f"unexpected {unexpected[:3]})")
        clf = MultiCLSClassifier(enc, n_labels, dropout)
        clf.pooler.init_from_heads(pre.facet_heads.weight)
        return clf, load_wordpiece(src), mc.k
    src = bert_dir(pretrained)
    bert, bcfg = from_pretrained(src)
    tok = load_wordpiece(src)
    if k:  # K facets on a plain checkpoint: identity maps keep its states; the pooler starts at I + noise
        mc = MultiCLSConfig(k=k, insert_init="identity", aggregation=aggregation, insert_bias=insert_bias)
        check_facet_tokens(tok.id_to_token, mc.first_facet_id, mc.k)
        return MultiCLSClassifier(MultiCLSEncoder(bert.train(), mc), n_labels, dropout), tok, mc.k
    bert.pooler.requires_grad_(False)  # the classifier pools [CLS] with its own summary layer
    return SequenceClassifier(bert.train(), bcfg.d_model, n_labels, dropout, pool="first"), tok, 0


PAPER_BERT = "bert_config.json"  # a multi2spe run's BERT shape (HF's config.json fields), written when it starts
PAPER_TOKENIZER = "tokenizer.json"  # and its tokenizer, when it reads text


def save_paper_run_files(run_dir: str | Path, bert_cfg: Any, tokenizer: Any | None) -> None:
    """What `load_paper_run` needs beside the weights: the BERT shape and the tokenizer (none for token-id worlds)."""
    from genfeat.config import atomic_write_text
    from genfeat.models.bert.hf import config_to_hf

    atomic_write_text(Path(run_dir) / PAPER_BERT, json.dumps(config_to_hf(bert_cfg), indent=1) + "\n")
    if tokenizer is not None:
        tokenizer.save(str(Path(run_dir) / PAPER_TOKENIZER))


def load_paper_run(run_dir: str | Path) -> tuple[nn.Module, Any, int]:
    """(the `PaperEncoder` in eval mode on the CPU, its tokenizer, the word pieces a paper may have before the facet
    tokens) of a finished multi2spe run that read text (`--preset debian`, or any `model.init`)."""
    from genfeat.models.multi_cls.paper import build_paper_encoder

    run = Path(run_dir)
    saved = recorded_run(run, "multi2spe", (WEIGHTS, PAPER_BERT),
                         hint="embedding needs a run of genfeat run multi2spe")
    if not (run / PAPER_TOKENIZER).is_file():
        raise ConfigError(f"{run}: this multi2spe run read token ids, not text (no {PAPER_TOKENIZER}): embed papers "
                          "with a run that has a tokenizer (--preset debian, or --model.init DIR)")
    m, d = saved["config"]["model"], saved["config"]["data"]
    tok = load_wordpiece(run)
    bert = BertModel(config_from_hf(json.loads((run / PAPER_BERT).read_text())))
    model = build_paper_encoder(bert, m["k"], m["insert_after"], m["mean_subtract"], m["activation"],
                                tok.token_to_id)
    load_model_weights(model, run / WEIGHTS)
    return model.eval(), tok, int(d["max_len"]) - (m["k"] - 1)
