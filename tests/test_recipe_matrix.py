"""The resume and torchrun matrix, generated from `registry.RECIPES`: one `Case` per recipe, and a recipe added to
the registry without one fails `test_every_recipe_has_a_case`.

- **Resume**: a run is finished; a copy without its last checkpoint resumes from the one before; the last
  checkpoints must hold the same weights and the same trainer state (optimizers, schedules, random streams, data
  positions, a stateful loss's state such as XLNet's and Transformer-XL's memory), bit for bit on CPU, and the
  summaries the same numbers (timings aside). A fresh run of the same config then repeats the first.
- **Two ranks**: `torchrun` with 2 gloo ranks against one process with the same global batch: the same logged
  losses and final weights up to float summation order. A recipe whose ranks do something one process does not
  says so in `Case.two_ranks`, and its test checks that method instead.

`python -m tests.test_recipe_matrix` rewrites the table in docs/results/reliability.md from `CASES`;
`test_reliability_page_shows_the_matrix` fails while the page and the cases disagree.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from genfeat.cli import main
from genfeat.registry import RECIPES
from genfeat.train.checkpoint import latest_checkpoint, load_trainer_state, load_weights
from genfeat.train.logging import read_metrics
from tests.gdan.test_gdan_recipe import SMALL as GDAN_SMALL
from tests.resume_check import assert_resume_is_exact, assert_same, summary_numbers

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results" / "reliability.md"
BEGIN = "<!-- from tests/test_recipe_matrix.py (rewritten by python -m tests.test_recipe_matrix) -->"
END = "<!-- end of tests/test_recipe_matrix.py -->"

SAME = "same as one process"


@dataclass(frozen=True)
class Case:
    """`args(paths)`: `genfeat run` arguments without --out (recipe, tiny preset, the fixtures' data, a few steps
    with at least two checkpoints); `paths` maps each name in `fixtures` to its value. `state`: what a resume
    carries, for the table. `two_ranks`: what 2 ranks are, for the table. `SAME`, or a case with
    `one_process_args` (the grouping that gives one process each rank's negatives, added to the one-process run
    alone), is checked against one process with `dist_args` added to both runs; any other method names the test
    that checks it in `dist_test`."""

    fixtures: tuple[str, ...]
    args: Callable[[dict], list[str]]
    state: str = "optimizer, schedule, batch order, random streams"  # what a resume carries, for the table
    two_ranks: str = SAME
    dist_args: tuple[str, ...] = ()
    one_process_args: tuple[str, ...] = ()
    dist_test: str | None = None
    shift_invariant: tuple[str, ...] = ()  # weights compared by the losses alone (the comment below)
    atol: float = 1e-5  # the weights' absolute tolerance against one process (rtol 1e-4)


# Parameters that shift every logit of a softmax alike (a scalar score bias, an attention key bias): their true
# gradient is 0, so Adam turns the float noise of the gradient into steps of about lr, which differ with the order
# of the sums. The 2-rank test compares them through the logged losses alone.


@pytest.fixture
def xlnet_run(bbc_corpus, tmp_path) -> Path:
    run = tmp_path / "xlnet-pre"
    assert main(["run", "xlnet_pretrain", "--preset", "tiny", "--out", str(run)]) == 0
    return run


NO_DROPOUT = ("--train.dropout", "0")
CASES: dict[str, Case] = {
    "lm": Case(("ptb_dir",), lambda p: ["lm", "--preset", "tiny", "--data.corpus", f"dir:{p['ptb_dir']}"],
               dist_args=("--model.dropout", "0")),
    "transformer_xl": Case(("ptb_dir",), lambda p: ["transformer_xl", "--preset", "tiny", "--data.corpus",
                                                     f"dir:{p['ptb_dir']}"], dist_args=("--model.dropout", "0"),
                           state="AdamW, schedule, segment position, the memory"),
    "xlnet_pretrain": Case(("bbc_corpus",), lambda p: ["xlnet_pretrain", "--preset", "tiny"],
                           state="AdamW, schedule, stream cursor, permutation and mask streams, the memory",
                           dist_args=("--model.dropout", "0", "--model.dropatt", "0")),
    "xlnet_classify": Case(("xlnet_run",), lambda p: ["xlnet_classify", "--preset", "tiny", "--pretrained",
                                                       str(p["xlnet_run"]), "--train.max_steps", "6",
                                                       "--train.eval_every", "3"], dist_args=NO_DROPOUT),
    "xlnet_race": Case(("xlnet_run", "race_files"), lambda p: [
        "xlnet_race", "--preset", "tiny", "--pretrained", str(p["xlnet_run"]), "--data_dir", str(p["race_files"]),
        "--train.max_steps", "4", "--train.eval_every", "2"], dist_args=NO_DROPOUT,
        shift_invariant=("clf.logits_proj.bias",)),
    "xlnet_squad": Case(("xlnet_run", "squad_json"), lambda p: [
        "xlnet_squad", "--preset", "tiny", "--pretrained", str(p["xlnet_run"]), "--train_file", str(p["squad_json"]),
        "--dev_file", str(p["squad_json"]), "--train.max_steps", "4", "--train.eval_every", "2"],
        dist_args=NO_DROPOUT, shift_invariant=("start_logits.bias", "end_logits.bias")),
    "xlnet_dependency": Case((), lambda p: ["xlnet_dependency", "--preset", "tiny", "--train.ckpt_every", "4"],
                             state="AdamW, schedule, the batch and permutation streams",
                             dist_args=("--model.dropout", "0", "--model.dropatt", "0")),
    "planetoid": Case((), lambda p: ["planetoid", "--preset", "tiny", "--method", "planetoid_t", "--train.t1", "1.5",
                                     "--train.n1", "30", "--train.warmup_steps", "400", "--train.rounds", "100"],
                      state="the supervised and context SGD steps, the alternation and sampler streams",
                      two_ranks="refused: one process (Algorithm 2 samples one batch at a time; seconds on a CPU)",
                      dist_test="tests/test_recipe_matrix.py::test_planetoid_refuses_several_ranks"),
    "citation": Case((), lambda p: ["citation", "--preset", "tiny", "--train.max_steps", "40", "--train.eval_every",
                                    "20", "--data.synthetic.n_papers", "600", "--data.synthetic.n_test", "100",
                                    "--data.synthetic.n_valid", "60", "--eval.lambdas", "[0.2]"],
                     state="Adam, the pair order and the negative-paper stream"),
    "universal_schema": Case((), lambda p: ["universal_schema", "--preset", "tiny", "--data.pair_init", "uschema",
                                            "--optim.pair_optimizer", "sgd", "--train.max_steps", "40",
                                            "--train.eval_every", "20", "--uschema.max_steps", "20",
                                            "--uschema.eval_every", "10", "--train.plateau_factor", "0.25"],
                             state="the USchema phase (reloaded), AdamW + the pair table's SGD, the plateau factor, "
                                   "the rotation stream",
                             two_ranks="each rank rotates its negatives within its own share: one process with "
                                       "`--data.batch_groups 2`", one_process_args=("--data.batch_groups", "2"),
                             # compared at step 20: later, the summation order flips a hard (k-means) facet
                             # assignment now and then, and the pair table's SGD at lr 1 carries it
                             dist_args=("--train.max_steps", "20")),
    "interactive": Case((), lambda p: ["interactive", "--preset", "tiny", "--data.chain.n_docs", "400",
                                       "--generator_train.max_steps", "20", "--generator_train.eval_every", "10",
                                       "--train.max_steps", "20", "--train.eval_every", "10", "--data.eval_prompts",
                                       "20", "--data.condition_prompts", "20", "--data.batch_size", "8"],
                        state="the generator phase (reloaded), AdamW, schedule, the batch order, the hint call count, "
                              "the negatives' rotation stream",
                        two_ranks="each rank rotates its negatives within its own share: one process with "
                                  "`--nnsc.batch_groups 2` (a row's hints depend on its id alone)",
                        one_process_args=("--nnsc.batch_groups", "2"),
                        dist_args=("--model.dropout", "0", "--options.dropout", "0", "--nnsc.solver", "pgd"),
                        shift_invariant=("decoder.layers.0.attn.qkv.bias", "decoder.layers.1.attn.qkv.bias"),
                        atol=5e-5),
    "heads_synthetic": Case((), lambda p: ["heads_synthetic", "--preset", "tiny", "--head.kind", "multi_facet",
                                           "--head.num_softmax", "3", "--train.ckpt_every", "20"]),
    "seqrec": Case(("inter_file",), lambda p: ["seqrec", "--preset", "tiny", "--data.dataset",
                                                f"atomic:{p['inter_file']}", "--train.keep_last", "2",
                                                "--data.batch_size", "16"],
                   dist_args=("--model.dropout", "0", "--model.attn_dropout", "0")),
    "gan_ssl": Case(("mnist_pickle",), lambda p: ["gan_ssl", "--preset", "tiny", "--train.epochs", "2"],
                    state="D's and G's Adam, the label / unlabeled / noise streams",
                    two_ranks="each rank its part of every batch; the generator's batch norm normalises a rank's "
                              "share and the instance noise is drawn per rank, so the ranks follow one process "
                              "exactly only for networks without per-rank randomness",
                    dist_test="tests/gan_ssl/test_gan_ssl_train.py::test_two_ranks_follow_one_process"),
    "pixelcnn": Case(("mnist_pickle",), lambda p: ["pixelcnn", "--preset", "tiny", "--train.epochs", "2",
                                                    "--train.ckpt_every", "2"]),
    "facets": Case(("bbc_articles", "vectors"), lambda p: ["facets", "--preset", "tiny", "--data.vectors",
                                                            str(p["vectors"])],
                   state="AdamW, schedule, batch order, the negatives' and E-step's stream",
                   two_ranks="each rank draws its in-batch negatives from its own share: one process with "
                             "`--loss.batch_groups 2`", one_process_args=("--loss.batch_groups", "2"),
                   dist_args=("--model.dropout", "0", "--loss.solver", "pgd"),  # RMSprop's start: drawn per rank
                   shift_invariant=("decoder.layers.0.kv.bias", "decoder.layers.0.self_block.attn.qkv.bias")),
    "multi_cls_pretrain": Case(("bert_dir", "bbc_articles"), lambda p: ["multi_cls_pretrain", "--preset", "tiny",
                                                                        "--init", str(p["bert_dir"])],
                               state="AdamW (two learning rates), schedule, the triple sampler's stream",
                               two_ranks="each rank's MCQT negatives and token means are its own share's: one "
                                         "process with `--data.batch_groups 2`",
                               one_process_args=("--data.batch_groups", "2")),
    "multi_cls_classify": Case(("bert_dir", "bbc_articles"), lambda p: [
        "multi_cls_classify", "--preset", "tiny", "--pretrained", str(p["bert_dir"]), "--train.keep_last", "2"],
        dist_args=("--dropout", "0")),
    "gdan": Case((), lambda p: ["gdan", *GDAN_SMALL],
                 state="two Adams (D, G), G's MLE phase, the batch orders, G's sampling stream",
                 two_ranks="refused: one process (G samples on the fly)",
                 dist_test="tests/gdan/test_gdan_recipe.py::test_gdan_refuses_several_ranks"),
    "multi2spe": Case((), lambda p: ["multi2spe", "--preset", "tiny", "--train.max_steps", "20", "--train.eval_every",
                                     "10", "--data.synthetic.n_papers", "160"],
                      state="AdamW, schedule, the batch order",
                      dist_args=("--model.bert.dropout", "0", "--model.bert.attn_dropout", "0"),
                      atol=5e-5),  # Adam's first steps divide summation-order noise by a tiny second moment
}


def _paths(case: Case, request) -> dict:
    return {name: request.getfixturevalue(name) for name in case.fixtures}


def test_every_recipe_has_a_case():
    assert set(CASES) == set(RECIPES), "each recipe needs a Case in tests/test_recipe_matrix.py"


@pytest.mark.parametrize("name", list(CASES))
def test_resume_is_bitwise(name, request, tmp_path):
    """The resume check; a resume of a run killed after training (no summary.json) does the finishing work alone
    (reload the best weights, evaluate, record) to the same summary; and a fresh run of the same config repeats
    the first (every initialisation and stream seeded; the thread count is pinned by the suite's conftest)."""
    case = CASES[name]
    args = case.args(_paths(case, request))
    assert_resume_is_exact(args, tmp_path)
    (tmp_path / "b" / "summary.json").unlink()  # killed after training, in the finishing work
    assert main(["run", "--resume", str(tmp_path / "b")]) == 0  # which a resume does alone
    assert_same(summary_numbers(tmp_path / "a"), summary_numbers(tmp_path / "b"), "summary of the finishing resume")
    random.seed(987654)  # a process whose Python stream is elsewhere: the recipe seeds it
    assert main(["run", *args, "--out", str(tmp_path / "fresh")]) == 0
    assert_same(load_weights(tmp_path / "a" / "model.safetensors"),
                load_weights(tmp_path / "fresh" / "model.safetensors"), "fresh run's weights")
    assert_same(summary_numbers(tmp_path / "a"), summary_numbers(tmp_path / "fresh"), "fresh run's summary")
    sa, sf = (load_trainer_state(latest_checkpoint(tmp_path / d)) for d in ("a", "fresh"))
    sa.pop("train_time"), sf.pop("train_time")
    assert_same(sa, sf, "fresh run's trainer state")  # Python's random stream too: seeded, not the process's


def _losses(run: Path) -> list[float]:
    return [r["loss"] for r in read_metrics(run) if "loss" in r]


@pytest.mark.dist
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.two_ranks.startswith(SAME)
                                  or c.one_process_args])
