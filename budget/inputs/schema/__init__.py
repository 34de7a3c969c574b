"""The scenario schema, one module per section of a scenario file; `budget.inputs.scenario`
composes the sections into `Scenario` and holds the rules that span them."""
