"""`genfeat run pixelcnn` and `genfeat run gan_ssl` end to end on an MNIST pickle in the real format."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from genfeat.cli import main


def test_pixelcnn_then_gan_ssl_with_ld(mnist_pickle, tmp_path, capsys):
    dens = tmp_path / "dens"
    assert main(["run", "pixelcnn", "--preset", "tiny", "--out", str(dens)]) == 0
    s = json.loads((dens / "summary.json").read_text())
    assert s["test_bits_per_dim"] > 0 and s["train_logp_percentiles"]["2"] <= s["train_logp_percentiles"]["50"]
    out = tmp_path / "gan"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--out", str(out), "--density.run", str(dens),
                 "--train.lambda_ld", "1e-4", "--train.ld_samples", "10"]) == 0
    g = json.loads((out / "summary.json").read_text())
    assert 0 <= g["test_errors"] <= 60 and {"r_real", "r_gen", "max_logp_generated", "epsilon"} <= set(g)
    assert (out / "samples.png").exists() and (out / "loss_curve.png").exists()  # loss_d and loss_g
    assert "![loss curve](loss_curve.png)" in (out / "report.md").read_text()
    from genfeat.train.checkpoint import load_weights

    names = {k.split(".")[0] for k in load_weights(out / "model.safetensors")}
    assert names == {"discriminator", "generator"}  # every trained network, by name
    capsys.readouterr()
    late = tmp_path / "late"  # LD would start after the run's last step: its density pass is skipped, and said
    assert main(["run", "gan_ssl", "--preset", "tiny", "--out", str(late), "--density.run", str(dens),
                 "--train.lambda_ld", "1e-4", "--train.ld_start", "1000"]) == 0
    assert "end before train.ld_start 1,000: the low-density term never applies" in capsys.readouterr().err
    assert "epsilon" not in json.loads((late / "summary.json").read_text())


def test_supervised_baseline_and_missing_density(mnist_pickle, tmp_path):
    assert main(["run", "gan_ssl", "--preset", "tiny", "--train.method", "supervised",
                 "--out", str(tmp_path / "s")]) == 0
    s = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert "r_gen" not in s and s["method"] == "supervised"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--train.lambda_ld", "1e-4", "--out", str(tmp_path / "x")]) != 0


def test_a_density_run_of_another_recipe_is_one_line(mnist_pickle, tmp_path, capsys):
    lm_run = tmp_path / "lm-run"  # what `genfeat run lm` leaves that the density loader looks at
    lm_run.mkdir()
    (lm_run / "config.yaml").write_text("recipe: lm\npreset: tiny\nconfig: {model: {d_model: 32}}\n")
    (lm_run / "model.safetensors").write_bytes(b"")
    assert main(["run", "gan_ssl", "--preset", "tiny", "--density.run", str(lm_run), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"genfeat: error: {lm_run} is a 'lm' run, not a pixelcnn run; train one with `genfeat run "
                       "pixelcnn --preset mnist --out DIR`") and not (tmp_path / "x").exists()


def _svhn_files(root, n_train=5300, n_test=100):
    from scipy.io import savemat

    rng = np.random.default_rng(0)
    for name, n in (("train_32x32.mat", n_train), ("test_32x32.mat", n_test)):
        y = rng.integers(1, 11, (n, 1)).astype(np.uint8)  # 10 means digit 0
        x = (rng.random((32, 32, 3, n)) * 60 + y[:, 0] * 18).astype(np.uint8)
        savemat(root / name, {"X": x, "y": y})


def _cifar_files(root, per_batch=1060, n_test=100):
    rng = np.random.default_rng(0)
    for name, n in [*((f"data_batch_{i}", per_batch) for i in range(1, 6)), ("test_batch", n_test)]:
        y = rng.integers(0, 10, n)
        x = (rng.random((n, 3072)) * 60 + y[:, None] * 18).astype(np.uint8)
        with open(root / name, "wb") as f:
            pickle.dump({b"batch_label": name.encode(), b"labels": y.tolist(), b"data": x}, f, protocol=2)


@pytest.mark.parametrize(("dataset", "make", "extra"), [
    ("svhn", _svhn_files, ["--train.lambda_pt", "0.8", "--train.lambda_ent", "0.1", "--train.ent_over", "k+1"]),
    ("cifar10", _cifar_files, ["--train.lambda_vi", "0.01"])])
def test_gan_ssl_on_32x32_colour_images(dataset, make, extra, tmp_path):
    """SVHN (.mat) and CIFAR-10 (python batches) in their real formats through the conv networks, with the
    thesis's best settings' terms (FM + PT + Ent, the K+1 entropy; FM + VI)."""
    root = tmp_path / dataset
    root.mkdir()
    make(root)
    out = tmp_path / "run"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--data.dataset", dataset, "--data.root", str(root),
                 "--model.conv_widths", "8,16", "--model.conv_gen_width", "8", "--model.d_z", "16", *extra,
                 "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["dataset"] == dataset and 0 <= s["test_errors"] <= 100 and {"r_real", "r_gen"} <= set(s)
    assert (out / "samples.png").exists()
    assert "of 100" in (out / "report.md").read_text()


def test_32x32_datasets_need_a_root_and_refuse_ld(tmp_path):
    assert main(["run", "gan_ssl", "--preset", "svhn_1000", "--out", str(tmp_path / "a")]) != 0
    _svhn_files(tmp_path, n_train=10, n_test=5)
    assert main(["run", "gan_ssl", "--preset", "svhn_1000", "--data.root", str(tmp_path), "--out",
                 str(tmp_path / "b")]) != 0  # 10 training images: nothing left after the 5,000 held out
    assert main(["run", "gan_ssl", "--preset", "svhn_1000", "--data.root", str(tmp_path / "nowhere"), "--out",
                 str(tmp_path / "c")]) != 0
    assert main(["run", "gan_ssl", "--preset", "svhn_1000", "--data.root", str(tmp_path), "--train.lambda_ld", "1",
                 "--out", str(tmp_path / "d")]) != 0
    assert not any((tmp_path / n).exists() for n in "abcd")


def test_gan_ssl_run_resumes_from_the_command_line(mnist_pickle, tmp_path):
    """`--resume` continues a finished one-epoch run for a second epoch (a larger budget): the run directory then
    holds both epochs' evaluations and a checkpoint at the end of each."""
    from genfeat.train.logging import read_metrics

    out = tmp_path / "gan"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--out", str(out)]) == 0
    assert main(["run", "--resume", str(out), "--train.epochs", "2", "--train.reschedule", "true"]) == 0
    evals = [r["step"] for r in read_metrics(out) if "valid_errors" in r]
    assert evals == [6, 12] and sorted(d.name for d in (out / "checkpoints").iterdir()) == ["step_00000006",
                                                                                          "step_00000012"]
    assert json.loads((out / "summary.json").read_text())["epochs"] == 2


