"""A grid of images as one PNG (a run report's generated samples)."""

from __future__ import annotations

from pathlib import Path

import torch


def save_image_grid(images: torch.Tensor, path: Path, nrow: int = 10) -> None:
    """`images` (N, C, H, W), pixels in [0, 1] (clamped), as rows of `nrow` (the last partial row dropped); one
    channel in grey, three in colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = (len(images) // nrow) * nrow
    _, C, H, W = images.shape
    grid = images[:n].reshape(-1, nrow, C, H, W).permute(0, 3, 1, 4, 2).reshape(-1, nrow * W, C).clamp(0, 1).numpy()
    if C == 1:
        plt.imsave(path, grid[..., 0], cmap="gray", vmin=0, vmax=1)
    else:
        plt.imsave(path, grid)
