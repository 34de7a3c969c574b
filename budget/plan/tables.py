"""The lookup tables a plan carries (the Catalog sheet's rows): accelerators, their
architectures, the activation-memory modes, each row with its citations."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.dates import excel_serial
from ..core.i18n import DEFAULT_LANG, fmt, text
from ..inputs.catalog import OPTIONAL_FIGURES, Catalog
from ..inputs.scenario import Scenario


@dataclass(frozen=True)
class TableData:
    """A lookup table's rows, in the order the Catalog sheet shows them."""
    rows: tuple[dict, ...]
    sources: tuple[str, ...]      # one citation per row, shown beside it

    def lookup(self) -> dict[str, dict[str, object]]:
        """column -> row id (lower case) -> value; made once per table (the plan, its what-ifs
        and the writers read it, none changes it)."""
        found = self.__dict__.get("_lookup")
        if found is None:
            columns = self.rows[0].keys() if self.rows else ()
            found = self.__dict__["_lookup"] = {c: {str(r["id"]).lower(): r[c] for r in self.rows} for c in columns}
        return found


# Korthikanti et al. 2022, Table 2, as (replicated, split-by-TP, attention coefficient), and
# the compute each mode adds: full recomputation repeats the forward pass (2 of 6 FLOPs per
# parameter per token, 8ND instead of 6ND); selective recomputation adds a few percent. What
# each row is, in words: plan.tables.activation_modes.<recompute>_<sequence parallel>.
SELECTIVE_OVERHEAD = 0.04
FULL_OVERHEAD = 2 / 6
ACTIVATION_MODES = {
    "none/no": (10, 24, 5, 0.0),
    "none/yes": (0, 34, 5, 0.0),
    "selective/no": (10, 24, 0, SELECTIVE_OVERHEAD),
    "selective/yes": (0, 34, 0, SELECTIVE_OVERHEAD),
    "full/no": (2, 0, 0, FULL_OVERHEAD),
    "full/yes": (0, 2, 0, FULL_OVERHEAD),
}


def architecture_table(catalog: Catalog, lang: str = DEFAULT_LANG) -> TableData:
    """Each accelerator's architecture date and fitted matmul factor (issue 13), blank where the
    catalog has none (a scenario's own row) or no published row measured the architecture."""
    rows, sources = [], []
    for acc in catalog.accelerators:
        launched, fit = acc.architecture_launched, catalog.efficiency
        factor = fit.matmul_factor_of(acc.id) if fit else None
        rows.append({"id": acc.id,
                     "architecture_launched": None if launched is None else excel_serial(launched.value),
                     "fitted_matmul_factor": factor})
        cites = [] if launched is None else [launched.cite()]
        if factor is not None:
            cites.append(fmt("plan.bind.fitted_default", lang, rows=fit.rows, as_of=fit.as_of.isoformat()))
        sources.append("; ".join(cites))
    return TableData(tuple(rows), tuple(sources))


_LAST_ACCELERATOR_TABLE: list = []   # [catalog, key, table]: the last one made


def accelerator_table(catalog: Catalog, scenario: Scenario | None = None) -> TableData:
    """The accelerators' rows, each with its citations; the last one made is kept for the same
    catalog and the same scenario figures it reads (a sweep's scenarios share it)."""
    key = (None if scenario is None else
           (scenario.language, scenario.hardware.accelerator, scenario.hardware.peak_tflops,
            tuple(r.id for r in scenario.catalog.accelerators)))
    last = _LAST_ACCELERATOR_TABLE
    if last and last[0] is catalog and last[1] == key:
        return last[2]
    table = _accelerator_table(catalog, scenario)
    last[:] = [catalog, key, table]
    return table


def _accelerator_table(catalog: Catalog, scenario: Scenario | None = None) -> TableData:
    lang = scenario.language if scenario is not None else DEFAULT_LANG
    rows, sources = [], []
    for acc in catalog.accelerators:
        row = {"id": acc.id, "name": acc.name, "vendor": acc.vendor}
        cites = []
        for col in ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                    "inter_node_gbit_per_s", "typical_mfu", "tdp_w"):
            fig = getattr(acc, col)
            row[col] = None if fig is None else float(fig.value)
            if fig is not None:
                cites.append(fig.cite())
        added = scenario is not None and acc.id in {r.id for r in scenario.catalog.accelerators}
        row.update(_node_figures(catalog, acc.id, cites, stand_in=not added, lang=lang))
        for col in OPTIONAL_FIGURES:     # blank where not published
            fig = getattr(acc, col)
            row[col] = None if fig is None else float(fig.value)
            if fig is not None:
                cites.append(fig.cite())
        if scenario and scenario.hardware.peak_tflops and acc.id == scenario.hardware.accelerator:
            row["peak_bf16_tflops"] = float(scenario.hardware.peak_tflops)
            cites[0] = fmt("plan.tables.peak_overridden", lang, datasheet=acc.peak_bf16_tflops.value,
                           cite=cites[0])
        rows.append(row)
        sources.append(text("plan.tables.join", lang).join(dict.fromkeys(cites)))
    return TableData(tuple(rows), tuple(sources))


def _node_figures(catalog: Catalog, acc_id: str, cites: list, stand_in: bool = True,
                  lang: str = DEFAULT_LANG) -> dict:
    """The accelerator's node from catalogs/prices.yaml: its own power and purchase price. A
    node's own power hardly depends on its GPUs, so without a row of its own the catalog's
    first node stands in for the power (the citation says so); the price stays blank."""
    prices = catalog.prices
    if prices is None or not prices.purchase:
        return {"node_overhead_kw": None, "node_price": None, "node_price_currency": None}
    node = prices.purchase_for(acc_id)
    like = prices.node_for_power(acc_id) if stand_in else node
    if like is None:      # a row the scenario (or a reviewer) added: its own figures or none
        return {"node_overhead_kw": None, "node_price": None, "node_price_currency": None}
    # short citations, as the other figures' (source key and date; catalogs/prices.yaml expands them)
    cites.append(fmt("plan.tables.node_power" if node else "plan.tables.node_power_stand_in", lang,
                     node=like.id, cite=like.overhead_kw_per_node.cite()))
    if node is not None:
        cites.append(fmt("plan.tables.node_price", lang, node=node.id, cite=node.price_per_node.cite()))
    return {"node_overhead_kw": float(like.overhead_kw_per_node.value),
            "node_price": float(node.price_per_node.value) if node else None,
            "node_price_currency": node.price_per_node.currency if node else None}


def activation_table(lang: str = DEFAULT_LANG) -> TableData:
    rows = tuple({"id": k, "replicated": float(a), "split": float(b), "attention": float(c),
                  "recompute_overhead": float(o)}
                 for k, (a, b, c, o) in ACTIVATION_MODES.items())
    sources = tuple(fmt("plan.tables.activation", lang,
                        mode=text(f"plan.tables.activation_modes.{k.replace('/', '_')}", lang))
                    for k in ACTIVATION_MODES)
    return TableData(rows, sources)
