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
    assert state["step"] == 8 and state["data"][0]["pos"] > 0 and len(state["rng"]) == 1
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
