import os
from pathlib import Path

import pytest
import torch

from genfeat.errors import CheckpointError
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.train import checkpoint as C
from genfeat.train.loop import TrainConfig, fit
from tests.train.helpers import evaluate, lm_loss, make


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=8, eval_every=2, keep_last=2, warmup_steps=1), root,
        evaluate=evaluate)
    return root


def test_keep_last_and_no_temp_left(run):
    assert [p.name for p in C.checkpoint_dirs(run)] == ["step_00000006", "step_00000008"]
    assert not [p for p in (run / "checkpoints").iterdir() if p.name.startswith(".")]
    state = torch.load(run / "checkpoints/step_00000008/trainer_state.pt", weights_only=True)
    assert state["step"] == 8 and state["data"]["train"][0]["pos"] > 0 and len(state["rng"]) == 1
    for name in ("metrics.jsonl", "model.safetensors", "loss_curve.png"):
        assert (run / name).is_file(), name


def test_truncated_weights_give_clear_error(run, tmp_path):
    bad = tmp_path / "model.safetensors"
    bad.write_bytes((run / "model.safetensors").read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=f"{bad} is corrupt or truncated"):
        C.load_weights(bad)
    bad.write_bytes(b"\x00" * 3)
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        C.load_weights(bad)
    with pytest.raises(CheckpointError, match="does not exist"):
        C.load_weights(tmp_path / "nope.safetensors")


def test_corrupt_trainer_state_gives_clear_error(run, tmp_path):
    import shutil

    ck = tmp_path / "ck"
    shutil.copytree(run / "checkpoints/step_00000008", ck)
    data = (ck / C.STATE).read_bytes()
    (ck / C.STATE).write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=f"{ck / C.STATE} is corrupt or truncated"):
        C.load_trainer_state(ck)
    (ck / C.STATE).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        C.load_trainer_state(ck)


def test_mismatched_model_gives_clear_error(run):
    other = build_gpt_lm(GPTConfig(vocab_size=40, n_layer=3, n_head=2, d_model=32, max_len=16))
    with pytest.raises(CheckpointError, match="does not match the model"):
        C.load_model_weights(other, run / "model.safetensors")


def test_files_are_flushed_before_they_are_renamed_into_place(tmp_path, monkeypatch):
    """A power loss after the rename must not leave a complete-looking empty file: fsync comes first."""
    import os

    events = []
    real_fsync, real_replace = C.fsync, os.replace
    monkeypatch.setattr(C, "fsync", lambda p: (events.append(("fsync", str(p))), real_fsync(p))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("replace", str(a))), real_replace(a, b))[1])
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=2, eval_every=0, ckpt_every=2), tmp_path)
    for kind, path in events:
        if kind == "replace" and "checkpoints" in path:
            assert ("fsync", path) in events[: events.index((kind, path))], path
    renamed = [p for k, p in events if k == "replace" and Path(p).name.startswith(".tmp-step_")]
    assert renamed, events  # the checkpoint directory itself was flushed and renamed
    for tmp_dir in renamed:  # the trainer state (written in place, not renamed) too, before the directory
        before = events[: events.index(("replace", tmp_dir))]
        assert ("fsync", f"{tmp_dir}/{C.STATE}") in before


def test_stale_temporary_and_incomplete_checkpoints(tmp_path, capsys):
    """A killed writer's .tmp-step_* is removed at the next save; an incomplete step_* (killed during rotation or
    a copy) is never picked: resume takes the newest complete one and says which."""
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=2, eval_every=0, ckpt_every=2), tmp_path)
    root = tmp_path / "checkpoints"
    stale = root / ".tmp-step_00000004-99999"
    stale.mkdir()
    (stale / C.WEIGHTS).write_bytes(b"half")
    broken = root / "step_00000009"
    broken.mkdir()
    (broken / C.STATE).write_bytes(b"")  # the weights file is missing
    assert C.latest_checkpoint(tmp_path).name == "step_00000002"
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=4, eval_every=0, ckpt_every=2, reschedule=True), tmp_path,
        resume_from=C.latest_checkpoint(tmp_path))
    assert sorted(p.name for p in root.iterdir()) == ["step_00000002", "step_00000004"]


