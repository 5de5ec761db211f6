"""GloVe and analogy readers on files written in the real layouts."""

from __future__ import annotations

import numpy as np
import pytest

from genfeat.data import word_vectors as WV
from genfeat.data.sources import source_dir
from genfeat.errors import DataError


def test_glove_and_analogies_from_the_package_layout():
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = source_dir("glove-6b-50d") / WV.GLOVE_DIR
    root.mkdir(parents=True)
    vecs = np.arange(4 * 50, dtype=np.float32).reshape(4, 50)
    np.save(root / "glove_6B_50d_emb.npy", vecs)
    pq.write_table(pa.table({"index": ["the", ",", "king", "queen"]}), root / "glove_6B_index.parquet")
    words, W = WV.load_glove(limit=3)
    assert words == ["the", ",", "king"] and W.shape == (3, 50) and (W == vecs[:3]).all()
    q = source_dir("gensim-testdata") / WV.ANALOGIES
    q.parent.mkdir(parents=True)
    q.write_text(": capital-common-countries\nAthens Greece Baghdad Iraq\n: family\nboy girl king queen\n")
    assert WV.analogy_questions() == [("capital-common-countries", "athens", "greece", "baghdad", "iraq"),
                                      ("family", "boy", "girl", "king", "queen")]


def test_missing_glove_says_how_to_fetch():
    with pytest.raises(DataError, match="genfeat data fetch glove-6b-50d"):
        WV.load_glove()
