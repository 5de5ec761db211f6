"""Unsupervised pattern-entailment detection (thesis C §3.3.2.2, Table 3.7; spec multi-facet-universal-schema.md
§8): a trained universal-schema model scores labelled pattern pairs, with no training on the labels.

    classification  score = Asym(premise -> hypothesis) (Eq. 3.10) in each pair's labelled direction (the
                    reference's convention, spec pitfall 9: for `<` pairs from the replaced to the original
                    pattern), AP@all against "is an entailment"; `ap_label_free` ranks by the larger direction
    direction       diff = Asym(original -> replaced) - Asym(replaced -> original) > 0: the original is the premise
                    (OursDiff); a single embedding (K = 1, CUSchema) gives diff = 0: 50 %
    baselines       Random: one score for every pair (AP = the entailment rate, every direction a tie);
                    Freq Diff: (Freq(replaced) - Freq(original)) / max of the two (general patterns co-occur with
                    more entity pairs), the 6th and 7th columns of the file, as score (labelled direction) and diff

`evaluate(facets_original, facets_replaced)` takes any model's facets of the pairs' two patterns.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from genfeat.analysis.facet_coverage import asym
from genfeat.data.re_entailment import EntailmentPair
from genfeat.metrics.entailment import entailment_metrics


class PatternEntailment:
    def __init__(self, pairs: list[EntailmentPair]):
        self.pairs = pairs
        self.labels = np.array([p.label for p in pairs])
        self.groups = [p.inserted for p in pairs]
        self.reverse = self.labels == "<"

    def _metrics(self, forward: np.ndarray, backward: np.ndarray) -> dict[str, float]:
        """forward = a score original -> replaced, backward replaced -> original."""
        labelled = np.where(self.reverse, backward, forward)
        out = entailment_metrics(labelled, forward - backward, self.labels, self.groups)
        free = entailment_metrics(np.maximum(forward, backward), forward - backward, self.labels, self.groups)
        return out | {"ap_label_free": free["ap"]}

    def evaluate(self, original: tuple[Tensor, Tensor | None], replaced: tuple[Tensor, Tensor | None]
                 ) -> dict[str, float]:
        """(facets (n, K, d), mask (n, K) or None) of the original and of the replaced patterns."""
        (fo, mo), (fr, mr) = original, replaced
        forward = asym(fo, fr, mo, mr).double().numpy()
        backward = asym(fr, fo, mr, mo).double().numpy()
        return self._metrics(forward, backward)

    def random(self) -> dict[str, float]:
        zero = np.zeros(len(self.pairs))
        return self._metrics(zero, zero)

    def freq_diff(self) -> dict[str, float]:
        fo = np.array([p.freq_original for p in self.pairs], dtype=np.float64)
        fr = np.array([p.freq_replaced for p in self.pairs], dtype=np.float64)
        d = (fr - fo) / np.maximum(np.maximum(fo, fr), 1e-12)
        return self._metrics(d / 2, -d / 2)

    def stats(self) -> dict[str, int]:
        return {label: int((self.labels == label).sum()) for label in (">", "<", ":", "N")}
