"""`python -m budget.cli`: the trainbudget command."""

import sys

from .app import main

sys.exit(main())
