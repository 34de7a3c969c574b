"""model: the line items (inputs and formulas) of a plan, declared once, in expressions.
Imports formula and core."""
