"""plan: every number of a plan, computed: the layout search, the model evaluated, options,
the reference runs, sensitivity cases and the calibration. Imports inputs and below.

`budget.plan.build_plan` and `budget.plan.Plan` are the library entry points scripts use."""

from .plan import Plan, build_plan

__all__ = ["Plan", "build_plan"]
