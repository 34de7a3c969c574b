"""The `constants` section: the conventions the formulas use (FLOPs per parameter and token,
bytes per GB, collectives per layer, ...), each bounded to the variants people use."""

from __future__ import annotations

from .base import Section, number


class ConstantsSection(Section):
    """Conventions the formulas use; a reviewer may change one in the workbook (import keeps it).
    Bounds admit the variants people use (GiB, 8·N·D with recomputation, fp32 activations)."""
    flops_per_param_token: number(ge=2, le=12) = 6.0
    bytes_per_gb: number(ge=1e9, le=2 ** 30) = 1e9
    flops_per_tflop: number(ge=1e12, le=1e12) = 1e12
    bits_per_byte: number(ge=8, le=8) = 8.0
    activation_bytes_per_element: number(ge=1, le=4) = 2.0
    tp_collectives_per_layer: number(ge=0, le=16) = 4.0
    zero3_comm_factor: number(ge=1, le=3) = 1.5
    zero3_gathered_layers: number(ge=0, le=8) = 2.0
    cp_kv_passes: number(ge=0, le=4) = 3.0
    ep_all_to_all_passes: number(ge=0, le=8) = 4.0
    days_per_year: number(ge=365, le=366) = 365.25
    token_id_bytes: number(ge=1, le=8) = 2.0
    small_vocab_limit: number(ge=256, le=2 ** 32) = 65536.0
    p90_probability: number(ge=0.9, le=0.9) = 0.9
    model_error_factor: number(ge=1, le=1) = 1.0
    ffn_width_per_hidden: number(ge=1, le=16) = 4.0
    gated_ffn_matrices: number(ge=3, le=3) = 3.0
    forward_flops_per_param_token: number(ge=2, le=2) = 2.0
    causal_attention_fraction: number(ge=0.5, le=1) = 0.5
    korthikanti_split_bytes: number(ge=24, le=24) = 24.0
    # the calibration factor a measured pilot may give without a warning (warn_pilot_factor)
    pilot_factor_low: number(ge=0.1, le=1) = 0.5
    pilot_factor_high: number(ge=1, le=10) = 1.5
