"""benchmarks/gan_ssl: a longer budget trains its own runs and writes its own page, so a 10x run never reads the
CPU budget's finished runs; parallel workers train the density model once."""

from __future__ import annotations

import argparse
import json
import threading
import time

from benchmarks import gan_ssl as B


def test_budgets_keep_their_runs_and_pages_apart():
    def args(epochs):
        return argparse.Namespace(epochs=epochs, runs="runs", pixelcnn_epochs=1, pixelcnn_blocks=2)
    base, long = B.job("mnist_fm", 0, args(B.EPOCHS)), B.job("mnist_fm", 0, args(100))
    assert base.name == "mnist_fm-seed0"  # the recorded runs of docs/results/gan_ssl.md keep their directories
    assert long.name != base.name and long.tags == base.tags
    assert B.page_name(B.EPOCHS) == "gan_ssl" and B.page_name(100) == "gan_ssl_100ep"


def test_parallel_workers_train_the_density_model_once(tmp_path, monkeypatch):
    trained = []

    def fake_run(recipe, cfg, out, preset=None, resume=False):
        assert recipe == "pixelcnn"
        trained.append(cfg.n_blocks)
        time.sleep(0.3)  # the second worker arrives while the first trains
        (out / "summary.json").write_text(json.dumps({"epochs": 1}))
    monkeypatch.setattr(B, "run_recipe", fake_run)
    workers = [threading.Thread(target=B.density_run, args=(tmp_path, "mnist", 1, 2)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert trained == [2] and (tmp_path / "pixelcnn-mnist" / "summary.json").exists()


def test_page_lists_each_run_with_its_best_epoch_and_samples():
    runs = [{"variant": "mnist_fm_ld", "seed": 1, "test_errors": 170, "valid_errors": 177, "best_epoch": 97,
             "max_logp_generated": -259.0, "share_above_epsilon": 0.325, "epsilon": -875.6},
            {"variant": "mnist_fm", "seed": 0, "test_errors": 300, "valid_errors": 310}]  # a run without them
    page = B.markdown({"seeds": [0, 1], "results": {"epochs": 100, "runs": runs}})
    rows = [line for line in page.splitlines() if line.startswith("| MNIST (100 labels) | FM |")
            or line.startswith("| MNIST (100 labels) | FM + LD |")][-2:]
    assert rows == ["| MNIST (100 labels) | FM | 0 | 300 | 310 | – | – | – |",
                    "| MNIST (100 labels) | FM + LD | 1 | 170 | 177 | 97 | -259.0 | 0.325 |"]
    assert "ε = -875.6" in page


def test_training_course_reads_epochs_takeovers_and_the_late_feature_matching_loss(tmp_path):
    rows = []
    for epoch in range(1, 13):
        rows.append({"step": 500 * epoch, "loss_d": 0.005 if epoch in (3, 4) else 0.4, "g_fm": 100.0 if epoch < 3 else
                     float(epoch)})
        rows.append({"step": 500 * epoch, "valid_errors": 1000.0 - epoch, "test_errors": 1.0})
    rows.insert(5, rows[4])  # a training row written twice (a resumed run) counts once
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    course = B.training_course(tmp_path)
    assert course == {"valid_errors": {"10": 990}, "takeover_epochs": [3, 4],
                      "g_fm_last10": sum(range(3, 13)) / 10, "g_ld_last10": None}  # an FM run logs no g_ld
