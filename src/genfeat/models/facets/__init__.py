"""Multi-facet embeddings (thesis C §3.2): a sequence -> K facet vectors in a frozen word-embedding space, trained
with the NNSC loss (`genfeat.losses.nnsc`) to predict the cluster centres of the words around the sequence."""

from genfeat.models.facets.config import FacetConfig
from genfeat.models.facets.decoder import FacetDecoder, FacetOutput
from genfeat.models.facets.encoders import BackboneEncoder, Encoded, input_table_start, word_table_start
from genfeat.models.facets.model import FacetModel

__all__ = ["BackboneEncoder", "Encoded", "FacetConfig", "FacetDecoder", "FacetModel", "FacetOutput",
           "input_table_start", "word_table_start"]
