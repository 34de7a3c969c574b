"""The planning model: every input and every derived line item, defined once.

Definition order is dependency order; each item names the sheet it is shown on (Memory,
Parallelism, Compute, Cost, Checks). Each `item` is one row and one live formula; the planner runs
the same definitions compiled to Python. Sources for the formulas are in the notes and in
../shared/reference/formulas.md.
"""

from __future__ import annotations

from functools import lru_cache

from .formula import (ABS, AND, COLUMNS, COUNTA, EXP, IF, ISERROR, ISNUMBER, MIN, MOD, NOT, OR, ROUND,
                      ROUNDUP, SQRT, SUM, SUMPRODUCT, Blanks, Lookup, Ref)
from .formula import DATE, LN, MAX, MONTH, YEAR
from .formula import Expr, lift
from .lineitems import Model, ModelBuilder

ACCELERATOR_TABLE = "acc"
ACTIVATION_TABLE = "act"
RECOMPUTE_MODES = ("none", "selective", "full")
TIERS = ("on_demand", "reserved", "spot")
OWNERSHIP = ("rented", "owned")
FX_TABLE = "fx"
YES_NO = ("yes", "no")


@lru_cache(maxsize=1)
def build_model() -> Model:
    b = ModelBuilder()
    _tables(b)
    inp = _inputs(b)
    _accelerator(b, inp)
    _layout(b, inp)
    _memory(b, inp)
    _efficiency(b, inp)
    _compute(b, inp)
    _schedule(b, inp)
    _timeline(b, inp)
    _cost(b, inp)
    _generated(b)
    _checks(b, inp)
    return b.model


class _Inputs(dict):
    def __getattr__(self, name: str) -> Ref:
        return self[name]


def _tables(b: ModelBuilder) -> None:
    b.table(ACCELERATOR_TABLE, "Accelerators (catalogs/accelerators.yaml)", [
        ("id", "Id", "text"), ("name", "Accelerator", "text"), ("vendor", "Vendor", "text"),
        ("peak_bf16_tflops", "Peak dense BF16", "TFLOPS"), ("hbm_gb", "HBM", "GB"),
        ("gpus_per_node", "GPUs per node", "GPUs"),
        ("intra_node_gb_per_s", "Intra-node bandwidth (one direction)", "GB/s"),
        ("inter_node_gbit_per_s", "Inter-node bandwidth per GPU", "Gbit/s"),
        ("typical_mfu", "Typical MFU", "fraction"),
        ("tdp_w", "Board power (TDP)", "W"),
        ("node_overhead_kw", "Node power besides the GPUs", "kW"),
        ("node_price", "Purchase price per node (catalogs/prices.yaml)", "price"),
        ("node_price_currency", "Currency of the node price", "text"),
    ])
    b.table(FX_TABLE, "Exchange rates (catalogs/prices.yaml, prices.fx_rates): any one currency at 1", [
        ("id", "Currency", "text"), ("rate", "Units of the plan's currency at generation per unit", "×"),
    ])
    b.table(ACTIVATION_TABLE, "Activation memory per layer, bytes per s·b·h (Korthikanti et al. 2022, Table 2)", [
        ("id", "Recomputation / sequence parallel", "text"),
        ("replicated", "Not split by TP", "bytes/(s·b·h)"),
        ("split", "Split by TP", "bytes/(s·b·h)"),
        ("attention", "Attention score coefficient (× a·s/h, split by TP)", "bytes/(s·b·h)"),
        ("recompute_overhead", "Recomputation overhead", "fraction of compute"),
    ])


ASSUMED = "default: assumption"

# The uncertain inputs of the Sensitivity sheet: key -> (the input it moves, label, how the
# spread applies to the base value, default low and high, citation). Low and high are read as
# the input's P10 and P90 for the range (P10/P50/P90 of the total).
UNCERTAIN = {
    "mfu": ("mfu", "Baseline MFU", "points", -0.10, 0.10,
            "±10 points of utilisation (at least half the base, at most 100%); seed 002 quotes "
            "45-55% for H100"),
    "price_per_gpu_hour": ("price_per_gpu_hour", "GPU rental price", "factor", 0.85, 1.35,
                           "neocloud H100 on-demand $2.49-3.99 around a $2.95 median "
                           "(shared/reference/prices.yaml, 2026)"),
    "train_tokens": ("train_tokens", "Training tokens", "factor", 0.9, 1.1,
                     "assumption: filtering and repetition move the token count about 10%"),
    "interruption_rate": ("interruption_rate_per_gpu_hour", "Interruption rate", "factor", 0.5, 2.0,
                          "assumption: published large runs differ about 2x either way from "
                          "Llama 3's rate (Llama Team 2024; OPT-175B logbook)"),
    "queue_days": ("queue_days", "Queue wait", "factor", 0.5, 3.0,
                   "assumption: seed 000, larger jobs queue longer"),
    "setup_days": ("setup_days", "Setup", "factor", 0.5, 2.0, "assumption: prebuilt images halve it"),
    "staffing": ("staffing_factor", "Staffing cost", "factor", 0.9, 1.3,
                 "assumption: hiring delays and overtime"),
    "storage_price": ("price_per_gb_month", "Storage price", "factor", 0.5, 1.5,
                      "assumption: cheaper tiers to egress and requests on top"),
}

# Inputs whose values the layout search took as given when it chose the GPU count and layout
# (and the catalog figures it read): a reviewer who changes one must regenerate. Each keeps
# its value at generation in a visible cell named gen_<name>.
SEARCH_INPUTS = ("gpu_type", "model_layers", "hidden_size", "attention_heads", "seq_len",
                 "vocab_size", "params_override", "train_tokens", "global_batch_sequences",
                 "deadline_days", "usable_memory_fraction", "weight_bytes_per_param",
                 "grad_bytes_per_param", "optimizer_bytes_per_param", "flash_attention",
                 "activation_gb_override", "gpu_count")
SEARCH_ITEMS = ("peak_tflops", "hbm_gb", "gpus_per_node", "intra_node_gb_per_s",
                "scale_out_gb_per_s")


