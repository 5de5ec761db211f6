"""The few-label training sets (`data/few_labels.py`): balanced per class or drawn from all, fixed by the seed,
and refused when they ask for more than there is."""

from __future__ import annotations

import numpy as np
import pytest

from genfeat.data.few_labels import per_class_subset, random_subset
from genfeat.errors import ConfigError


def test_per_class_subset_draws_each_class_alike_and_refuses_a_small_class():
    y = np.array([0] * 10 + [1] * 6 + [2] * 8)
    a, b = per_class_subset(y, 3, seed=0), per_class_subset(y, 3, seed=1)
    assert list(np.bincount(y[a])) == [3, 3, 3] and list(a) == sorted(a) and len(set(a)) == 9
    assert not np.array_equal(a, b) and np.array_equal(a, per_class_subset(y, 3, seed=0))
    assert np.array_equal(per_class_subset(y, 0, seed=0), np.arange(len(y)))
    assert set(range(10, 16)) <= set(per_class_subset(y, 6, seed=0).tolist())  # all of class 1
    with pytest.raises(ConfigError, match="train.labeled_per_class 7 is more than class 1's 6"):
        per_class_subset(y, 7, seed=0, option="train.labeled_per_class")


def test_random_subset_is_the_seeds_own_and_never_quietly_all():
    a, b = random_subset(1000, 100, 0), random_subset(1000, 100, 1)
    assert len(a) == len(set(a.tolist())) == 100 and list(a) == sorted(a) and not np.array_equal(a, b)
    assert np.array_equal(a, random_subset(1000, 100, 0))
    assert np.array_equal(random_subset(50, 50, 0), np.arange(50)) and len(random_subset(50, 0, 3)) == 50
    with pytest.raises(ConfigError, match="labels 1,000,000,000 is more than the 50 training examples"):
        random_subset(50, 10**9, 0)
