"""`budget.scenario`: the scenario loader under the name scripts import it by (it lives in
budget/inputs/). Nothing inside the package imports this module."""

from .inputs.options import load_scenario, parse_scenario
from .inputs.scenario import Scenario

__all__ = ["Scenario", "load_scenario", "parse_scenario"]
