"""HF XLNet directories written by `save_pretrained` (transformers 4.35.0, in a separate venv:
scripts/reference/xlnet_golden.py) load with genfeat's `from_pretrained` and give HF's outputs; `save_pretrained`
writes back the files HF wrote, key for key, bit for bit. Covers the LM head with padded segments entering the
memory, and the sequence-classification, multiple-choice and question-answering heads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from genfeat.models.xlnet import XLNet, XLNetLM
from genfeat.models.xlnet.heads import XLNetClassifier, XLNetForSquad, XLNetMultipleChoice
from genfeat.models.xlnet.hf import from_hf_state_dict, from_pretrained, save_pretrained, to_hf_state_dict
from tests.hf_dirs import assert_same_weights_file

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "xlnet"
TOL = dict(rtol=1e-5, atol=1e-5)
CASES = {"lm_padded_memory": XLNetLM, "sequence_classification": XLNetClassifier,
         "multiple_choice": XLNetMultipleChoice, "question_answering": XLNetForSquad}


def golden(case):
    return load_file(str(ASSETS / case / "golden.safetensors"))


def inputs(g, n=""):
    return {k: g[f"{k}{n}"] for k in ("input_ids", "token_type_ids", "attention_mask")}


def test_lm_padded_segments_through_memory_match_hf():
    """Padded rows see themselves (HF, reference); their states enter the memory, so the second segment's real
    positions depend on it."""
    lm, g = from_pretrained(ASSETS / "lm_padded_memory").eval(), golden("lm_padded_memory")
    assert isinstance(lm, XLNetLM) and lm.transformer.cfg.mem_len == 4
    mems = None
    with torch.no_grad():
        for n in (1, 2):
            scores, out = lm(**inputs(g, n), mems=mems)
            torch.testing.assert_close(out.hidden, g[f"hidden{n}"], **TOL)
            torch.testing.assert_close(scores.scores, g[f"logits{n}"], **TOL)
            for i, m in enumerate(out.mems):
                torch.testing.assert_close(m, g[f"mems{n}.{i}"].transpose(0, 1), **TOL)
            mems = out.mems


def test_sequence_classification_matches_hf():
    clf, g = from_pretrained(ASSETS / "sequence_classification").eval(), golden("sequence_classification")
    assert isinstance(clf, XLNetClassifier) and clf.logits_proj.out_features == 3
    with torch.no_grad():
        torch.testing.assert_close(clf(**inputs(g)), g["logits"], **TOL)


def test_multiple_choice_matches_hf():
    mc, g = from_pretrained(ASSETS / "multiple_choice").eval(), golden("multiple_choice")
    assert isinstance(mc, XLNetMultipleChoice)
    with torch.no_grad():
        torch.testing.assert_close(mc(**inputs(g)), g["logits"], **TOL)


def test_question_answering_matches_hf():
    """HF returns probabilities under the name *_log_probs, its end beam laid out (B, end_n_top, start_n_top)."""
    qa, g = from_pretrained(ASSETS / "question_answering").eval(), golden("question_answering")
    assert isinstance(qa, XLNetForSquad) and (qa.start_n_top, qa.end_n_top) == (3, 2)
    with torch.no_grad():
        o = qa(**inputs(g), p_mask=g["p_mask"], cls_index=g["cls_index"])
    B = o["start_top_index"].size(0)
    torch.testing.assert_close(o["start_top_log_probs"].exp(), g["start_top_probs"], **TOL)
    assert torch.equal(o["start_top_index"], g["start_top_index"])
    torch.testing.assert_close(o["end_top_log_probs"].exp().transpose(1, 2).reshape(B, -1), g["end_top_probs"], **TOL)
    assert torch.equal(o["end_top_index"].transpose(1, 2).reshape(B, -1), g["end_top_index"])
    torch.testing.assert_close(o["answer_logits"], g["cls_logits"], **TOL)


@pytest.mark.parametrize("case", list(CASES))
def test_save_pretrained_writes_what_hf_wrote(case, tmp_path):
    model = from_pretrained(ASSETS / case)
    save_pretrained(model, tmp_path)
    assert_same_weights_file(tmp_path, ASSETS / case)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["architectures"] == json.loads((ASSETS / case / "config.json").read_text())["architectures"]
    again = from_pretrained(tmp_path)
    assert type(again) is CASES[case]
    for (k, a), b in zip(model.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), k


@pytest.mark.parametrize("case", list(CASES))
def test_state_dict_mapping_round_trip(case):
    model = from_pretrained(ASSETS / case)
    cfg = (model.clf if case == "multiple_choice" else model).transformer.cfg
    hf_sd = to_hf_state_dict(model.state_dict(), cfg)
    back = from_hf_state_dict(hf_sd, cfg, "XLNetForMultipleChoice" if case == "multiple_choice" else None)
    assert set(back) == set(model.state_dict())
    for k, v in model.state_dict().items():
        assert torch.equal(back[k], v), k


def test_bare_model_round_trip(tmp_path):
    body = from_pretrained(ASSETS / "sequence_classification").transformer
    save_pretrained(body, tmp_path)
    again = from_pretrained(tmp_path)
    assert type(again) is XLNet
    for (k, a), b in zip(body.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), k


def test_mean_summary_is_refused_on_export(tmp_path):
    clf = from_pretrained(ASSETS / "sequence_classification")
    clf.sequence_summary.pool = "mean"
    with pytest.raises(ValueError, match="pool='last'"):
        save_pretrained(clf, tmp_path)