def test_two_ranks_equal_one_process(name, request, tmp_path):
    from tests.dist_run import torchrun_genfeat

    case = CASES[name]
    args = ["run", *case.args(_paths(case, request)), *case.dist_args]
    assert main([*args, *case.one_process_args, "--out", str(tmp_path / "one")]) == 0
    torchrun_genfeat([*args, "--out", str(tmp_path / "two")])
    last = [latest_checkpoint(tmp_path / run) for run in ("one", "two")]
    assert last[0].name == last[1].name
    one, two = (load_weights(d / "model.safetensors") for d in last)
    assert one.keys() == two.keys() and set(case.shift_invariant) <= one.keys()
    for k, v in one.items():
        if k not in case.shift_invariant:
            torch.testing.assert_close(two[k], v, rtol=1e-4, atol=case.atol, msg=lambda m, k=k: f"{k}: {m}")
    assert len(_losses(tmp_path / "one")) >= 1
    assert _losses(tmp_path / "two") == pytest.approx(_losses(tmp_path / "one"), rel=1e-4, abs=1e-6)
    counts = [load_trainer_state(d)["count"] for d in last]
    assert counts[0] == counts[1]
    assert json.loads((tmp_path / "two" / "summary.json").read_text())["world_size"] == 2


def test_every_other_method_names_its_test():
    """A case whose ranks differ from one process points at the test that checks what they do."""
    for name, case in CASES.items():
        if not (case.two_ranks.startswith(SAME) or case.one_process_args):
            assert case.dist_test, name
            path, test = case.dist_test.split("::")
            assert f"def {test}(" in (ROOT / path).read_text(), case.dist_test