def _inputs(b: ModelBuilder) -> _Inputs:
    i = _Inputs()

    def add(name, label, unit, **kw):
        i[name] = b.input(name, label, unit, **kw)

    def constant(name, label, unit, value, cite, **kw):
        add(name, label, unit, constant=value, cite=cite, path=f"constants.{name}", **kw)

    b.input_section("Model")
    add("params_override", "Parameters (blank = from the shape: 12·L·h² + (V + s)·h)", "parameters",
        minimum=1, optional=True, path="model.params", codec="count",
        help="Blank it to compute the count from the layers, hidden size, vocabulary and sequence.")
    add("model_layers", "Transformer layers", "layers", kind="integer", minimum=1, path="model.layers")
    add("hidden_size", "Hidden size", "width", kind="integer", minimum=1, path="model.hidden_size")
    add("attention_heads", "Attention heads", "heads", kind="integer", minimum=1,
        path="model.attention_heads")
    add("seq_len", "Sequence length", "tokens", kind="integer", minimum=1, path="model.seq_len")
    add("vocab_size", "Vocabulary", "tokens", kind="integer", minimum=1, path="model.vocab_size")

    b.input_section("Data and batch")
    add("train_tokens", "Training tokens", "tokens", minimum=1, positive=True,
        path="data.train_tokens", codec="count")
    add("global_batch_sequences", "Global batch", "sequences", kind="integer", minimum=1,
        path="data.global_batch_sequences")

    b.input_section("Hardware")
    add("gpu_type", "Accelerator", "catalog id", kind="choice", choices_from="acc_id",
        path="hardware.accelerator", codec="text",
        help="Pick an id from the Catalog sheet; the product name shows in the Note column.")
    add("gpu_count", "GPUs", "GPUs", kind="integer", minimum=1, path="hardware.gpu_count",
        codec="int", search="count", cite="set by the sizing (Summary)")
    add("deadline_days", "Deadline for training (blank = none)", "days", minimum=0, positive=True,
        optional=True, path="hardware.deadline_days", cite="no deadline in the scenario")
    add("mfu", "Baseline MFU (blank = from effective TFLOPS, else the catalog's typical MFU)",
        "fraction", kind="fraction", minimum=0, maximum=1, positive=True, optional=True,
        path="hardware.mfu",
        help="Model FLOPs utilisation: the share of the peak that trains the model.")
    add("effective_tflops_given", "Effective throughput per GPU, all-in (blank = from MFU)", "TFLOPS",
        minimum=0, positive=True, optional=True, path="hardware.effective_tflops",
        help="An all-in figure stated for the accelerator above; blank it when you change the accelerator.")
    add("usable_memory_fraction", "Usable share of HBM", "fraction", kind="fraction",
        minimum=0, maximum=1, positive=True, path="hardware.usable_memory_fraction",
        cite="default: planners count 85-90% of HBM as usable")

    b.input_section("Parallel layout")
    search_cite = "chosen by the layout search"

    def layout(name, label, unit, path, domain, short, codec="int", **kw):
        add(name, label, unit, path=f"parallelism.{path}", codec=codec, cite=search_cite,
            search="layout", domain=domain, short=short, **kw)

    layout("tp_size", "Tensor parallel (TP)", "GPUs", "tp", (1, 2, 4, 8, 16), "TP",
           kind="integer", minimum=1)
    layout("pp_size", "Pipeline parallel (PP)", "stages", "pp", None, "PP",   # divisors of the layers
           kind="integer", minimum=1)
    layout("micro_batch_size", "Micro-batch", "sequences", "micro_batch_size", (1, 2, 4, 8),
           "Micro-batch", kind="integer", minimum=1)
    layout("zero_stage", "ZeRO stage over data parallel", "stage", "zero_stage", (0, 1, 2, 3), "ZeRO",
           kind="integer", minimum=0, maximum=3)
    layout("recompute", "Activation recomputation", "mode", "recompute", RECOMPUTE_MODES, "Recompute",
           codec="text", kind="choice", choices=RECOMPUTE_MODES)
    layout("sequence_parallel", "Sequence parallelism", "yes/no", "sequence_parallel", ("no", "yes"),
           "SP", codec="yesno", kind="choice", choices=YES_NO)

    b.input_section("Sizing (seed 000 steps 2-3)")
    add("split_margin", "Splitting margin on the memory-first count", "fraction", kind="fraction",
        minimum=0, maximum=10, path="sizing.split_margin",
        cite="default: assumption; seed 000 asks for a margin, gives no figure")
    add("spare_nodes", "Spare nodes", "nodes", kind="integer", minimum=0, path="sizing.spare_nodes",
        codec="int", cite="default: one spare node (seed 000; BLOOM kept 4 beside 48)")

    b.input_section("Layout efficiency")
    add("layout_efficiency_override", "Layout efficiency (blank = the model on Parallelism)", "fraction",
        kind="fraction", minimum=0, maximum=2, positive=True, optional=True,
        path="efficiency.layout_efficiency", cite="blank: the Parallelism sheet's model")
    add("reference_layout_efficiency", "Layout efficiency at which the baseline MFU was measured",
        "fraction", kind="fraction", minimum=0, maximum=1, positive=True,
        path="efficiency.reference_layout_efficiency",
        cite="default: what the Parallelism model gives a typical large, well-tuned run (GPT-3 175B "
             "on 512 H100, TP 8 x PP 8, ZeRO-1, selective recomputation: 0.82); the catalog's "
             "typical MFU is read as the MFU of such a run")
    add("tp_comm_exposed", "Share of TP communication not overlapped", "fraction", kind="fraction",
        minimum=0, maximum=1, path="efficiency.tp_comm_exposed",
        cite="default: Megatron's TP collectives sit on the critical path")
    add("dp_comm_exposed", "Share of DP communication not overlapped", "fraction", kind="fraction",
        minimum=0, maximum=1, path="efficiency.dp_comm_exposed",
        cite="default: assumption; gradient reduction mostly overlaps the backward pass")

    b.input_section("Memory")
    add("weight_bytes_per_param", "Weights", "bytes/parameter", minimum=0,
        path="memory.weight_bytes_per_param")
    add("grad_bytes_per_param", "Gradients", "bytes/parameter", minimum=0,
        path="memory.grad_bytes_per_param")
    add("optimizer_bytes_per_param", "Optimizer states", "bytes/parameter", minimum=0,
        path="memory.optimizer_bytes_per_param")
    add("flash_attention", "FlashAttention (attention scores not stored)", "yes/no",
        kind="choice", choices=YES_NO, path="memory.flash_attention", codec="yesno",
        cite="default: yes, as every current training stack (seed 002 section 7.3)")
    add("activation_gb_override", "Activations of one micro-batch, whole model (blank = formula)",
        "GB", minimum=0, optional=True, path="memory.activation_gb_per_microbatch",
        cite="blank: the Korthikanti formula on the Memory sheet")

    b.input_section("Currency")
    add("currency", "Currency of every total", "ISO 4217 code", kind="text",
        path="prices.currency", codec="text", cite="default: US dollars",
        help="Three letters (USD, CNY, EUR): every total's label follows this cell; amounts in "
             "other currencies convert through the FX table on the Catalog sheet.")

    def money(name, label, unit, path, currency, **kw):
        """An amount in the currency its companion input names, converted live into `currency`."""
        add(name, label, unit, path=path, codec=kw.pop("codec", "money"), currency=currency, **kw)

    def currency_of(name, label):
        add(name, label, "ISO 4217 code", kind="text", codec="text",
            help="The currency this amount is typed in; the FX table on the Catalog sheet converts it.")

    b.input_section("GPU prices")
    add("price_tier", "Price tier", "tier", kind="choice", choices=TIERS, path="prices.tier", codec="text",
        cite="default: on demand",
        help="on_demand: pay the hours used; reserved: pay the whole term; spot: a discount, with preemptions.")
    currency_of("price_currency", "Currency of the GPU prices")
    money("price_per_gpu_hour", "GPU price as quoted for the tier", "currency/GPU-hour",
          "prices.per_gpu_hour", "price_currency", minimum=0,
          help="Reserved: the committed rate; spot: the on-demand rate the discount applies to.")
    money("on_demand_per_gpu_hour", "On-demand rate beyond a reservation (blank = the price above)",
          "currency/GPU-hour", "prices.on_demand_per_gpu_hour", "price_currency", minimum=0,
          optional=True, cite="blank: the price above")
    add("reserved_term_months", "Reserved: term", "months", minimum=0, positive=True,
        path="prices.reserved.term_months", cite="default: a 1-year commitment")
    add("reserved_upfront_share", "Reserved: share paid up front", "fraction", kind="fraction",
        minimum=0, maximum=1, path="prices.reserved.upfront_share", cite="default: nothing up front")
    add("reserved_committed_gpus", "Reserved: GPUs committed (blank = the GPUs reserved, with spares)",
        "GPUs", kind="integer", minimum=0, optional=True, path="prices.reserved.committed_gpus",
        codec="int", cite="blank: the training GPUs and spare nodes (Memory sheet)")
    add("spot_discount", "Spot: discount on the on-demand rate", "fraction", kind="fraction",
        minimum=0, maximum=0.999, path="prices.spot.discount",
        cite="default: CoreWeave's H100 spot rate is 60% below its on-demand rate "
             "(catalogs/prices.yaml, 2026)")
    add("spot_preemption_rate_per_gpu_hour", "Spot: preemptions per GPU-hour", "per GPU-hour",
        minimum=0, path="prices.spot.preemption_rate_per_gpu_hour",
        cite="default: AWS Spot Instance Advisor's highest band, over 20% of instances "
             "interrupted a month, for an 8-GPU instance")
    money("network_per_gpu_hour", "Network (0 = included in rental)", "currency/GPU-hour",
          "prices.network", "price_currency", codec="included_or_price", minimum=0,
          cite="default: included in the rental")

    b.input_section("Other prices")
    currency_of("storage_price_currency", "Currency of the storage price")
    money("price_per_gb_month", "Storage", "currency/GB-month", "prices.storage_per_gb_month",
          "storage_price_currency", minimum=0, cite="default: AWS S3 Standard list price, first 50 TB")
    add("vat_rate", "VAT or sales tax on purchases (not payroll)", "fraction", kind="fraction",
        minimum=0, maximum=1, path="prices.vat_rate", cite="default: none")
    add("vat_recoverable", "VAT recoverable (shown outside the total)", "yes/no", kind="choice",
        choices=YES_NO, path="prices.vat_recoverable", codec="yesno", cite="default: not recoverable")

    b.input_section("Owned cluster (used when ownership is owned)")
    add("ownership", "Ownership of the cluster", "mode", kind="choice", choices=OWNERSHIP,
        path="ownership", codec="text", cite="default: rented",
        help="rented: pay the provider; owned: amortised capital, energy and operations.")
    currency_of("node_price_currency", "Currency of the node price")
    money("node_price", "Purchase price per node, with its GPUs (blank = the Catalog's)", "currency/node",
          "owned.node_price", "node_price_currency", minimum=0, optional=True,
          cite="blank: the Catalog sheet's price for the accelerator's node")
    add("depreciation_years", "Depreciation life", "years", minimum=0, positive=True,
        path="owned.depreciation_years")
    add("cost_of_capital", "Cost of capital", "fraction/year", kind="fraction", minimum=0, maximum=1,
        path="owned.cost_of_capital")
    add("life_share_override", "Share of the cluster's life the project uses (blank = billed days ÷ life)",
        "fraction", kind="fraction", minimum=0, maximum=1, positive=True, optional=True,
        path="owned.life_share", cite="blank: the project's billed days ÷ the depreciation life")
    currency_of("ops_currency", "Currency of the operations cost")
    money("ops_per_node_month", "Operations per node-month (space, staff, support; not power)",
          "currency/node-month", "owned.ops_per_node_month", "ops_currency", minimum=0)

    b.input_section("Energy and carbon")
    add("pue", "Power usage effectiveness (PUE)", "×", minimum=1, path="energy.pue")
    add("grid_intensity", "Grid carbon intensity", "kg CO2e/kWh", minimum=0, path="energy.grid_intensity")
    add("draw_training", "Power while training, share of the node's rated power", "fraction", kind="fraction",
        minimum=0, maximum=2, path="energy.draw_training")
    add("draw_idle", "Power while reserved but idle, share of rated power", "fraction", kind="fraction",
        minimum=0, maximum=1, path="energy.draw_idle")
    add("node_overhead_kw", "Node power besides the GPUs: CPUs, network, fans (blank = the Catalog's)",
        "kW/node", minimum=0, optional=True, path="energy.node_overhead_kw",
        cite="blank: the Catalog sheet's figure for the accelerator's node")
    currency_of("electricity_currency", "Currency of the electricity price")
    money("electricity_per_kwh", "Electricity (owned clusters pay it; rental includes it)",
          "currency/kWh", "energy.electricity_per_kwh", "electricity_currency", minimum=0)

    b.input_section("Runs besides the main one")
    add("validation_model_params", "Validation model (capped at the model itself)", "parameters",
        minimum=1, path="runs.validation_params", codec="count",
        cite="default: seed 002's largest validation model, 7B (weeks 3-4: 1-7B)")
    add("validation_tokens", "Validation tokens", "tokens", minimum=0, path="runs.validation_tokens",
        codec="count", cite="default: assumption; seed 002 sizes the model, not its tokens: 100B fit "
                            "its 2 weeks on 16 H100")
    add("scaling_model_params", "Scaling-run model (capped at the model itself)", "parameters",
        minimum=1, path="runs.scaling_params", codec="count",
        cite="default: seed 002's largest scaling model, 70B (weeks 5-8: 30-70B)")
    add("scaling_tokens", "Scaling-run tokens", "tokens", minimum=0, path="runs.scaling_tokens",
        codec="count", cite="default: assumption; 200B tokens of 70B fit seed 002's 4 weeks on 128 H100")
    add("rollbacks", "Rollbacks to an earlier checkpoint (loss spikes, bad data)", "rollbacks",
        minimum=0, path="runs.rollbacks",
        cite="default: PaLM 540B saw about 20 loss spikes, each restarted from an earlier checkpoint "
             "(Chowdhery et al. 2022, section 5.1); seed 000 section 4")
    add("rollback_steps", "Steps retrained per rollback", "steps", minimum=0, path="runs.rollback_steps",
        cite="default: PaLM restarted about 100 steps before each spike (Chowdhery et al. 2022)")
    add("post_training_tokens", "Post-training (SFT, preference tuning)", "tokens", minimum=0,
        path="runs.post_training_tokens", codec="count",
        cite="default: assumption after DeepSeek-V3, whose post-training took 5K of 2,788K H800 "
             "GPU-hours, about 30B tokens' worth at its 37B active parameters")
    add("serving_gpus", "Serving after training: GPUs", "GPUs", kind="integer", minimum=0,
        path="runs.serving_gpus", codec="int", cite="default: no serving in this budget")
    add("serving_months", "Serving: months", "months", minimum=0, path="runs.serving_months",
        cite="default: no serving in this budget")
    money("serving_per_gpu_hour", "Serving rate (blank = the compute rate)", "currency/GPU-hour",
          "runs.serving_per_gpu_hour", "price_currency", minimum=0, optional=True,
          cite="blank: the rate extra compute pays (Cost sheet)")

    b.input_section("Data and storage")
    add("raw_bytes_per_token", "Raw text per token", "bytes", minimum=0,
        path="storage.raw_bytes_per_token",
        cite="default: UTF-8 English averages about 4 bytes per BPE token")
    add("tokenized_bytes_override", "Tokenized data per token (blank = by the vocabulary)", "bytes",
        minimum=0, optional=True, path="storage.tokenized_bytes_per_token",
        cite="blank: 2-byte token ids up to a 65,536-token vocabulary, 4 above (Schedule sheet)")
    add("dataset_gb_override", "Dataset held (blank = raw + tokenized)", "GB", minimum=0,
        optional=True, path="storage.dataset_gb", cite="blank: raw + tokenized, on the Schedule sheet")
    add("checkpoints_kept", "Checkpoints kept (the last K)", "checkpoints", kind="integer", minimum=0,
        path="storage.checkpoints_kept", codec="int",
        cite="default: keep the last 3 (seed 000: keep the latest few)")
    add("checkpoint_storage_gb_override", "Checkpoints held (blank = K full checkpoints)", "GB",
        minimum=0, optional=True, path="storage.checkpoint_gb",
        cite="blank: K full checkpoints, on the Schedule sheet")
    add("storage_months", "Months held (blank = the project's length)", "months", minimum=0,
        optional=True, path="storage.months_held",
        cite="blank: from the project start to its end (Timeline sheet)")
    add("storage_write_gb_per_s", "Storage write bandwidth (checkpoints)", "GB/s", minimum=0,
        positive=True, path="storage.write_gb_per_s",
        cite="default: BLOOM saved 2.3 TB in about 40 s (~57 GB/s)")
    add("storage_read_gb_per_s", "Storage read bandwidth (data, reloads)", "GB/s", minimum=0,
        positive=True, path="storage.read_gb_per_s", cite="default: assumed equal to the write bandwidth")

    b.input_section("Schedule (seed 000 section 4)")
    add("queue_days", "Queue wait for the cluster", "days", minimum=0, path="schedule.queue_days",
        cite="default: assumption; seed 000 says larger jobs queue longer, gives no figure")
    add("setup_days", "Setup: environment, framework, distributed configuration", "days", minimum=0,
        path="schedule.setup_days",
        cite="default: assumption; a week when images are not prebuilt (seed 000)")
    add("transfer_gbit_per_s", "Data transfer bandwidth into the cluster", "Gbit/s", minimum=0,
        positive=True, path="schedule.transfer_gbit_per_s", cite="default: assumption; a 10 Gbit/s link")

    b.input_section("Failures and checkpoints")
    add("interruption_rate_per_gpu_hour", "Interruptions per GPU-hour", "per GPU-hour", minimum=0,
        positive=True, path="reliability.interruption_rate_per_gpu_hour",
        cite="default: Llama 3 405B, 419 unexpected interruptions in 54 days on 16,384 H100 "
             "(Llama Team 2024, section 3.3.4; seed 000: one every ~3 hours)")
    add("failure_detect_minutes", "Time to detect a failure", "minutes", minimum=0,
        path="reliability.failure_detect_minutes", cite=ASSUMED)
    add("node_replace_minutes", "Time to swap in a spare node and restart", "minutes", minimum=0,
        path="reliability.node_replace_minutes",
        cite="default: assumption; a spare node is already reserved")
    add("checkpoint_interval_steps_override", "Checkpoint interval (blank = Young/Daly optimum)",
        "steps", minimum=0, positive=True, optional=True, path="reliability.checkpoint_interval_steps",
        cite="blank: the Young/Daly optimum on the Schedule sheet")

    b.input_section("Project timeline (seed 002 section 6)")
    add("start_date", "Project start", "date", kind="date", path="schedule.start_date", codec="date",
        cite="default: a placeholder start; set schedule.start_date")
    add("fiscal_year_start_month", "Fiscal year starts in month (1 = January)", "month", kind="integer",
        minimum=1, maximum=12, path="schedule.fiscal_year_start_month", codec="int",
        cite="default: January (calendar year)",
        help="The month the budget year starts: 4 for April. Fiscal years are named by the year they end in.")
    add("data_prep_weeks", "Data preparation", "weeks", minimum=0, path="schedule.data_prep_weeks",
        cite="default: seed 002, weeks 1-2")
    add("validation_weeks", "Small-scale validation", "weeks", minimum=0,
        path="schedule.validation_weeks", cite="default: seed 002, weeks 3-4")
    add("validation_gpus", "Small-scale validation GPUs", "GPUs", kind="integer", minimum=0,
        path="schedule.validation_gpus", codec="int", cite="default: seed 002, 8-16 GPUs")
    add("scaling_weeks", "Mid-scale scaling runs", "weeks", minimum=0, path="schedule.scaling_weeks",
        cite="default: seed 002, weeks 5-8")
    add("scaling_gpus", "Mid-scale scaling GPUs", "GPUs", kind="integer", minimum=0,
        path="schedule.scaling_gpus", codec="int", cite="default: seed 002, 64-128 GPUs")
    add("evaluation_weeks", "Evaluation and fine-tuning (on the training cluster)", "weeks", minimum=0,
        path="schedule.evaluation_weeks", cite="default: seed 002, weeks 25-26")
    add("deployment_weeks", "Deployment", "weeks", minimum=0, path="schedule.deployment_weeks",
        cite="default: seed 002, weeks 27-28")

    b.input_section("Contingency")
    add("buffer_rate", "Contingency buffer", "fraction of subtotal", kind="fraction",
        minimum=0, maximum=1, path="buffer_rate", cite="default: seed 002 section 8, at least 20%")

    b.input_section("Plausibility (warnings, not checks)")
    add("tokens_per_param_low", "Fewest tokens per parameter before a warning", "tokens/parameter",
        minimum=0, path="plausibility.tokens_per_param_low",
        cite="default: a quarter of Chinchilla's compute-optimal ~20 (Hoffmann et al. 2022)")
    add("tokens_per_param_high", "Most tokens per parameter before a warning", "tokens/parameter",
        minimum=0, path="plausibility.tokens_per_param_high",
        cite="default: Llama 3 8B trained on ~1,900 tokens per parameter (Llama Team 2024)")
    add("plausibility_currency", "Currency of the cost band below", "ISO 4217 code", kind="text",
        codec="text", help="The band converts through the FX table on the Catalog sheet.")
    add("cost_per_gpu_hour_low", "Lowest plausible all-in cost per training GPU-hour",
        "currency/GPU-hour", minimum=0, path="plausibility.cost_per_gpu_hour_low", codec="money",
        currency="plausibility_currency", cite="default: assumption, in US dollars")
    add("cost_per_gpu_hour_high", "Highest plausible all-in cost per training GPU-hour",
        "currency/GPU-hour", minimum=0, path="plausibility.cost_per_gpu_hour_high", codec="money",
        currency="plausibility_currency", cite="default: assumption, in US dollars")
    add("params_tolerance", "Parameter count may differ from the shape's by", "fraction",
        kind="fraction", minimum=0, maximum=1, path="plausibility.params_tolerance",
        cite="default: assumption; presets publish rounded counts within a few percent")

    b.input_section("Uncertainty (Sensitivity sheet: low and high read as P10 and P90)")
    add("staffing_factor", "Staffing cost relative to the table below (1 = as typed)", "×",
        minimum=0, path="uncertainty.staffing_factor", cite="default: 1, the table as typed")
    for key, (target, label, spread, low, high, cite) in UNCERTAIN.items():
        unit = "points" if spread == "points" else "× base"
        kind = "fraction" if spread == "points" else "number"
        for end, value in (("low", low), ("high", high)):
            add(f"unc_{key}_{end}", f"{label}: {end} ({'base +' if spread == 'points' else 'base ×'})",
                unit, kind=kind, minimum=-1 if spread == "points" else 0, maximum=10,
                path=f"uncertainty.{key}.{end}", cite=f"default: {value:+g} points; {cite}"
                if spread == "points" else f"default: × {value:g}; {cite}")

    b.input_section("Staffing")
    add("staff_currency", "Currency of the staffing table", "ISO 4217 code", kind="text", codec="text",
        help="The monthly costs below are in this currency; the FX table converts them.")
    add("staff_role", "Role", "text", kind="range_text", path="staffing[].role", codec="text")
    add("staff_headcount", "Headcount", "people", kind="range", minimum=0, path="staffing[].headcount")
    add("staff_monthly_cost", "Monthly cost per person", "currency/month", kind="range", minimum=0,
        path="staffing[].monthly_cost", currency="staff_currency")
    add("staff_months", "Months (blank = the project's length)", "months", kind="range", minimum=0,
        path="staffing[].months")

    b.input_section("Constants")
    constant("flops_per_param_token", "Training FLOPs per parameter per token (2 forward + 4 backward)",
             "FLOP/(parameter·token)", 6.0, "Kaplan et al. 2020; seed 002 section 1", minimum=0)
    constant("bytes_per_gb", "Bytes per GB (decimal, as HBM is marketed)", "bytes", 1e9,
             "SI: 1 GB = 10^9 bytes, used for every size in this book", minimum=1)
    constant("flops_per_tflop", "FLOP/s per TFLOP/s", "FLOP/s", 1e12, "SI: tera = 10^12", minimum=1)
    constant("bits_per_byte", "Bits per byte", "bits", 8.0, "definition", minimum=1)
    constant("activation_bytes_per_element", "Bytes per activation element (bf16)", "bytes", 2.0,
             "bf16 activations", minimum=1)
    constant("tp_collectives_per_layer", "TP collectives per layer per micro-batch (2 forward + 2 backward)",
             "collectives", 4.0, "Megatron-LM: 2 all-reduces forward, 2 backward per transformer "
             "layer (Shoeybi et al. 2019)", minimum=0)
    constant("zero3_comm_factor", "ZeRO-3 traffic relative to plain data parallel", "×", 1.5,
             "ZeRO (Rajbhandari et al. 2020), section 7: stage 3 moves 1.5x the data of plain "
             "data parallelism", minimum=1)
    constant("token_id_bytes", "Bytes per token id up to the vocabulary limit below (uint16)", "bytes",
             2.0, "uint16 token ids, as Megatron-LM's indexed datasets store them", minimum=1)
    constant("p90_probability", "Probability below a P90", "fraction", 0.9,
             "definition: the 90th percentile (Sensitivity sheet's range)", minimum=0, maximum=1,
             kind="fraction")
    constant("small_vocab_limit", "Largest vocabulary stored as uint16 ids", "tokens", 65536.0,
             "2^16 values fit in 16 bits; larger vocabularies need uint32 (twice the bytes)", minimum=1)

    # Workbook structure: not assumptions, not on the Inputs rows. The cells just below the
    # growable tables (a check fails when anything is typed there) and the Timeline's week grid.
    b.input_section("Workbook structure")
    add("staff_rows_below", "Cells below the staffing table", "cells", kind="structure")
    add("catalog_rows_below", "Cells below the accelerator catalog", "cells", kind="structure")
    add("timeline_week_cells", "Week columns of the Timeline grid", "cells", kind="structure")
    add("cashflow_month_cells", "Month columns of the Cashflow sheet", "cells", kind="structure")
    return i


