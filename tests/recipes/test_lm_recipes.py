"""Recipe-level pieces: sliding-window evaluation, Transformer-XL training with memory (exact resume),
the transformer_xl recipe end to end."""

import dataclasses
import json
import math
import shutil

import numpy as np
import pytest
import torch

from genfeat import named_head
from genfeat.cli import main
from genfeat.data.streams import OrderedSegments
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.nll_passes import segment_nll, sliding_nll
from genfeat.models.transformer_xl import TXLConfig, build_txl_lm
from genfeat.tasks.language_modeling import MemoryLMLoss, lm_scores
from genfeat.train import checkpoint as C
from genfeat.train.loop import TrainConfig, fit

TOKENS = np.random.default_rng(0).integers(0, 30, size=3000)


@pytest.mark.parametrize("stride", [1, 3, 8])
def test_sliding_window_equals_one_forward_per_target(stride):
    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(vocab_size=30, n_layer=1, n_head=2, d_model=16, max_len=8)).eval()
    tokens = TOKENS[:41]
    got = lm_scores(*sliding_nll(lm, tokens, window=8, stride=stride, split="x", batch_size=4), per_char=False)
    total, n = 0.0, 0
    x = torch.from_numpy(tokens).long()
    starts = list(range(0, 40 - 8 + 1, stride))
    starts += [] if starts[-1] == 40 - 8 else [40 - 8]  # the tail window
    for t in range(1, 41):  # target t is scored by the first window covering it, with context tokens[s:t]
        s_t = min(s for s in starts if s + 1 <= t <= s + 8)
        logp = torch.log_softmax(lm(x[s_t:t][None])[0].scores[0, -1], -1)
        total -= logp[x[t]].item()
        n += 1
    assert got["loss"] == pytest.approx(total / n, rel=1e-6)
    assert got["ppl"] == pytest.approx(math.exp(total / n), rel=1e-6)


def txl_setup(seed=0):
    torch.manual_seed(seed)
    lm = build_txl_lm(TXLConfig(vocab_size=30, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, tgt_len=8,
                                mem_len=16, dropout=0.1))
    return lm, OrderedSegments(TOKENS, 4, 8), MemoryLMLoss()


def test_txl_training_resume_is_exact_including_memory(tmp_path):
    cfg = TrainConfig(max_steps=10, lr=3e-3, warmup_steps=2, eval_every=4, keep_last=10, clip_norm=0.25)
    def evaluate(m):
        return {"valid_loss": lm_scores(*segment_nll(m, TOKENS[:400], 4, 8, "valid", carry_memory=True), False)["loss"]}

    lm_a, data_a, loss_a = txl_setup()
    fit(lm_a, loss_a, data_a, cfg, tmp_path / "a", evaluate=evaluate)
    state = C.load_trainer_state(tmp_path / "a/checkpoints/step_00000004")
    assert [m.shape for m in state["method"][0]["mems"]] == [(4, 16, 16)] * 2  # memory is checkpointed

    def resumed(drop_memory: bool):
        lm_b, data_b, loss_b = txl_setup(seed=5)
        shutil.rmtree(tmp_path / "b", ignore_errors=True)
        (tmp_path / "b/checkpoints").mkdir(parents=True)
        shutil.copytree(tmp_path / "a/checkpoints/step_00000004", tmp_path / "b/checkpoints/step_00000004")
        if drop_memory:
            loss_b.load_state_dict = lambda s: None
        fit(lm_b, loss_b, data_b, cfg, tmp_path / "b", evaluate=evaluate,
            resume_from=tmp_path / "b/checkpoints/step_00000004")
        return lm_b

    lm_b = resumed(drop_memory=False)
    assert all(torch.equal(p, q) for p, q in zip(lm_a.parameters(), lm_b.parameters(), strict=True))
    lm_c = resumed(drop_memory=True)  # the test can fail: without the memory the run differs
    assert not all(torch.equal(p, q) for p, q in zip(lm_a.parameters(), lm_c.parameters(), strict=True))


