"""Interaction readers, time ordering, the leave-one-out split (spec §12 tests 1, 11) and the synthetic worlds."""

from __future__ import annotations

import numpy as np
import pytest

from genfeat.data.seqrec import (
    Interactions,
    build_sequences,
    leave_one_out,
    load_atomic_inter,
    load_ml1m_ratings,
    make_seqdata,
    repeat_rate,
    training_windows,
)
from genfeat.data.seqrec_synthetic import make_world
from genfeat.errors import DataError


def test_leave_one_out_exact_examples():
    a, b, c, d, e = 1, 2, 3, 4, 5
    train, valid, test = leave_one_out([np.array([a, b, c, d, e])], max_len=50)
    assert [list(h[:n]) for h, n in zip(train.history, train.length, strict=True)] == [[a], [a, b]]
    assert list(train.target) == [b, c]
    assert list(valid.history[0, : valid.length[0]]) == [a, b, c] and valid.target[0] == d
    assert list(test.history[0, : test.length[0]]) == [a, b, c, d] and test.target[0] == e
    assert (train.history[0, 1:] == 0).all()  # right padding


def test_histories_keep_the_most_recent_items_and_augmentation_count():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 50, n) for n in (3, 7, 60, 2, 12)]
    train, valid, test = leave_one_out(seqs, max_len=5)
    assert len(train) == sum(len(s) - 3 for s in seqs if len(s) >= 3)
    assert len(valid) == len(test) == 4  # the 2-item user has no split
    long = seqs[2]
    assert list(test.history[2]) == list(long[-6:-1]) and test.length[2] == 5 and test.target[2] == long[-1]


def _window_examples(w):
    """(history, target) of every scored position of the windows."""
    return [(tuple(inp[: p + 1]), int(tg[p])) for inp, tg in zip(w.inputs, w.targets, strict=True)
            for p in np.flatnonzero(tg)]


@pytest.mark.parametrize("stride", [1, 2, 3, 5, 6])
def test_training_windows_score_every_training_target_once(stride):
    """Items are unique per position (user offset + index), so a target names its prefix example: stride 1 gives
    every example's history exactly, a larger stride a suffix of it of at least max_len - stride + 1 items."""
    L = 6
    seqs = [1000 * u + np.arange(1, n + 1) for u, n in enumerate((3, 4, 9, 12, 30, 31, 57, 2))]
    ex = leave_one_out(seqs, L)[0]
    truth = {int(t): tuple(h[:n]) for h, n, t in zip(ex.history, ex.length, ex.target, strict=True)}
    w = training_windows(seqs, L, stride)
    got = _window_examples(w)
    assert w.n_targets == len(got) == len(ex) and sorted(t for _, t in got) == sorted(truth)
    for hist, t in got:
        full = truth[t]
        assert full[len(full) - len(hist):] == hist and len(hist) >= min(len(full), L - stride + 1)
        if stride == 1:
            assert hist == full
    assert (w.inputs[w.targets > 0] > 0).all()  # scored positions hold real items
    if stride > 1:
        assert len(w) < len(training_windows(seqs, L, 1))
    with pytest.raises(ValueError):
        training_windows(seqs, L, L + 1)


def _write_inter(path, rows):
    path.write_text("user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
                    + "".join(f"{u}\t{i}\t3\t{t}\n" for u, i, t in rows))


def test_atomic_reader_sorts_by_time_stably_remaps_and_filters(tmp_path):
    rows = [("u1", "m9", 30), ("u2", "m5", 5), ("u1", "m7", 10), ("u1", "m9", 20), ("u1", "m8", 20),
            ("u2", "m7", 1), ("u3", "m1", 1)]
    _write_inter(tmp_path / "x.inter", rows)
    inter = load_atomic_inter(tmp_path / "x.inter")
    seqs, tokens = build_sequences(inter, min_user_inter=2)
    # u1 by time, ties (20) in file order: m7, m9, m8, m9 (duplicates kept); u2: m7, m5; u3 dropped (1 item)
    assert [[tokens[i] for i in s] for s in seqs] == [["m7", "m9", "m8", "m9"], ["m7", "m5"]]
    assert list(tokens) == ["[PAD]", "m9", "m5", "m7", "m8"]  # ids by first appearance in the file; m1 gone
    with pytest.raises(DataError, match="product_id"):
        load_atomic_inter(tmp_path / "x.inter", item_field="nope")


def test_ml1m_reader(tmp_path):
    (tmp_path / "ratings.dat").write_text("1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n")
    inter = load_ml1m_ratings(tmp_path / "ratings.dat")
    assert list(inter.items) == ["1193", "661", "1193"] and inter.times[1] == 978302109
    (tmp_path / "bad.dat").write_text("1::2::3\n")
    with pytest.raises(DataError, match="UserID"):
        load_ml1m_ratings(tmp_path / "bad.dat")


