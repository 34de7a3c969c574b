"""Scenario files: parse the YAML, validate it strictly, name every problem by its field path.

`budget.inputs.options.load_scenario(path, catalog)` returns a frozen `Scenario` or raises `ScenarioError`.
Unknown keys are rejected; numbers carry their unit in the key; counts accept suffixes
("175B", "3T"). Rules that span fields or need the catalog live in model validators.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr,
                      ValidationError, ValidationInfo, field_validator, model_validator)

from .catalog import Catalog
from ..core import limits
from ..core.i18n import DEFAULT_LANG, fmt
from ..core.reading import ReadRefused, load_json, read_regular
from ..core.errors import (Msg, Problem, ScenarioError, both, load_yaml, problems_from_validation,
                     rule_error, suggest)

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_COUNT = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*$")


def _not_bool(value):
    """YAML's true/false are not numbers (pydantic's lax mode would take true as 1)."""
    if isinstance(value, bool):
        raise rule_error(Msg("errors.scenario.not_bool.message", value=str(value).lower()),
                         Msg("errors.scenario.not_bool.fix"))
    return value


def _parse_count(value):
    """175e9, '175e9', '175B', '3T', '1.5M' -> float. Other types pass through to pydantic."""
    value = _not_bool(value)
    if isinstance(value, str):
        match = _COUNT.match(value.replace("_", "").replace(",", ""))
        if not match:
            raise rule_error(Msg("errors.scenario.count.message"), got=True)
        number, suffix = match.groups()
        return float(number) * _SUFFIX.get(suffix.lower(), 1.0)
    return value


# Bounds are typo guards, not policy: generous ranges inside which every figure the model
# derives stays finite and every date displayable (the plan checks the project's length).
def _count(ge: float, le: float):
    return Annotated[float, BeforeValidator(_parse_count), Field(ge=ge, le=le, allow_inf_nan=False)]


def _number(*, ge: float | None = None, gt: float | None = None, le: float | None = None,
            lt: float | None = None):
    return Annotated[float, BeforeValidator(_not_bool),
                     Field(ge=ge, gt=gt, le=le, lt=lt, allow_inf_nan=False)]


def _whole(*, le: int, ge: int | None = None, gt: int | None = None):
    return Annotated[int, BeforeValidator(_not_bool), Field(ge=ge, gt=gt, le=le)]


Params = _count(1e6, 1e15)                       # a million to a quadrillion parameters
Tokens = _count(1e6, 1e16)
Tflops = _number(ge=0.001, le=1e6)               # per accelerator
Fraction = _number(ge=0.001, le=1)
Money = _number(ge=0, le=1e9)                    # a price per unit, in any currency
Days = _number(ge=0, le=1826)                    # one schedule segment: up to five years
Weeks = _number(ge=0, le=261)                    # one project phase: up to five years
Months = _number(ge=0.01, le=1200)
Gigabytes = _number(ge=0, le=1e12)
Bandwidth = _number(ge=0.001, le=1e9)            # GB/s or Gbit/s
Minutes = _number(ge=0, le=525_960)              # a year
PositiveInt = _whole(gt=0, le=2 ** 24)           # shapes, batch, layout: up to 16,777,216
GpuCount = _whole(gt=0, le=10_000_000)
Headcount = _number(ge=0.01, le=1e6)
# Generic names kept for other sections: finite, and neither tiny nor astronomically large.
Count = _count(1, 1e16)
PositiveFloat = _number(ge=1e-6, le=1e12)
NonNegativeFloat = _number(ge=0, le=1e12)
EARLIEST_START, LATEST_START = limits.EARLIEST_START, limits.LATEST_START


def _plausible_date(value: dt.date) -> dt.date:
    if not EARLIEST_START <= value <= LATEST_START:
        dates = {"earliest": EARLIEST_START.isoformat(), "latest": LATEST_START.isoformat()}
        raise rule_error(Msg("errors.scenario.start_date.message", date=value.isoformat(), **dates),
                         Msg("errors.scenario.start_date.fix", **dates))
    return value


StartDate = Annotated[dt.date, AfterValidator(_plausible_date)]

# XML 1.0 cannot hold these at all (a workbook with them is corrupt); lone surrogates are not
# characters (they cannot be encoded); other C0 and C1 controls are refused too, except tab and
# line feed, so nothing a terminal or a report would act on gets in.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
FORMULA_LEADS = ("=", "+", "-", "@")


def formula_lead(text: str) -> tuple[str, str] | None:
    """(the character as written, as a spreadsheet reads it) when `text` would start a formula:
    judged after leading blanks and with full-width forms folded (NFKC), never altering `text`."""
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch).lstrip().lstrip(_INVISIBLE).lstrip()
        if not folded:
            continue
        return (ch, folded[0]) if folded[0] in FORMULA_LEADS else None
    return None


def character_problem(value: str) -> tuple[Msg, Msg] | None:
    """(message, fix) when `value` holds a character no workbook, report or terminal should get."""
    bad = _XML_ILLEGAL.search(value) or _CONTROL.search(value)
    if bad:
        code = f"U+{ord(bad.group()):04X}"
        if 0xD800 <= ord(bad.group()) <= 0xDFFF:
            return (Msg("errors.text.surrogate.message", code=code), Msg("errors.text.surrogate.fix"))
        if ord(bad.group()) in (0xFFFE, 0xFFFF):
            return (Msg("errors.text.noncharacter.message", code=code), Msg("errors.text.noncharacter.fix"))
        return (Msg("errors.text.control.message", code=code), Msg("errors.text.control.fix"))
    return None


def text_problem(value: str) -> tuple[Msg, Msg] | None:
    """(message, fix) when `value` breaks the text policy shared by every free-text field and
    key; None when it is fine."""
    problem = character_problem(value)
    if problem:
        return problem
    lead = formula_lead(value)
    if lead:
        written, read = lead
        key = {(False, False): "errors.text.formula.message",
               (True, False): "errors.text.formula.message_read_as",
               (False, True): "errors.text.formula.message_after_blanks",
               (True, True): "errors.text.formula.message_read_as_after_blanks"}[
            (written != read, value[:1] != written)]
        return (Msg(key, char=repr(written), read=repr(read)),
                Msg("errors.text.formula.fix", char=repr(written)))
    return None


def _safe_text(value: str, max_len: int = 200) -> str:
    """Scenario text ends up in cells, reports and messages: one policy for every field and key."""
    if not isinstance(value, str):
        raise rule_error(Msg("errors.text.not_text.message"), Msg("errors.text.not_text.fix"))
    problem = text_problem(value)
    if problem:
        raise rule_error(*problem)
    if len(value) > max_len:
        raise rule_error(Msg("errors.text.too_long.message", length=len(value), limit=max_len),
                         Msg("errors.text.too_long.fix", limit=max_len))
    return value


SafeText = Annotated[str, BeforeValidator(_safe_text)]
LongText = Annotated[str, BeforeValidator(lambda v: _safe_text(v, 2000))]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MoESection(_Section):
    """Mixture of experts: routed experts, how many a token uses, shared experts, each expert's
    FFN width (blank: the dense FFN's), the leading dense layers and every how many layers after
    them an MoE layer comes (1: every layer)."""
    experts: PositiveInt | None = None
    experts_per_token: PositiveInt | None = None
    shared_experts: _whole(ge=0, le=2 ** 16) | None = None
    expert_ffn_hidden_size: PositiveInt | None = None
    first_dense_layers: _whole(ge=0, le=2 ** 24) | None = None
    layer_freq: PositiveInt | None = None


class MLASection(_Section):
    """Multi-head latent attention (DeepSeek-V2/V3): the low-rank query and key/value
    compressions, the decoupled RoPE width of q and k, and the value head width."""
    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt | None = None
    rope_head_dim: _whole(ge=0, le=2 ** 16) | None = None
    v_head_dim: PositiveInt | None = None


class ModelSection(_Section):
    """The network: a preset from catalogs/models.yaml, its fields overridable, or a full shape.
    Blank shape details are the old GPT shape's: K/V heads = attention heads, FFN 4·h with GeLU,
    one shared embedding matrix, learned positions, dense."""
    preset: str | None = None
    params: Params | None = None
    active_params: Params | None = None
    layers: PositiveInt | None = None
    hidden_size: PositiveInt | None = None
    attention_heads: PositiveInt | None = None
    num_kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    ffn_hidden_size: PositiveInt | None = None
    activation: Literal["gelu", "swiglu"] | None = None
    tied_embeddings: bool | None = None
    position_embeddings: Literal["learned", "rotary"] | None = None
    seq_len: PositiveInt | None = None
    vocab_size: PositiveInt | None = None
    moe: MoESection | None = None
    mla: MLASection | None = None
    # Korthikanti et al. 2022 §4.1's dropout masks; Llama 3 and DeepSeek-V3 have no dropout
    dropout: bool = True
    # A local Hugging Face config.json (relative to the scenario file) the shape is read from;
    # the scenario's own keys win over it, it wins over a preset. Not the training seq_len.
    hf_config: SafeText | None = None
    _hf: dict = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _read_hf_config(self, info: ValidationInfo):
        if self.hf_config is not None:
            base = (info.context or {}).get("base_dir")
            self._hf = read_hf_config(Path(base or ".") / self.hf_config, self.hf_config)
        return self

    @property
    def hf_shape(self) -> dict:
        """The shape read from hf_config: flat shape key -> (value, the config.json key)."""
        return self._hf


class DataSection(_Section):
    train_tokens: Tokens
    global_batch_sequences: PositiveInt | None = None


class HardwareSection(_Section):
    """GPU count: give it, or give deadline_days (the smallest count that meets it), or neither
    (the memory-first count of seed 000). Utilisation: mfu or effective_tflops are all-in
    figures (the layout efficiency is then 1); baseline_mfu is scaled by the layout's efficiency;
    none of them takes the catalog's typical MFU as the baseline."""
    accelerator: str
    gpu_count: GpuCount | None = None
    deadline_days: _number(ge=0.01, le=36_500) | None = None
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
    usable_memory_fraction: _number(ge=0.05, le=1) = 0.9


class ParallelismSection(_Section):
    """Each key pins one dimension; leave it out and the layout search chooses it."""
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    zero_stage: Literal[0, 1, 2, 3] | None = None
    recompute: Literal["none", "selective", "full"] | None = None
    sequence_parallel: bool | None = None
    micro_batch_size: PositiveInt | None = None
    # Context parallelism (Megatron-Core; Llama 3 §3.3.2): the sequence split over cp GPUs.
    # Left out: 1 for sequences under 16K tokens, chosen by the search for longer ones.
    cp: PositiveInt | None = None
    # Interleaved 1F1B (Narayanan et al. 2021 §2.2.2): model chunks per pipeline rank; 1 = plain 1F1B.
    virtual_pipeline_stages: _whole(ge=1, le=64) = 1
    # Llama 3 §3.3.2: one layer fewer on the first and on the last stage (embedding, output head).
    first_last_stage_layers_fewer: bool = False
    # DeepSeek-V3 §3.2.1: DualPipe (approximated: budget/model/model.py bubble_fraction); 1F1B otherwise
    pipeline_schedule: Literal["1f1b", "dualpipe"] = "1f1b"
    # The search tries interleaving too (budget/plan/layout.py INTERLEAVING), instead of a pinned
    # virtual_pipeline_stages
    search_interleaving: bool = False
    # Expert parallelism (MoE only), inside DP: DP must be a multiple of ep (Megatron-Core, DeepSeek-V3).
    ep: PositiveInt | None = None


class SizingSection(_Section):
    split_margin: _number(ge=0, le=10) = 0.2
    spare_nodes: _whole(ge=0, le=100_000) = 1


class FittedCoefficients(_Section):
    """The fitted step-time model's coefficients (budget/calibrate.py); left out, each is
    catalogs/efficiency.yaml's, fitted on the published throughput rows."""
    width_factor: _number(ge=0, le=100_000) | None = None
    attention_factor: _number(ge=0, le=100) | None = None
    dp_exposed: _number(ge=0, le=1) | None = None
    zero3_exposed: _number(ge=0, le=1) | None = None
    immaturity_factor: _number(ge=0, le=100) | None = None
    attention_immaturity_factor: _number(ge=0, le=100) | None = None
    immaturity_cap_years: _number(ge=0, le=20) | None = None
    unfitted_reference: str | None = None
    # issue 25: each stack's factor on the compute time, the share of the FP8 (FP4) peak's promise
    # that GEMMs realise, and the full-run allowance per maturity
    stack_factor_unknown: _number(ge=0, le=10) | None = None
    stack_factor_megatron_nemo_tuned: _number(ge=0, le=10) | None = None
    stack_factor_inhouse_tuned: _number(ge=0, le=10) | None = None
    stack_factor_deepspeed: _number(ge=0, le=10) | None = None
    stack_factor_pytorch_fsdp: _number(ge=0, le=10) | None = None
    stack_factor_jax_maxtext: _number(ge=0, le=10) | None = None
    stack_factor_hf_trainer: _number(ge=0, le=10) | None = None
    fp8_gemm_realised: _number(ge=0, le=1) | None = None
    card_allowance_unknown: _number(ge=-0.5, le=5) | None = None
    card_allowance_first_run: _number(ge=-0.5, le=5) | None = None
    card_allowance_some_runs: _number(ge=-0.5, le=5) | None = None
    card_allowance_tuned_many_runs: _number(ge=-0.5, le=5) | None = None


class EfficiencySection(_Section):
    # Issue 13: "fitted" (the default) predicts the utilisation with the step-time model fitted on
    # published runs (catalogs/efficiency.yaml) where no utilisation is typed; "reference"
    # (deprecated) scales the catalog's typical MFU by the layout efficiency ÷
    # reference_layout_efficiency
    model: Literal["reference", "fitted"] = "fitted"
    fitted: FittedCoefficients = FittedCoefficients()
    # Issue 25: the software stack (its factor on the compute time, fitted on the published rows; a
    # stack measured by fewer than two source groups takes unknown's), and how practised the team is at
    # this scale (the allowance for what full runs spend beyond step time and modelled failures)
    stack: Literal["unknown", "megatron_nemo_tuned", "inhouse_tuned", "deepspeed", "pytorch_fsdp",
                   "jax_maxtext", "hf_trainer"] = "unknown"
    maturity: Literal["unknown", "first_run", "some_runs", "tuned_many_runs"] = "unknown"
    # the share of the allowance that lengthens the calendar (the rest only adds billed card-hours)
    card_allowance_calendar_share: _number(ge=0, le=1) = 1.0
    layout_efficiency: _number(ge=0.01, le=2) | None = None
    reference_layout_efficiency: _number(ge=0.01, le=1) = 0.82
    tp_comm_exposed: _number(ge=0, le=1) = 1.0
    dp_comm_exposed: _number(ge=0, le=1) = 0.25
    cp_comm_exposed: _number(ge=0, le=1) = 1.0
    ep_comm_exposed: _number(ge=0, le=1) = 1.0

    @model_validator(mode="before")
    @classmethod
    def _reference_when_calibrated_so(cls, data):
        # a scenario written for the reference model (it sets reference_layout_efficiency, now
        # deprecated) keeps that model and its figures, and the plan warns (warn_reference_model)
        if isinstance(data, dict) and "reference_layout_efficiency" in data and "model" not in data:
            return {**data, "model": "reference"}
        return data


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


BytesPerParam = _number(ge=0, le=64)


class MemorySection(_Section):
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
    fp8_activation_share: _number(ge=0, le=1) = 10 / 24
    # DeepSeek-V3 §3.2.3: every RMSNorm and the MLA up-projections recomputed in the backward pass
    recompute_norms_and_up_projections: bool = False
    flash_attention: bool = True
    activation_gb_per_microbatch: _number(ge=1e-6, le=1e6) | None = None


Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]