def test_gan_ssl_honours_train_max_steps(mnist_pickle, tmp_path):
    """train.max_steps is the iteration budget (the spelling every recipe honours), an epoch and a half here."""
    out = tmp_path / "gan"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--train.max_steps", "9", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["steps"] == 9 and s["epochs"] == 1.5


def test_pixelcnn_honours_train_max_steps(mnist_pickle, tmp_path):
    out = tmp_path / "dens"
    assert main(["run", "pixelcnn", "--preset", "tiny", "--train.max_steps", "3", "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 3


@pytest.mark.dist
def test_torchrun_gan_ssl_runs_data_parallel(mnist_pickle, tmp_path):
    """`genfeat run gan_ssl` under torchrun (2 gloo ranks): every rank trains its part of the batches, rank 0
    records the run (the exactness of the ranks' arithmetic: tests/gan_ssl/test_gan_ssl_train.py)."""
    from tests.dist_run import torchrun_genfeat

    out = tmp_path / "two"
    torchrun_genfeat(["run", "gan_ssl", "--preset", "tiny", "--out", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert s["world_size"] == 2 and 0 <= s["test_errors"] and s["steps"] == 6


def test_a_data_root_that_mnist_would_ignore_is_refused():
    from genfeat.data.images import ImageDataConfig
    from genfeat.errors import ConfigError

    for dataset in ("mnist", "fashion_mnist"):
        with pytest.raises(ConfigError, match=f"data.root is for svhn and cifar10; {dataset} is read from the data "
                                              f"home ..genfeat data fetch {dataset.replace('_', '-')}"):
            ImageDataConfig(dataset=dataset, root="/some/dir")
    assert ImageDataConfig(dataset="svhn", root="/some/dir").root == "/some/dir"
