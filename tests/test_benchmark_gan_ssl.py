"""benchmarks/gan_ssl: a longer budget trains its own runs and writes its own page, so a 10x run never reads the
CPU budget's finished runs."""

from __future__ import annotations

import argparse

from benchmarks import gan_ssl as B


def test_budgets_keep_their_runs_and_pages_apart():
    def args(epochs):
        return argparse.Namespace(epochs=epochs, runs="runs", pixelcnn_epochs=1, pixelcnn_blocks=2)
    base, long = B.job("mnist_fm", 0, args(B.EPOCHS)), B.job("mnist_fm", 0, args(100))
    assert base.name == "mnist_fm-seed0"  # the recorded runs of docs/results/gan_ssl.md keep their directories
    assert long.name != base.name and long.tags == base.tags
    assert B.page_name(B.EPOCHS) == "gan_ssl" and B.page_name(100) == "gan_ssl_100ep"