def _amount(value):
    """A price is a number in the scenario's currency, or {amount, currency} in another."""
    value = _not_bool(value)
    return {"amount": value} if isinstance(value, (int, float, str)) else value


class Price(_Section):
    amount: Money
    currency: Currency | None = None      # None: the scenario's `prices.currency`


PriceIn = Annotated[Price, BeforeValidator(_amount)]


class StaffCost(_Section):
    amount: _number(ge=0, le=1e12)
    currency: Currency | None = None

# AWS Spot Instance Advisor's highest interruption-frequency band, ">20%" of instances a month,
# where GPU instances sit: 20% of an 8-GPU instance's ~730 hours a month, per GPU-hour.
SPOT_PREEMPTION_RATE = 0.20 / (730 * 8)


class ReservedTerms(_Section):
    """Committed capacity: billed for the whole term whatever the run uses."""
    term_months: _number(ge=1, le=120) = 12.0
    upfront_share: _number(ge=0, le=1) = 0.0
    committed_gpus: GpuCount | None = None     # default: the GPUs the plan reserves (with spares)


class SpotTerms(_Section):
    """Preemptible capacity: a discount on the on-demand rate, and preemptions that stretch the run."""
    discount: _number(ge=0, lt=1) = 0.6
    preemption_rate_per_gpu_hour: _number(ge=0, lt=1) = SPOT_PREEMPTION_RATE