def test_planetoid_refuses_several_ranks(monkeypatch, tmp_path, capsys):
    """Under torchrun (WORLD_SIZE set) planetoid stops before reading the graph: every rank would otherwise train
    the same model into the same run directory."""
    from genfeat.train import distributed as D

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(D, "setup", lambda device="auto": D.DistInfo(rank=0, world_size=2))  # no process group
    assert main(["run", *CASES["planetoid"].args({}), "--out", str(tmp_path / "run")]) == 2
    assert "one process" in capsys.readouterr().err and not (tmp_path / "run" / "summary.json").exists()


def matrix_section() -> str:
    rows = ["## Resume and torchrun matrix (every recipe, in the default suite)", "",
            "`tests/test_recipe_matrix.py`, one row per recipe of `registry.RECIPES` (a recipe without a row fails "
            "the suite), tiny presets with a few steps, CPU. *Resume*: a copy of a finished run without its last "
            "checkpoint resumes from the one before; the last checkpoints' weights and trainer state (optimizers, "
            "schedules, random streams, data positions, a stateful loss's memory) and the summaries' numbers are "
            "compared bit for bit; a copy killed after training (no summary.json) resumes into the finishing work "
            "alone (reload the best weights, evaluate, record) to the same summary; and a fresh run of the config, "
            "started with Python's random stream elsewhere, repeats the first's weights, trainer state and summary. "
            "*2 gloo ranks*: `torchrun` "
            "against one process with the same global batch, weights within rtol 1e-4 / atol 1e-5 and the logged "
            "losses within 1e-4 (a bias that shifts every logit of a softmax alike has true gradient 0, so Adam "
            "turns float noise into steps: compared by the losses alone).", "",
            "| recipe | resume: bit for bit, carrying | 2 gloo ranks |", "|---|---|---|"]
    for name, case in CASES.items():
        ranks = "= 1 process" if case.two_ranks == SAME else case.two_ranks
        if case.dist_test:
            ranks += f" (`{case.dist_test.split('::')[1]}`)"
        rows.append(f"| `{name}` | {case.state} | {ranks} |")
    return "\n".join(rows)


def _page_with(section: str) -> str:
    text = PAGE.read_text()
    if BEGIN in text:
        head, rest = text.split(BEGIN)
        return f"{head}{BEGIN}\n{section}\n{END}{rest.split(END, 1)[1]}"
    return f"{text.rstrip()}\n\n{BEGIN}\n{section}\n{END}\n"


def test_reliability_page_shows_the_matrix():
    assert BEGIN in PAGE.read_text() and _page_with(matrix_section()) == PAGE.read_text(), \
        "docs/results/reliability.md is stale: run python -m tests.test_recipe_matrix"


if __name__ == "__main__":
    PAGE.write_text(_page_with(matrix_section()))
    sys.exit(0)
