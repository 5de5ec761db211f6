"""Parity with Hugging Face TransfoXL (transformers 4.35.0), from golden files made by
scripts/reference/transfo_xl_golden.py: import HF weights by key mapping, run two consecutive segments
from HF's zero memory, match log-probs and memories to 1e-5; export back to HF keys bit for bit."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from genfeat.models.transformer_xl import build_txl_lm
from genfeat.models.transformer_xl.hf import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    hf_initial_mems,
    to_hf_state_dict,
)

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "transfo_xl"
CASES = sorted(p.stem for p in ASSETS.glob("*.json"))


def test_golden_files_present():
    assert len(CASES) >= 4, f"run scripts/reference/transfo_xl_golden.py (found {CASES})"


@pytest.mark.parametrize("case", CASES)
def test_matches_hf_over_two_segments(case):
    hf_cfg = json.loads((ASSETS / f"{case}.json").read_text())
    data = load_file(str(ASSETS / f"{case}.safetensors"))
    hf_sd = {k[2:]: v for k, v in data.items() if k.startswith("w.")}
    cfg = config_from_hf(hf_cfg)
    lm = build_txl_lm(cfg).eval()
    missing, unexpected = lm.load_state_dict(from_hf_state_dict(hf_sd, cfg), strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    with torch.no_grad():
        out1, bb1 = lm(data["ids1"], mems=hf_initial_mems(cfg, 2))
        out2, bb2 = lm(data["ids2"], mems=bb1.mems)
    for out, bb, n in ((out1, bb1, 1), (out2, bb2, 2)):
        torch.testing.assert_close(out.log_probs(), data[f"logp{n}"], rtol=1e-5, atol=1e-5)
        for i, m in enumerate(bb.mems):
            torch.testing.assert_close(m, data[f"mems{n}.{i}"].transpose(0, 1), rtol=1e-5, atol=1e-5)
    back = to_hf_state_dict(lm.state_dict(), cfg)
    assert set(back) == set(hf_sd)
    for k, v in hf_sd.items():
        assert torch.equal(back[k], v), k
    assert config_from_hf(config_to_hf(cfg)) == cfg


def test_unsupported_hf_configs():
    base = json.loads((ASSETS / f"{CASES[0]}.json").read_text())
    with pytest.raises(ValueError, match="attn_type"):
        config_from_hf({**base, "attn_type": 2})
    with pytest.raises(ValueError, match="sampled softmax"):
        config_from_hf({**base, "sample_softmax": 100})
