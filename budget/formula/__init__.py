"""formula: the expression tree every derived number is written in, rendered as spreadsheet
text and compiled to Python with the spreadsheet's semantics. Imports only core.

expr.py is what the other layers import from (the spreadsheet functions, and every public name
below); tree.py holds the nodes and their two renderings, rows.py the row items, runtime.py the
spreadsheet semantics compiled code calls, compiler.py `compile_items` and specialize.py the
`Specializer` the layout search runs."""
