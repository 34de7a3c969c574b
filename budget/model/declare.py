"""What the inputs are declared with: the map of the inputs' references (`Inputs`), the helper that
declares them section by section (`Declare`), and the choices and fitted coefficients they offer."""

from __future__ import annotations

from ..formula.expr import IF, Expr, Ref
from .lineitems import ModelBuilder

RECOMPUTE_MODES = ("none", "selective", "full")
TIERS = ("on_demand", "reserved", "spot")
OWNERSHIP = ("rented", "owned")
YES_NO = ("yes", "no")
ACTIVATIONS = ("gelu", "swiglu")
POSITIONS = ("learned", "rotary")
FLOPS_BASES = ("six_nd", "with_attention")
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")
EFFICIENCY_MODELS = ("reference", "fitted")
# The software stack (issue 25): a factor on the compute time of each, fitted on the published rows
# (budget/plan/calibrate.py); unknown: fitted on every source that is not a vendor's tuned benchmark
EFFICIENCY_STACKS = ("unknown", "megatron_nemo_tuned", "inhouse_tuned", "deepspeed", "pytorch_fsdp",
                     "jax_maxtext", "hf_trainer")
# How practised the team is at this run's scale on this cluster and stack (issue 25): the allowance
# for what full runs spend beyond step time and the modelled failures, fitted per level where the
# published full runs support it (unknown: all of them)
MATURITIES = ("unknown", "first_run", "some_runs", "tuned_many_runs")
# The fitted step-time model's coefficients (budget/calibrate.py; catalogs/efficiency.yaml): unit, bounds
FITTED_COEFFICIENTS = {"width_factor": ("width", 0, 100_000), "attention_factor": ("×", 0, 100),
                       "dp_exposed": ("fraction", 0, 1), "zero3_exposed": ("fraction", 0, 1),
                       "immaturity_factor": ("×", 0, 100), "attention_immaturity_factor": ("×", 0, 100),
                       "immaturity_cap_years": ("years", 0, 20),
                       **{f"stack_factor_{s}": ("×", 0, 10) for s in EFFICIENCY_STACKS},
                       "fp8_gemm_realised": ("fraction", 0, 1),
                       **{f"card_allowance_{m}": ("fraction", -0.5, 5) for m in MATURITIES}}
COMPUTE_PRECISIONS = ("bf16", "fp8", "fp4")     # the catalog's peak_<precision>_tflops columns
MFU_PEAKS = ("bf16", "compute")
CHECKPOINT_FORMATS = ("full", "no_fp32_master", "weights_only")
# How a checkpoint is taken (reliability.checkpoint_mode): the training waits for the write to
# storage; waits only for the copy to host memory (PyTorch DCP async_save, MegaScale); or keeps
# checkpoints in peers' memory and restarts from there (Gemini, SOSP'23; ByteCheckpoint)
CHECKPOINT_MODES = ("synchronous", "asynchronous", "in_memory")
# issue 28: the job's mode, what LoRA adapts and how the frozen base is held (schema/job.py)
JOB_MODES = ("pretraining", "continued_pretraining", "sft", "lora")
LORA_TARGETS = ("attention_qv", "attention", "all_linear")
BASE_WEIGHTS = ("bf16", "int4")
# What a date deadline (schedule.deadline) is met by: the end of training or of the project
DEADLINE_APPLIES_TO = ("training_end", "project_end")


class Inputs(dict):
    def __getattr__(self, name: str) -> Ref:
        return self[name]


class Declare:
    """Declares the scenario's inputs on `b` in the Inputs sheet's order, keeping each one's
    reference in `inputs` (read as `i.<name>` by the groups' formulas)."""

    def __init__(self, b: ModelBuilder):
        self.b = b
        self.inputs = Inputs()

    def add(self, name, unit, **kw):
        self.inputs[name] = self.b.input(name, unit, **kw)

    def constant(self, name, unit, value, **kw):
        self.add(name, unit, constant=value, path=f"constants.{name}", **kw)

    def money(self, name, unit, path, currency, **kw):
        """An amount in the currency its companion input names, converted live into `currency`."""
        self.add(name, unit, path=path, codec=kw.pop("codec", "money"), currency=currency, **kw)

    def currency_of(self, name):
        self.add(name, "ISO 4217 code", kind="text", codec="text")


def choose(choice: Expr, options, value) -> Expr:
    """value(option) for the option `choice` holds: nested IFs over `options` (the last the fallback)."""
    *first, last = options
    out = value(last)
    for option in reversed(first):
        out = IF(choice.eq(option), value(option), out)
    return out
