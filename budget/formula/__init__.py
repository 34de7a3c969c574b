"""formula: the expression tree every derived number is written in, rendered as spreadsheet
text and compiled to Python with the spreadsheet's semantics. Imports only core."""