TIERS = ("on_demand", "reserved", "spot")


class PricesSection(_Section):
    """`per_gpu_hour` or `catalog` (an id in catalogs/prices.yaml) prices the GPUs; amounts are in
    `currency` unless given as {amount, currency}; `fx_rates` says how many units of `currency`
    one unit of each other currency is worth (catalogs/prices.yaml has dated defaults)."""
    currency: Currency = "USD"
    fx_rates: dict[Currency, _number(gt=0, le=1e9)] = {}
    catalog: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = None
    tier: Literal["on_demand", "reserved", "spot"] | None = None    # default: the catalog row's, else on_demand
    per_gpu_hour: PriceIn | None = None
    on_demand_per_gpu_hour: PriceIn | None = None
    reserved: ReservedTerms = ReservedTerms()
    spot: SpotTerms = SpotTerms()
    storage_per_gb_month: PriceIn = Price(amount=0.023, currency="USD")
    network: Union[Literal["included"], Money] = "included"
    vat_rate: _number(ge=0, le=1) = 0.0
    vat_recoverable: bool = False

    @model_validator(mode="after")
    def _one_gpu_price(self):
        if self.per_gpu_hour is None and self.catalog is None:
            raise rule_error(Msg("errors.scenario.no_gpu_price.message"),
                             Msg("errors.scenario.no_gpu_price.fix"), "per_gpu_hour")
        if self.per_gpu_hour is not None and self.catalog is not None:
            raise rule_error(Msg("errors.scenario.two_gpu_prices.message"),
                             Msg("errors.scenario.two_gpu_prices.fix"), "catalog")
        return self


class OwnedSection(_Section):
    """An owned cluster: charged amortised capital, energy and operations (defaults:
    catalogs/prices.yaml, the purchase row of the accelerator)."""
    node_price: PriceIn | None = None
    depreciation_years: _number(ge=0.5, le=30) | None = None
    cost_of_capital: _number(ge=0, le=1) | None = None
    life_share: _number(gt=0, le=1) | None = None       # default: the project's billed days ÷ the life
    ops_per_node_month: PriceIn | None = None


class EnergySection(_Section):
    """Energy and carbon of every plan; defaults from catalogs/prices.yaml (`energy`)."""
    pue: _number(ge=1, le=5) | None = None
    grid: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = None
    grid_intensity: _number(ge=0, le=5) | None = None        # kg CO2e per kWh; overrides `grid`
    draw_training: _number(ge=0, le=2) | None = None
    draw_idle: _number(ge=0, le=1) | None = None
    node_overhead_kw: _number(ge=0, le=1000) | None = None
    electricity_per_kwh: PriceIn | None = None


class RunsSection(_Section):
    """The runs besides the main one, sized by what they train (seed 002 weeks 3-8), the
    rollbacks a run suffers, post-training and serving."""
    validation_params: Params = 7e9                # seed 002's largest; capped at the model itself
    validation_tokens: Tokens = 100e9
    scaling_params: Params = 70e9
    scaling_tokens: Tokens = 200e9
    rollbacks: _number(ge=0, le=10_000) = 20.0
    rollback_steps: _number(ge=0, le=1e9) = 100.0
    post_training_tokens: _count(0, 1e16) = 30e9
    serving_gpus: _whole(ge=0, le=10_000_000) = 0
    serving_months: _number(ge=0, le=1200) = 0.0
    serving_per_gpu_hour: PriceIn | None = None


class StorageSection(_Section):
    """Dataset and checkpoint volumes follow from tokens and parameters unless overridden."""
    raw_bytes_per_token: _number(ge=0, le=1e6) = 4.0
    tokenized_bytes_per_token: _number(ge=0, le=1e6) | None = None   # default: 2, or 4 past 65,536 tokens
    dataset_gb: Gigabytes | None = None
    checkpoints_kept: _whole(ge=0, le=1_000_000) = 3
    checkpoint_gb: Gigabytes | None = None
    # What a checkpoint holds: weights and optimizer states (full), the same without the fp32
    # master copy (OPT-175B kept FP16 weights and FP32 Adam moments), or the weights alone
    checkpoint_format: Literal["full", "no_fp32_master", "weights_only"] = "full"
    months_held: Months | None = None      # default: the project's length, live in the workbook
    write_gb_per_s: Bandwidth = 50.0
    read_gb_per_s: Bandwidth = 50.0


