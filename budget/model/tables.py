"""The Catalog sheet's lookup tables (accelerators, architectures, exchange rates, activation bytes)
and the lookups of the chosen accelerator's row that the other groups read."""

from __future__ import annotations

from ..formula.expr import IFERROR, Expr, Lookup, Ref
from .lineitems import ModelBuilder

ACCELERATOR_TABLE = "acc"
# issue 13: each accelerator's architecture date and fitted matmul factor (a table of its own, so
# the accelerator table still prints one page wide)
ARCHITECTURE_TABLE = "arch"
ACTIVATION_TABLE = "act"
FX_TABLE = "fx"


def catalog_tables(b: ModelBuilder) -> None:
    """The Catalog sheet's lookup tables, (column, unit): titles and headers are messages."""
    b.table(ACCELERATOR_TABLE, [
        ("id", "text"), ("name", "text"), ("vendor", "text"), ("peak_bf16_tflops", "TFLOPS"),
        ("hbm_gb", "GB"), ("gpus_per_node", "GPUs"), ("intra_node_gb_per_s", "GB/s"),
        ("inter_node_gbit_per_s", "Gbit/s"), ("typical_mfu", "fraction"), ("tdp_w", "W"),
        ("node_overhead_kw", "kW"), ("node_price", "price"), ("node_price_currency", "text"),
        # appended, so the columns above keep their places; blank where not published: a formula
        # reads them behind ISNUMBER (INDEX of a blank cell is 0 in Excel), as tdp_w is read
        ("peak_fp8_tflops", "TFLOPS"), ("peak_fp4_tflops", "TFLOPS"), ("scale_up_domain", "GPUs"),
    ])
    # when the architecture first shipped, and its fitted matmul factor (blank where no published
    # row measured the architecture: scaled from the reference accelerator's)
    b.table(ARCHITECTURE_TABLE, [("id", "text"), ("architecture_launched", "date"), ("fitted_matmul_factor", "×")])
    b.table(FX_TABLE, [("id", "text"), ("rate", "×")])
    b.table(ACTIVATION_TABLE, [
        ("id", "text"), ("replicated", "bytes/(s·b·h)"), ("split", "bytes/(s·b·h)"),
        ("attention", "bytes/(s·b·h)"), ("recompute_overhead", "fraction of compute"),
    ])


def acc(column: str) -> Lookup:
    return Lookup(ACCELERATOR_TABLE, column, Ref("gpu_type"))


def arch_figure(column: str) -> Expr:
    """A figure of the Architectures table; blank for an accelerator a reviewer added to the
    accelerator table but not to this one (its software then counts as mature, its factor scaled)."""
    found = Lookup(ARCHITECTURE_TABLE, column, Ref("gpu_type"))
    return IFERROR(found, "")
