"""Cold-start citation and authorship prediction with multi-facet paper embeddings (thesis C §3.4)."""

from genfeat.models.citation.config import CitationConfig
from genfeat.models.citation.inference import VOCAB, load_run
from genfeat.models.citation.model import CitationModel, PaperFacets

__all__ = ["VOCAB", "CitationConfig", "CitationModel", "PaperFacets", "load_run"]
