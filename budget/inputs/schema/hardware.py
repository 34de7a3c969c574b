"""The hardware and layout sections: the accelerator and its count, utilisation and precision
(`hardware`), the parallel layout (`parallelism`), the cluster's margins (`sizing`), the bytes per
parameter and activations (`memory`), the accelerator rows a scenario adds (`catalog`); and
their rules: the pinned layout divides the GPUs, heads, layers and experts, the compute precision
has a peak."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from ..catalog import Catalog
from ...core.errors import Msg, both, rule_error
from ...core.i18n import DEFAULT_LANG, fmt
from .base import (MAX_ROWS, Bandwidth, Fraction, GpuCount, LongText, PositiveInt, SafeText, Section,
                   Tflops, not_bool, number, whole)


class HardwareSection(Section):
    """GPU count: give it, or give deadline_days (the smallest count that meets it), or neither
    (the memory-first count of seed 000). Utilisation: mfu or effective_tflops are all-in
    figures (the layout efficiency is then 1); baseline_mfu is scaled by the layout's efficiency;
    none of them takes the catalog's typical MFU as the baseline."""
    accelerator: str
    gpu_count: GpuCount | None = None
    deadline_days: number(ge=0.01, le=36_500) | None = None
    peak_tflops: Tflops | None = None
    mfu: Fraction | None = None
    effective_tflops: Tflops | None = None
    baseline_mfu: Fraction | None = None
    # Hardware FLOPs utilisation (recomputation counted), converted to MFU on flops_basis.
    hfu: Fraction | None = None
    # The FLOPs an MFU counts: six_nd = 6·N·D (N active for MoE); with_attention = the matmuls
    # plus the attention scores and logits (issue12_data §3).
    flops_basis: Literal["six_nd", "with_attention"] = "six_nd"
    # The precision the linear layers' GEMMs run in: the catalog's dense peak for it sets the time
    # (DeepSeek-V3 §3.3.1: Fprop, Dgrad and Wgrad in FP8). An accelerator without that peak is an error.
    precision: Literal["bf16", "fp8", "fp4"] = "bf16"
    # The peak a typed mfu, hfu or baseline_mfu is against: bf16, as DeepSeek-V3 (ISCA'25 §5.1.2)
    # and Llama 3 report it even for FP8 GEMMs, or compute (the peak of `precision`).
    mfu_peak: Literal["bf16", "compute"] = "bf16"
    usable_memory_fraction: number(ge=0.05, le=1) = 0.9


class ParallelismSection(Section):
    """Each key pins one dimension; leave it out and the layout search chooses it."""
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    # not_bool: YAML's true is not stage 1 (pydantic takes True as the literal 1; the JSON Schema refuses it)
    zero_stage: Annotated[Literal[0, 1, 2, 3], BeforeValidator(not_bool)] | None = None
    recompute: Literal["none", "selective", "full"] | None = None
    sequence_parallel: bool | None = None
    micro_batch_size: PositiveInt | None = None
    # Context parallelism (Megatron-Core; Llama 3 §3.3.2): the sequence split over cp GPUs.
    # Left out: 1 for sequences under 16K tokens, chosen by the search for longer ones.
    cp: PositiveInt | None = None
    # Interleaved 1F1B (Narayanan et al. 2021 §2.2.2): model chunks per pipeline rank; 1 = plain 1F1B.
    virtual_pipeline_stages: whole(ge=1, le=64) = 1
    # Llama 3 §3.3.2: one layer fewer on the first and on the last stage (embedding, output head).
    first_last_stage_layers_fewer: bool = False
    # DeepSeek-V3 §3.2.1: DualPipe (approximated: budget/model/efficiency.py bubble_fraction); 1F1B otherwise
    pipeline_schedule: Literal["1f1b", "dualpipe"] = "1f1b"
    # The search tries interleaving too (budget/plan/layout.py INTERLEAVING), instead of a pinned
    # virtual_pipeline_stages
    search_interleaving: bool = False
    # Expert parallelism (MoE only), inside DP: DP must be a multiple of ep (Megatron-Core, DeepSeek-V3).
    ep: PositiveInt | None = None


class SizingSection(Section):
    split_margin: number(ge=0, le=10) = 0.2
    spare_nodes: whole(ge=0, le=100_000) = 1


