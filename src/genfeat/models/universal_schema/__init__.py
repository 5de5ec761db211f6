"""Multi-facet universal schema and its baselines (thesis C §3.3)."""

from genfeat.models.universal_schema.config import UniversalSchemaConfig
from genfeat.models.universal_schema.inference import VOCAB, load_run
from genfeat.models.universal_schema.method import SchemaOptimConfig, schema_method
from genfeat.models.universal_schema.model import (
    CompositionalSchema,
    MultiFacetSchema,
    RowOutput,
    USchema,
    all_row_facets,
    build_model,
)

__all__ = ["VOCAB", "CompositionalSchema", "MultiFacetSchema", "RowOutput", "SchemaOptimConfig", "USchema",
           "UniversalSchemaConfig", "all_row_facets", "build_model", "load_run", "schema_method"]
