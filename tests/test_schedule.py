"""The real schedule: failures and checkpoints, storage, billed time, the project timeline."""

from __future__ import annotations

import math
import random
import re

import pytest

from budget.core.errors import ScenarioError
from budget.core.i18n import fmt, text
from budget.inputs.importer import import_workbook
from budget.core.dates import excel_serial, from_serial
from budget.inputs.scenario import LLAMA3_INTERRUPTION_RATE
from budget.sheets.book import write_workbook
from support import LLAMA3_405B_16K, SEED_H100, plan_of, raw, seed_plan, with_changes


# --- failures ---------------------------------------------------------------------------------

@pytest.mark.parametrize("gpus, hours", [(16_000, 3.17), (16_384, 3.09)])
def test_sixteen_thousand_gpus_fail_about_every_three_hours(catalog, gpus, hours):
    """Seed 000 / Llama 3: 400+ failures in 54 days on ~16K GPUs, about one every 3 hours."""
    pp = 8 if gpus % 32 == 0 else 4
    plan = seed_plan(catalog, **{"hardware.gpu_count": gpus, "parallelism.pp": pp,
                                 "parallelism.zero_stage": 1})
    assert plan["interruption_rate_per_gpu_hour"] == pytest.approx(LLAMA3_INTERRUPTION_RATE)
    assert plan["job_mtbi_hours"] == pytest.approx(hours, abs=0.01)


def test_young_daly_interval_and_stretched_duration(seed_h100):
    v = seed_h100.values
    delta, mtbi = v["checkpoint_write_hours"], v["job_mtbi_hours"]
    assert delta == pytest.approx(2450 / 50 / 3600)            # 2.45 TB at 50 GB/s
    assert v["checkpoint_interval_hours"] == pytest.approx(math.sqrt(2 * delta * mtbi))
    tau, restart = v["checkpoint_interval_hours"], v["restart_hours"]
    wall = v["train_days"] * (1 + delta / tau) / (1 - (tau / 2 + restart) / mtbi)
    assert v["stretched_training_days"] == pytest.approx(wall)
    assert v["goodput"] == pytest.approx(v["train_days"] / wall)
    assert v["expected_interruptions"] == pytest.approx(wall * 24 / mtbi)
    assert 0.95 < v["goodput"] < 1


def test_the_failure_model_matches_a_simulation(seed_h100):
    """Interruptions as a Poisson process, work lost back to the last checkpoint, plus restart."""
    v = seed_h100.values
    tau, delta, restart = v["checkpoint_interval_hours"], v["checkpoint_write_hours"], v["restart_hours"]
    mtbi, work_total = v["job_mtbi_hours"], v["train_days"] * 24
    rng = random.Random(0)
    walls = []
    for _ in range(300):
        wall, work = 0.0, 0.0
        next_failure = rng.expovariate(1 / mtbi)
        while work < work_total:
            segment = min(tau, work_total - work) + delta       # compute, then write a checkpoint
            if wall + segment <= next_failure:
                wall, work = wall + segment, work + segment - delta
            else:                                               # lose the segment, restart
                wall = next_failure + restart
                next_failure = wall + rng.expovariate(1 / mtbi)
        walls.append(wall)
    assert sum(walls) / len(walls) / 24 == pytest.approx(v["stretched_training_days"], rel=0.01)


def test_checkpoint_interval_in_steps(catalog):
    plan = seed_plan(catalog, **{"reliability.checkpoint_interval_steps": 1500})
    v = plan.values
    assert v["checkpoint_interval_steps"] == pytest.approx(1500)
    assert v["checkpoint_interval_hours"] == pytest.approx(1500 * v["step_hours"])
    # Seed 002's 1,000-2,000 steps is longer than the optimum here, so it loses more.
    assert v["stretched_training_days"] > seed_plan(catalog)["stretched_training_days"]


def test_seed_002s_gpu_failure_chance(seed_h100):
    # Seed 002: 512 GPUs for 5 months, 10-15% chance of a GPU failure. Llama 3's public rate
    # gives 7.4% for the 161-day run: the seed's figure implies a rate 1.4-2x Llama 3's.
    assert seed_h100["gpu_failure_probability"] == pytest.approx(0.074, abs=0.002)


def test_impossible_failure_rate_is_refused(catalog):
    with pytest.raises(ScenarioError) as err:
        seed_plan(catalog, **{"reliability.interruption_rate_per_gpu_hour": 0.01})
    problem = err.value.problems[0]
    assert problem.path == "reliability.interruption_rate_per_gpu_hour"
    assert "never ends" in problem.message


