"""Parity with Hugging Face TransfoXL (transformers 4.35.0), from golden directories written by
`save_pretrained` in a separate venv (scripts/reference/transfo_xl_golden.py): load each directory with
`from_pretrained` (tied weights re-tied), run two consecutive segments from HF's zero memory, match log-probs and
memories to 1e-5; `save_pretrained` writes back the same files HF wrote, key for key, bit for bit."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from genfeat.errors import CheckpointError
from genfeat.models.transformer_xl import build_txl_lm
from genfeat.models.transformer_xl.hf import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    from_pretrained,
    hf_initial_mems,
    save_pretrained,
    to_hf_state_dict,
)
from tests.hf_dirs import assert_same_weights_file

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "transfo_xl"
CASES = sorted(p.name for p in ASSETS.iterdir() if (p / "config.json").is_file())


def test_golden_files_present():
    assert len(CASES) >= 6, f"run scripts/reference/transfo_xl_golden.py (found {CASES})"


def check_against_golden(lm, case):
    gold = load_file(str(ASSETS / case / "golden.safetensors"))
    cfg = lm.backbone.cfg
    with torch.no_grad():
        out1, bb1 = lm(gold["ids1"], mems=hf_initial_mems(cfg, 2))
        out2, bb2 = lm(gold["ids2"], mems=bb1.mems)
    for out, bb, n in ((out1, bb1, 1), (out2, bb2, 2)):
        torch.testing.assert_close(out.log_probs(), gold[f"logp{n}"], rtol=1e-5, atol=1e-5)
        for i, m in enumerate(bb.mems):
            torch.testing.assert_close(m, gold[f"mems{n}.{i}"].transpose(0, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_from_pretrained_matches_hf_over_two_segments(case):
    check_against_golden(from_pretrained(ASSETS / case).eval(), case)


@pytest.mark.parametrize("case", CASES)
def test_save_pretrained_writes_what_hf_wrote(case, tmp_path):
    lm = from_pretrained(ASSETS / case)
    save_pretrained(lm, tmp_path)
    assert_same_weights_file(tmp_path, ASSETS / case)
    hf_cfg = json.loads((ASSETS / case / "config.json").read_text())
    assert config_from_hf(json.loads((tmp_path / "config.json").read_text())) == config_from_hf(hf_cfg)
    check_against_golden(from_pretrained(tmp_path).eval(), case)


@pytest.mark.parametrize("case", CASES)
def test_state_dict_mapping_round_trip(case):
    """The state-dict level: a model's HF state dict (tied keys included) maps back to the same weights."""
    cfg = config_from_hf(json.loads((ASSETS / case / "config.json").read_text()))
    lm = from_pretrained(ASSETS / case)
    hf_sd = to_hf_state_dict(lm.state_dict(), cfg)
    lm2 = build_txl_lm(cfg)
    lm2.load_state_dict(from_hf_state_dict(hf_sd, cfg))
    for (k, a), b in zip(lm.state_dict().items(), lm2.state_dict().values(), strict=True):
        assert torch.equal(a, b), k
    assert config_from_hf(config_to_hf(cfg)) == cfg


def test_untied_output_embeddings_still_share_projections():
    """HF ties the adaptive softmax's projections whatever tie_word_embeddings says; so must genfeat."""
    cfg = config_from_hf(json.loads((ASSETS / "div4_untied_weights_tied_projs" / "config.json").read_text()))
    assert not cfg.tie_weight and cfg.tie_projs == (False, True, True)
    lm = build_txl_lm(cfg)
    emb, crit = lm.backbone.word_emb, lm.head
    assert crit.out_projs[1] is emb.emb_projs[1] and crit.out_projs[2] is emb.emb_projs[2]
    assert crit.out_projs[0] is not emb.emb_projs[0]
    assert crit.out_layers[0].weight is not emb.emb_layers[0].weight


def test_from_pretrained_errors_name_the_file(tmp_path):
    with pytest.raises(CheckpointError, match="config.json: missing"):
        from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "xlnet"}')
    with pytest.raises(CheckpointError, match="model_type 'xlnet'"):
        from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text((ASSETS / CASES[0] / "config.json").read_text())
    with pytest.raises(CheckpointError, match="neither model.safetensors"):
        from_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(CheckpointError, match="model.safetensors: unreadable"):
        from_pretrained(tmp_path)


def test_unsupported_hf_configs():
    base = json.loads((ASSETS / CASES[0] / "config.json").read_text())
    with pytest.raises(ValueError, match="attn_type"):
        config_from_hf({**base, "attn_type": 2})
    with pytest.raises(ValueError, match="sampled softmax"):
        config_from_hf({**base, "sample_softmax": 100})


@pytest.mark.parametrize("case", CASES)
def test_a_state_dict_read_from_a_saved_file_loads(case):
    """HF's saved file leaves its tied keys out; `from_hf_state_dict` re-ties them as `from_pretrained` does."""
    cfg = config_from_hf(json.loads((ASSETS / case / "config.json").read_text()))
    lm = build_txl_lm(cfg)
    lm.load_state_dict(from_hf_state_dict(load_file(str(ASSETS / case / "model.safetensors")), cfg))
    check_against_golden(lm.eval(), case)