class ScheduleSection(_Section):
    """Seed 000's segments of a real run and seed 002's project phases."""
    start_date: StartDate = dt.date(2027, 1, 4)
    fiscal_year_start_month: _whole(ge=1, le=12) = 1   # the Cashflow sheet's budget years
    queue_days: Days = 10.0
    setup_days: Days = 7.0
    transfer_gbit_per_s: Bandwidth = 10.0
    data_prep_weeks: Weeks = 2.0
    validation_weeks: Weeks = 2.0
    validation_gpus: _whole(ge=0, le=10_000_000) = 16
    scaling_weeks: Weeks = 4.0
    scaling_gpus: _whole(ge=0, le=10_000_000) = 128
    evaluation_weeks: Weeks = 2.0
    deployment_weeks: Weeks = 2.0


# Llama 3 405B: 419 unexpected interruptions in 54 days on 16,384 H100 (Llama Team 2024, 3.3.4)
LLAMA3_INTERRUPTION_RATE = 419 / (54 * 24 * 16384)


class ReliabilitySection(_Section):
    """Interruptions, how checkpoints are taken and what a restart takes (the Schedule sheet)."""
    interruption_rate_per_gpu_hour: _number(ge=1e-12, lt=1) = LLAMA3_INTERRUPTION_RATE
    # A restart: detect the failure, swap in a spare node, start the job again (launch, NCCL
    # init); the checkpoint's load follows from checkpoint_mode. Detection and replacement plus
    # startup add up to the 20 minutes of the model before the split (5 + 15).
    failure_detect_minutes: Minutes = 5.0
    node_replace_minutes: Minutes = 10.0
    job_startup_minutes: Minutes = 5.0
    checkpoint_interval_steps: _number(ge=1, le=1e12) | None = None
    # synchronous: training waits for the write to storage; asynchronous: only for the copy to host
    # memory (PyTorch DCP async_save); in_memory: copies kept in peers' memory (Gemini, SOSP'23)
    checkpoint_mode: Literal["synchronous", "asynchronous", "in_memory"] = "synchronous"
    # device-to-host copy per GPU: half of PCIe 5.0 x16's 64 GB/s a direction, a margin for
    # pageable staging and shared host links
    host_copy_gb_per_s: Bandwidth = 32.0


class StaffRole(_Section):
    role: SafeText
    headcount: Headcount
    monthly_cost: Annotated[StaffCost, BeforeValidator(_amount)]
    months: Months | None = None           # default: the project's length, live in the workbook


class Stage(_Section):
    """One stage of a multi-stage run (issue 12): its tokens, and any of the plan's values it
    changes (GPU count, sequence length, batch, layout, an all-in MFU); blank, the plan's."""
    name: SafeText
    tokens: Tokens
    gpu_count: GpuCount | None = None
    seq_len: PositiveInt | None = None
    global_batch_sequences: PositiveInt | None = None
    mfu: _number(gt=0, le=1) | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    cp: PositiveInt | None = None


class CalibrationSection(_Section):
    """A measured pilot run (issue 13, seed 000 step 6): its GPUs, its layout where it differs
    from the plan's, and exactly one measurement. The model evaluated at the pilot's layout,
    against the measurement, gives the factor the full run's utilisation is scaled by."""
    gpu_count: GpuCount | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    cp: PositiveInt | None = None
    micro_batch_size: PositiveInt | None = None
    global_batch_sequences: PositiveInt | None = None
    virtual_pipeline_stages: _whole(ge=1, le=64) | None = None
    step_time_s: _number(gt=0, le=1e6) | None = None            # one optimizer step of the global batch
    tokens_per_gpu_second: _number(gt=0, le=1e9) | None = None
    mfu: _number(gt=0, le=1) | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, k) is not None for k in type(self).model_fields)


CALIBRATION_MEASURES = ("step_time_s", "tokens_per_gpu_second", "mfu")


class PlausibilitySection(_Section):
    """Bands for the warnings that do not block approval (see the Checks sheet)."""
    tokens_per_param_low: _number(ge=0, le=1e6) = 5.0
    tokens_per_param_high: _number(ge=0, le=1e6) = 2000.0
    cost_per_gpu_hour_low: PriceIn = Price(amount=0.5, currency="USD")
    cost_per_gpu_hour_high: PriceIn = Price(amount=20.0, currency="USD")
    params_tolerance: _number(ge=0, le=1) = 0.1


class Spread(_Section):
    low: _number(ge=-1, le=10)
    high: _number(ge=-1, le=10)


class ApprovalSection(_Section):
    """What the package asks finance to approve (issue 25): this percentile of the total (P50-P95)."""
    percentile: _number(ge=50, le=95) = 80.0


class CatalogSpread(_Section):
    """A spread whose low and high default to the catalog's (blank: catalogs/model_error.yaml)."""
    low: _number(ge=0, le=10) | None = None
    high: _number(ge=0, le=10) | None = None


def _spread(low: float | None, high: float | None):
    if low is None:
        return Annotated[CatalogSpread, Field(default_factory=CatalogSpread)]
    return Annotated[Spread, Field(default_factory=lambda: Spread(low=low, high=high))]


def _uncertainty_section() -> type[_Section]:
    """Low and high values of the uncertain inputs (Sensitivity sheet), read as P10 and P90:
    factors on the base value (`model_error` on the step time, its defaults the catalog's). The
    keys and defaults are budget.model.model.UNCERTAIN_SPREADS's, so they are said once (and no
    message catalog is read at import)."""
    from pydantic import create_model

    from ..model.model import UNCERTAIN_SPREADS
    fields = {key: _spread(low, high) for key, (_, _, low, high) in UNCERTAIN_SPREADS.items()}
    return create_model("UncertaintySection", __base__=_Section,
                        staffing_factor=(_number(ge=0, le=10), 1.0), **fields)


UncertaintySection = _uncertainty_section()


class ConstantsSection(_Section):
    """Conventions the formulas use; a reviewer may change one in the workbook (import keeps it).
    Bounds admit the variants people use (GiB, 8·N·D with recomputation, fp32 activations)."""
    flops_per_param_token: _number(ge=2, le=12) = 6.0
    bytes_per_gb: _number(ge=1e9, le=2 ** 30) = 1e9
    flops_per_tflop: _number(ge=1e12, le=1e12) = 1e12
    bits_per_byte: _number(ge=8, le=8) = 8.0
    activation_bytes_per_element: _number(ge=1, le=4) = 2.0
    tp_collectives_per_layer: _number(ge=0, le=16) = 4.0
    zero3_comm_factor: _number(ge=1, le=3) = 1.5
    zero3_gathered_layers: _number(ge=0, le=8) = 2.0
    cp_kv_passes: _number(ge=0, le=4) = 3.0
    ep_all_to_all_passes: _number(ge=0, le=8) = 4.0
    days_per_year: _number(ge=365, le=366) = 365.25
    token_id_bytes: _number(ge=1, le=8) = 2.0
    small_vocab_limit: _number(ge=256, le=2 ** 32) = 65536.0
    p90_probability: _number(ge=0.9, le=0.9) = 0.9
    model_error_factor: _number(ge=1, le=1) = 1.0
    ffn_width_per_hidden: _number(ge=1, le=16) = 4.0
    gated_ffn_matrices: _number(ge=3, le=3) = 3.0
    forward_flops_per_param_token: _number(ge=2, le=2) = 2.0
    causal_attention_fraction: _number(ge=0.5, le=1) = 0.5
    korthikanti_split_bytes: _number(ge=24, le=24) = 24.0
    # the calibration factor a measured pilot may give without a warning (warn_pilot_factor)
    pilot_factor_low: _number(ge=0.1, le=1) = 0.5
    pilot_factor_high: _number(ge=1, le=10) = 1.5