def test_repeat_rate_and_stats():
    inter = Interactions(np.array(["a"] * 4 + ["b"] * 4), np.array(["x", "y", "x", "x", "x", "y", "z", "w"]),
                         np.arange(8.0), "t")
    data = make_seqdata(inter, max_len=10, min_user_inter=3)
    # a: x y x x -> valid target x (in history), test x; b: x y z w -> valid z, test w (new)
    assert repeat_rate(data.valid) == 0.5 and repeat_rate(data.test) == 0.5
    s = data.stats()
    assert (s["users"], s["items"], s["interactions"]) == (2, 4, 8)


@pytest.mark.parametrize("world", ["A", "B"])
def test_synthetic_world_truth(world):
    data, truth = make_world(world, n_users=200, seed=1)
    assert truth.shape == (len(data.valid), data.n_items + 1)
    np.testing.assert_allclose(truth.sum(1), 1.0, atol=1e-12)
    assert (truth[:, 0] == 0).all()
    hist_mass = np.array([truth[n, h[h > 0]].sum() if world == "A" else truth[n, np.unique(h[h > 0])].sum()
                          for n, h in enumerate(data.valid.history)])
    target_p = truth[np.arange(len(truth)), data.valid.target]
    assert (target_p > 0).all()  # the targets were drawn from these distributions
    if world == "A":
        assert hist_mass.max() == 0.0 and repeat_rate(data.valid) == 0.0
    else:  # rho = 0.5 of the mass on the last 5 distinct items
        np.testing.assert_allclose(hist_mass, 0.5, atol=1e-9)
        assert 0.4 < repeat_rate(data.valid) < 0.6


def test_the_recipe_reads_the_synthetic_worlds_by_name():
    """data.dataset synthetic:A|B[:SEED] is `make_world` of that world and seed, with the model's history length."""
    from genfeat.data.seqrec_sources import SeqRecDataConfig, load_seqdata
    from genfeat.errors import ConfigError

    data = load_seqdata(SeqRecDataConfig(dataset="synthetic:B:3"), 12)
    ref, _ = make_world("B", seed=3, history_len=12)
    assert np.array_equal(data.valid.history, ref.valid.history) and data.valid.history.shape[1] == 12
    assert np.array_equal(load_seqdata(SeqRecDataConfig(dataset="synthetic:A"), 20).test.target,
                          make_world("A", seed=0)[0].test.target)
    for bad in ("synthetic:C", "synthetic:A:x", "synthetic"):
        with pytest.raises(ConfigError, match="synthetic"):
            load_seqdata(SeqRecDataConfig(dataset=bad), 20)


def test_example_batches_cover_an_epoch_once_split_over_ranks_and_resume_where_they_stopped():
    from genfeat.data.seqrec import ExampleBatches

    ex = make_world("A", seed=0, history_len=8)[0].train
    n, b = len(ex), 64
    one = ExampleBatches(ex, b, seed=5)
    epoch = [next(one) for _ in range(one.steps_per_epoch)]
    assert one.steps_per_epoch == -(-n // b) and len(epoch[-1][2]) == n - b * (one.steps_per_epoch - 1)
    seen = np.concatenate([e[0].numpy() for e in epoch])  # every history row once (rows matched by content)
    assert sorted(map(bytes, seen)) == sorted(map(bytes, ex.history))
    assert not np.array_equal(next(one)[0].numpy(), epoch[0][0].numpy())  # each epoch draws its own order
    ranks = [ExampleBatches(ex, b, seed=5, rank=r, world_size=2) for r in range(2)]
    again = ExampleBatches(ex, b, seed=5)
    for _ in range(one.steps_per_epoch + 2):  # into the next epoch: a new permutation
        whole, parts = next(again), [next(r) for r in ranks]
        for i in range(3):
            assert np.array_equal(whole[i].numpy(), np.concatenate([p[i].numpy() for p in parts]))
    state = again.state_dict()
    resumed = ExampleBatches(ex, b, seed=5)
    resumed.load_state_dict(state)
    assert all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(next(again), next(resumed), strict=True))


def test_training_batches_hold_about_batch_size_targets_whether_prefixes_or_windows():
    from genfeat.data.seqrec_sources import SeqRecDataConfig, training_batches

    data = make_world("A", seed=0, history_len=10)[0]
    rows, per_batch, batches = training_batches(data, SeqRecDataConfig(batch_size=32), 10, seed=0)
    assert rows is data.train and per_batch == 32 and len(next(batches)[2]) == 32
    rows, per_batch, batches = training_batches(data, SeqRecDataConfig(batch_size=32, stride=3), 10, seed=0)
    assert len(rows) < len(data.train) and per_batch == round(32 * len(rows) / rows.n_targets) < 32
    assert len(next(batches)[0]) == per_batch and batches.steps_per_epoch == -(-len(rows) // per_batch)
