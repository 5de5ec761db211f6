"""Golden directories of Hugging Face TransfoXL for genfeat's parity tests (tests/models/test_transfo_xl_hf.py).

TransfoXL exists only in transformers <= 4.35 (deprecated, then removed in v5), so this runs in a separate
venv and its outputs are stored, small, in tests/assets/transfo_xl/:

    python3 -m venv .venv-ref
    .venv-ref/bin/pip install torch==2.13.0 transformers==4.35.0 'numpy<2.3' sentencepiece
    .venv-ref/bin/python scripts/reference/transfo_xl_golden.py tests/assets/transfo_xl

For each configuration: random weights (every parameter perturbed so no bias is zero), two consecutive
segments through `TransfoXLLMHeadModel` in eval mode (HF starts from mem_len rows of zero memory). Each case is
a directory `<name>/` holding what `save_pretrained` wrote (`config.json`, `model.safetensors`: tied weights are
stored once, as HF stores them) and `golden.safetensors` with `ids1`/`ids2`, `logp1`/`logp2` (B, L, V) and
`mems1.<i>`/`mems2.<i>` (HF layout (M, B, d)).
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import TransfoXLConfig, TransfoXLLMHeadModel

BASE = dict(vocab_size=97, d_model=16, d_embed=16, n_head=2, d_head=8, d_inner=32, n_layer=2, mem_len=6,
            tgt_len=5, dropout=0.0, dropatt=0.0, cutoffs=[], div_val=1, clamp_len=-1, same_length=False,
            untie_r=True, proj_share_all_but_first=True)
CONFIGS = {
    "plain_untied": {},
    "div1_cutoffs_same_length_tied_r": {"cutoffs": [20, 50], "same_length": True, "untie_r": False},
    "div4_cutoffs_clamp": {"cutoffs": [20, 50], "div_val": 4, "d_embed": 32, "clamp_len": 3},
    "div1_proj_same_length_clamp": {"cutoffs": [30], "d_embed": 8, "same_length": True, "clamp_len": 4,
                                    "proj_share_all_but_first": False},
    # output embeddings untied, projections still shared (HF's tie_weights ties them independently)
    "div4_untied_weights_tied_projs": {"cutoffs": [20, 50], "div_val": 4, "d_embed": 32,
                                       "tie_word_embeddings": False},
    "div1_proj_untied_weights_tied_projs": {"cutoffs": [30], "d_embed": 8, "tie_word_embeddings": False},
}


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, over in CONFIGS.items():
        torch.manual_seed(0)
        cfg = TransfoXLConfig(**{**BASE, **over})
        model = TransfoXLLMHeadModel(cfg).eval()
        with torch.no_grad():
            for k, p in model.named_parameters():
                if k.endswith("layer_norm.weight"):
                    p.add_(torch.randn_like(p) * 0.1)
                else:
                    p.normal_(0.0, 0.3)
        ids1 = torch.randint(0, cfg.vocab_size, (2, 5))
        ids2 = torch.randint(0, cfg.vocab_size, (2, 5))
        with torch.no_grad():
            o1 = model(input_ids=ids1)
            o2 = model(input_ids=ids2, mems=o1.mems)
        case = out / name
        model.save_pretrained(str(case), safe_serialization=True)
        tensors = {"ids1": ids1, "ids2": ids2, "logp1": o1.prediction_scores, "logp2": o2.prediction_scores}
        tensors |= {f"mems1.{i}": m.contiguous() for i, m in enumerate(o1.mems)}
        tensors |= {f"mems2.{i}": m.contiguous() for i, m in enumerate(o2.mems)}
        save_file(tensors, str(case / "golden.safetensors"))
        print(name, sorted(p.name for p in case.iterdir()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/assets/transfo_xl")
