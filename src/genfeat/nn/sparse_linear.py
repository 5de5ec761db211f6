"""A linear layer over sparse row features (bag-of-words, TF-IDF), batched by node id."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


class SparseRows:
    """A fixed (N, F) sparse matrix kept as CSR tensors, from which rows are gathered by id."""

    def __init__(self, matrix) -> None:
        import scipy.sparse as sp

        m = sp.csr_matrix(matrix, dtype=np.float32)
        m.sort_indices()
        self.shape = m.shape
        self.indptr = torch.from_numpy(m.indptr.astype(np.int64))
        self.indices = torch.from_numpy(m.indices.astype(np.int64))
        self.values = torch.from_numpy(m.data.astype(np.float32))

    def rows(self, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(column ids, bag offsets, values) of rows `ids`, in the layout of `F.embedding_bag`."""
        lo, hi = self.indptr[ids], self.indptr[ids + 1]
        lengths = hi - lo
        offsets = torch.cumsum(lengths, 0) - lengths
        pos = torch.repeat_interleave(lo - offsets, lengths) + torch.arange(int(lengths.sum()))
        return self.indices[pos], offsets, self.values[pos]


class SparseLinear(nn.Module):
    """y = x W^T + b for sparse rows x, computed as a weighted `embedding_bag` sum (the cost is the
    number of non-zeros, not F). Glorot-uniform weight and zero bias, as Lasagne's DenseLayer."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        bound = math.sqrt(6.0 / (in_features + out_features))
        self.weight = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def project(self, x: SparseRows, ids: Tensor) -> Tensor:
        """x W^T without the bias."""
        cols, offsets, vals = x.rows(ids)
        return F.embedding_bag(cols, self.weight, offsets, mode="sum", per_sample_weights=vals)

    def forward(self, x: SparseRows, ids: Tensor) -> Tensor:
        out = self.project(x, ids)
        return out if self.bias is None else out + self.bias