def _generated(b: ModelBuilder) -> None:
    """gen_<name>: the value each search input and catalog figure had when the search ran."""
    b.input_section("At generation")
    b.input("layout_searched", "The layout search chose the GPU count or layout", "yes/no",
            kind="generated_text")
    for name in (*SEARCH_INPUTS, *SEARCH_ITEMS):
        source = b.model.inputs.get(name) or b.model.items.get(name)
        kind = "generated_text" if source.unit in {"catalog id", "yes/no", "mode", "text"} else "generated"
        b.input(f"gen_{name}", f"{source.label} when the layout was chosen", source.unit, kind=kind,
                optional=True)


def _acc(column: str) -> Lookup:
    return Lookup(ACCELERATOR_TABLE, column, Ref("gpu_type"))


def _accelerator(b: ModelBuilder, i: _Inputs) -> None:
    b.sheet("Compute", "Accelerator")
    b.item("accelerator_name", "Accelerator", "text", _acc("name"),
           "From the Catalog sheet by INDEX/MATCH on the chosen id")
    b.item("peak_tflops", "Peak dense BF16 throughput", "TFLOPS", _acc("peak_bf16_tflops"),
           "Catalog; dense, without 2:4 sparsity")
    b.item("gpus_per_node", "GPUs per node", "GPUs", _acc("gpus_per_node"), "Catalog")
    b.item("intra_node_gb_per_s", "Intra-node bandwidth per GPU, one direction", "GB/s",
           _acc("intra_node_gb_per_s"), "Catalog (NVLink, XGMI, HCCS)")
    b.item("scale_out_gb_per_s", "Bandwidth between data-parallel and pipeline peers", "GB/s",
           IF(i.gpu_count <= Ref("gpus_per_node"), Ref("intra_node_gb_per_s"),
              _acc("inter_node_gbit_per_s") / i.bits_per_byte),
           "The NIC's Gbit/s ÷ 8, or the intra-node fabric when the job fits in one node")

    b.item("baseline_mfu", "Baseline MFU used", "fraction",
           IF(ISNUMBER(i.mfu), i.mfu, IF(ISNUMBER(i.effective_tflops_given),
                                         i.effective_tflops_given / Ref("peak_tflops"), _acc("typical_mfu"))),
           "The MFU input; else effective TFLOPS ÷ peak; else the catalog's typical MFU")

    b.section("Model")
    L, h = i.model_layers, i.hidden_size
    shape = b.item("params_from_shape", "Parameters from the shape 12·L·h² + (V + s)·h", "parameters",
                   12 * L * h * h + (i.vocab_size + i.seq_len) * h,
                   "Kaplan et al. 2020, eq. 2.1, with token and position embeddings")
    b.item("model_params", "Parameters", "parameters",
           IF(ISNUMBER(i.params_override), i.params_override, shape),
           "The override on Inputs (a preset's published count), else the shape's count")

    b.section("Batch")
    batch_tokens = b.item("global_batch_tokens", "Tokens per step", "tokens",
                          i.global_batch_sequences * i.seq_len)
    b.item("train_steps", "Optimizer steps", "steps", i.train_tokens / batch_tokens)
    b.item("tokens_per_param", "Training tokens per parameter", "tokens/parameter",
           i.train_tokens / Ref("model_params"), "Chinchilla's compute-optimal is about 20")


