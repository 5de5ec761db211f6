"""Golden directories of Hugging Face XLNet for genfeat's directory and task-head parity tests
(tests/xlnet/test_hf_dirs.py). Runs in a separate venv (the same one as transfo_xl_golden.py):

    python3 -m venv .venv-ref
    .venv-ref/bin/pip install torch==2.13.0 transformers==4.35.0 'numpy<2.3' sentencepiece
    .venv-ref/bin/python scripts/reference/xlnet_golden.py tests/assets/xlnet

Each case is a directory `<name>/` holding what `save_pretrained` wrote (`config.json`, `model.safetensors`,
the tied `lm_loss.weight` left out as HF leaves it out) and `golden.safetensors` with the inputs and HF's outputs
in eval mode (random weights, every parameter perturbed so no bias is zero):

    lm_padded_memory     XLNetLMHeadModel, mem_len 4, two left-padded segments, no perm mask (fine-tuning style):
                         content-stream hidden states, logits and memories of both segments
    sequence_classification  XLNetForSequenceClassification (3 labels), a left-padded pair batch: logits
    multiple_choice      XLNetForMultipleChoice, (2, 3, T) inputs: logits (2, 3)
    question_answering   XLNetForQuestionAnswering, with p_mask and cls_index: the start x end beam
                         (HF returns probabilities under the name *_log_probs) and the answerability logits
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (
    XLNetConfig,
    XLNetForMultipleChoice,
    XLNetForQuestionAnswering,
    XLNetForSequenceClassification,
    XLNetLMHeadModel,
)

BASE = dict(vocab_size=31, d_model=32, n_layer=2, n_head=4, d_inner=48, dropout=0.0, ff_activation="gelu")


def perturbed(model):
    with torch.no_grad():
        for k, p in model.named_parameters():
            if k.endswith("layer_norm.weight") or k.endswith("LayerNorm.weight"):
                p.add_(torch.randn_like(p) * 0.1)
            else:
                p.normal_(0.0, 0.3)
    return model.eval()


def padded_batch(B: int, T: int, lengths: list[int], g: torch.Generator) -> dict[str, torch.Tensor]:
    """Left-padded rows of random ids (pad id 5), segment A then B then <cls>-style segment 2, padding segment 4."""
    ids = torch.randint(6, 31, (B, T), generator=g)
    seg = torch.full((B, T), 4)
    att = torch.zeros(B, T, dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, : T - n] = 5
        half = n // 2
        seg[b, T - n : T - n + half], seg[b, T - n + half : T - 1], seg[b, T - 1] = 0, 1, 2
        att[b, T - n :] = 1
    return {"input_ids": ids, "token_type_ids": seg, "attention_mask": att}


def save(case: Path, model, tensors: dict[str, torch.Tensor]) -> None:
    model.save_pretrained(str(case), safe_serialization=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(case / "golden.safetensors"))
    print(case.name, sorted(p.name for p in case.iterdir()))


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)

    torch.manual_seed(0)
    lm = perturbed(XLNetLMHeadModel(XLNetConfig(**BASE, mem_len=4)))
    x1, x2 = padded_batch(2, 7, [7, 4], g), padded_batch(2, 7, [5, 3], g)
    with torch.no_grad():
        o1 = lm(**x1, use_mems=True, output_hidden_states=True)
        o2 = lm(**x2, mems=o1.mems, use_mems=True, output_hidden_states=True)
    t = {f"{k}{n}": v for n, x in ((1, x1), (2, x2)) for k, v in x.items()}
    for n, o in ((1, o1), (2, o2)):
        t[f"hidden{n}"], t[f"logits{n}"] = o.hidden_states[-1], o.logits
        t |= {f"mems{n}.{i}": m for i, m in enumerate(o.mems)}
    save(out / "lm_padded_memory", lm, t)

    torch.manual_seed(1)
    clf = perturbed(XLNetForSequenceClassification(XLNetConfig(**BASE, num_labels=3)))
    x = padded_batch(3, 8, [8, 5, 3], g)
    with torch.no_grad():
        t = {**x, "logits": clf(**x).logits}
    save(out / "sequence_classification", clf, t)

    torch.manual_seed(2)
    mc = perturbed(XLNetForMultipleChoice(XLNetConfig(**BASE)))
    x = padded_batch(6, 8, [8, 6, 5, 7, 4, 8], g)
    x = {k: v.view(2, 3, 8) for k, v in x.items()}
    with torch.no_grad():
        t = {**x, "logits": mc(**x).logits}
    save(out / "multiple_choice", mc, t)

    torch.manual_seed(3)
    qa = perturbed(XLNetForQuestionAnswering(XLNetConfig(**BASE, start_n_top=3, end_n_top=2)))
    x = padded_batch(2, 9, [9, 6], g)
    p_mask = (x["token_type_ids"] != 1).float()  # only segment B (the context) may hold the answer
    cls_index = torch.full((2,), 8)
    with torch.no_grad():
        o = qa(**x, p_mask=p_mask, cls_index=cls_index)
    t = {**x, "p_mask": p_mask, "cls_index": cls_index, "start_top_probs": o.start_top_log_probs,
         "start_top_index": o.start_top_index, "end_top_probs": o.end_top_log_probs, "end_top_index": o.end_top_index,
         "cls_logits": o.cls_logits}
    save(out / "question_answering", qa, t)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/assets/xlnet")