class AcceleratorRow(_Section):
    """An accelerator added to (or replacing one of) catalogs/accelerators.yaml for this scenario,
    as a reviewer types a row on the workbook's Catalog sheet."""
    id: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")]
    name: SafeText
    vendor: SafeText = ""
    peak_bf16_tflops: Tflops
    hbm_gb: _number(gt=0, le=1e6)
    gpus_per_node: _whole(gt=0, le=4096)
    intra_node_gb_per_s: Bandwidth
    inter_node_gbit_per_s: Bandwidth
    typical_mfu: Fraction
    tdp_w: _number(gt=0, le=100_000) | None = None
    # dense FP8 / FP4 peaks where published (hardware.precision fp8 / fp4 needs the one it names)
    peak_fp8_tflops: Tflops | None = None
    peak_fp4_tflops: Tflops | None = None
    source: LongText


MAX_ROWS = 50     # accelerator rows of a scenario, staffing roles: a typo guard


class CatalogSection(_Section):
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


class Scenario(_Section):
    name: SafeText
    description: LongText = ""
    # The language of the workbook, the reports and the messages (budget/messages/<lang>/);
    # the command line's --lang wins over it.
    language: str = "en"
    model: ModelSection
    data: DataSection
    hardware: HardwareSection
    parallelism: ParallelismSection = ParallelismSection()
    sizing: SizingSection = SizingSection()
    efficiency: EfficiencySection = EfficiencySection()
    memory: MemorySection = MemorySection()
    prices: PricesSection
    ownership: Literal["rented", "owned"] = "rented"
    owned: OwnedSection = OwnedSection()
    energy: EnergySection = EnergySection()
    runs: RunsSection = RunsSection()
    storage: StorageSection = StorageSection()
    schedule: ScheduleSection = ScheduleSection()
    reliability: ReliabilitySection = ReliabilitySection()
    staffing: list[StaffRole] = []
    stages: list[Stage] = []
    calibration: CalibrationSection = CalibrationSection()
    buffer_rate: _number(ge=0, le=1) = 0.20
    approval: ApprovalSection = ApprovalSection()
    plausibility: PlausibilitySection = PlausibilitySection()
    constants: ConstantsSection = ConstantsSection()
    uncertainty: UncertaintySection = UncertaintySection()
    catalog: CatalogSection = CatalogSection()
    sources: dict[SafeText, LongText] = {}
    # Alternatives to compare: raw mappings of overrides, each merged onto this scenario and
    # validated as a scenario of its own by budget/inputs/options.py (the base plan ignores them).
    options: list[dict] = []

    @field_validator("language")
    @classmethod
    def _known_language(cls, lang):
        from ..core.i18n import languages
        if lang not in languages():
            raise rule_error(Msg("errors.scenario.language.message", language=repr(lang)),
                             Msg("errors.scenario.language.fix", languages=", ".join(languages())))
        return lang

    @field_validator("staffing", "stages")
    @classmethod
    def _few_rows(cls, rows, info: ValidationInfo):
        if len(rows) > MAX_ROWS:       # the message ids: errors.scenario.{staffing_roles,stages_rows}
            key = {"staffing": "staffing_roles", "stages": "stages_rows"}[info.field_name]
            raise rule_error(Msg(f"errors.scenario.{key}.message", limit=MAX_ROWS),
                             Msg(f"errors.scenario.{key}.fix", limit=MAX_ROWS))
        return rows

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo):
        catalog: Catalog | None = (info.context or {}).get("catalog")
        if catalog is not None:
            catalog = catalog.with_accelerators(self.catalog.accelerators)
            _check_catalog_refs(self, catalog)
            _check_precision(self, catalog)
        shape = resolved_shape(self, catalog)
        if shape is not None:
            _check_layout(self, shape)
        _check_stages(self)
        _check_calibration(self, shape)
        given = [k for k in ("mfu", "effective_tflops", "baseline_mfu", "hfu")
                 if getattr(self.hardware, k) is not None]
        if len(given) > 1:
            names = given[0]
            for name in given[1:]:
                names = both(names, name)
            raise rule_error(Msg("errors.scenario.utilisation.message", names=names),
                             Msg("errors.scenario.utilisation.fix"), f"hardware.{given[1]}")
        return self


def fx_table(s: Scenario, catalog: Catalog) -> dict[str, tuple[float, str]]:
    """Units of the scenario's currency per unit of each currency it can convert: its own
    `prices.fx_rates`, else the catalog's dated rates per US dollar, crossed through the dollar."""
    own, lang = s.prices.currency, s.language
    out = {own: (1.0, fmt("scenario.fx.own", lang))}
    prices = catalog.prices
    per_usd = {"USD": (1.0, "")}
    if prices is not None:
        per_usd.update({code: (fig.value, prices.cite(fig)) for code, fig in prices.fx_per_usd.items()})
    given = s.prices.fx_rates
    if "USD" in given:
        own_per_usd, how = given["USD"], fmt("scenario.fx.given", lang, code="USD")
    elif own in per_usd:
        own_per_usd, how = per_usd[own][0], fmt("scenario.fx.catalog", lang, code=own, cite=per_usd[own][1])
    else:
        own_per_usd = None
    if own_per_usd is not None:
        for code, (rate, cite) in per_usd.items():
            if code != own:
                out[code] = (own_per_usd / rate,
                             fmt("scenario.fx.crossed", lang, how=how, code=code, cite=cite)
                             if code != "USD" else how)
    for code, rate in given.items():
        if code != own:
            out[code] = (float(rate), fmt("scenario.fx.given", lang, code=code))
    return out


_MONEY_PATHS: list = []     # [model, its inputs, their amounts' (path, parts)]: the last model's


def _money_paths(model) -> list[tuple[str, list[str]]]:
    """The scenario paths of the model's amounts (money inputs), each with its parts, in order."""
    if not (_MONEY_PATHS and _MONEY_PATHS[0] is model and _MONEY_PATHS[1] == len(model.inputs)):
        _MONEY_PATHS[:] = [model, len(model.inputs), [(d.path, d.path.split(".")) for d in model.inputs.values()
                                                       if d.codec == "money"]]
    return _MONEY_PATHS[2]


def price_currencies(s: Scenario, catalog: Catalog) -> dict[str, str]:
    """Each currency the scenario's prices are in (catalog defaults are in theirs), with the
    field that brings it in."""
    from ..model.model import build_model    # the model says which inputs are amounts

    out: dict[str, str] = {}
    for path, parts in _money_paths(build_model()):
        price: object = s
        for part in parts:
            price = getattr(price, part, None)
        if price is not None and price.currency:
            out.setdefault(price.currency, path)
    for n, role in enumerate(s.staffing):
        if role.monthly_cost.currency:
            out.setdefault(role.monthly_cost.currency, f"staffing[{n}].monthly_cost")
    if catalog.prices is not None:
        for path, fig in catalog.prices.default_amounts(s.hardware.accelerator, s.prices.catalog).items():
            out.setdefault(fig.currency, path)
    return out