# --- checkpoint modes and restarts at scale (issue 13) ---------------------------------------

# Llama 3 section 3.3.1: Tectonic "supports a sustainable throughput of 2 TB/s"
TECTONIC = {"storage.write_gb_per_s": 2000, "storage.read_gb_per_s": 2000}
# A restart in MegaScale's 15 minutes ("catch up to the training progress prior to the crash
# within 15 minutes"): one 5-minute health check (Kokolis et al. 2025), 5 minutes to swap in a
# spare node, 5 to start the job again
FAST_RESTART = {"reliability.failure_detect_minutes": 5, "reliability.node_replace_minutes": 5,
                "reliability.job_startup_minutes": 5}


def llama3(catalog, **changes):
    return plan_of(with_changes(raw(SEED_H100), {**LLAMA3_405B_16K, **changes}), catalog, "llama3-405b")


def test_llama3_at_16k_with_the_defaults_is_the_issues_76_percent(catalog):
    """The default stays synchronous, to storage at BLOOM's ~50 GB/s, with a 20-minute restart:
    5.67 TB of checkpoint takes ~2 minutes to write and the job stops every ~27 minutes for it."""
    plan = llama3(catalog)
    v = plan.values
    assert plan.failing_checks == []
    assert v["job_mtbi_hours"] == pytest.approx(3.09, abs=0.01)
    assert v["checkpoint_full_gb"] == pytest.approx(405e9 * 14 / 1e9)
    assert v["checkpoint_pause_hours"] == v["checkpoint_write_hours"] == pytest.approx(5670 / 50 / 3600)
    assert v["restart_hours"] == pytest.approx((5 + 10 + 5) / 60 + 5670 / 50 / 3600)
    assert v["goodput"] == pytest.approx(0.757, abs=0.002)


@pytest.mark.parametrize("mode, storage", [("asynchronous", TECTONIC), ("in_memory", {})])
def test_llama3_at_16k_with_fast_checkpoints_and_restart_is_above_90_percent(catalog, mode, storage):
    """Llama 3 section 3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100 and "higher
    than 90% effective training time". Given that rate, checkpoints that stop the training only
    for the copy to host memory (to Tectonic's 2 TB/s in the background, or to peers' memory) and
    a restart in MegaScale's 15 minutes, the plan's goodput is above 90%."""
    v = llama3(catalog, **FAST_RESTART, **storage, **{"reliability.checkpoint_mode": mode}).values
    assert v["checkpoint_pause_hours"] * 3600 < 1          # ByteCheckpoint: "sub-second" stalls
    assert v["checkpoint_overhead"] < 0.01
    assert v["loss_per_interruption_hours"] * 60 < 16
    assert 0.90 < v["goodput"] < 0.93


def test_llama3s_90_percent_leaves_under_19_minutes_per_interruption(catalog):
    """Derived from Llama 3: above 90% with one interruption every 3.09 hours leaves at most
    0.10 x 185.6 = 18.6 minutes per interruption, restart included. The default 20-minute restart
    spends more than that whatever the checkpoints, so the fast restart is part of the 90%."""
    budget = 0.10 * 54 * 24 * 60 / 419
    assert budget == pytest.approx(18.6, abs=0.05)
    slow = llama3(catalog, **{"reliability.checkpoint_mode": "in_memory"})
    fast = llama3(catalog, **FAST_RESTART, **{"reliability.checkpoint_mode": "in_memory"})
    assert slow["restart_hours"] * 60 > budget and slow["goodput"] < 0.90
    assert fast["loss_per_interruption_hours"] * 60 < budget and fast["goodput"] > 0.90


def test_synchronous_checkpoints_at_16k_fall_short(catalog):
    """Kokolis et al. 2025: an ETTR of 0.9 at ~12,000 GPUs needs checkpoint writes "on the order of
    ~10 seconds", achievable asynchronously. With the same fast restart, synchronous writes to
    BLOOM-class storage (~2 minutes) stay below 80%; a 10-second synchronous write comes within a
    few points of 90% without reaching it; asynchronous writes to the same slow storage do better."""
    slow = llama3(catalog, **FAST_RESTART)
    ten_seconds = llama3(catalog, **FAST_RESTART, **{"storage.write_gb_per_s": 567, "storage.read_gb_per_s": 567})
    background = llama3(catalog, **FAST_RESTART, **{"reliability.checkpoint_mode": "asynchronous"})
    assert ten_seconds["checkpoint_write_hours"] * 3600 == pytest.approx(10, abs=0.01)
    assert slow["goodput"] < 0.80
    assert 0.85 < ten_seconds["goodput"] < 0.90
    assert background["goodput"] > ten_seconds["goodput"] > slow["goodput"] + 0.05


