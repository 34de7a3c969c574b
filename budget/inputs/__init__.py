"""inputs: the scenario schema, the catalogs, options, binding a scenario to the model's inputs
and reading a reviewer's workbook back. Imports model, formula and core."""