def _check_prices(s: Scenario, catalog: Catalog) -> None:
    prices = catalog.prices
    if prices is None:
        return
    if s.prices.catalog is not None:
        ids = [r.id for r in prices.rental]
        if s.prices.catalog not in ids:
            # the prices of the chosen accelerator are the ones worth listing
            acc = s.hardware.accelerator
            own = [r.id for r in prices.rental if r.accelerator == acc]
            hint = suggest(s.prices.catalog, ids)
            fix = (Msg("errors.scenario.price_id.fix", hint=hint, accelerator=acc, ids=", ".join(own)) if own
                   else Msg("errors.scenario.price_id.fix_none", hint=hint, accelerator=acc))
            raise rule_error(Msg("errors.scenario.price_id.message", id=repr(s.prices.catalog)), fix,
                             "prices.catalog")
        row = prices.rental_price(s.prices.catalog)
        if row.accelerator != s.hardware.accelerator:
            raise rule_error(Msg("errors.scenario.price_other_accelerator.message", id=row.id,
                                 priced=row.accelerator, accelerator=s.hardware.accelerator),
                             Msg("errors.scenario.price_other_accelerator.fix",
                                 accelerator=s.hardware.accelerator),
                             "prices.catalog")
    if s.energy.grid is not None and s.energy.grid not in {g.id for g in prices.grids}:
        ids = [g.id for g in prices.grids]
        raise rule_error(Msg("errors.scenario.grid.message", id=repr(s.energy.grid)),
                         Msg("errors.scenario.grid.fix", hint=suggest(s.energy.grid, ids), ids=", ".join(ids)),
                         "energy.grid")
    if s.ownership == "owned" and s.owned.node_price is None and prices.purchase_for(s.hardware.accelerator) is None:
        raise rule_error(Msg("errors.scenario.purchase_price.message", accelerator=s.hardware.accelerator),
                         Msg("errors.scenario.purchase_price.fix"), "owned.node_price")
    own = s.prices.currency
    if s.prices.fx_rates.get(own, 1.0) != 1.0:
        raise rule_error(Msg("errors.scenario.own_rate.message", currency=own),
                         Msg("errors.scenario.own_rate.fix", currency=own), f"prices.fx_rates.{own}")
    rates = fx_table(s, catalog)
    for code, path in price_currencies(s, catalog).items():
        if code not in rates:
            raise rule_error(Msg("errors.scenario.no_rate.message", code=code, path=path, currency=own),
                             Msg("errors.scenario.no_rate.fix", code=code, currency=own), "prices.fx_rates")


def _check_catalog_refs(s: Scenario, catalog: Catalog) -> None:
    ids = catalog.accelerator_ids()
    if s.hardware.accelerator not in ids:
        hint = suggest(s.hardware.accelerator, ids)
        raise rule_error(Msg("errors.scenario.accelerator.message", id=repr(s.hardware.accelerator)),
                         Msg("errors.scenario.accelerator.fix", hint=hint, ids=", ".join(ids)),
                         "hardware.accelerator")
    if s.model.preset is not None and s.model.preset not in catalog.model_ids():
        ids = catalog.model_ids()
        hint = suggest(s.model.preset, ids)
        raise rule_error(Msg("errors.scenario.preset.message", id=repr(s.model.preset)),
                         Msg("errors.scenario.preset.fix", hint=hint, ids=", ".join(ids)),
                         "model.preset")
    _check_prices(s, catalog)


def _check_precision(s: Scenario, catalog: Catalog) -> None:
    """The compute precision needs the accelerator's dense peak for it (blank where unpublished);
    a typed fp32 master copy is part of the optimizer bytes."""
    precision = s.hardware.precision
    acc = catalog.accelerator(s.hardware.accelerator)
    if precision != "bf16" and getattr(acc, f"peak_{precision}_tflops") is None:
        have = ["bf16"] + [p for p in ("fp8", "fp4") if getattr(acc, f"peak_{p}_tflops") is not None]
        raise rule_error(Msg("errors.scenario.precision_peak.message", accelerator=acc.id,
                             precision=precision),
                         Msg("errors.scenario.precision_peak.fix", precisions=", ".join(have),
                             precision=precision),
                         "hardware.precision")
    mem = s.memory
    preset = PRECISIONS[mem.precision]
    optimizer = preset[2] if mem.optimizer_bytes_per_param is None else mem.optimizer_bytes_per_param
    master = preset[3] if mem.master_bytes_per_param is None else mem.master_bytes_per_param
    if master > optimizer:
        raise rule_error(Msg("errors.scenario.master_bytes.message", master=master, optimizer=optimizer),
                         Msg("errors.scenario.master_bytes.fix"), "memory.master_bytes_per_param")


SHAPE_FIELDS = ("params", "layers", "hidden_size", "attention_heads", "seq_len", "vocab_size")


def resolved_shape(s: Scenario, catalog: Catalog | None) -> dict | None:
    """The model shape after applying overrides to the preset; None if it cannot be known yet."""
    shape: dict = {}
    if s.model.preset is not None:
        if catalog is None:
            return None
        preset = catalog.model(s.model.preset)
        shape = {f: getattr(preset, f) for f in SHAPE_FIELDS}
        if preset.global_batch_sequences is not None:
            shape["global_batch_sequences"] = preset.global_batch_sequences
    for f in SHAPE_FIELDS:
        if f in s.model.hf_shape:
            shape[f] = s.model.hf_shape[f][0]
        if getattr(s.model, f) is not None:
            shape[f] = getattr(s.model, f)
    shape.update(shape_details(s, catalog))
    if s.model.hf_config is not None and "seq_len" not in shape:
        longest = s.model.hf_shape.get("max_context", (None,))[0]
        raise rule_error(Msg("errors.scenario.hf_seq_len.message", file=s.model.hf_config, longest=longest),
                         Msg("errors.scenario.hf_seq_len.fix"), "model.seq_len")
    if s.data.global_batch_sequences is not None:
        shape["global_batch_sequences"] = s.data.global_batch_sequences
    missing = [f for f in SHAPE_FIELDS[1:] if f not in shape]
    if missing and "params" in shape:
        shape.update({f: v for f, v in shape_from_params(shape["params"]).items() if f in missing})
        shape["derived"] = set(missing)
    elif missing:
        raise rule_error(Msg("errors.scenario.shape_incomplete.message", missing=", ".join(missing)),
                         Msg("errors.scenario.shape_incomplete.fix"), "model." + missing[0])
    if "params" not in shape:
        L, h, V, s_ = shape["layers"], shape["hidden_size"], shape["vocab_size"], shape["seq_len"]
        shape["params"] = float(12 * L * h * h + (V + s_) * h)  # Kaplan et al. 2020, eq. 2.1 + embeddings
        shape["params_from_shape"] = True
    if "global_batch_sequences" not in shape:
        # 4M tokens per step, the common choice for 10B-500B models, rounded to whole sequences
        shape["global_batch_sequences"] = max(1, round(4_194_304 / shape["seq_len"]))
        shape["batch_defaulted"] = True
    if shape["hidden_size"] % shape["attention_heads"] and shape.get("head_dim") is None:
        raise rule_error(Msg("errors.scenario.heads_split.message", hidden=shape["hidden_size"],
                             heads=shape["attention_heads"]),
                         Msg("errors.scenario.heads_split.fix"), "model.attention_heads")
    _check_details(shape)
    return shape