def test_transformer_xl_recipe_end_to_end(ptb_dir, tmp_path, capsys):
    out = tmp_path / "txl"
    code = main(["run", "transformer_xl", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["arch"] == "transformer_xl" and summary["steps"] == 6 and summary["test_ppl"] > 1
    code = main(["generate", str(out), "-n", "1", "--max-new-tokens", "4"])
    assert code == 0
    code = main(["recl", str(out), str(out), "--start", "4", "--step", "4", "--stop", "12", "--positions", "20"])
    assert code == 0 and capsys.readouterr().out.count("RECL=") == 4  # 2 runs x 2 ratios
    code = main(["run", "transformer_xl", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out",
                 str(tmp_path / "vanilla"), "--model.pos_enc", "absolute", "--model.mem_len", "0",
                 "--eval.stride", "2"])
    assert code == 0
    capsys.readouterr()
    code = main(["run", "transformer_xl", "--preset", "tiny", "--data.seq_len", "5", "--out", str(tmp_path / "x")])
    assert code == 2 and "must equal model.tgt_len" in capsys.readouterr().err


def test_the_hf_export_loads_with_transformers_auto_classes(pretrained):
    """AutoModelForCausalLM and AutoTokenizer on run/hf: the same ids, decoding and greedy continuation as genfeat,
    and bos / eos / pad ids inside the vocabulary (GPT-2's 50256 would never stop HF generate)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import genfeat

    lm, tok = genfeat.load(pretrained)
    hf_tok = AutoTokenizer.from_pretrained(pretrained / "hf")
    hf_lm = AutoModelForCausalLM.from_pretrained(pretrained / "hf").eval()
    prompt = " ".join(tok.itos[2:9]) + " zzz-not-a-word"
    ids = hf_tok(prompt)["input_ids"]
    assert ids == tok.encode(prompt) and ids[-1] == tok.unk_id
    assert hf_tok.decode(ids) == tok.decode(ids) == " ".join(tok.itos[2:9]) + " <unk>"
    c = hf_lm.config
    assert c.bos_token_id == c.eos_token_id == c.pad_token_id == tok.eos_id == hf_tok.eos_token_id
    x = torch.tensor([ids])
    with torch.no_grad():
        out = hf_lm.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=8)[0, len(ids):]
        ours, step = [], x
        for _ in range(len(out)):
            nxt = int(lm(step)[0].log_probs()[0, -1].argmax())
            ours.append(nxt)
            step = torch.cat([step, torch.tensor([[nxt]])], 1)
    assert out.tolist() == ours and (tok.eos_id not in ours[:-1])  # HF stops at the first <eos>, if any


@pytest.fixture(scope="module")
def pretrained(ptb_dir, tmp_path_factory):
    """A tiny softmax GPT run on the PTB-format corpus (with its hf/ directory)."""
    pre = tmp_path_factory.mktemp("pretrained") / "pre"
    assert main(["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out", str(pre)]) == 0
    return pre


def test_gpt_run_exports_hf_and_a_run_starts_from_it_with_another_head(ptb_dir, pretrained, tmp_path, capsys):
    """A softmax GPT run writes hf/ (GPT2LMHeadModel layout + tokenizer.json); `init=RUN/hf` starts a run from those
    weights with any head. MoS(3) starts as the pretrained softmax (thesis C §7), so a run that cannot move its
    weights (one step at lr 1e-12) scores the pretrained run's test perplexity; without the init it does not."""
    from genfeat.models.gpt.hf import from_pretrained
    from genfeat.recipes.lm import load_for_generation, tiny

    pre = pretrained
    assert (pre / "hf" / "config.json").is_file() and (pre / "hf" / "tokenizer.json").is_file()
    lm, _ = load_for_generation(pre, tiny(), torch.device("cpu"))
    x = torch.randint(0, lm.backbone.cfg.vocab_size, (2, 9))
    torch.testing.assert_close(from_pretrained(pre / "hf")(x)[0].log_probs(), lm(x)[0].log_probs())

    frozen = ["--train.max_steps", "1", "--train.lr", "1e-12", "--train.eval_every", "1", "--model.head", "mos3",
              "--data.corpus", f"dir:{ptb_dir}"]
    fine = tmp_path / "fine"
    assert main(["run", "lm", "--preset", "tiny", "--init", str(pre / "hf"), *frozen, "--out", str(fine)]) == 0
    assert "decoder from" in capsys.readouterr().out
    pre_ppl = json.loads((pre / "summary.json").read_text())["test_ppl"]
    assert json.loads((fine / "summary.json").read_text())["test_ppl"] == pytest.approx(pre_ppl, rel=1e-4)
    assert not (fine / "hf").exists()  # a MoS head has no GPT2LMHeadModel form
    fine_lm, _ = load_for_generation(fine, dataclasses.replace(tiny(), init=str(pre / "hf"),
                                                               model=GPTConfig(head=named_head("mos3"))),
                                     torch.device("cpu"))
    torch.testing.assert_close(fine_lm(x)[0].log_probs(), lm(x)[0].log_probs(), atol=1e-4, rtol=0)

    scratch = tmp_path / "scratch"
    assert main(["run", "lm", "--preset", "tiny", *frozen, "--out", str(scratch)]) == 0
    assert json.loads((scratch / "summary.json").read_text())["test_ppl"] > 1.1 * pre_ppl  # near uniform (31 words)


def test_init_names_a_vocabulary_mismatch(ptb_dir, pretrained, tmp_path, capsys):
    pre = pretrained
    capsys.readouterr()
    code = main(["run", "lm", "--preset", "tiny", "--init", str(pre / "hf"), "--data.tokenizer", "byte",
                 "--sample.prompt", "a", "--data.corpus", f"dir:{ptb_dir}", "--out", str(tmp_path / "x")])
    assert code == 2 and "vocabulary of" in capsys.readouterr().err


def test_init_refuses_a_tokenizer_that_numbers_words_differently(ptb_dir, pretrained, tmp_path, capsys):
    """A word vocabulary of the same size built from another corpus would silently renumber the words."""
    pre = pretrained
    other = tmp_path / "other"
    other.mkdir()
    words = sorted({w for f in ptb_dir.glob("ptb.*.txt") for w in f.read_text().split()})
    swap = dict(zip(words, reversed(words), strict=True))  # the same words, each with another's frequency
    for split in ("train", "valid", "test"):
        lines = (ptb_dir / f"ptb.{split}.txt").read_text().splitlines()
        (other / f"ptb.{split}.txt").write_text("".join(" ".join(swap[w] for w in x.split()) + "\n" for x in lines))
    capsys.readouterr()
    code = main(["run", "lm", "--preset", "tiny", "--init", str(pre / "hf"), "--data.corpus", f"dir:{other}",
                 "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and "numbers its tokens differently" in err
