"""Shared check of the HF-directory parity tests: the weights file genfeat wrote equals the one HF wrote."""

from pathlib import Path

import torch
from safetensors.torch import load_file


def assert_same_weights_file(ours: Path, hf: Path) -> None:
    """Same key set (HF leaves tied weights out) and bit-identical tensors in two `model.safetensors` files."""
    a, b = load_file(str(ours / "model.safetensors")), load_file(str(hf / "model.safetensors"))
    assert set(a) == set(b), set(a) ^ set(b)
    for k, v in b.items():
        assert torch.equal(a[k], v), k