# The shape's details beyond the GPT-3 fields: flat key -> (section, field) in the scenario's
# `model` and in a catalog preset. Absent, each is blank in the workbook (the old GPT shape).
SHAPE_DETAILS = {
    "active_params": (None, "active_params"), "num_kv_heads": (None, "num_kv_heads"),
    "head_dim": (None, "head_dim"), "ffn_hidden_size": (None, "ffn_hidden_size"),
    "activation": (None, "activation"), "tied_embeddings": (None, "tied_embeddings"),
    "position_embeddings": (None, "position_embeddings"),
    "moe_experts": ("moe", "experts"), "moe_experts_per_token": ("moe", "experts_per_token"),
    "moe_shared_experts": ("moe", "shared_experts"),
    "moe_expert_ffn_hidden_size": ("moe", "expert_ffn_hidden_size"),
    "moe_first_dense_layers": ("moe", "first_dense_layers"), "moe_layer_freq": ("moe", "layer_freq"),
    "mla_q_lora_rank": ("mla", "q_lora_rank"), "mla_kv_lora_rank": ("mla", "kv_lora_rank"),
    "mla_rope_head_dim": ("mla", "rope_head_dim"), "mla_v_head_dim": ("mla", "v_head_dim"),
}


def _detail(node, section: str | None, field: str):
    if node is not None and section is not None:
        node = getattr(node, section, None)
    return getattr(node, field, None) if node is not None else None


def shape_details(s: Scenario, catalog: Catalog | None) -> dict:
    """The preset's shape details, each overridden by the scenario's own (None: not given)."""
    preset = catalog.model(s.model.preset) if s.model.preset is not None and catalog is not None else None
    out = {}
    for key, (section, field) in SHAPE_DETAILS.items():
        value = _detail(s.model, section, field)
        if value is None and key in s.model.hf_shape:
            value = s.model.hf_shape[key][0]
        out[key] = value if value is not None else _detail(preset, section, field)
    return out


# Hugging Face config.json -> the shape. Architectures whose FFN is gated with SiLU (SwiGLU),
# positions rotary and embeddings untied unless the config says tie_word_embeddings.
HF_ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
HF_GATED_ACTIVATIONS = ("silu", "swish")
# config.json key -> flat shape key (the first key present wins, in this order)
HF_KEYS = (
    ("num_hidden_layers", "layers"), ("hidden_size", "hidden_size"),
    ("num_attention_heads", "attention_heads"), ("num_key_value_heads", "num_kv_heads"),
    ("qk_nope_head_dim", "head_dim"), ("head_dim", "head_dim"),
    ("intermediate_size", "ffn_hidden_size"), ("vocab_size", "vocab_size"),
    ("max_position_embeddings", "max_context"), ("tie_word_embeddings", "tied_embeddings"),
    ("num_local_experts", "moe_experts"), ("n_routed_experts", "moe_experts"),
    ("num_experts_per_tok", "moe_experts_per_token"), ("n_shared_experts", "moe_shared_experts"),
    ("moe_intermediate_size", "moe_expert_ffn_hidden_size"),
    ("first_k_dense_replace", "moe_first_dense_layers"), ("moe_layer_freq", "moe_layer_freq"),
    ("q_lora_rank", "mla_q_lora_rank"), ("kv_lora_rank", "mla_kv_lora_rank"),
    ("qk_rope_head_dim", "mla_rope_head_dim"), ("v_head_dim", "mla_v_head_dim"),
)
HF_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
HF_MAX_BYTES = limits.MAX_HF_CONFIG_BYTES
# Counts that may be 0 in a published config (no shared expert, no leading dense layer); every
# other dimension is at least 1 (0 heads or layers would divide by zero).
HF_MAY_BE_ZERO = ("moe_shared_experts", "moe_first_dense_layers")


def read_hf_config(path: Path, given: str) -> dict:
    """The shape in a Hugging Face config.json: flat shape key -> (value, config key). Problems
    (no file, not JSON, an architecture or key it cannot read) name the file and the key."""
    import json

    def fail(kind: str, **figures):
        return rule_error(Msg(f"errors.scenario.hf_config.{kind}.message", file=given, **figures),
                          Msg(f"errors.scenario.hf_config.{kind}.fix", file=given, **figures), "model.hf_config")

    try:
        data = load_json(read_regular(path, HF_MAX_BYTES), limits.MAX_JSON_DEPTH)
    except ReadRefused as exc:
        key = exc.message.key
        if key == "errors.read.too_large.message":
            raise fail("too_big", limit=HF_MAX_BYTES, path=str(path)) from None
        if key == "errors.read.too_deep.message":
            raise fail("too_deep", levels=limits.MAX_JSON_DEPTH, path=str(path)) from None
        if key == "errors.read.bad_json.message":
            raise fail("bad_json", line=exc.message.figures["line"], path=str(path)) from None
        raise fail("not_regular", reason=exc.message, path=str(path)) from None
    except OSError:
        raise fail("missing", folder=str(path.parent)) from None
    if not isinstance(data, dict):
        raise fail("bad_json", line=1, path=str(path))
    archs = data.get("architectures") or []
    arch = next((a for a in archs if a in HF_ARCHITECTURES), None) if isinstance(archs, list) else None
    if arch is None:
        raise fail("architecture", found=", ".join(map(str, archs)) if isinstance(archs, list) else str(archs),
                   known=", ".join(HF_ARCHITECTURES))
    act = data.get("hidden_act", "silu")
    if act not in HF_GATED_ACTIVATIONS:
        raise fail("activation", key="hidden_act", value=str(act))
    for key in HF_REQUIRED:
        if key not in data:
            raise fail("key_missing", key=key)
    out: dict = {"activation": ("swiglu", "hidden_act"), "position_embeddings": ("rotary", "architectures"),
                 "tied_embeddings": (False, "tie_word_embeddings")}
    for key, flat in HF_KEYS:
        if key not in data or data[key] is None or (flat in out and flat != "tied_embeddings"):
            continue
        value = data[key]
        if flat == "tied_embeddings":
            if not isinstance(value, bool):
                raise fail("key_type", key=key, value=json.dumps(value))
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2 ** 24:
            raise fail("key_type", key=key, value=json.dumps(value))
        elif value < 1 and flat not in HF_MAY_BE_ZERO:
            raise fail("not_positive", key=key, value=value)
        out[flat] = (value, key)
    if "moe_experts" not in out:   # a dense model: experts' keys of a config template mean nothing
        out = {k: v for k, v in out.items() if not k.startswith("moe_")}
    if "mla_kv_lora_rank" not in out:
        out = {k: v for k, v in out.items() if not k.startswith("mla_")}
    elif out.get("head_dim", (None, ""))[1] != "qk_nope_head_dim":
        raise fail("key_missing", key="qk_nope_head_dim")
    if arch == "MixtralForCausalLM" and "moe_expert_ffn_hidden_size" not in out:
        out["moe_expert_ffn_hidden_size"] = (data["intermediate_size"], "intermediate_size")
    return out


