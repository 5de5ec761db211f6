"""The pattern-entailment labels of multi-facet universal schema (thesis C §3.3.2.2, Table 3.7; spec
multi-facet-universal-schema.md §8): the release's TSV format, one labelled pattern pair per line, no header:

    label  POS  pattern_original  pattern_replaced  n1  n2  n3  n4

label `>` (the original entails the replaced: the original is the premise), `<` (the reverse), `:` (paraphrase)
or `N` (other); POS of the replaced word in {n, v, a, r, s}; n2 and n3 (the 6th and 7th columns) are the two
patterns' entity-pair frequencies (what the reference evaluation's Freq Diff reads). The replaced pattern swaps one
word of the original for a WordNet hypernym; `inserted` is what it added (its words absent from the original, the
placeholders aside): the groups of the macro direction accuracy.

The 285-pair validation split ships in `shared/data/re-entailment/` (sha256 in its README); any file in this format
reads (`read_entailment_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from genfeat.data.universal_schema import ARGS, pattern_tokens
from genfeat.errors import DataError

LABELS = (">", "<", ":", "N")
POS = ("n", "v", "a", "r", "s")


@dataclass(frozen=True)
class EntailmentPair:
    label: str
    pos: str
    original: str
    replaced: str
    freq_original: float  # the 6th column
    freq_replaced: float  # the 7th column

    @property
    def entails(self) -> bool:
        return self.label in (">", "<")

    @property
    def inserted(self) -> tuple[str, ...]:
        """The replaced pattern's words that the original lacks (the hypernym), in order."""
        have = set(pattern_tokens(self.original))
        return tuple(w for w in pattern_tokens(self.replaced) if w not in have and w not in ARGS)


def read_entailment_pairs(path: str | Path) -> list[EntailmentPair]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"no entailment pair file at {path}")
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 8:
            raise DataError(f"{path}:{n}: {len(cols)} tab-separated columns, the format has 8 (label, POS, two "
                            "patterns, four counts)")
        label, pos, original, replaced, *counts = cols
        if label not in LABELS:
            raise DataError(f"{path}:{n}: label {label!r} is not one of {' '.join(LABELS)}")
        if pos not in POS:
            raise DataError(f"{path}:{n}: POS {pos!r} is not one of {' '.join(POS)}")
        try:
            nums = [float(c) for c in counts]
        except ValueError:
            raise DataError(f"{path}:{n}: the last four columns must be numbers, got {counts}") from None
        if not pattern_tokens(original) or not pattern_tokens(replaced):
            raise DataError(f"{path}:{n}: an empty pattern")
        pairs.append(EntailmentPair(label, pos, original.strip(), replaced.strip(), nums[1], nums[2]))
    if not pairs:
        raise DataError(f"{path}: no pattern pairs")
    return pairs