def test_byterobust_97_percent_at_9600_gpus_needs_an_eight_minute_restart(catalog):
    """ByteRobust (SOSP'25): "97% ETTR for a three-month training job on 9,600 GPUs". At Llama 3's
    rate the job is interrupted every 5.3 hours, which leaves ~9.5 minutes per interruption: with
    in-memory checkpoints, a restart of 8 minutes (warm standbys: nothing to swap in; not a
    published figure) reaches it, the default 20 minutes does not."""
    at_9600 = {"hardware.gpu_count": 9600, "data.global_batch_sequences": 1800,    # DP 600 x 3
               "reliability.checkpoint_mode": "in_memory"}
    quick = llama3(catalog, **at_9600, **{"reliability.failure_detect_minutes": 3,
                                          "reliability.node_replace_minutes": 0,
                                          "reliability.job_startup_minutes": 5})
    default = llama3(catalog, **at_9600)
    assert quick.failing_checks == []
    assert quick["job_mtbi_hours"] == pytest.approx(5.28, abs=0.01)
    assert quick["goodput"] >= 0.97
    assert default["goodput"] < 0.96


def test_asynchronous_checkpoints_pause_for_the_host_copy_only(catalog):
    """PyTorch DCP async_save "first de-stages the state_dict on to the staging storage (defaults
    to CPU memory), and then calls the save in a separate thread"."""
    plan = seed_plan(catalog, **{"reliability.checkpoint_mode": "asynchronous", "storage.write_gb_per_s": 5})
    v, sync = plan.values, seed_plan(catalog).values
    # the seed shards nothing: 350 GB of weights and 2,100 GB of optimizer states over TP 4 x PP 8
    assert v["checkpoint_state_per_gpu_gb"] == pytest.approx(2450 / 32)
    assert v["checkpoint_pause_hours"] == pytest.approx(2450 / 32 / 32 / 3600)     # at 32 GB/s
    assert v["checkpoint_background_hours"] == v["checkpoint_write_hours"] == pytest.approx(2450 / 5 / 3600)
    # Young/Daly prices a checkpoint at the pause; the next one waits for the write to end
    assert v["young_daly_interval_hours"] == pytest.approx(math.sqrt(2 * v["checkpoint_pause_hours"]
                                                                     * v["job_mtbi_hours"]))
    assert v["checkpoint_interval_hours"] == pytest.approx(max(v["young_daly_interval_hours"],
                                                               v["checkpoint_background_hours"]))
    assert v["checkpoint_overhead"] == pytest.approx(v["checkpoint_pause_hours"] / v["checkpoint_interval_hours"])
    assert v["lost_work_hours"] == pytest.approx(v["checkpoint_interval_hours"] / 2 + v["checkpoint_background_hours"])
    assert v["checkpoint_load_hours"] == pytest.approx(2450 / 50 / 3600)          # from storage
    assert v["goodput"] > sync["goodput"]


def test_in_memory_checkpoints_write_to_and_restart_from_a_peer(catalog):
    """Gemini (SOSP'23): checkpoints in the CPU memory of other machines, restarts read from there
    instead of remote storage, as often as every iteration."""
    v = seed_plan(catalog, **{"reliability.checkpoint_mode": "in_memory"}).values
    peer = 400 / 8                                          # the H100 row's 400 Gbit/s per GPU
    assert v["scale_out_gb_per_s"] == pytest.approx(peer)
    assert v["checkpoint_background_hours"] == pytest.approx(2450 / 32 / peer / 3600)
    assert v["checkpoint_load_hours"] == pytest.approx(2450 / 32 / peer / 3600)
    assert v["restart_hours"] == pytest.approx(20 / 60 + v["checkpoint_load_hours"])
    assert v["checkpoint_interval_hours"] >= v["step_hours"]


def test_a_synchronous_plan_keeps_its_figures(seed_h100):
    """The split restart (5 + 10 + 5 minutes) and the pause are today's 5 + 15 and write time."""
    v = seed_h100.values
    assert v["checkpoint_pause_hours"] == v["checkpoint_write_hours"]
    assert v["checkpoint_background_hours"] == 0
    assert v["lost_work_hours"] == pytest.approx(v["checkpoint_interval_hours"] / 2)
    assert v["restart_hours"] == pytest.approx(20 / 60 + 2450 / 50 / 3600)
    assert v["goodput"] == pytest.approx(0.980, abs=0.0005)                 # the golden report's 98.0%


