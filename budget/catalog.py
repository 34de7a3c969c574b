"""Catalogs: sourced accelerator figures and public model shapes, loaded explicitly.

Nothing is read at import. `load_catalog()` reads `catalogs/*.yaml` (from the source tree, or
from the installed package) and validates them with the same strictness as scenarios.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import CatalogError, Problem, load_yaml, problems_from_validation, rule_error


def data_dir(name: str) -> Path:
    """A bundled data folder: inside the installed package, or beside it in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / name, here.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled folder {name!r} not found next to {here}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(_Strict):
    """One sourced number."""
    value: float
    source: str
    as_of: dt.date | None = None      # required in catalogs/*.yaml; a reviewer's row may lack it
    note: str = ""

    def cite(self, sources: dict[str, str] | None = None) -> str:
        text = (sources or {}).get(self.source, self.source)
        return f"{text} ({self.as_of.isoformat()})" if self.as_of else text



class Accelerator(_Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]
    name: str
    vendor: str
    peak_bf16_tflops: Figure
    hbm_gb: Figure
    gpus_per_node: Figure
    intra_node_gb_per_s: Figure
    inter_node_gbit_per_s: Figure
    typical_mfu: Figure

    @model_validator(mode="after")
    def _figures_make_sense(self):
        for field in ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                      "inter_node_gbit_per_s"):
            if getattr(self, field).value <= 0:
                raise rule_error(f"{field} must be positive", f"correct {field}.value")
        if not 0 < self.typical_mfu.value <= 1:
            raise rule_error("typical_mfu must be a fraction in (0, 1]",
                             "write it as a fraction, e.g. 0.43")
        if not float(self.gpus_per_node.value).is_integer():
            raise rule_error("gpus_per_node must be a whole number", "correct gpus_per_node")
        return self


class ModelPreset(_Strict):
    id: str
    name: str
    params: Annotated[float, Field(gt=0)]
    layers: Annotated[int, Field(gt=0)]
    hidden_size: Annotated[int, Field(gt=0)]
    attention_heads: Annotated[int, Field(gt=0)]
    seq_len: Annotated[int, Field(gt=0)]
    vocab_size: Annotated[int, Field(gt=0)]
    global_batch_sequences: Annotated[int, Field(gt=0)]
    source: str
    as_of: dt.date


class _AcceleratorFile(_Strict):
    accelerators: list[Accelerator]
    sources: dict[str, str]

    @model_validator(mode="after")
    def _sources_resolve(self):
        seen = set()
        for i, acc in enumerate(self.accelerators):
            if acc.id in seen:
                raise rule_error(f"accelerator id {acc.id!r} appears twice", "give each id once",
                                 f"accelerators[{i}].id")
            seen.add(acc.id)
            for field in FIGURES:
                if getattr(acc, field).as_of is None:
                    raise rule_error("every catalog figure needs an as_of date", "add as_of: YYYY-MM-DD",
                                     f"accelerators[{i}].{field}.as_of")
                key = getattr(acc, field).source
                if key not in self.sources:
                    raise rule_error(f"source {key!r} is not listed under sources",
                                     "add it to sources with a full citation",
                                     f"accelerators[{i}].{field}.source")
        return self


class _ModelFile(_Strict):
    models: list[ModelPreset]


@dataclass(frozen=True)
class Catalog:
    accelerators: tuple[Accelerator, ...]
    sources: dict[str, str]
    models: tuple[ModelPreset, ...]

    def accelerator(self, acc_id: str) -> Accelerator:
        for acc in self.accelerators:
            if acc.id == acc_id:
                return acc
        raise KeyError(acc_id)

    def model(self, preset_id: str) -> ModelPreset:
        for m in self.models:
            if m.id == preset_id:
                return m
        raise KeyError(preset_id)

    def accelerator_ids(self) -> list[str]:
        return [a.id for a in self.accelerators]

    def model_ids(self) -> list[str]:
        return [m.id for m in self.models]

    def cite(self, key: str) -> str:
        return self.sources.get(key, key)

    def with_accelerators(self, rows) -> "Catalog":
        """This catalog with a scenario's accelerator rows added, or replacing rows of the same id."""
        if not rows:
            return self
        added = {r.id: _accelerator_from_row(r) for r in rows}
        kept = tuple(added.pop(a.id, a) for a in self.accelerators)
        return Catalog(kept + tuple(added.values()), self.sources, self.models)


FIGURES = ("peak_bf16_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
           "inter_node_gbit_per_s", "typical_mfu")


def _accelerator_from_row(row) -> Accelerator:
    """A scenario's `catalog.accelerators` row (flat numbers, one source) as a catalog entry."""
    figures = {f: Figure(value=float(getattr(row, f)), source=row.source) for f in FIGURES}
    return Accelerator(id=row.id, name=row.name, vendor=row.vendor or "", **figures)


def _validated(path: Path, cls):
    data = load_yaml(path, CatalogError)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(path, problems_from_validation(exc, cls)) from None


def load_catalog(folder: Path | None = None) -> Catalog:
    folder = Path(folder) if folder else data_dir("catalogs")
    accs = _validated(folder / "accelerators.yaml", _AcceleratorFile)
    models = _validated(folder / "models.yaml", _ModelFile)
    if len({m.id for m in models.models}) != len(models.models):
        raise CatalogError(folder / "models.yaml",
                           [Problem("models", "a model id appears twice", "give each id once")])
    return Catalog(tuple(accs.accelerators), dict(accs.sources), tuple(models.models))
