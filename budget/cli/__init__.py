"""cli: the command line, the only place where typed errors become messages and exit codes;
the package command and the staged output writer. Imports everything below it.

`budget.cli:main` is the installed `trainbudget` command."""

from .app import main

__all__ = ["main"]