def test_the_asynchronous_model_matches_a_simulation(catalog):
    """Interruptions as a Poisson process; a checkpoint counts once its background write has
    ended, so a failure during the write goes back one checkpoint further (τ/2 + W lost)."""
    v = seed_plan(catalog, **{"reliability.checkpoint_mode": "asynchronous", "storage.write_gb_per_s": 5,
                              "reliability.interruption_rate_per_gpu_hour": 2e-4}).values
    tau, delta, behind = v["checkpoint_interval_hours"], v["checkpoint_pause_hours"], v["checkpoint_background_hours"]
    restart, mtbi, work_total = v["restart_hours"], v["job_mtbi_hours"], 400.0
    assert behind > tau / 2                                  # the background write matters here
    rng = random.Random(1)
    walls = []
    for _ in range(400):
        wall, work, durable, pending = 0.0, 0.0, 0.0, None   # pending: (work, written at)
        next_failure = rng.expovariate(1 / mtbi)
        while work < work_total:
            segment = min(tau, work_total - work)
            if wall + segment + delta <= next_failure:
                wall, work = wall + segment + delta, work + segment
                if pending and pending[1] <= wall:
                    durable = pending[0]
                pending = (work, wall + behind)
            else:
                if pending and pending[1] <= next_failure:
                    durable = pending[0]
                wall, work, pending = next_failure + restart, durable, None
                next_failure = wall + rng.expovariate(1 / mtbi)
        walls.append(wall)
    expected = v["stretched_training_days"] / v["train_days"]
    assert sum(walls) / len(walls) / work_total == pytest.approx(expected, rel=0.01)


def test_the_checkpoint_mode_and_restart_come_back_on_import(tmp_path, catalog):
    plan = seed_plan(catalog, **{"reliability.checkpoint_mode": "in_memory", "reliability.host_copy_gb_per_s": 20,
                                 "reliability.job_startup_minutes": 2})
    book = tmp_path / "seed.xlsx"
    book.write_bytes(write_workbook(plan).data)
    back = import_workbook(book, catalog).data["reliability"]
    assert (back["checkpoint_mode"], back["host_copy_gb_per_s"], back["job_startup_minutes"]) == ("in_memory", 20, 2)
    assert (back["failure_detect_minutes"], back["node_replace_minutes"]) == (5, 10)


# --- the schedule and what is billed ---------------------------------------------------------

def test_non_training_share_is_in_seed_000s_band(seed_h100):
    """Seed 000 step 5: queue, setup, transfer and reruns add 10-30% on top of training (with the
    full-run allowance of issue 25: what published runs spent beyond step time and failures)."""
    v = seed_h100.values
    assert v["non_training_days"] == pytest.approx(
        v["queue_days"] + v["setup_days"] + v["transfer_days"] + v["failure_loss_days"] + v["card_allowance_days"])
    assert 0.10 <= v["non_training_margin"] <= 0.30


def test_segments_add_up_and_the_queue_is_not_billed(seed_h100):
    v = seed_h100.values
    assert v["run_days"] == pytest.approx(v["queue_days"] + v["setup_days"] + v["transfer_days"]
                                          + v["stretched_training_days"] + v["rollback_days"]
                                          + v["card_allowance_days"] + v["evaluation_days"])
    # the queue is not billed; the rollbacks are priced as their own line (Cost sheet)
    assert v["billed_days"] == pytest.approx(v["run_days"] - v["queue_days"] - v["rollback_days"])
    assert v["transfer_days"] == pytest.approx(3e12 * 2 * 8 / 10e9 / 86400)   # 6 TB at 10 Gbit/s


def test_billed_rental_beside_pure_rental(seed_h100):
    v = seed_h100.values
    assert v["reserved_gpus"] == 520                       # 64 nodes + 1 spare
    assert v["billed_gpu_hours"] == pytest.approx(520 * v["billed_days"] * 24)
    assert v["billed_rental_cost"] == pytest.approx(v["billed_gpu_hours"] * 1.80)
    assert v["rental_cost"] == pytest.approx(3_500_000)
    assert v["rental_gap_cost"] == pytest.approx(v["billed_rental_cost"] - 3_500_000)
    assert v["rental_gap_cost"] > 0.15 * 3_500_000
    # sized by what they train (seed 002: 1-7B, then 30-70B), at the run's 450 TFLOPS
    assert v["experiment_gpu_hours"] == pytest.approx(6 * (7e9 * 100e9 + 70e9 * 200e9) / (450e12 * 3600))


