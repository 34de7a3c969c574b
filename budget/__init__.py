"""trainbudget: how many accelerators, for how long, for how much money.

The pipeline, one module per stage: scenario (parse, validate) → plan (pure functions, a
frozen result) → workbook and report writers → cli.
"""

__version__ = "0.1.0"
