import json

import numpy as np
import pytest
import torch

from genfeat.data.streams import OrderedSegments, ShuffledWindows, read_stream, write_stream
from genfeat.errors import DataError

TOKENS = np.arange(1003) % 97


def test_ordered_segments_are_contiguous_streams():
    it = OrderedSegments(TOKENS, batch_size=4, seq_len=10, loop=False)
    batches = list(it)
    assert len(batches) == len(it)
    rows = np.asarray(TOKENS[: 4 * (1003 // 4)]).reshape(4, -1)
    xs = torch.cat([x for x, _ in batches], dim=1)
    ys = torch.cat([y for _, y in batches], dim=1)
    assert torch.equal(xs, torch.from_numpy(rows[:, :-1]).long())  # row b continues across segments
    assert torch.equal(ys, torch.from_numpy(rows[:, 1:]).long())  # targets shifted by one
    assert all(x.shape[1] == 10 for x, _ in batches[:-1])


@pytest.mark.parametrize("cls", [OrderedSegments, ShuffledWindows])
def test_sharding_is_disjoint_and_covers_global_batch(cls):
    full = cls(TOKENS, batch_size=4, seq_len=8)
    shards = [cls(TOKENS, batch_size=4, seq_len=8, rank=r, world_size=2) for r in range(2)]
    for _ in range(30):  # crosses epoch boundaries
        x, y = next(full)
        parts = [next(s) for s in shards]
        assert torch.equal(x, torch.cat([p[0] for p in parts]))
        assert torch.equal(y, torch.cat([p[1] for p in parts]))
    with pytest.raises(ValueError, match="not divisible"):
        cls(TOKENS, batch_size=4, seq_len=8, rank=0, world_size=3)


@pytest.mark.parametrize("cls", [OrderedSegments, ShuffledWindows])
def test_state_dict_resumes_at_same_batch(cls):
    a = cls(TOKENS, batch_size=2, seq_len=16)
    for _ in range(37):
        next(a)
    b = cls(TOKENS, batch_size=2, seq_len=16)
    b.load_state_dict(a.state_dict())
    for _ in range(50):
        xa, ya = next(a)
        xb, yb = next(b)
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_shuffled_windows_reshuffle_each_epoch_and_cover_all():
    tokens = np.arange(1003)
    it = ShuffledWindows(tokens, batch_size=5, seq_len=10, seed=3)
    epoch0 = torch.cat([next(it)[0] for _ in range(len(it))])
    epoch1 = torch.cat([next(it)[0] for _ in range(len(it))])
    assert not torch.equal(epoch0, epoch1)
    starts = sorted(int(r[0]) for r in epoch0)
    assert starts == list(range(0, 1000, 10))  # every window exactly once per epoch, aligned


def test_memmap_round_trip_and_truncation(tmp_path):
    mm = write_stream(tmp_path / "s.bin", TOKENS, vocab_size=97)
    assert mm.dtype == np.uint16 and np.array_equal(mm, TOKENS)
    assert read_stream(tmp_path / "s.bin", check=True).shape == (1003,)
    big = write_stream(tmp_path / "b.bin", np.array([70000, 1]), vocab_size=70001)
    assert big.dtype == np.uint32 and big[0] == 70000
    with open(tmp_path / "s.bin", "r+b") as f:
        f.truncate(100)
    with pytest.raises(DataError, match="s.bin is missing or truncated"):
        read_stream(tmp_path / "s.bin")


def test_a_changed_stream_is_caught_on_its_next_read(tmp_path):
    """Low bytes flipped in a cached stream (its size and mtime kept), or an id past the vocabulary, are a
    DataError at the next read in the process, not a run trained on them."""
    import os

    path = tmp_path / "s.bin"
    write_stream(path, TOKENS, vocab_size=97)
    read_stream(path)  # verified once
    st = path.stat()
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), 2):
        data[i] ^= 1  # every id's low bit: all stay inside the vocabulary
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(DataError, match="does not match its checksum"):
        read_stream(path)
    assert read_stream(path, check=False).shape == (1003,)
    bad = tmp_path / "v.bin"
    write_stream(bad, np.array([3, 1, 2]), vocab_size=4)
    meta = json.loads(bad.with_suffix(".json").read_text())
    bad.with_suffix(".json").write_text(json.dumps({**meta, "vocab_size": 3}))  # a header of another vocabulary
    with pytest.raises(DataError, match="holds id 3, outside its vocabulary of 3"):
        read_stream(bad)