# --- storage and data loading ----------------------------------------------------------------

def test_storage_volumes_from_tokens_and_parameters(catalog):
    plan = seed_plan(catalog, **{"storage.dataset_gb": None, "storage.checkpoint_gb": None})
    v = plan.values
    assert v["dataset_raw_gb"] == pytest.approx(3e12 * 4 / 1e9)         # 12 TB of text
    assert v["dataset_tokenized_gb"] == pytest.approx(3e12 * 2 / 1e9)   # uint16 ids: 50,257 < 65,536
    assert v["checkpoint_full_gb"] == pytest.approx(175e9 * 14 / 1e9)   # 2.45 TB, as BLOOM's 2.3 TB
    assert v["checkpoint_weights_gb"] == pytest.approx(350)
    assert v["checkpoint_storage_gb"] == pytest.approx(3 * 2450)
    assert v["storage_gb_months"] == pytest.approx((18_000 + 7_350) * 6)


def test_data_loading_check(catalog):
    assert seed_plan(catalog)["check_data_loading"] == 0
    # Text needs ~0.4 MB/s here; 1 KB per token (say, image patches) needs ~0.22 GB/s, over a
    # 0.1 GB/s store.
    heavy = seed_plan(catalog, **{"storage.tokenized_bytes_per_token": 1000, "storage.read_gb_per_s": 0.1})
    assert heavy["data_read_gb_per_s"] == pytest.approx(3e12 * 1000 / (heavy.train_days * 86400) / 1e9)
    assert "check_data_loading" in heavy.failing_checks


# --- the project timeline -------------------------------------------------------------------

def test_phases_follow_each_other_from_the_start_date(catalog):
    plan = seed_plan(catalog, **{"schedule.start_date": "2027-03-01"})
    v = plan.values
    assert v["start_date"] == excel_serial(from_serial(v["start_date"]))
    assert from_serial(v["data_prep_start"]).isoformat() == "2027-03-01"
    order = ["data_prep", "validation", "scaling", "training", "evaluation", "deployment"]
    for before, after in zip(order, order[1:]):
        assert v[f"{before}_end"] == v[f"{after}_start"]
    assert v["training_end"] - v["training_start"] == pytest.approx(
        v["queue_days"] + v["setup_days"] + v["transfer_days"] + v["stretched_training_days"]
        + v["rollback_days"] + v["card_allowance_days"])
    assert v["project_days"] == pytest.approx(v["deployment_end"] - v["data_prep_start"])


def test_seed_002s_28_week_plan_is_too_short_for_its_own_estimate(seed_h100):
    # Seed 002 gives full training weeks 9-24 (16 weeks, 112 days) on 512-1,024 GPUs, but its own
    # estimate is 158 days on 512 GPUs; only 1,024 GPUs (79 days) fit the 16 weeks. With the
    # queue, setup, failures, the full-run allowance (issue 25: +11.7% of the stretched training,
    # what published wall-clock runs spent beyond step time) and evaluation the 512-GPU project takes
    # 40.2 weeks, not 28 (37.5 without the allowance).
    assert seed_h100.train_days > 16 * 7
    assert seed_h100["project_weeks"] == pytest.approx(40.2, abs=0.1)


def test_impossible_failure_rate_is_refused_in_the_plans_language(catalog):
    """The same figures as the English refusal, in the zh catalog's sentence; the problem
    holds message ids, so it reads in either language."""
    errors = {}
    for lang in ("en", "zh"):
        with pytest.raises(ScenarioError) as err:
            seed_plan(catalog, **{"reliability.interruption_rate_per_gpu_hour": 0.01, "language": lang})
        errors[lang] = err.value.problems[0]
    mtbi, loss = (float(x) for x in re.findall(r"\d+\.\d\d", errors["en"].message))
    assert errors["zh"].path == errors["en"].path
    assert errors["zh"].message_in("zh") == fmt("plan.problems.never_ends.message", "zh", mtbi=mtbi, loss=loss)
    assert errors["zh"].fix_in("zh") == text("plan.problems.never_ends.fix", "zh")
    assert (errors["zh"].message, errors["zh"].fix) == (errors["en"].message, errors["en"].fix)