def test_a_partial_last_metrics_line_does_not_block_resume(tmp_path):
    """A kill while metrics.jsonl was being written leaves half a line; the resume drops it."""
    import json

    from genfeat.errors import GenfeatError
    from genfeat.train.logging import read_metrics

    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=2, eval_every=0, ckpt_every=2, log_every=1), tmp_path)
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "lo')
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=4, eval_every=0, ckpt_every=2, reschedule=True, log_every=1), tmp_path,
        resume_from=C.latest_checkpoint(tmp_path))
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4]
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines)
    (tmp_path / "metrics.jsonl").write_text(lines[0] + "\n{oops\n" + lines[1] + "\n")
    with pytest.raises(GenfeatError, match="metrics.jsonl, line 2"):
        read_metrics(tmp_path)


def test_a_flipped_byte_that_keeps_the_size_is_caught(run, tmp_path):
    """Each checkpoint records its files' sha256: a changed byte fails `restore_checkpoint` and `resume_point`
    passes over it to the checkpoint before (reporting it), even when the file keeps its size and mtime."""
    import os
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    newest, older = C.checkpoint_dirs(copy)[-1], C.checkpoint_dirs(copy)[-2]
    assert C.resume_point(copy) == newest
    target = newest / C.STATE
    st = target.stat()
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 1
    target.write_bytes(bytes(data))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_size == st.st_size
    notes = []
    assert C.resume_point(copy, report=notes.append) == older
    assert len(notes) == 1 and f"{target} does not match its sha256" in notes[0]
    lm, _ = make()
    with pytest.raises(CheckpointError, match="does not match its sha256"):
        C.restore_checkpoint(newest, lm, {"model": torch.optim.AdamW(lm.parameters())}, {})
    (older / C.CHECKSUMS).unlink()  # no checksums: not a complete checkpoint
    assert not C.is_complete(older) and C.resume_point(copy, report=notes.append) is None


def _statvfs_free(monkeypatch, free_bytes: int):
    real = os.statvfs

    class Fs:
        def __init__(self, path):
            s = real(path)
            self.f_frsize, self.f_bavail = s.f_frsize, free_bytes // s.f_frsize

    monkeypatch.setattr(C.os, "statvfs", Fs)


def test_a_full_disk_is_named_for_every_writer_of_a_checkpoint(tmp_path, monkeypatch):
    """safetensors says "os error 28" in its own error; torch.save's zip writer a RuntimeError about positions:
    both become OSError(ENOSPC) with the file's path, which the CLI prints as a full disk. A RuntimeError with room
    on the disk stays what it is."""
    import errno

    lm, _ = make()

    def full(*_, **__):
        raise Exception("Error while serializing: I/O error: No space left on device (os error 28)")

    with monkeypatch.context() as m:
        m.setattr(C, "save_file", full)
        with pytest.raises(OSError) as e:
            C.save_weights(lm.state_dict(), tmp_path / "w.safetensors")
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(tmp_path / "w.safetensors")

    def zip_writer_failed(*_, **__):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")

    opt = torch.optim.SGD(lm.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    with monkeypatch.context() as m:
        m.setattr(C.torch, "save", zip_writer_failed)
        _statvfs_free(m, 4096)
        with pytest.raises(OSError) as e:
            C.save_checkpoint(tmp_path / "run", 3, lm, {"model": opt}, {"model": sched}, {})
        assert e.value.errno == errno.ENOSPC and e.value.filename.endswith("step_00000003/trainer_state.pt")
        _statvfs_free(m, 10 << 30)
        with pytest.raises(RuntimeError, match="unexpected pos"):
            C.save_checkpoint(tmp_path / "run", 3, lm, {"model": opt}, {"model": sched}, {})
    assert C.checkpoint_dirs(tmp_path / "run") == []  # nothing half-written left
