"""benchmarks/heads_pretrained: the pretraining run exports hf/, every fine-tuning run starts from it with one head."""

from pathlib import Path

from benchmarks import heads_pretrained as B

from genfeat.heads.config import HEADS
from genfeat.models.gpt.hf import exports_to_hf


def test_fine_tuning_runs_start_from_the_pretraining_runs_hf_directory():
    pre = B.pretrain_config(2500)
    assert exports_to_hf(pre.model) and pre.data.tokenizer == "gpt2" and pre.model.activation == "gelu_tanh"
    job = B.finetune_job(Path("runs"), "mfs", 1, 2500, 500)
    assert job.needs == (Path("runs") / B.pretrain_job(2500).name,) and job.share == "mfs"
    ft = B.finetune_config("mfs", 1, Path("runs/pretrain-steps2500/hf"), 500)
    assert ft.init == "runs/pretrain-steps2500/hf" and ft.model.head == HEADS["mfs"] and ft.seed == 1
    assert ft.data.corpus == B.HELD_OUT and ft.data.corpus not in B.PRETRAIN_CORPUS.split("+")
    assert ft.data.seq_len == B.CHUNK <= pre.model.max_len and ft.train.schedule == "constant"


def test_page_gives_changes_against_the_softmax_beside_the_thesis():
    run = {"params": 1, "valid_ppl": 30.0, "best_step": 500, "train_s": 1.0}
    record = {"seeds": [0], "machine": {}, "results": {
        "heads": ["softmax", "mfs"], "finetune_steps": 500, "finetune_epochs": 2.5, "repeats": 3, "timed_on": "cpu",
        "inspect_chunks": 10, "inspect_contexts": 1,
        "pretrain": {"command": "c", "steps": 2500, "params": 1, "train_tokens": 10, "corpus_train_tokens": 4,
                     "valid_ppl": 50.0, "test_ppl": 60.0, "train_s": 1},
        "zero_shot": {"valid_ppl": 80.0, "test_ppl": 81.0}, "model_seconds": {"softmax": 0.1, "mfs": 0.15},
        "inspection": [{"context": "a b", "target": " c", "p_target": {"softmax": 0.1, "mfs": 0.5},
                        "softmax": [{"row": "final", "top": [[" c", 0.1]]}],
                        "mfs": [{"row": "final", "top": [[" c", 0.5]]}, {"row": "softmax 1", "top": [[" d", 0.9]]}]}],
        "runs": [run | {"head": "softmax", "seed": 0, "test_ppl": 40.0},
                 run | {"head": "mfs", "seed": 0, "test_ppl": 38.0}]}}
    page = B.markdown(record)
    mfs = next(line for line in page.splitlines() if line.startswith("| MFS"))
    assert "-5.0%" in mfs and "-2.5% (Table 2.1)" in mfs and "(1.50×)" in mfs  # 38 vs 40; 23.45 vs 24.06
    assert "| pretrained, not fine-tuned | 1 | 80.00 | 81.00 |" in page and "| MFS softmax 1 | ` d` 0.900 |" in page


def test_page_without_the_weights_says_what_is_not_recorded():
    record = {"seeds": [0], "machine": {}, "results": {
        "heads": ["softmax"], "finetune_steps": 5, "finetune_epochs": 0.1, "repeats": 1, "timed_on": "cpu",
        "inspect_chunks": 10, "inspect_contexts": 1,
        "pretrain": {"command": "c", "steps": 5, "params": 1, "train_tokens": 10, "corpus_train_tokens": 4,
                     "valid_ppl": 50.0, "test_ppl": 60.0, "train_s": 1},
        "zero_shot": None, "model_seconds": {"softmax": 0.1}, "inspection": None,
        "runs": [{"head": "softmax", "seed": 0, "params": 1, "valid_ppl": 30.0, "test_ppl": 40.0, "best_step": 5,
                  "train_s": 1.0}]}}
    page = B.markdown(record)
    assert "pretrained, not fine-tuned" not in page and "Not recorded: the runs' weights were not kept" in page
