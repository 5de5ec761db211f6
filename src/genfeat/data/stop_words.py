"""Stop words: the tokens that never become a bag-of-words target (multi-facet embeddings' neighbour words,
thesis C §3.2.1.1; the option generator's continuation words, §4).

    stop_list("english")    genfeat's English list (below) + punctuation + <eos> / <unk>
    stop_list(PATH)         one word per line (UTF-8; blank lines and lines starting with "#" skipped), lower-cased
    is_stop(token, words)   in the list, or a token with no letter or digit (punctuation, symbols): always a stop

Why this list and not scikit-learn's: scikit-learn's 318 words contain no punctuation and do contain content words
(interest, bill, system, fire, computer, amount), so with it about a fifth of the BBC News targets were
punctuation and some topical words were dropped. The thesis's authors use a list of English function words plus
punctuation and the corpus markers (their interactive-generation repository's `resources/stop_word_list`); this
is a list of the same kind, written for genfeat: closed-class words only (pronouns, determiners, auxiliaries,
prepositions, conjunctions, a few adverbs) and their contractions in the form `data.facets.tokenize` produces
("don't" is one token). Numbers are not stop words (the reference keeps them).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from genfeat.errors import ConfigError

MARKERS = frozenset({"<eos>", "<unk>", "<pad>"})

ENGLISH = frozenset("""
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves
what which who whom whose this that these those when where why how
am is are was were be been being have has had having do does did doing will would shall should can could cannot
may might must ought let
a an the some any each every no all both few more most other such own same either neither
about above across after against along among around at before behind below beneath beside besides between beyond
by down during except for from in inside into near of off on onto out outside over per since than through
throughout till to toward towards under underneath until up upon via with within without
and but or nor so yet if because as while although though whether unless
not very too also just only then there here again further once now ever even etc
don't doesn't didn't isn't aren't wasn't weren't haven't hasn't hadn't won't wouldn't can't couldn't shouldn't
mustn't shan't needn't i'm i've i'd i'll you're you've you'd you'll he's he'd he'll she's she'd she'll it's it'd
it'll we're we've we'd we'll they're they've they'd they'll that's there's here's what's who's where's how's
let's
""".split())


def is_punctuation(token: str) -> bool:
    """A token with no letter or digit."""
    return not any(c.isalnum() for c in token)


@lru_cache(maxsize=8)
def stop_list(name: str = "english") -> frozenset[str]:
    """The named list ("english") or the words of a file (module docstring), with the corpus markers."""
    if name == "english":
        return ENGLISH | MARKERS
    path = Path(name)
    if not path.is_file():
        raise ConfigError(f"stop words: {name!r} is neither 'english' nor a file")
    words = [w.strip().lower() for w in path.read_text(encoding="utf-8").splitlines()]
    return frozenset(w for w in words if w and not w.startswith("#")) | MARKERS


def is_stop(token: str, words: frozenset[str]) -> bool:
    return token in words or is_punctuation(token)
