"""`python -m budget.calibrate`: the efficiency fit (it lives in budget/plan/calibrate.py).
Nothing inside the package imports this module."""

import sys

from .plan.calibrate import main

if __name__ == "__main__":      # pragma: no cover
    sys.exit(main())
