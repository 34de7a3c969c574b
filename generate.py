#!/usr/bin/env python3
"""Build trainbudget outputs: `python generate.py` for the bundled example, or
`python generate.py SCENARIO.yaml [...] [-o DIR]`. See README.md."""

import sys

from budget.cli import main

if __name__ == "__main__":
    sys.exit(main())