def _check_details(shape: dict) -> None:
    heads, kv = shape["attention_heads"], shape.get("num_kv_heads")
    if kv is not None and (kv > heads or heads % kv):
        raise rule_error(Msg("errors.scenario.kv_heads.message", kv=kv, heads=heads),
                         Msg("errors.scenario.kv_heads.fix"), "model.num_kv_heads")
    experts, k = shape.get("moe_experts"), shape.get("moe_experts_per_token")
    if (experts is None) != (k is None) or (experts is not None and k > experts):
        raise rule_error(Msg("errors.scenario.moe_experts.message", experts=experts, k=k),
                         Msg("errors.scenario.moe_experts.fix"),
                         "model.moe.experts_per_token" if experts is not None else "model.moe.experts")
    first = shape.get("moe_first_dense_layers")
    if experts is not None and first is not None and first >= shape["layers"]:
        raise rule_error(Msg("errors.scenario.moe_dense_layers.message", first=first, layers=shape["layers"]),
                         Msg("errors.scenario.moe_dense_layers.fix"), "model.moe.first_dense_layers")


HEAD_SIZE = 128
DEFAULT_SEQ_LEN = 4096
DEFAULT_VOCAB = 32000


def shape_from_params(params: float) -> dict:
    """A plausible shape for a parameter count alone: GPT-3's aspect ratio, hidden = 128 × layers
    with 128-wide heads (Brown et al. 2020, Table 2.1), so params ≈ 12·L·h² = 196,608·L³. Layers
    round to a multiple of 8, so the heads divide by any TP up to 8 (7B gives LLaMA 7B's 32 × 4,096)."""
    layers = max(8, 8 * round((params / (12 * HEAD_SIZE ** 2)) ** (1 / 3) / 8))
    hidden = HEAD_SIZE * layers
    return {"layers": layers, "hidden_size": hidden, "attention_heads": hidden // HEAD_SIZE,
            "seq_len": DEFAULT_SEQ_LEN, "vocab_size": DEFAULT_VOCAB}


def _check_stages(s: Scenario) -> None:
    """The stages add up to the run, and each one's GPUs hold its pinned split."""
    if not s.stages:
        return
    total = math.fsum(st.tokens for st in s.stages)
    if abs(total - s.data.train_tokens) > 1e-9 * s.data.train_tokens:
        raise rule_error(Msg("errors.scenario.stages_tokens.message", total=f"{total:,.0f}",
                             tokens=f"{s.data.train_tokens:,.0f}"),
                         Msg("errors.scenario.stages_tokens.fix", total=f"{total:,.0f}"), "stages")
    hw, p = s.hardware, s.parallelism
    for n, st in enumerate(s.stages):
        if st.gpu_count is not None and hw.gpu_count is None:
            raise rule_error(Msg("errors.scenario.stage_needs_count.message"),
                             Msg("errors.scenario.stage_needs_count.fix"), f"stages[{n}].gpu_count")
        if st.gpu_count is not None and st.gpu_count > hw.gpu_count:
            raise rule_error(Msg("errors.scenario.stage_gpus.message", gpus=st.gpu_count, cluster=hw.gpu_count),
                             Msg("errors.scenario.stage_gpus.fix", gpus=st.gpu_count), f"stages[{n}].gpu_count")
        gpus = st.gpu_count or hw.gpu_count
        split = [st.tp or p.tp, st.pp or p.pp, st.cp or p.cp or 1]
        if gpus is not None and None not in split and gpus % math.prod(split):
            raise rule_error(Msg("errors.scenario.stage_split.message", split=math.prod(split), gpus=gpus),
                             Msg("errors.scenario.stage_split.fix"), f"stages[{n}]")


def _check_calibration(s: Scenario, shape: dict | None) -> None:
    """A pilot has its GPUs and one measurement; the plan's utilisation is then not typed (the
    pilot measures it); each layout value the pilot leaves out is the plan's, which must then be
    pinned; and the pilot's layout divides its GPUs and its batch."""
    c, p, hw = s.calibration, s.parallelism, s.hardware
    if not c.given:
        return
    measures = [k for k in CALIBRATION_MEASURES if getattr(c, k) is not None]
    if len(measures) != 1:
        raise rule_error(Msg("errors.scenario.calibration_measure.message", count=len(measures)),
                         Msg("errors.scenario.calibration_measure.fix"),
                         f"calibration.{measures[1]}" if measures else "calibration")
    if c.gpu_count is None:
        raise rule_error(Msg("errors.scenario.calibration_gpus.message"), Msg("errors.scenario.calibration_gpus.fix"),
                         "calibration.gpu_count")
    for key in ("mfu", "hfu", "effective_tflops"):
        if getattr(hw, key) is not None:
            raise rule_error(Msg("errors.scenario.calibration_all_in.message", key=key),
                             Msg("errors.scenario.calibration_all_in.fix", key=key), f"hardware.{key}")
    for field in ("tp", "pp", "micro_batch_size"):
        if getattr(c, field) is None and getattr(p, field) is None:
            raise rule_error(Msg("errors.scenario.calibration_searched.message", field=field),
                             Msg("errors.scenario.calibration_searched.fix", field=field), f"calibration.{field}")
    tp, pp, cp = c.tp or p.tp, c.pp or p.pp, c.cp or p.cp or 1
    if c.gpu_count % (tp * pp * cp):
        raise rule_error(Msg("errors.scenario.calibration_split.message", split=tp * pp * cp, gpus=c.gpu_count),
                         Msg("errors.scenario.calibration_split.fix"), "calibration.gpu_count")
    batch = c.global_batch_sequences or (shape or {}).get("global_batch_sequences")
    dp, micro = c.gpu_count // (tp * pp * cp), c.micro_batch_size or p.micro_batch_size
    if batch is not None and batch % (dp * micro):
        raise rule_error(Msg("errors.scenario.calibration_batch.message", batch=batch, dp=dp, micro=micro),
                         Msg("errors.scenario.calibration_batch.fix"),
                         "calibration.global_batch_sequences" if c.global_batch_sequences else "calibration.gpu_count")


def _check_layout(s: Scenario, shape: dict) -> None:
    """Rules for the pinned dimensions; free ones are the search's business."""
    p, hw = s.parallelism, s.hardware
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


def language_of(data: object) -> str | None:
    """The language a scenario's data names, when it names a known one (its messages are then
    printed in it, even when the rest of the scenario is wrong)."""
    from ..core.i18n import languages
    lang = data.get("language") if isinstance(data, dict) else None
    return lang if isinstance(lang, str) and lang in languages() else None


def validate_scenario(data: object, path: str | Path, catalog: Catalog) -> Scenario:
    """The scenario `data` holds, validated by the schema alone (its options are not merged and
    checked here: `budget.inputs.options.parse_scenario` does both)."""
    if data is None:
        raise ScenarioError(path, [Problem("", Msg("errors.scenario.empty.message"),
                                           Msg("errors.scenario.empty.fix"))])
    try:
        return Scenario.model_validate(data, context={"catalog": catalog, "base_dir": Path(path).parent})
    except ValidationError as exc:
        raise ScenarioError(path, problems_from_validation(exc, Scenario), language_of(data)) from None
