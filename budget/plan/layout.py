"""Memory-first sizing and the parallel layout search. Pure functions, no IO.

Seed 000's order: memory first (a layout that does not fit is worthless however fast), then
compute sets the duration. For a GPU count the search enumerates TP (within a node, dividing
the heads), PP (dividing the layers), DP, micro-batch, ZeRO stage, recomputation and sequence
parallelism; drops layouts that do not fit or cannot split the global batch; and ranks the rest
by training days, then cost, then simplicity. Which GPU counts it is run at (the smallest that
meets a deadline, the first that fits, the ways out of a refusal) is budget/plan/counts.py.

Every candidate is evaluated by the model's own compiled formulas (the ones the workbook
shows), restricted to the items that depend on the layout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Callable, Mapping

from ..core.errors import Msg
from ..core.i18n import DEFAULT_LANG, fmt, text
from ..inputs.scenario import resolved_shape
from ..model.lineitems import Model
from ..model.model import RECOMPUTE_MODES

# The layout inputs, as `Layout.as_inputs` names them; what each may take is said once, on its
# input definition (budget/model/inputs_run.py: `domain`), and reaches the search through `Space.domains`.
LAYOUT_INPUTS = ("tp_size", "pp_size", "micro_batch_size", "zero_stage", "recompute",
                 "sequence_parallel", "cp_size", "ep_size")
# Context parallelism is tried only from this sequence length up (shorter ones keep CP 1, so the
# searches of short-sequence runs are those of a search without CP).
CP_MIN_SEQ_LEN = 16384
# Interleaved 1F1B degrees (model chunks per pipeline rank) tried when the scenario asks for it
# (parallelism.search_interleaving); each must split the layers into p·v chunks (Narayanan et al.
# 2021 §2.2.2) and the micro-batches into multiples of p. Llama 3 405B's one-layer chunks are v = 8.
INTERLEAVING = (1, 2, 3, 4, 6, 8)
RANKED_OUTPUTS = ("memory_per_gpu_gb", "usable_hbm_gb", "check_memory_fits", "bubble_fraction",
                  "comm_fraction", "step_comm_share", "recompute_overhead", "layout_efficiency",
                  "fitted_model_used", "matmul_time_factor", "train_days",
                  "stretched_training_days",
                  "total_cost", "dp_size", "memory_headroom_gb")
MAX_GPUS = 1 << 20


class NoLayoutFits(ValueError):
    """No layout of the allowed space fits in memory or splits the batch; `message` says why,
    as a message id and its figures (rendered in the reader's language)."""

    def __init__(self, message: Msg):
        super().__init__(message.render())
        self.message = message


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    micro_batch: int
    zero_stage: int
    recompute: str
    sequence_parallel: str          # "yes" / "no", as the workbook's drop-down holds it
    cp: int = 1                     # context parallel degree
    ep: int = 1                     # expert parallel degree (inside DP)

    @classmethod
    def from_inputs(cls, values: Mapping[str, object]) -> "Layout":
        """The inverse of as_inputs."""
        return cls(int(values["tp_size"]), int(values["pp_size"]), int(values["micro_batch_size"]),
                   int(values["zero_stage"]), str(values["recompute"]), str(values["sequence_parallel"]),
                   int(values.get("cp_size") or 1), int(values.get("ep_size") or 1))

    def as_inputs(self) -> dict[str, object]:
        return {"tp_size": float(self.tp), "pp_size": float(self.pp),
                "micro_batch_size": float(self.micro_batch), "zero_stage": float(self.zero_stage),
                "recompute": self.recompute, "sequence_parallel": self.sequence_parallel,
                "cp_size": float(self.cp), "ep_size": float(self.ep)}

    def describe(self, dp: float, lang: str = DEFAULT_LANG) -> str:
        """The layout in words, as the Parallelism sheet's columns say it."""
        return self.described(dp).render(lang)

    def described(self, dp: float) -> Msg:
        """The layout in words, in any language (layout.describe.*)."""
        zero = Msg("layout.zero.stage", stage=self.zero_stage) if self.zero_stage else Msg("layout.zero.none")
        sp = self.sequence_parallel == "yes"
        extra = {"cp": self.cp} if self.cp > 1 else {}
        if extra:
            form = "layout.describe.sequence_parallel_cp" if sp else "layout.describe.plain_cp"
        else:
            form = "layout.describe.sequence_parallel" if sp else "layout.describe.plain"
        layout = Msg(form, tp=self.tp, pp=self.pp, dp=dp, micro_batch=self.micro_batch,
                     zero=zero, recompute=Msg(f"layout.recompute.{self.recompute}"), **extra)
        return Msg("layout.describe.expert_parallel", layout=layout, ep=self.ep) if self.ep > 1 else layout


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    values: Mapping[str, object]    # the RANKED_OUTPUTS of this layout

    @property
    def fits(self) -> bool:
        return self.values["check_memory_fits"] == 0

    @property
    def train_days(self) -> float:
        return self.values["train_days"]

    def sort_key(self):
        # Days, then cost; ties go to the simpler layout, then to more memory headroom.
        lay, v = self.layout, self.values
        return (round(v["train_days"], 9), round(v["total_cost"], 6),
                RECOMPUTE_MODES.index(lay.recompute), lay.zero_stage, lay.cp, lay.ep, lay.pp, lay.tp,
                -v["memory_headroom_gb"], lay.micro_batch, lay.sequence_parallel)


@dataclass(frozen=True)
class SearchResult:
    gpu_count: int
    evaluated: int                  # layouts evaluated at the final GPU count
    fitting: int
    ranked: tuple[Candidate, ...]   # fitting layouts, best first (at most `keep`)
    rejected: tuple[Candidate, ...] # faster layouts that do not fit, fastest first
    pinned: tuple[str, ...]         # the scenario's fixed dimensions
    explanation: str

    @property
    def best(self) -> Candidate:
        return self.ranked[0]


def layout_domains(model: Model) -> dict[str, tuple]:
    """Each layout dimension's values to try, from its input definition."""
    return {d.name: d.domain for d in model.layout_inputs() if d.domain}


@dataclass(frozen=True)
class Space:
    """What the search may choose from: free dimensions enumerate, pinned ones hold."""
    heads: int
    layers: int
    global_batch: int
    gpus_per_node: int
    pins: Mapping[str, object]
    domains: Mapping[str, tuple]      # input name -> the values to try (Model.layout_inputs)
    seq_len: int = 0                  # CP is tried from CP_MIN_SEQ_LEN tokens up
    virtual_stages: int = 1           # interleaved 1F1B: PP × v chunks must divide the layers
    extra_layers: int = 0             # 2 with one layer fewer on the first and the last stage
    experts: int = 0                  # routed experts (0: a dense model, EP 1)

    def _choices(self, name: str, free=None) -> list:
        if name in self.pins:
            return [self.pins[name]]
        return list(self.domains[name] if free is None else free)

    def _splits(self) -> tuple[list, list, list]:
        tps = self._choices("tp_size", (t for t in self.domains["tp_size"]
                                        if t <= self.gpus_per_node and self.heads % t == 0))
        layers, v = self.layers + self.extra_layers, self.virtual_stages
        # with interleaving (v > 1) PP 1 has nothing to interleave
        pps = self._choices("pp_size", (p for p in range(1, layers + 1)
                                        if layers % (p * v) == 0 and (v == 1 or p > 1)))
        return tps, pps, self._choices("micro_batch_size")

    def ep_choices(self) -> list:
        """EP degrees to try: those dividing the routed experts (1 for a dense model)."""
        domain = self.domains["ep_size"]
        return self._choices("ep_size", [e for e in domain if self.experts and self.experts % e == 0]
                             or domain[:1])

    def cp_choices(self) -> list:
        """CP degrees to try: 1 below CP_MIN_SEQ_LEN tokens, else the input's domain."""
        domain = self.domains["cp_size"]
        return self._choices("cp_size", domain if self.seq_len >= CP_MIN_SEQ_LEN else domain[:1])

    def options(self, gpu_count: int):
        for fields in self.option_fields(gpu_count):
            yield Layout(*fields)

    def option_fields(self, gpu_count: int):
        """Each layout `options` yields, in its order, as its fields: Layout(*fields) is it (the
        search makes a Layout only for the layouts it shows)."""
        for fields, _args in self.option_rows(gpu_count):
            yield fields

    def option_rows(self, gpu_count: int):
        """(fields, args) of each layout `options` yields, in its order: args are the fields as
        the model takes them (SEARCH_ARGS but the GPU count: numbers as floats)."""
        tps, pps, mbs = self._splits()
        zeros = [(int(z), float(int(z))) for z in self._choices("zero_stage")]
        rcs = self._choices("recompute")
        sp_values = self.domains["sequence_parallel"]
        eps = [(int(e), float(int(e)), e) for e in self.ep_choices()]
        for tp, pp, cp in product(tps, pps, self.cp_choices()):
            if gpu_count % (tp * pp * cp):
                continue
            dp = gpu_count // (tp * pp * cp)
            # sequence parallelism splits along TP: without TP only its first value ("no") applies
            sps = self._choices("sequence_parallel", sp_values if tp > 1 else sp_values[:1])
            t, p, c = int(tp), int(pp), int(cp)
            ft, fp, fc = float(t), float(p), float(c)
            for mb in mbs:
                if self.global_batch % (dp * mb):
                    continue
                # interleaving needs the micro-batches per pipeline to be a multiple of PP
                if self.virtual_stages > 1 and (self.global_batch // (dp * mb)) % pp:
                    continue
                m = int(mb)
                fm = float(m)
                for (z, fz), rc, sp, (e, fe, ep) in product(zeros, rcs, sps, eps):
                    if dp % ep == 0:     # EP inside DP
                        yield (t, p, m, z, rc, sp, c, e), (ft, fp, fm, fz, rc, sp, fc, fe)


    def interleavings(self) -> list[int]:
        """The degrees of INTERLEAVING for which some PP choice (above 1) splits the layers."""
        out = []
        for v in INTERLEAVING:
            trial = replace(self, virtual_stages=v)
            if v == 1 or any(p > 1 and (self.layers + self.extra_layers) % (p * v) == 0
                             for p in trial._splits()[1]):
                out.append(v)
        return out

    def split_counts(self, max_gpus: int = MAX_GPUS) -> list[int]:
        """Whole-node GPU counts that admit at least one TP × PP × DP split of the batch."""
        tps, pps, mbs = self._splits()
        # DP × micro-batch divides the batch: DP is a divisor of batch ÷ micro-batch
        dps = {d for mb in mbs if self.global_batch % int(mb) == 0
               for d in _divisors(self.global_batch // int(mb))}
        counts = {int(tp * pp * cp * dp) for tp in tps for pp in pps for cp in self.cp_choices() for dp in dps}
        return sorted(n for n in counts if n % self.gpus_per_node == 0 and n <= max_gpus)


    def batch_steps(self, gpu_count: int) -> set[int]:
        """What the global batch must be a multiple of for some layout to split `gpu_count` GPUs:
        DP × micro-batch (× PP, interleaved), over the splits `options` allows."""
        tps, pps, mbs = self._splits()
        eps = self.ep_choices()
        steps = set()
        for tp, pp, cp in product(tps, pps, self.cp_choices()):
            if gpu_count % (tp * pp * cp):
                continue
            dp = gpu_count // (tp * pp * cp)
            if any(dp % ep == 0 for ep in eps):
                steps.update(int(dp * mb * (pp if self.virtual_stages > 1 else 1)) for mb in mbs)
        return steps


def layout_space(s, catalog, model: Model, pins: Mapping[str, object], virtual_stages: int) -> Space:
    """The layout space of a scenario: its shape, the accelerator's node, the pinned inputs and
    the model's layout domains (the sizing's search and the curve's points search the same)."""
    shape = resolved_shape(s, catalog)
    gpn = int(catalog.accelerator(s.hardware.accelerator).gpus_per_node.value)
    return Space(shape["attention_heads"], shape["layers"], shape["global_batch_sequences"], gpn, pins,
                 layout_domains(model), int(shape["seq_len"]), virtual_stages,
                 2 if s.parallelism.first_last_stage_layers_fewer else 0, int(shape.get("moe_experts") or 0))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


# The search's changing inputs, in the order the specialised model takes them: the layout, then
# the GPU count (held through one search, so an item that depends on all of the layout is not
# worth remembering).
SEARCH_ARGS = (*LAYOUT_INPUTS, "gpu_count")
_FITS = RANKED_OUTPUTS.index("check_memory_fits")


class Evaluator:
    """Runs the model's layout-dependent formulas for one layout at a time.

    The formulas run specialised to this evaluator's fixed inputs (budget.formula.specialize.Specializer):
    the same numbers as the plain compiled function `run`, which runs instead wherever the
    specialised one cannot (and then raises what it raises)."""

    def __init__(self, model: Model, inputs: Mapping[str, object], tables: Mapping,
                 run: Callable | None = None, memory_run: Callable | None = None,
                 base: Mapping[str, object] | None = None):
        self.model, self.inputs, self.tables = model, dict(inputs), tables
        # `base`: the model already evaluated over `inputs` (a plan's values), not evaluated again
        self.base = model.evaluate(inputs, tables) if base is None else dict(base)
        self._run = run
        self.memory_run = memory_run    # the memory check alone, compiled when first asked
        self._fast = None               # the specialised run: None until bound, False if none
        self.calls = 0
        self.lang = model.lang          # the language the search explains itself in
        self._more: dict = {}           # names -> the plain function of those items (more())

    @property
    def run(self) -> Callable:
        """The plain compiled function: (environment, tables) -> environment with the outputs."""
        if self._run is None:
            self._run = self.model.dependents(set(SEARCH_ARGS), RANKED_OUTPUTS)
        return self._run

    def changed(self, **inputs) -> "Evaluator":
        """The same model and search at other input values (a batch, an accelerator)."""
        out = Evaluator(self.model, {**self.inputs, **inputs}, self.tables, self._run, self.memory_run)
        out._more = self._more
        return out

    def more(self, candidate: Candidate, gpu_count: int, names: tuple[str, ...]) -> Candidate:
        """The candidate with items beyond RANKED_OUTPUTS (a date deadline's ends), by the plain
        function compiled for them when first asked: the ranking never pays for them."""
        if names not in self._more:
            self._more[names] = self.model.dependents(set(SEARCH_ARGS), names)
        values = self._more[names](self._environment(candidate.layout, gpu_count), self.tables)
        return Candidate(candidate.layout, {**candidate.values, **{k: values[k] for k in names}})

    def _specialised(self):
        if self._fast is None:
            spec = self.model.specialized(SEARCH_ARGS, RANKED_OUTPUTS, ("gpu_count",))
            self._fast = spec.bind(self.base, self.tables) or False
        return self._fast

    def _outputs(self, layout: Layout, gpu_count: int) -> tuple | None:
        """The RANKED_OUTPUTS, specialised; None where the plain function must run."""
        fast = self._fast if self._fast is not None else self._specialised()
        if not fast:
            return None
        try:
            return fast(float(layout.tp), float(layout.pp), float(layout.micro_batch), float(layout.zero_stage),
                        layout.recompute, layout.sequence_parallel, float(layout.cp), float(layout.ep),
                        float(gpu_count))
        except Exception:   # the plain function raises what it raises, in its own order
            return None

    def _environment(self, layout: Layout, gpu_count: int) -> dict:
        env = dict(self.base)
        env.update(layout.as_inputs())
        env["gpu_count"] = float(gpu_count)
        return env

    def any_fits(self, space: "Space", gpu_count: int) -> bool:
        """Whether some layout of the space fits in memory at `gpu_count`: the model's memory
        check alone, stopping at the first layout that fits (the ways out probe counts this way)."""
        for layout in space.options(gpu_count):
            out = self._outputs(layout, gpu_count)
            if out is not None:
                fits = out[_FITS]
            else:
                if self.memory_run is None:
                    self.memory_run = self.model.dependents(set(SEARCH_ARGS), ("check_memory_fits",))
                fits = self.memory_run(self._environment(layout, gpu_count), self.tables)["check_memory_fits"]
            if fits == 0:
                return True
        return False

    def __call__(self, layout: Layout, gpu_count: int) -> Candidate:
        self.calls += 1
        out = self._outputs(layout, gpu_count)
        if out is not None:
            return Candidate(layout, dict(zip(RANKED_OUTPUTS, out)))
        values = self.run(self._environment(layout, gpu_count), self.tables)
        return Candidate(layout, {k: values[k] for k in RANKED_OUTPUTS})

    def rows(self, space: "Space", gpu_count: int) -> list[tuple[tuple, tuple]]:
        """(fields, values) of each layout of the space at `gpu_count`, in `options` order: the
        layout's fields (Layout(*fields)) and its RANKED_OUTPUTS, in their order."""
        fast = self._fast if self._fast is not None else self._specialised()
        if not fast:
            return [(f, tuple(self(Layout(*f), gpu_count).values.values())) for f in space.option_fields(gpu_count)]
        count, out = float(gpu_count), []
        append = out.append
        for f, args in space.option_rows(gpu_count):
            try:
                append((f, fast(*args, count)))
                self.calls += 1
            except Exception:   # the plain function raises what it raises, in its own order
                append((f, tuple(self.one(Layout(*f), gpu_count).values.values())))
        return out

    def one(self, layout: Layout, gpu_count: int) -> Candidate:
        """One layout (a pinned one), by the plain function: specialising costs a process about
        as much as a few hundred layouts evaluated plainly, the same numbers."""
        self.calls += 1
        values = self.run(self._environment(layout, gpu_count), self.tables)
        return Candidate(layout, {k: values[k] for k in RANKED_OUTPUTS})


# Where the search reads each of RANKED_OUTPUTS in a layout's values
_DAYS, _COST = RANKED_OUTPUTS.index("train_days"), RANKED_OUTPUTS.index("total_cost")
_MEMORY, _HEADROOM = RANKED_OUTPUTS.index("memory_per_gpu_gb"), RANKED_OUTPUTS.index("memory_headroom_gb")


def _row_key(row):
    """Candidate.sort_key of a (fields, values) row."""
    (tp, pp, mb, zero, rc, sp, cp, ep), v = row
    return (round(v[_DAYS], 9), round(v[_COST], 6), RECOMPUTE_MODES.index(rc), zero, cp, ep, pp, tp,
            -v[_HEADROOM], mb, sp)


def _faster_key(row):
    return (row[1][_MEMORY], _row_key(row))


def _candidate(row) -> Candidate:
    return Candidate(Layout(*row[0]), dict(zip(RANKED_OUTPUTS, row[1])))


def search(evaluate: Evaluator, space: Space, gpu_count: int, keep: int = 10) -> SearchResult:
    """The best fitting layouts for `gpu_count`, best first. Raises NoLayoutFits.

    The layouts are ranked as (fields, values) rows, Candidate.sort_key's order; only those the
    result shows become Candidates."""
    rows = evaluate.rows(space, gpu_count)
    fitting = [r for r in rows if r[1][_FITS] == 0]
    if not fitting:
        raise NoLayoutFits(_why_none(rows, gpu_count))
    ranked_rows = _first(fitting, keep)
    best = ranked_rows[0]
    # Faster layouts that do not fit, the nearest to fitting first: they show what memory costs.
    limit = best[1][_DAYS] - 1e-9
    faster = _nearest([r for r in rows if not r[1][_FITS] == 0 and r[1][_DAYS] < limit], 3)
    shown = [_candidate(r) for r in faster]
    days, shape = best[1][_DAYS], best[0][:3]
    ties = sum(1 for r in fitting if r is not best and r[1][_DAYS] - days <= 1e-9)
    second = _first([r for r in fitting if r[0][:3] != shape and r[1][_DAYS] - days > 1e-9], 1)
    ranked = [_candidate(r) for r in ranked_rows]
    return SearchResult(gpu_count, len(rows), len(fitting), tuple(ranked), tuple(shown), tuple(sorted(space.pins)),
                        explain(ranked[0], ties, _candidate(second[0]) if second else None, shown[0] if shown else None,
                                len(fitting), len(rows), gpu_count, evaluate.lang))


def _first(rows: list, n: int) -> list:
    """sorted(rows, key=_row_key)[:n]: only the rows whose rounded days (the key's first part)
    can be among the first n are sorted."""
    days = [round(r[1][_DAYS], 9) for r in rows]
    if len(rows) <= n or any(d != d for d in days):     # NaN: sorted as it falls
        return sorted(rows, key=_row_key)[:n]
    bound = sorted(days)[n - 1]
    return sorted([r for r, d in zip(rows, days) if d <= bound], key=_row_key)[:n]


def _nearest(rows: list, n: int) -> list:
    """_distinct(sorted(rows, key=_faster_key), n): sorted by memory, and by _row_key only within
    the runs of equal memory it reaches."""
    memory = [r[1][_MEMORY] for r in rows]
    if any(m != m for m in memory) or any(r[1][_DAYS] != r[1][_DAYS] for r in rows):
        return _distinct(sorted(rows, key=_faster_key), n)
    by_memory = sorted(rows, key=lambda r: r[1][_MEMORY])
    out, i = [], 0
    while i < len(by_memory) and len(out) < n:
        m, j = by_memory[i][1][_MEMORY], i + 1
        while j < len(by_memory) and by_memory[j][1][_MEMORY] == m:
            j += 1
        out = _distinct(out + (sorted(by_memory[i:j], key=_row_key) if j - i > 1 else by_memory[i:j]), n)
        i = j
    return out


def _distinct(rows: list, n: int) -> list:
    """The first n rows with different TP × PP × micro-batch (× CP × EP), so rejected rows say different things."""
    seen, out = set(), []
    for r in rows:
        f = r[0]
        key = (f[0], f[1], f[2], f[6], f[7])
        if key not in seen:
            seen.add(key)
            out.append(r)
        if len(out) == n:
            break
    return out


def _why_none(rows: list, gpu_count: int) -> Msg:
    if not rows:
        return Msg("layout.none_fits.no_split", gpu_count=gpu_count)
    least = _candidate(min(rows, key=lambda r: r[1][_MEMORY]))
    return Msg("layout.none_fits.no_memory", gpu_count=gpu_count,
               layout=least.layout.described(least.values["dp_size"]),
               memory=least.values["memory_per_gpu_gb"], usable=least.values["usable_hbm_gb"])


def explain(best: Candidate, ties: int, second: Candidate | None, faster: Candidate | None, fitting: int,
            evaluated: int, gpu_count: int, lang: str = DEFAULT_LANG) -> str:
    """Why the winner won, in words a reviewer can check against the Parallelism sheet: whole
    sentences of the catalog (layout.explain), the ones that apply. `ties`: the other fitting
    layouts as fast; `second`: the best of those slower with another TP × PP × micro-batch;
    `faster`: the first faster layout that does not fit."""
    v = best.values
    sentences = [fmt("layout.explain.best", lang, layout=best.layout.describe(v["dp_size"], lang),
                     fitting=fitting, evaluated=evaluated, gpu_count=gpu_count,
                     train_days=v["train_days"], memory=v["memory_per_gpu_gb"], usable=v["usable_hbm_gb"],
                     bubble=v["bubble_fraction"], comm=v["step_comm_share"], recompute=v["recompute_overhead"])]
    if ties:
        sentences.append(fmt("layout.explain.ties", lang, ties=ties))
    if second is not None:
        sentences.append(fmt("layout.explain.second", lang,
                             layout=second.layout.describe(second.values["dp_size"], lang),
                             gap=second.train_days - best.train_days,
                             reason=text(f"layout.difference.{_main_difference(best, second)}", lang)))
    if faster is not None:
        sentences.append(fmt("layout.explain.faster", lang, layout=faster.layout.describe(faster.values["dp_size"], lang),
                             memory=faster.values["memory_per_gpu_gb"]))
    return text("layout.explain.join", lang).join(sentences)


def _main_difference(best: Candidate, other: Candidate) -> str:
    """The output (bubble, communication, recomputation or, under the fitted model, the matmul
    time factor) where `other` loses most to `best`, each as a share of the step."""
    diffs = {name: other.values[name] - best.values[name]
             for name in ("bubble_fraction", "step_comm_share", "recompute_overhead")}
    if best.values["fitted_model_used"] == "yes":
        # narrower per-GPU matmuls (h/TP) run further from the peak: the factor's relative
        # excess over the compute part of the step
        factor = other.values["matmul_time_factor"] / best.values["matmul_time_factor"] - 1
        diffs["matmul_time_factor"] = factor * (1 - other.values["step_comm_share"])
    reason, _ = max(diffs.items(), key=lambda kv: kv[1])
    return "comm_fraction" if reason == "step_comm_share" else reason


def splits(space: Space, gpu_count: int) -> bool:
    """Whether some layout of the space splits `gpu_count` GPUs and the batch."""
    return next(space.options(gpu_count), None) is not None
