"""`budget.catalog`: the catalog loader under the name scripts import it by (it lives in
budget/inputs/). Nothing inside the package imports this module."""

from .inputs.catalog import Catalog, load_catalog

__all__ = ["Catalog", "load_catalog"]