PRECISIONS = {
    # name: (weight, gradient, optimizer bytes per parameter, of which the fp32 master copy,
    # the message id of its source)
    "mixed_bf16_adam": (2, 2, 12, 4, "scenario.precisions.mixed_bf16_adam"),
    "bf16_adam": (2, 2, 4, 0, "scenario.precisions.bf16_adam"),
    "mixed_bf16_adam8bit": (2, 2, 6, 4, "scenario.precisions.mixed_bf16_adam8bit"),
    # DeepSeek-V3 §3.3.3: BF16 working weights (FP8 copies made per GEMM), FP32 gradients, FP32
    # master weights and BF16 AdamW moments: 2 + 4 + (4 + 2 + 2) = 14 bytes per parameter
    "fp8_deepseek_v3": (2, 4, 8, 4, "scenario.precisions.fp8_deepseek_v3"),
}


def precision_note(precision: str, lang: str = DEFAULT_LANG) -> str:
    """Where a precision preset's bytes per parameter come from, in `lang`."""
    return fmt(PRECISIONS[precision][-1], lang)


BytesPerParam = number(ge=0, le=64)


class MemorySection(Section):
    """`precision` names a preset of bytes per parameter; the three byte counts override it."""
    precision: Literal["mixed_bf16_adam", "bf16_adam", "mixed_bf16_adam8bit", "fp8_deepseek_v3"] = \
        "mixed_bf16_adam"
    weight_bytes_per_param: BytesPerParam | None = None
    grad_bytes_per_param: BytesPerParam | None = None
    optimizer_bytes_per_param: BytesPerParam | None = None
    # of the optimizer bytes, the fp32 master copy (what a checkpoint without it leaves out)
    master_bytes_per_param: BytesPerParam | None = None
    # Computing in FP8 or FP4: the share of the TP-split activation bytes cached in FP8 (DeepSeek-V3
    # §3.3.3 caches the linear layers' inputs in FP8): in Korthikanti's 24 bytes per s·b·h, the
    # attention projection's input (2) and the second MLP matrix's input (8), 10/24
    fp8_activation_share: number(ge=0, le=1) = 10 / 24
    # DeepSeek-V3 §3.2.3: every RMSNorm and the MLA up-projections recomputed in the backward pass
    recompute_norms_and_up_projections: bool = False
    flash_attention: bool = True
    activation_gb_per_microbatch: number(ge=1e-6, le=1e6) | None = None


class AcceleratorRow(Section):
    """An accelerator added to (or replacing one of) catalogs/accelerators.yaml for this scenario,
    as a reviewer types a row on the workbook's Catalog sheet."""
    id: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")]
    name: SafeText
    vendor: SafeText = ""
    peak_bf16_tflops: Tflops
    hbm_gb: number(gt=0, le=1e6)
    gpus_per_node: whole(gt=0, le=4096)
    intra_node_gb_per_s: Bandwidth
    inter_node_gbit_per_s: Bandwidth
    typical_mfu: Fraction
    tdp_w: number(gt=0, le=100_000) | None = None
    # dense FP8 / FP4 peaks where published (hardware.precision fp8 / fp4 needs the one it names)
    peak_fp8_tflops: Tflops | None = None
    peak_fp4_tflops: Tflops | None = None
    source: LongText


class CatalogSection(Section):
    accelerators: list[AcceleratorRow] = []

    @field_validator("accelerators")
    @classmethod
    def _few_rows(cls, rows):
        if len(rows) > MAX_ROWS:
            raise rule_error(Msg("errors.scenario.accelerator_rows.message", limit=MAX_ROWS),
                             Msg("errors.scenario.accelerator_rows.fix", limit=MAX_ROWS))
        ids = [r.id for r in rows]
        if len(set(ids)) != len(ids):
            raise rule_error(Msg("errors.scenario.accelerator_twice.message"), Msg("errors.id_twice.fix"))
        return rows


