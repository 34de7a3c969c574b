"""The `job` section (issue 28): what kind of training the plan is for, and the defaults each kind
brings to the phases and runs.

- pretraining: today's plan (the default: a scenario without `job:` is unchanged);
- continued_pretraining: more tokens on a trained model; no scaling-law or validation runs;
- sft: supervised fine-tuning of every weight, `epochs` over a dataset of `dataset_tokens`;
- lora: low-rank adapters on a frozen base (Hu et al. 2021, arXiv:2106.09685): gradients and
  optimizer states for the adapters only; `base_weights: int4` holds the frozen base in 4-bit
  NF4 with double-quantised constants (QLoRA, Dettmers et al. 2023, arXiv:2305.14314, §2).

Mode defaults fill only the keys a scenario leaves out (`apply_job_defaults`, a before-validator
of Scenario): a key the scenario gives always wins. `runs.validation: none` and `runs.scaling:
none` remove a de-risking run: its tokens, weeks and GPUs are 0, so its cost and its Timeline
phase both vanish.
"""

from __future__ import annotations

import math
from typing import Literal

from ...core.errors import Msg, rule_error
from .base import Params, Section, Tokens, number, whole

JOB_MODES = ("pretraining", "continued_pretraining", "sft", "lora")
# the modes whose training tokens may be job.dataset_tokens × job.epochs
TOKENS_FROM_EPOCHS = ("sft", "lora")
# What each choice adapts (Hu et al. 2021 §4.2 and §7.1 adapt Wq and Wv; QLoRA §4 all linear layers)
LORA_TARGETS = ("attention_qv", "attention", "all_linear")
BASE_WEIGHTS = ("bf16", "int4")


class JobSection(Section):
    mode: Literal["pretraining", "continued_pretraining", "sft", "lora"] = "pretraining"
    # sft and lora: the training tokens are dataset_tokens × epochs (data.train_tokens may be left out)
    dataset_tokens: Tokens | None = None
    epochs: number(gt=0, le=10_000) | None = None
    lora_rank: whole(ge=1, le=2 ** 16) = 16
    # attention_qv: the query and value projections (Hu et al. 2021); attention: Q, K, V and the
    # output projection; all_linear: those and every FFN matrix (QLoRA)
    lora_targets: Literal["attention_qv", "attention", "all_linear"] = "attention_qv"
    adapter_params: Params | None = None          # blank: from the rank, the targets and the shape
    # bf16: the frozen base in 16 bits (LoRA); int4: 4-bit NF4 with double quantisation (QLoRA)
    base_weights: Literal["bf16", "int4"] = "bf16"


# Each mode's defaults, by dotted scenario path: filled where the scenario gives no value. The
# figures are planning judgements, not published ones: a fine-tune or a continued pretraining of
# a released model needs no scaling-law or small-model validation run (its recipe is the base's),
# the data is an existing corpus (a week's preparation), evaluation runs on one node, and no
# phase defaulted is longer than the training itself (schedule.phase_share_cap); a fine-tune of a
# day or less restarts on the nodes it has rather than holding a spare node.
MODE_DEFAULTS: dict[str, dict[str, object]] = {
    # a pretraining's phases keep their weeks (seed 002's), but none defaulted outlasts the
    # training itself: a days-long run (an MoE on a large cluster, a 7B on 64 GPUs) is not billed
    # weeks of evaluation on the whole cluster or months of preparation (issue 28)
    "pretraining": {"schedule.phase_share_cap": 1.0},
    "continued_pretraining": {
        "runs.validation": "none", "runs.scaling": "none", "runs.rollbacks": 5.0,
        "runs.post_training_tokens": 0, "schedule.data_prep_weeks": 1.0, "schedule.evaluation_weeks": 1.0,
        "schedule.evaluation_gpus": 8, "schedule.phase_share_cap": 1.0,
    },
    "sft": {
        "runs.validation": "none", "runs.scaling": "none", "runs.rollbacks": 0.0, "runs.post_training_tokens": 0,
        "schedule.data_prep_weeks": 1.0, "schedule.evaluation_weeks": 0.5, "schedule.deployment_weeks": 1.0,
        "schedule.evaluation_gpus": 8, "schedule.queue_days": 2.0, "schedule.setup_days": 1.0,
        "schedule.phase_share_cap": 1.0, "storage.checkpoints_kept": 2, "sizing.spare_nodes": 0,
    },
    "lora": {
        "runs.validation": "none", "runs.scaling": "none", "runs.rollbacks": 0.0, "runs.post_training_tokens": 0,
        "schedule.data_prep_weeks": 1.0, "schedule.evaluation_weeks": 0.5, "schedule.deployment_weeks": 1.0,
        "schedule.evaluation_gpus": 8, "schedule.queue_days": 2.0, "schedule.setup_days": 1.0,
        "schedule.phase_share_cap": 1.0, "storage.checkpoints_kept": 2, "sizing.spare_nodes": 0,
    },
}

# What `runs.<run>: none` sets: the run's tokens, its phase's weeks and its GPUs, all 0
REMOVED_RUN = {"validation": ("runs.validation_tokens", "schedule.validation_weeks", "schedule.validation_gpus"),
               "scaling": ("runs.scaling_tokens", "schedule.scaling_weeks", "schedule.scaling_gpus")}