def _layout(b: ModelBuilder, i: _Inputs) -> None:
    b.sheet("Parallelism", "Chosen layout")
    dp = b.item("dp_size", "Data parallel (DP) = GPUs ÷ (TP·PP)", "replicas",
                i.gpu_count / (i.tp_size * i.pp_size))
    b.item("layout_label", "Layout TP × PP × DP", "text",
           i.tp_size.concat(" × ").concat(i.pp_size).concat(" × ").concat(dp))
    b.item("nodes", "Nodes", "nodes", ROUNDUP(i.gpu_count / Ref("gpus_per_node"), 0))
    m = b.item("microbatches_per_step", "Micro-batches per step per pipeline (m)", "micro-batches",
               i.global_batch_sequences / (dp * i.micro_batch_size))
    b.item("microbatches_in_flight", "Micro-batches held by the first stage (1F1B)",
           "micro-batches", MIN(i.pp_size, m), "min(p, m): 1F1B keeps at most p in flight")


def _memory(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Memory", "Accelerator memory")
    hbm = b.item("hbm_gb", "HBM per GPU", "GB", _acc("hbm_gb"), "Catalog")
    usable = b.item("usable_hbm_gb", "Usable HBM per GPU", "GB", hbm * i.usable_memory_fraction,
                    "Frameworks, CUDA context and fragmentation take the rest")

    b.section("Model states, whole model (seed 002 section 4)")
    w = b.item("weights_gb", "Weights", "GB", Ref("model_params") * i.weight_bytes_per_param / i.bytes_per_gb)
    g = b.item("gradients_gb", "Gradients", "GB", Ref("model_params") * i.grad_bytes_per_param / i.bytes_per_gb)
    o = b.item("optimizer_gb", "Optimizer states", "GB",
               Ref("model_params") * i.optimizer_bytes_per_param / i.bytes_per_gb)

    b.section("Activations (Korthikanti et al. 2022)")
    mode = b.item("activation_mode", "Activation mode (recompute / sequence parallel)", "text",
                  i.recompute.concat("/").concat(i.sequence_parallel))
    rep = b.item("act_bytes_replicated", "Bytes per s·b·h not split by TP", "bytes",
                 Lookup(ACTIVATION_TABLE, "replicated", mode))
    split = b.item("act_bytes_split", "Bytes per s·b·h split by TP", "bytes",
                   Lookup(ACTIVATION_TABLE, "split", mode))
    attn = b.item("act_bytes_attention", "Attention coefficient (× a·s/h)", "bytes",
                  IF(i.flash_attention.eq("yes"), 0, Lookup(ACTIVATION_TABLE, "attention", mode)),
                  "FlashAttention never stores the s² attention scores, so the term is 0 with it")
    sbh = b.item("act_sbh", "s·b·h of one micro-batch", "elements",
                 i.seq_len * i.micro_batch_size * i.hidden_size)
    per_layer = b.item("activation_layer_gb", "Activations per layer, one micro-batch, unsplit", "GB",
                       sbh * (rep + split + attn * i.attention_heads * i.seq_len / i.hidden_size)
                       / i.bytes_per_gb)
    act_total = b.item("activations_gb", "Activations, one micro-batch, whole model", "GB",
                       IF(ISNUMBER(i.activation_gb_override), i.activation_gb_override,
                          per_layer * i.model_layers),
                       "The override, when given, replaces the formula")
    total = b.item("memory_total_gb", "Total before sharding", "GB", w + g + o + act_total,
                   "Seed 002: 350 + 350 + 2,100 + 50 = 2,850 GB for 175B")

    b.section("Per GPU under TP·PP and ZeRO over DP")
    tp, pp, dp, zero = i.tp_size, i.pp_size, r("dp_size"), i.zero_stage
    w_gpu = b.item("weights_per_gpu_gb", "Weights", "GB", w / (tp * pp) / IF(zero > 2, dp, 1),
                   "ZeRO-3 shards weights over DP")
    g_gpu = b.item("gradients_per_gpu_gb", "Gradients", "GB", g / (tp * pp) / IF(zero >= 2, dp, 1),
                   "ZeRO-2 and up shard gradients over DP")
    o_gpu = b.item("optimizer_per_gpu_gb", "Optimizer states", "GB", o / (tp * pp) / IF(zero >= 1, dp, 1),
                   "ZeRO-1 and up shard optimizer states over DP")
    a_gpu = b.item("activations_per_gpu_gb", "Activations", "GB",
                   IF(ISNUMBER(i.activation_gb_override), i.activation_gb_override / (tp * pp),
                      sbh * (rep + split / tp + attn * i.attention_heads * i.seq_len / (i.hidden_size * tp))
                      * (i.model_layers / pp) * r("microbatches_in_flight") / i.bytes_per_gb),
                   "Override ÷ (TP·PP) as seed 002 divides it; else L/p layers × micro-batches in flight")
    per_gpu = b.item("memory_per_gpu_gb", "Memory per GPU", "GB", w_gpu + g_gpu + o_gpu + a_gpu)
    b.item("memory_headroom_gb", "Headroom (usable − needed)", "GB", usable - per_gpu,
           "Negative means the layout does not fit")

    b.section("GPU count from memory (seed 000 steps 1-3)")
    min_gpus = b.item("min_gpus_for_memory", "Fewest GPUs whose usable HBM holds the total", "GPUs",
                      ROUNDUP(total / usable, 0), "Step 3: total memory ÷ usable memory per GPU")
    min_nodes = b.item("min_nodes_for_memory", "… in whole nodes", "nodes",
                       ROUNDUP(min_gpus / r("gpus_per_node"), 0))
    nodes = b.item("memory_first_nodes", "… plus the splitting margin", "nodes",
                   ROUNDUP(min_nodes * (1 + i.split_margin), 0),
                   "Finer splits communicate more and need more room (seed 000)")
    b.item("memory_first_gpus", "Memory-first GPU count", "GPUs", nodes * r("gpus_per_node"))
    b.item("reserved_gpus", "GPUs to reserve with spare nodes", "GPUs",
           (r("nodes") + i.spare_nodes) * r("gpus_per_node"),
           "Training nodes plus spares that take over a failed node (BLOOM kept 4 beside 48)")


def _efficiency(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    tp, pp, m = i.tp_size, i.pp_size, r("microbatches_per_step")
    b.sheet("Parallelism", "Step time at the baseline MFU")
    rate = b.item("baseline_flops_per_gpu_s", "Baseline throughput per GPU", "FLOP/s",
                  r("peak_tflops") * r("baseline_mfu") * i.flops_per_tflop)
    step = b.item("step_compute_s", "Compute time per step, no losses", "s",
                  i.flops_per_param_token * Ref("model_params") * r("global_batch_tokens")
                  / (i.gpu_count * rate))

    b.section("Pipeline bubble (1F1B)")
    bubble = b.item("bubble_fraction", "Bubble (p − 1) ÷ m", "fraction of step", (pp - 1) / m,
                    "Narayanan et al. 2021; idle time relative to the ideal step")

    b.section("Communication per GPU per step")
    tp_gb = b.item("tp_comm_gb", "TP collectives (ring volume)", "GB",
                   i.tp_collectives_per_layer * 2 * (tp - 1) / tp * r("act_sbh")
                   * i.activation_bytes_per_element * (i.model_layers / pp) * m / i.bytes_per_gb,
                   "Per layer and micro-batch: 4 all-reduces (or all-gather + reduce-scatter) of s·b·h")
    tp_s = b.item("tp_comm_s", "TP time over the intra-node fabric", "s", tp_gb / r("intra_node_gb_per_s"))
    dp_gb = b.item("dp_comm_gb", "Gradient reduction over DP (ring volume)", "GB",
                   2 * (r("dp_size") - 1) / r("dp_size") * Ref("model_params") / (tp * pp)
                   * i.grad_bytes_per_param * IF(i.zero_stage > 2, i.zero3_comm_factor, 1)
                   / i.bytes_per_gb, "ZeRO-3 adds parameter all-gathers: 1.5× the traffic")
    dp_s = b.item("dp_comm_s", "DP time over the network", "s", dp_gb / r("scale_out_gb_per_s"))
    pp_gb = b.item("pp_comm_gb", "Pipeline sends between stages", "GB",
                   2 * MIN(1, pp - 1) * m * r("act_sbh") * i.activation_bytes_per_element / tp
                   / i.bytes_per_gb, "Activations forward and gradients back, per micro-batch")
    pp_s = b.item("pp_comm_s", "PP time over the network", "s", pp_gb / r("scale_out_gb_per_s"))
    comm = b.item("comm_fraction", "Exposed communication", "fraction of step",
                  (tp_s * i.tp_comm_exposed + dp_s * i.dp_comm_exposed + pp_s) / step,
                  "TP is on the critical path; most DP traffic hides behind the backward pass")

    b.section("Layout efficiency and effective MFU")
    overhead = b.item("recompute_overhead", "Recomputation overhead", "fraction of step",
                      Lookup(ACTIVATION_TABLE, "recompute_overhead", r("activation_mode")), "Catalog")
    pipe_eff = b.item("pipeline_efficiency", "Pipeline efficiency 1 ÷ (1 + bubble)", "fraction", 1 / (1 + bubble))
    comm_eff = b.item("communication_efficiency", "Communication efficiency 1 ÷ (1 + exposed)", "fraction",
                      1 / (1 + comm))
    rc_eff = b.item("recompute_efficiency", "Recomputation efficiency 1 ÷ (1 + overhead)", "fraction",
                    1 / (1 + overhead))
    raw_eff = b.item("layout_efficiency_model", "Layout efficiency, this layout", "fraction",
                     pipe_eff * comm_eff * rc_eff)
    eff = b.item("layout_efficiency", "Layout efficiency relative to the baseline's layout", "fraction",
                 IF(ISNUMBER(i.layout_efficiency_override), i.layout_efficiency_override,
                    raw_eff / i.reference_layout_efficiency),
                 "The override, when given, replaces the model (1 = the MFU input is all-in)")
    b.item("effective_mfu", "Effective MFU = baseline × layout efficiency", "fraction", r("baseline_mfu") * eff)


def _compute(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Compute", "Training compute")
    flops = b.item("train_flops", "Training compute (6·N·D)", "FLOP",
                   i.flops_per_param_token * Ref("model_params") * i.train_tokens,
                   "Kaplan et al. 2020; seed 002 section 1")
    eff = b.item("effective_tflops", "Effective throughput per GPU", "TFLOPS",
                 r("peak_tflops") * r("effective_mfu"), "Peak × effective MFU; seed 002 section 2")
    b.item("cluster_pflops", "Effective cluster throughput", "PFLOPS", eff * i.gpu_count / 1000)
    gpu_s = b.item("gpu_seconds", "GPU-seconds", "GPU-s", flops / (eff * i.flops_per_tflop))
    gpu_h = b.item("gpu_hours", "GPU-hours", "GPU-h", gpu_s / 3600)
    gpu_d = b.item("gpu_days", "GPU-days", "GPU-days", gpu_h / 24)
    b.item("train_days", "Training days at this GPU count", "days", gpu_d / i.gpu_count,
           "Pure training time: no queue, setup, failures or evaluation")
    b.item("deadline_gpus", "GPUs the deadline needs at this throughput (0 = no deadline)", "GPUs",
           IF(ISNUMBER(i.deadline_days), ROUNDUP(gpu_d / i.deadline_days, 0), 0))


def _schedule(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Schedule", "Data and checkpoints")
    raw = b.item("dataset_raw_gb", "Raw text", "GB", i.train_tokens * i.raw_bytes_per_token / i.bytes_per_gb)
    width = b.item("tokenized_bytes_per_token", "Tokenized data per token", "bytes",
                   IF(ISNUMBER(i.tokenized_bytes_override), i.tokenized_bytes_override,
                      IF(i.vocab_size <= i.small_vocab_limit, i.token_id_bytes, 2 * i.token_id_bytes)),
                   "The override, else uint16 ids up to the vocabulary limit and uint32 above")
    tok = b.item("dataset_tokenized_gb", "Tokenized dataset", "GB",
                 i.train_tokens * width / i.bytes_per_gb)
    b.item("dataset_gb", "Dataset held", "GB",
           IF(ISNUMBER(i.dataset_gb_override), i.dataset_gb_override, raw + tok))
    b.item("checkpoint_weights_gb", "Checkpoint, weights only", "GB",
           Ref("model_params") * i.weight_bytes_per_param / i.bytes_per_gb, "What inference needs")
    full = b.item("checkpoint_full_gb", "Checkpoint with optimizer state", "GB",
                  Ref("model_params") * (i.weight_bytes_per_param + i.optimizer_bytes_per_param) / i.bytes_per_gb,
                  "What resuming needs: 14 bytes/parameter for mixed-precision Adam (BLOOM 176B: 2.3 TB)")
    b.item("checkpoint_storage_gb", "Checkpoints held", "GB",
           IF(ISNUMBER(i.checkpoint_storage_gb_override), i.checkpoint_storage_gb_override,
              i.checkpoints_kept * full))

    b.section("Failures and checkpoints (Young 1974, Daly 2006)")
    rate = b.item("interruption_rate_total", "Interruptions per GPU-hour, spot preemptions included",
                  "per GPU-hour", i.interruption_rate_per_gpu_hour
                  + IF(AND(i.price_tier.eq("spot"), i.ownership.eq("rented")), i.spot_preemption_rate_per_gpu_hour, 0),
                  "Failures, plus preemptions when renting spot capacity")
    mtbi = b.item("job_mtbi_hours", "Mean time between interruptions of the job", "hours",
                  1 / (rate * i.gpu_count),
                  "The per-GPU rate × GPUs: Llama 3 saw one about every 3 hours on 16,384 GPUs")
    write = b.item("checkpoint_write_hours", "Time to write a checkpoint (δ)", "hours",
                   full / i.storage_write_gb_per_s / 3600)
    step = b.item("step_hours", "Time per step, pure training", "hours",
                  r("train_days") * 24 / r("train_steps"))
    daly = b.item("young_daly_interval_hours", "Optimal interval √(2·δ·M)", "hours", SQRT(2 * write * mtbi))
    interval = b.item("checkpoint_interval_hours", "Checkpoint interval used", "hours",
                      IF(ISNUMBER(i.checkpoint_interval_steps_override),
                         i.checkpoint_interval_steps_override * step, daly))
    b.item("checkpoint_interval_steps", "… in optimizer steps", "steps", interval / step,
           "Seed 002 suggests every 1,000-2,000 steps")
    restart = b.item("restart_hours", "Restart: detect, replace, reload", "hours",
                     (i.failure_detect_minutes + i.node_replace_minutes) / 60
                     + full / i.storage_read_gb_per_s / 3600)
    ckpt = b.item("checkpoint_overhead", "Time spent writing checkpoints (δ/τ)", "fraction",
                  write / interval)
    per = b.item("loss_per_interruption_hours", "Lost per interruption: half an interval + restart",
                 "hours", interval / 2 + restart)
    lost = b.item("failure_fraction", "Share of wall-clock lost to interruptions", "fraction", per / mtbi)
    stretched = b.item("stretched_training_days", "Training days with failures and checkpoints", "days",
                       r("train_days") * (1 + ckpt) / (1 - lost),
                       "Wall = T(1 + δ/τ) + (Wall/M)(τ/2 + R), solved for Wall")
    b.item("expected_interruptions", "Expected interruptions", "interruptions", stretched * 24 / mtbi)
    rb_tokens = b.item("rollback_tokens", "Tokens retrained after rollbacks (loss spikes, bad data)", "tokens",
                       i.rollbacks * i.rollback_steps * r("global_batch_tokens"),
                       "Rollbacks × steps retrained × tokens per step (seed 000 section 4)")
    b.item("rollback_days", "Days retraining after rollbacks", "days", r("train_days") * rb_tokens / i.train_tokens,
           "Priced as the rollback allowance on the Cost sheet; the Timeline's training phase includes them")
    loss = b.item("failure_loss_days", "Days lost to failures and checkpointing", "days",
                  stretched - r("train_days"))
    b.item("gpu_hours_lost", "GPU-hours lost", "GPU-h", loss * 24 * i.gpu_count)
    b.item("goodput", "Goodput (useful share of training wall-clock)", "fraction", r("train_days") / stretched)
    b.item("gpu_failure_probability", "Chance a given GPU is interrupted during the run", "fraction",
           1 - EXP(0 - rate * stretched * 24),
           "Seed 002: 512 GPUs for 5 months, 10-15%")

    b.section("Data loading (seed 000 section 5)")
    b.item("data_read_gb_per_s", "Read rate training needs", "GB/s",
           tok / (r("train_days") * 86400), "Tokenized bytes over the pure training time")

    b.section("Schedule of the run (seed 000 section 4)")
    transfer = b.item("transfer_days", "Data transfer", "days",
                      tok * i.bits_per_byte / i.transfer_gbit_per_s / 86400,
                      "Tokenized dataset ÷ transfer bandwidth")
    evaluation = b.item("evaluation_days", "Evaluation and fine-tuning", "days", i.evaluation_weeks * 7)
    non_training = b.item("non_training_days", "Not training: queue, setup, transfer, failures", "days",
                          i.queue_days + i.setup_days + transfer + loss)
    b.item("non_training_margin", "Non-training time on top of training", "fraction of training",
           non_training / r("train_days"), "Seed 000 step 5: budget 10-30% on top")
    b.item("run_days", "Run: queue to end of evaluation", "days",
           i.queue_days + i.setup_days + transfer + stretched + r("rollback_days") + evaluation)
    b.item("billed_days", "Billed: setup to end of evaluation (no queue)", "days",
           i.setup_days + transfer + stretched + evaluation,
           "The reservation runs from setup; the queue is not billed")


def _timeline(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Timeline", "Phases (seed 002 section 6)")
    phases = [("data_prep", "Data preparation", i.data_prep_weeks * 7),
              ("validation", "Small-scale validation", i.validation_weeks * 7),
              ("scaling", "Mid-scale scaling", i.scaling_weeks * 7),
              ("training", "Full training (queue, setup, transfer, training, rollbacks)",
               i.queue_days + i.setup_days + r("transfer_days") + r("stretched_training_days")
               + r("rollback_days")),
              ("evaluation", "Evaluation and fine-tuning", r("evaluation_days")),
              ("deployment", "Deployment", i.deployment_weeks * 7)]
    previous = i.start_date
    for key, label, days in phases:
        start = b.item(f"{key}_start", f"{label}: start", "date", previous)
        previous = b.item(f"{key}_end", f"{label}: end", "date", start + days)
    b.section("Project")
    b.item("project_end", "Project end", "date", previous)
    days = b.item("project_days", "Project duration", "days", previous - i.start_date)
    b.item("project_weeks", "… in weeks", "weeks", days / 7, "Seed 002 plans 28 weeks")
    b.item("project_months", "… in months", "months", days * 12 / 365,
           "What staffing and storage last when their months are left blank")


# The lines of the subtotal, in the order the Cost sheet, the Summary, the reports and the
# Cashflow sheet show them; what the total adds after them; and the memo lines beside them.
COST_LINES = ("cluster_cost", "experiment_cost", "rollback_cost", "post_training_cost", "serving_cost",
              "network_cost", "storage_cost", "staffing_cost")
AFTER_SUBTOTAL = ("buffer_cost", "vat_in_total")
MEMO_LINES = ("rental_cost", "rental_gap_cost", "billed_rental_cost", "reserved_unused_cost",
              "energy_cost_equivalent", "vat_recoverable_memo")


def _fx(currency_input: str) -> Expr:
    """Units of the plan's currency per unit of the currency `currency_input` names: both rates
    from the FX table, so the table may be quoted against any one currency."""
    return (Lookup(FX_TABLE, "rate", Ref(currency_input))
            / Lookup(FX_TABLE, "rate", Ref("currency")))


def _cost(b: ModelBuilder, i: _Inputs) -> None:
    r = Ref
    b.sheet("Cost", "Exchange rates (the FX table on the Catalog sheet)")
    fx = {}
    for name, currency, label in (("fx_gpu", "price_currency", "GPU prices"),
                                  ("fx_storage", "storage_price_currency", "Storage price"),
                                  ("fx_node", "node_price_currency", "Node price"),
                                  ("fx_ops", "ops_currency", "Operations cost"),
                                  ("fx_electricity", "electricity_currency", "Electricity price"),
                                  ("fx_staff", "staff_currency", "Staffing table"),
                                  ("fx_plausibility", "plausibility_currency", "Plausibility band")):
        fx[name] = b.item(name, f"{label}: units of the plan's currency per unit", "×", _fx(currency),
                          "Rate of the amount's currency ÷ rate of the plan's currency")

    b.section("GPU rates")
    gpu_rate = b.item("gpu_rate", "GPU price as quoted, converted", "currency/GPU-hour",
                      i.price_per_gpu_hour * fx["fx_gpu"])
    on_demand = b.item("on_demand_rate", "On-demand rate", "currency/GPU-hour",
                       IF(ISNUMBER(i.on_demand_per_gpu_hour), i.on_demand_per_gpu_hour * fx["fx_gpu"], gpu_rate),
                       "What GPU-hours beyond a reservation cost")
    spot = i.price_tier.eq("spot")
    reserved = i.price_tier.eq("reserved")
    tier_rate = b.item("tier_rate", "Rate paid per GPU-hour for the tier", "currency/GPU-hour",
                       IF(spot, gpu_rate * (1 - i.spot_discount), gpu_rate),
                       "Spot: the quoted rate less the spot discount")

    b.section("GPU rental")
    b.item("rental_cost", "GPU rental, pure training (seed 002 arithmetic)", "currency",
           r("gpu_hours") * tier_rate, "GPU-hours × the tier's rate")
    billed_h = b.item("billed_gpu_hours", "GPU-hours billed: reserved GPUs × billed days", "GPU-h",
                      r("reserved_gpus") * r("billed_days") * 24,
                      "Training nodes and spares, from setup to the end of evaluation")
    committed = b.item("committed_gpus", "Reserved: GPUs committed", "GPUs",
                       IF(ISNUMBER(i.reserved_committed_gpus), i.reserved_committed_gpus, r("reserved_gpus")))
    term_h = b.item("reserved_term_hours", "Reserved: hours in the term", "hours",
                    i.reserved_term_months * 365 / 12 * 24)
    committed_h = b.item("committed_gpu_hours", "Reserved: GPU-hours committed", "GPU-h",
                         IF(reserved, committed * term_h, 0), "Billed whatever the run uses")
    used_h = b.item("committed_gpu_hours_used", "Reserved: committed GPU-hours the run uses", "GPU-h",
                    IF(reserved, MIN(r("reserved_gpus"), committed) * MIN(r("billed_days") * 24, term_h), 0))
    over_h = b.item("on_demand_gpu_hours", "GPU-hours beyond the commitment, at the on-demand rate", "GPU-h",
                    IF(reserved, billed_h - used_h, 0),
                    "More GPUs than committed, or a run longer than the term")
    b.item("reserved_unused_share", "Reserved: share of the commitment left unused", "fraction",
           IF(committed_h > 0, 1 - used_h / committed_h, 0))
    rental = b.item("billed_rental_cost", "GPU rental, billed", "currency",
                    IF(reserved, committed_h * tier_rate + over_h * on_demand, billed_h * tier_rate),
                    "Reserved: the whole commitment plus on-demand hours beyond it")
    b.item("reserved_unused_cost", "Reserved: paid for but unused", "currency",
           (committed_h - used_h) * tier_rate, "Inside the billed rental")
    b.item("reserved_upfront_cost", "Reserved: paid up front at the start of the term", "currency",
           committed_h * tier_rate * i.reserved_upfront_share)

    b.section("Energy and carbon")
    tdp_kw = b.item("gpu_power_kw", "GPU board power (TDP)", "kW",
                    IF(ISNUMBER(_acc("tdp_w")), _acc("tdp_w") / 1000, 0),
                    "Catalog; 0 when the catalog row has no power (a warning says so)")
    overhead = b.item("node_overhead_kw_used", "Node power besides the GPUs", "kW",
                      IF(ISNUMBER(i.node_overhead_kw), i.node_overhead_kw,
                         IF(ISNUMBER(_acc("node_overhead_kw")), _acc("node_overhead_kw"), 0)),
                      "The input, else the Catalog's figure for the accelerator's node")
    node_kw = b.item("node_power_kw", "Rated power of a node: GPUs × TDP + the node's own", "kW",
                     r("gpus_per_node") * tdp_kw + overhead)
    slot = node_kw / r("gpus_per_node")
    per_h = b.item("training_kwh_per_gpu_hour", "Energy per GPU-hour training, PUE included", "kWh",
                   slot * i.draw_training * i.pue, "A GPU's share of the node's power × draw × PUE")
    idle_per_h = b.item("idle_kwh_per_gpu_hour", "Energy per GPU-hour reserved but idle, PUE included", "kWh",
                        slot * i.draw_idle * i.pue)
    wall_h = b.item("training_gpu_hours_wall", "GPU-hours training, failures included", "GPU-h",
                    i.gpu_count * r("stretched_training_days") * 24)
    idle_h = b.item("idle_gpu_hours", "GPU-hours reserved but idle (spares, setup, evaluation)", "GPU-h",
                    MAX(0, billed_h - wall_h))
    nodes = b.item("cluster_nodes", "Nodes of the cluster, spares included", "nodes",
                   r("reserved_gpus") / r("gpus_per_node"))
    cluster_mwh = b.item("cluster_energy_mwh", "Energy of the cluster over the billed days", "MWh",
                         (wall_h * per_h + idle_h * idle_per_h) / 1000)
    flops_per_gpu_h = b.item("flops_per_gpu_hour", "Training FLOPs per GPU-hour at the effective throughput",
                             "FLOP", r("effective_tflops") * i.flops_per_tflop * 3600,
                             "The main run's rate serves the runs below")

    b.section("Runs besides the main one (seed 002 weeks 3-8; seed 000 section 4)")
    val_n = b.item("validation_params", "Validation model, at most the model itself", "parameters",
                   MIN(i.validation_model_params, r("model_params")))
    val_h = b.item("validation_gpu_hours", "Validation runs: 6 · N · D", "GPU-h",
                   i.flops_per_param_token * val_n * i.validation_tokens / flops_per_gpu_h)
    sca_n = b.item("scaling_params", "Scaling-run model, at most the model itself", "parameters",
                   MIN(i.scaling_model_params, r("model_params")))
    sca_h = b.item("scaling_gpu_hours", "Scaling runs: 6 · N · D", "GPU-h",
                   i.flops_per_param_token * sca_n * i.scaling_tokens / flops_per_gpu_h)
    exp_h = b.item("experiment_gpu_hours", "Validation and scaling runs", "GPU-h", val_h + sca_h)
    rb_h = b.item("rollback_gpu_hours", "Rollbacks: 6 · N · tokens retrained", "GPU-h",
                  i.flops_per_param_token * r("model_params") * r("rollback_tokens") / flops_per_gpu_h)
    post_h = b.item("post_training_gpu_hours", "Post-training: 6 · N · tokens", "GPU-h",
                    i.flops_per_param_token * r("model_params") * i.post_training_tokens / flops_per_gpu_h)
    extra_h = b.item("extra_gpu_hours", "GPU-hours besides the main run", "GPU-h", exp_h + rb_h + post_h)
    extra_mwh = b.item("extra_energy_mwh", "Energy of those runs", "MWh", extra_h * per_h / 1000)
    energy = b.item("energy_mwh", "Energy, training and its runs (serving not included)", "MWh",
                    cluster_mwh + extra_mwh, "What the approval package and the model card report")
    b.item("co2_tonnes", "Emissions (location-based)", "t CO2e", energy * i.grid_intensity,
           "Energy × the grid's intensity: kg per kWh is tonnes per MWh")
    power = b.item("electricity_rate", "Electricity, converted", "currency/kWh",
                   i.electricity_per_kwh * fx["fx_electricity"])
    b.item("energy_cost_equivalent", "Electricity for that energy", "currency", energy * 1000 * power,
           "Owned clusters pay it (below); a rental price includes it")

    b.section("Owned cluster (charged when ownership is owned)")
    owned = i.ownership.eq("owned")
    years, rate = i.depreciation_years, i.cost_of_capital
    crf = b.item("capital_recovery_factor", "Capital recovery factor r ÷ (1 − (1 + r)^−n)", "per year",
                 IF(rate > 0, rate / (1 - EXP(0 - years * LN(1 + rate))), 1 / years),
                 "The yearly payment that repays the price with interest over the life")
    b.item("node_price_used", "Purchase price per node, converted", "currency",
           IF(ISNUMBER(i.node_price), i.node_price * fx["fx_node"],
              IF(ISNUMBER(_acc("node_price")), _acc("node_price") * Lookup(FX_TABLE, "rate", _acc("node_price_currency"))
                 / Lookup(FX_TABLE, "rate", i.currency), 0)),
           "The input, else the Catalog's price for the accelerator's node (0: none)")
    share = b.item("life_share", "Share of the cluster's life the project uses", "fraction",
                   IF(ISNUMBER(i.life_share_override), i.life_share_override,
                      MIN(1, r("billed_days") / (years * 365))))
    capital = b.item("capital_cost", "Amortised capital", "currency",
                     nodes * r("node_price_used") * crf * years * share,
                     "Nodes × price × yearly payment × life × share used")
    owned_energy = b.item("owned_energy_cost", "Electricity", "currency", cluster_mwh * 1000 * power)
    ops = b.item("owned_ops_cost", "Operations", "currency",
                 nodes * i.ops_per_node_month * fx["fx_ops"] * r("billed_days") * 12 / 365)
    owned_cost = b.item("owned_cost", "Owned cluster: capital + electricity + operations", "currency",
                        capital + owned_energy + ops)
    b.item("owned_rate_per_gpu_hour", "Owned cost per GPU-hour", "currency/GPU-hour", owned_cost / billed_h)

    b.section("Compute")
    cluster = b.item("cluster_cost", "GPU cluster: the billed rental, or the owned cluster's cost", "currency",
                     IF(owned, owned_cost, rental),
                     "Ownership owned: the owned lines above; rented: the billed rental")
    compute_rate = b.item("compute_rate", "Rate for the runs besides the main one", "currency/GPU-hour",
                          IF(owned, r("owned_rate_per_gpu_hour"), IF(reserved, on_demand, tier_rate)),
                          "Owned: the cluster's cost per GPU-hour; reserved: on demand, outside the commitment")
    b.item("rental_gap_cost", "Billed minus pure-training rental", "currency", rental - r("rental_cost"),
           "What the seed's arithmetic leaves out: setup, transfer, failures, evaluation, spares")
    experiments = b.item("experiment_cost", "Validation and scaling runs", "currency", exp_h * compute_rate,
                         "Sized by the models and tokens they train, not by GPU-weeks")
    rollback = b.item("rollback_cost", "Rollback allowance", "currency", rb_h * compute_rate,
                      "Expected rollbacks × tokens retrained")
    post = b.item("post_training_cost", "Post-training (SFT, preference tuning)", "currency", post_h * compute_rate)
    serving = b.item("serving_cost", "Serving after training", "currency",
                     i.serving_gpus * i.serving_months * 365 / 12 * 24
                     * IF(ISNUMBER(i.serving_per_gpu_hour), i.serving_per_gpu_hour * fx["fx_gpu"], compute_rate))
    network = b.item("network_cost", "Network", "currency",
                     (billed_h + extra_h) * i.network_per_gpu_hour * fx["fx_gpu"],
                     "Zero when the interconnect is included in the rental price")

    b.section("Storage")
    months = b.item("storage_months_used", "Months held", "months",
                    IF(ISNUMBER(i.storage_months), i.storage_months, r("project_months")),
                    "The input, else the project's length (Timeline)")
    gbm = b.item("storage_gb_months", "Storage held", "GB-months",
                 (r("dataset_gb") + r("checkpoint_storage_gb")) * months)
    storage = b.item("storage_cost", "Storage", "currency", gbm * i.price_per_gb_month * fx["fx_storage"])

    b.section("Staffing")
    blank_months = Blanks(i.staff_months)
    b.item("staff_person_months", "Person-months", "person-months",
           SUMPRODUCT(i.staff_headcount, i.staff_months)
           + SUMPRODUCT(i.staff_headcount, blank_months) * r("project_months"),
           "A role whose months are blank lasts the whole project")
    staffing = b.item("staffing_cost", "Staffing", "currency",
                      (SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, i.staff_months)
                       + SUMPRODUCT(i.staff_headcount, i.staff_monthly_cost, blank_months)
                       * r("project_months")) * i.staffing_factor * fx["fx_staff"],
                      "Σ headcount × monthly cost × months over the roles on Inputs (blank months "
                      "= the project's length), × the staffing factor (1 unless a what-if)")

    b.section("Total")
    subtotal = b.item("subtotal_cost", "Subtotal", "currency",
                      cluster + experiments + rollback + post + serving + network + storage + staffing,
                      "Billed rental (or the owned cluster), not pure")
    buffer = b.item("buffer_cost", "Contingency buffer", "currency", subtotal * i.buffer_rate,
                    "Seed 002 section 8: what it still covers is what no line above names: reruns "
                    "beyond the expected rollbacks, price changes, surprises")
    vat = b.item("vat_cost", "VAT or sales tax on purchases and their buffer", "currency",
                 (subtotal - staffing) * (1 + i.buffer_rate) * i.vat_rate, "Payroll carries none")
    vat_in = b.item("vat_in_total", "VAT or sales tax", "currency", IF(i.vat_recoverable.eq("yes"), 0, vat),
                    "Recoverable VAT is a memo line outside the total")
    b.item("vat_recoverable_memo", "VAT recoverable (outside the total)", "currency",
           IF(i.vat_recoverable.eq("yes"), vat, 0))
    total = b.item("total_cost", "Total", "currency", subtotal + buffer + vat_in)
    b.item("cost_per_gpu_hour_all_in", "All-in cost per training GPU-hour", "currency/GPU-h",
           total / r("gpu_hours"))
    b.section("When the money is spent (Cashflow sheet)")
    res_start = b.item("reservation_start", "Cluster reserved from (setup starts)", "date",
                       r("training_start") + i.queue_days)
    held = MAX(r("project_months"), months, i.staff_months)   # blank staff months: the project's
    end = b.item("spend_end", "Last day of spending", "date",
                 MAX(r("project_end"), i.start_date + held * 365 / 12,
                     res_start + IF(AND(reserved, NOT(owned)), i.reserved_term_months * 365 / 12, 0),
                     r("deployment_start") + i.serving_months * 365 / 12),
                 "The project, storage and staff, a reservation's whole term, serving")
    b.item("spend_months", "Months of spending from the project start", "months",
           (end - i.start_date) * 12 / 365)
    b.item("rental_share", "Compute share of the subtotal", "fraction",
           IF(subtotal > 0, (cluster + experiments + rollback + post) / subtotal, 0),
           "Seed 002: compute is usually over 70% of the budget")


def words(*parts) -> Expr:
    """A sentence built with & over live cells: text parts and figures, in order."""
    out = lift(parts[0])
    for part in parts[1:]:
        out = out.concat(part)
    return out


def _checks(b: ModelBuilder, i: _Inputs) -> None:
    """Each check is 0 when fine and 1 when not or when it cannot be computed; `detail` says
    what is wrong in words built from the live cells, for the Summary's failing-check lines."""
    r = Ref
    gb = lambda x: ROUND(x, 1)  # noqa: E731 - figures in sentences, to 0.1
    b.sheet("Checks", "Layout")
    b.check("check_layout_divides", "TP·PP divides the GPU count",
            MOD(i.gpu_count, i.tp_size * i.pp_size).eq(0),
            "Make gpu_count a multiple of tp_size × pp_size",
            detail=words("TP × PP = ", i.tp_size * i.pp_size, " does not divide ", i.gpu_count, " GPUs"))
    b.check("check_tp_within_node", "TP stays inside a node", i.tp_size <= r("gpus_per_node"),
            "Lower tp_size to at most the GPUs per node",
            detail=words("TP ", i.tp_size, " spans more than a node of ", r("gpus_per_node"), " GPUs"))
    b.check("check_tp_divides_heads", "TP divides the attention heads",
            MOD(i.attention_heads, i.tp_size).eq(0), "Choose a tp_size that divides the heads",
            detail=words("TP ", i.tp_size, " does not divide ", i.attention_heads, " attention heads"))
    b.check("check_pp_divides_layers", "PP divides the layers",
            MOD(i.model_layers, i.pp_size).eq(0), "Choose a pp_size that divides the layers",
            detail=words("PP ", i.pp_size, " does not divide ", i.model_layers, " layers"))
    b.check("check_batch_divides", "DP × micro-batch divides the global batch",
            MOD(i.global_batch_sequences, r("dp_size") * i.micro_batch_size).eq(0),
            "Change global_batch_sequences, micro_batch_size or the layout",
            detail=words("DP × micro-batch = ", ROUND(r("dp_size") * i.micro_batch_size, 2),
                         " does not divide the batch of ", i.global_batch_sequences, " sequences"))

    b.section("Memory")
    b.check("check_memory_fits", "Chosen layout fits in usable HBM",
            r("memory_per_gpu_gb") <= r("usable_hbm_gb"),
            "Raise tp/pp, turn on ZeRO or recomputation, or choose a larger accelerator",
            detail=words("Layout does not fit in memory: ", gb(r("memory_per_gpu_gb")), " > ",
                         gb(r("usable_hbm_gb")), " GB per GPU"))
    b.check("check_gpus_cover_memory", "GPU count at least the memory-implied minimum",
            i.gpu_count >= r("min_gpus_for_memory"), "Raise gpu_count",
            detail=words("Too few GPUs to hold the model: ", i.gpu_count, " < ", r("min_gpus_for_memory")))

    b.section("Throughput and schedule")
    b.check("check_mfu_plausible", "Effective MFU at most 100%", r("effective_mfu") <= 1,
            "Lower the baseline MFU or the layout efficiency override; an effective TFLOPS figure "
            "stated for another accelerator can exceed this one's peak",
            detail=words("Effective MFU above 100%: ", ROUND(r("effective_mfu") * 100, 1), "%"))
    b.check("check_failures_finish", "The run finishes despite interruptions",
            r("failure_fraction") < 1,
            "Interruptions come faster than the work between them: checkpoint more often, "
            "restart faster or use fewer GPUs",
            detail=words("Interruptions every ", ROUND(r("job_mtbi_hours"), 2),
                         " h outpace the work between them"))
    b.check("check_data_loading", "Storage reads keep up with training",
            r("data_read_gb_per_s") <= i.storage_read_gb_per_s,
            "Raise the storage read bandwidth, shard and prefetch (seed 000 section 5)",
            detail=words("Training reads ", ROUND(r("data_read_gb_per_s"), 2), " GB/s, storage gives ",
                         i.storage_read_gb_per_s))
    b.check("check_meets_deadline", "Training fits the deadline, failures and preemptions included",
            OR(NOT(ISNUMBER(i.deadline_days)), r("stretched_training_days") <= i.deadline_days),
            "Add GPUs (see deadline_gpus on Compute), restart faster, avoid spot capacity or move "
            "the deadline",
            detail=words("Training takes ", gb(r("stretched_training_days")),
                         " days with failures and preemptions, the deadline is ", i.deadline_days))
    b.check("check_deadline_gpus", "GPU count at least what the deadline needs",
            OR(NOT(ISNUMBER(i.deadline_days)), i.gpu_count >= r("deadline_gpus")),
            "Raise gpu_count to deadline_gpus (Compute) or regenerate with the planner",
            detail=words("The deadline needs ", r("deadline_gpus"), " GPUs, the plan has ", i.gpu_count))

    b.section("Arithmetic")
    b.check("check_costs_add_up", "Cost lines add up to the total",
            ABS(r("total_cost") - SUM(*(r(n) for n in COST_LINES)) * (1 + i.buffer_rate)
                - r("vat_in_total")) <= r("total_cost") / 1000 / 1000 / 1000,
            "A cost cell was overwritten: restore its formula",
            detail=words("The cost lines do not add up to the total: a cost cell was overwritten"))
    b.check("check_owned_priced", "An owned cluster has a purchase price",
            OR(i.ownership.eq("rented"), r("node_price_used") > 0),
            "Type the purchase price per node on Inputs (Owned cluster)",
            detail=words("The cluster is owned but has no purchase price per node"))
    b.check("check_fx_rates", "Every amount's currency has an exchange rate",
            AND(*(ISNUMBER(r(n)) for n in ("fx_gpu", "fx_storage", "fx_node", "fx_ops", "fx_electricity",
                                            "fx_staff", "fx_plausibility"))),
            "Add the currency to the FX table on the Catalog sheet (units of the plan's currency per unit)",
            detail=words("A currency on Inputs has no rate in the FX table (Catalog sheet) into ", i.currency))
    b.check("check_outputs_computable", "The headline figures are numbers",
            AND(ISNUMBER(r("total_cost")), ISNUMBER(r("train_days")), ISNUMBER(r("gpu_hours")),
                ISNUMBER(r("memory_per_gpu_gb")), ISNUMBER(r("project_end")), ISNUMBER(i.gpu_count)),
            "An input is blank, text, zero where it divides, or its row was deleted: see the "
            "error cells on the calculation sheets",
            detail=words("Headline figures cannot be computed (an error value in the chain to the totals)"))

    b.section("The workbook as generated")
    changed = SUM(*(IF(r(n).eq(r(f"gen_{n}")), 0, 1) for n in (*SEARCH_INPUTS, *SEARCH_ITEMS)))
    b.item("search_inputs_changed", "Inputs the layout search used that differ from generation",
           "inputs", changed, "Compares each with its value at generation (Inputs, column G)")
    b.check("check_search_inputs_unchanged", "The GPU count and layout were chosen for these inputs",
            OR(r("layout_searched").eq("no"), r("search_inputs_changed").eq(0)),
            "Regenerate with the planner (trainbudget import, then generate), or pin the layout",
            detail=words("The layout search ran for other inputs: ", r("search_inputs_changed"),
                         " changed since generation; regenerate with the planner"))
    b.check("check_tables_closed", "Nothing typed below the staffing and catalog tables",
            COUNTA(i.staff_rows_below, i.catalog_rows_below).eq(0),
            "Move the rows into the tables' spare rows (or insert rows inside the tables)",
            detail=words("Rows typed below a table are left out of the totals: ",
                         COUNTA(i.staff_rows_below, i.catalog_rows_below), " cells"))
    b.check("check_timeline_fits", "The Timeline grid covers the project",
            r("project_weeks") <= COLUMNS(i.timeline_week_cells),
            "Regenerate the workbook to widen the Timeline grid",
            detail=words("The project runs ", ROUND(r("project_weeks"), 0),
                         " weeks, the Timeline grid shows ", COLUMNS(i.timeline_week_cells)))
    b.check("check_cashflow_fits", "The Cashflow months cover the project",
            r("spend_end") <= DATE(YEAR(i.start_date), MONTH(i.start_date) + COLUMNS(i.cashflow_month_cells), 1),
            "Regenerate the workbook to widen the Cashflow sheet",
            detail=words("Spending runs ", ROUND(r("spend_months"), 1),
                         " months, the Cashflow sheet shows ", COLUMNS(i.cashflow_month_cells)))

    checks = [r(c.name) for c in b.model.checks()]
    b.section("Summary")
    total = SUM(*checks)
    b.item("master_check", "Checks failing (0 = all fine)", "checks", IF(ISERROR(total), 1, total),
           "Counts a broken check cell as a failure too")

    b.section("Warnings (plausibility: shown, not counted in the master check)")
    b.warning("warn_training_within_a_year", "Training takes less than a year",
              r("stretched_training_days") <= 365, "Add GPUs or check the throughput assumptions",
              detail=words("Training takes ", ROUND(r("stretched_training_days"), 0), " days, over a year"))
    ratio = r("tokens_per_param")
    b.warning("warn_tokens_per_param", "Tokens per parameter near compute-optimal",
              AND(ratio >= i.tokens_per_param_low, ratio <= i.tokens_per_param_high),
              "Check the token count and the parameter count",
              detail=words(ROUND(ratio, 1), " tokens per parameter is far from compute-optimal (~20)"))
    b.warning("warn_staffing", "Someone is staffed", SUM(i.staff_headcount) > 0,
              "Add the team to the staffing table on Inputs", detail=words("No staffing in the plan"))
    b.warning("warn_staff_months", "Typed staffing months cover the project",
              OR(COUNTA(i.staff_months).eq(0), MIN(i.staff_months) >= ROUND(r("project_months"), 1)),
              "Blank the months to follow the project, or type the project's months",
              detail=words("Staffing is paid for ", MIN(i.staff_months), " months, the project runs ",
                           ROUND(r("project_months"), 1)))
    b.warning("warn_storage_months", "Storage is held for the whole project",
              r("storage_months_used") >= ROUND(r("project_months"), 1),
              "Blank the months held to follow the project",
              detail=words("Storage is paid for ", ROUND(r("storage_months_used"), 1),
                           " months, the project runs ", ROUND(r("project_months"), 1)))
    b.warning("warn_full_node", "At least one full node", i.gpu_count >= r("gpus_per_node"),
              "Use whole nodes", detail=words("Fewer GPUs than one node: ", i.gpu_count, " GPUs"))
    b.warning("warn_cost_per_gpu_hour", "All-in cost per GPU-hour in a plausible band",
              AND(r("cost_per_gpu_hour_all_in") >= i.cost_per_gpu_hour_low * r("fx_plausibility"),
                  r("cost_per_gpu_hour_all_in") <= i.cost_per_gpu_hour_high * r("fx_plausibility")),
              "Check the prices (and the band on Inputs, for other currencies)",
              detail=words("All-in cost per GPU-hour ", ROUND(r("cost_per_gpu_hour_all_in"), 2),
                           " is outside ", ROUND(i.cost_per_gpu_hour_low * r("fx_plausibility"), 2), "-",
                           ROUND(i.cost_per_gpu_hour_high * r("fx_plausibility"), 2)))
    b.warning("warn_params_match_shape", "Parameter count matches the shape",
              ABS(r("model_params") / r("params_from_shape") - 1) <= i.params_tolerance,
              "Blank the parameter override so the count follows the shape",
              detail=words("Parameters ", ROUND(r("model_params") / 1000 / 1000 / 1000, 1),
                           "B differ from the shape's ",
                           ROUND(r("params_from_shape") / 1000 / 1000 / 1000, 1), "B"))
    def fits(gpu_hours, gpus, weeks):
        return OR(gpu_hours <= 0, AND(gpus > 0, gpu_hours / IF(gpus > 0, gpus, 1) / 24 <= weeks * 7))
    b.warning("warn_experiments_fit", "Validation and scaling runs fit their weeks on their GPUs",
              AND(fits(r("validation_gpu_hours"), i.validation_gpus, i.validation_weeks),
                  fits(r("scaling_gpu_hours"), i.scaling_gpus, i.scaling_weeks)),
              "Give the runs more GPUs or weeks (Schedule inputs), or train them on fewer tokens",
              detail=words("The runs take ", ROUND(r("validation_gpu_hours") / MAX(1, i.validation_gpus) / 24, 1),
                           " and ", ROUND(r("scaling_gpu_hours") / MAX(1, i.scaling_gpus) / 24, 1),
                           " days on their GPUs; the Timeline gives them ", i.validation_weeks * 7, " and ",
                           i.scaling_weeks * 7))
    b.warning("warn_power_known", "The accelerator's and its node's power are known",
              AND(r("gpu_power_kw") > 0, OR(ISNUMBER(i.node_overhead_kw), ISNUMBER(_acc("node_overhead_kw")))),
              "Type the board power (W) and the node's own power (kW) in the accelerator's row on the "
              "Catalog sheet",
              detail=words("The Catalog row of ", r("accelerator_name"),
                           " lacks its board power or its node's own power: energy and carbon are low"))
    warnings = [r(w.name) for w in b.model.warnings()]
    total = SUM(*warnings)
    b.item("warning_count", "Warnings (do not block)", "checks", IF(ISERROR(total), 1, total))