def check_layout(p: ParallelismSection, hw: HardwareSection, shape: dict) -> None:
    """Rules for the pinned dimensions; free ones are the search's business."""
    split = (p.tp or 1) * (p.pp or 1) * (p.cp or 1)
    if hw.gpu_count is not None and hw.gpu_count % split:
        pinned = " x ".join(f"{k} {v}" for k, v in (("tp", p.tp), ("cp", p.cp if p.cp != 1 else None), ("pp", p.pp)) if v)
        raise rule_error(
            Msg("errors.scenario.split.message", pinned=pinned, split=split, gpus=hw.gpu_count),
            Msg("errors.scenario.split.fix", split=split),
            "parallelism.pp" if p.pp and p.pp > 1 else "parallelism.tp")
    if p.tp and shape["attention_heads"] % p.tp:
        raise rule_error(Msg("errors.scenario.tp_heads.message", tp=p.tp, heads=shape["attention_heads"]),
                         Msg("errors.scenario.tp_heads.fix"), "parallelism.tp")
    if p.pp and p.pp > shape["layers"]:
        raise rule_error(Msg("errors.scenario.pp_layers.message", pp=p.pp, layers=shape["layers"]),
                         Msg("errors.scenario.pp_layers.fix", layers=shape["layers"]), "parallelism.pp")
    v, extra = p.virtual_pipeline_stages, 2 if p.first_last_stage_layers_fewer else 0
    if p.pp and (shape["layers"] + extra) % (p.pp * v):
        key = "parallelism.virtual_pipeline_stages" if v > 1 else "parallelism.first_last_stage_layers_fewer"
        if v > 1 or extra:
            raise rule_error(Msg("errors.scenario.pp_chunks.message", pp=p.pp, v=v,
                                 layers=shape["layers"] + extra, chunks=p.pp * v),
                             Msg("errors.scenario.pp_chunks.fix", pp=p.pp), key)
    if p.ep and p.ep > 1:
        experts = shape.get("moe_experts")
        if not experts or experts % p.ep:
            raise rule_error(Msg("errors.scenario.ep_experts.message", ep=p.ep, experts=experts or 0),
                             Msg("errors.scenario.ep_experts.fix"), "parallelism.ep")
        if hw.gpu_count is not None and p.tp and p.pp and (hw.gpu_count // split) % p.ep:
            raise rule_error(Msg("errors.scenario.ep_dp.message", ep=p.ep, dp=hw.gpu_count // split),
                             Msg("errors.scenario.ep_dp.fix", dp=hw.gpu_count // split), "parallelism.ep")
    if v > 1 and p.search_interleaving:
        raise rule_error(Msg("errors.scenario.vp_searched.message", v=v),
                         Msg("errors.scenario.vp_searched.fix"), "parallelism.search_interleaving")
    if v > 1 and p.pp == 1:
        raise rule_error(Msg("errors.scenario.vp_without_pp.message", v=v),
                         Msg("errors.scenario.vp_without_pp.fix"), "parallelism.virtual_pipeline_stages")


def check_precision(hw: HardwareSection, mem: MemorySection, catalog: Catalog) -> None:
    """The compute precision needs the accelerator's dense peak for it (blank where unpublished);
    a typed fp32 master copy is part of the optimizer bytes."""
    precision = hw.precision
    acc = catalog.accelerator(hw.accelerator)
    if precision != "bf16" and getattr(acc, f"peak_{precision}_tflops") is None:
        have = ["bf16"] + [p for p in ("fp8", "fp4") if getattr(acc, f"peak_{p}_tflops") is not None]
        raise rule_error(Msg("errors.scenario.precision_peak.message", accelerator=acc.id,
                             precision=precision),
                         Msg("errors.scenario.precision_peak.fix", precisions=", ".join(have),
                             precision=precision),
                         "hardware.precision")
    preset = PRECISIONS[mem.precision]
    optimizer = preset[2] if mem.optimizer_bytes_per_param is None else mem.optimizer_bytes_per_param
    master = preset[3] if mem.master_bytes_per_param is None else mem.master_bytes_per_param
    if master > optimizer:
        raise rule_error(Msg("errors.scenario.master_bytes.message", master=master, optimizer=optimizer),
                         Msg("errors.scenario.master_bytes.fix"), "memory.master_bytes_per_param")


def check_utilisation(hw: HardwareSection) -> None:
    """One utilisation figure at most: mfu, effective_tflops, baseline_mfu or hfu."""
    given = [k for k in ("mfu", "effective_tflops", "baseline_mfu", "hfu")
             if getattr(hw, k) is not None]
    if len(given) > 1:
        names = given[0]
        for name in given[1:]:
            names = both(names, name)
        raise rule_error(Msg("errors.scenario.utilisation.message", names=names),
                         Msg("errors.scenario.utilisation.fix"), f"hardware.{given[1]}")
