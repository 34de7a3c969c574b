"""xlsx: spreadsheet-file mechanics below the sheets (reproducible archives, recalculation in
LibreOffice). Imports only core."""