def _get(data: dict, path: str):
    node = data
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None, False
        node = node[part]
    return node, True


def _set_absent(data: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            return        # a wrong type: the schema names it
        node = child
    node.setdefault(last, value)


def apply_job_defaults(data: object) -> tuple[object, set[str]]:
    """The scenario's raw mapping with its mode's defaults filled in where it gives no value,
    removed runs' tokens, weeks and GPUs set to 0, and, for sft and lora, data.train_tokens from
    dataset_tokens × epochs; and the paths so filled. A copy: the caller's mapping is left as it was."""
    if not isinstance(data, dict):
        return data, set()
    job = data.get("job")
    mode = job.get("mode", "pretraining") if isinstance(job, dict) else "pretraining"
    if not isinstance(mode, str) or mode not in MODE_DEFAULTS:
        return data, set()       # the schema names the unknown mode
    data = _copy(data)
    written = {path for path in (*MODE_DEFAULTS[mode], *(p for ps in REMOVED_RUN.values() for p in ps))
             if _get(data, path)[0] is not None}
    defaults = dict(MODE_DEFAULTS[mode])
    for run, paths in REMOVED_RUN.items():
        # a mode's default removal yields to a run the scenario sizes itself (a given key wins)
        if _get(data, f"runs.{run}")[1]:
            continue
        if any(_get(data, path)[0] not in (None, 0, 0.0) for path in paths):
            defaults.pop(f"runs.{run}", None)
    for path, value in defaults.items():
        _set_absent(data, path, value)
    for run, paths in REMOVED_RUN.items():
        if _get(data, f"runs.{run}")[0] != "none":
            continue
        for path in paths:
            given = _get(data, path)[0]
            if given not in (None, 0, 0.0):
                raise rule_error(Msg("errors.scenario.removed_run.message", run=run, path=path, value=given),
                                 Msg("errors.scenario.removed_run.fix", run=run, path=path), path)
            _set_absent(data, path, 0)
            _put(data, path, 0)
    if mode in TOKENS_FROM_EPOCHS and isinstance(job, dict):
        _train_tokens_from_epochs(data, data["job"], mode)
    elif isinstance(job, dict) and (job.get("dataset_tokens") is not None or job.get("epochs") is not None):
        raise rule_error(Msg("errors.scenario.job_epochs_mode.message", mode=mode),
                         Msg("errors.scenario.job_epochs_mode.fix"), "job.dataset_tokens")
    filled = {path for path in (*MODE_DEFAULTS[mode], *(p for ps in REMOVED_RUN.values() for p in ps))
              if path not in written and _get(data, path)[0] is not None}
    return data, filled


def _copy(data: dict) -> dict:
    return {k: _copy(v) if isinstance(v, dict) else v for k, v in data.items()}


def _put(data: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[part]
    node[last] = value


def _count(value) -> float | None:
    """A count as the schema reads it ("1.2B", 3e9), or None when it is not one (the schema says why)."""
    from .base import _parse_count
    try:
        out = _parse_count(value)
    except Exception:     # the schema names what is wrong with it
        return None
    return out if isinstance(out, (int, float)) and not isinstance(out, bool) else None


def _train_tokens_from_epochs(data: dict, job: dict, mode: str) -> None:
    """sft and lora: data.train_tokens is dataset_tokens × epochs; given both ways, they agree."""
    dataset, epochs = _count(job.get("dataset_tokens")), job.get("epochs")
    given, present = _get(data, "data.train_tokens")
    if dataset is None and epochs is None:
        return                                     # data.train_tokens as given (required as ever)
    if dataset is None or not isinstance(epochs, (int, float)) or isinstance(epochs, bool):
        missing = "job.dataset_tokens" if dataset is None else "job.epochs"
        raise rule_error(Msg("errors.scenario.job_epochs_pair.message", mode=mode),
                         Msg("errors.scenario.job_epochs_pair.fix"), missing)
    total = dataset * epochs
    if present and given is not None:
        typed = _count(given)
        if typed is not None and not math.isclose(typed, total, rel_tol=1e-6):
            raise rule_error(Msg("errors.scenario.job_train_tokens.message", tokens=f"{typed:,.0f}",
                                 dataset=f"{dataset:,.0f}", epochs=epochs, total=f"{total:,.0f}"),
                             Msg("errors.scenario.job_train_tokens.fix", total=f"{total:,.0f}"),
                             "data.train_tokens")
        return
    _set_absent(data, "data", {})
    if isinstance(data["data"], dict):
        data["data"]["train_tokens"] = total


def check_job(s) -> None:
    """The adapter settings belong to a LoRA job; QLoRA's 4-bit base is modelled for LoRA only
    (a full fine-tune or a pretraining updates every weight, which 4-bit storage cannot hold).
    Outside LoRA a setting at its default passes (a workbook's import writes every input)."""
    job = s.job
    if job.mode != "lora":
        for key in ("lora_rank", "lora_targets", "adapter_params", "base_weights"):
            if getattr(job, key) != JobSection.model_fields[key].default:
                raise rule_error(Msg("errors.scenario.job_lora_only.message", key=key, mode=job.mode),
                                 Msg("errors.scenario.job_lora_only.fix", key=key), f"job.{key}")
