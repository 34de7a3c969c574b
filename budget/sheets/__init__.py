"""sheets: the workbook, one module per sheet over a shared writer; reads the Plan and renders the
model's expressions. Imports xlsx, plan and below; never render."""
