"""The bounds, stated once: what trainbudget reads from outside, and how far a plan may go.

Every reader of a file the user hands in (a scenario, a catalog, a model's config.json, a
workbook to import, the output folder's own journal, manifest and lock) applies these through
budget/core/reading.py; the planner's and the schema's bounds that the README quotes are here
too, so that the code, its error messages (which print these figures) and the README say the same.
Each bound is a guard against a typo or a hostile file, far above anything real.
"""

from __future__ import annotations

import datetime as dt

# --- plans ----------------------------------------------------------------------------------
# The project ends within a century: dates stay displayable and the Timeline's week grid
# (two columns a week at most, 5,300 weeks) fits a sheet's 16,384 columns.
MAX_PROJECT_YEARS = 100
MAX_PROJECT_DAYS = 36_525
EARLIEST_START = dt.date(1990, 1, 1)          # schedule.start_date
LATEST_START = dt.date(2200, 12, 31)

# --- scenario and catalog files (YAML) ------------------------------------------------------
MAX_YAML_BYTES = 1_000_000      # a scenario is a few kilobytes; a catalog, a few tens
MAX_YAML_DEPTH = 50             # a scenario nests three levels; PyYAML composes recursively

# --- a model's Hugging Face config.json (model.hf_config) -----------------------------------
MAX_HF_CONFIG_BYTES = 1_000_000   # a published config.json is a few kilobytes
MAX_JSON_DEPTH = 50               # a config nests two or three levels; json.loads recurses

# --- the output folder's own files ----------------------------------------------------------
MAX_MANIFEST_BYTES = 4_000_000    # a record is ~150 bytes: tens of thousands of outputs
MAX_JOURNAL_BYTES = 8_000_000     # the moves and both manifests

# --- a workbook to import (.xlsx: a zip of XML parts) ---------------------------------------
MAX_WORKBOOK_BYTES = 50_000_000          # the file; a generated book is ~0.2 MB, 20 MB with pictures
MAX_WORKBOOK_ENTRIES = 10_000            # parts in the archive; a generated book has ~30
MAX_WORKBOOK_UNCOMPRESSED = 1_000_000_000   # all parts together, as the archive declares them
MAX_PART_BYTES = 16_000_000              # one sheet the importer reads (a generated sheet: < 0.4 MB)
MAX_STRINGS_BYTES = 8_000_000            # the shared strings (a re-saved generated book: ~0.1 MB)
MAX_META_PART_BYTES = 8_000_000          # the workbook part (sheets, defined names), relationships, properties
MAX_NOTES_BYTES = 8_000_000              # one sheet's cell notes (comments part)
MAX_COMPRESSION_RATIO = 100              # a part over 1 MB that inflates more than this: a zip bomb
RATIO_CHECKED_FROM = 1_000_000           # bytes: small parts may compress as they like
MAX_NAME_CELLS = 100_000                 # cells in one defined name's area (the catalog: ~500)
MAX_READ_ROWS = 100_000                  # the rows of a sheet read (the Inputs sheet: ~330)
MAX_READ_COLUMNS = 256
MAX_NOTE_CHARS = 500                     # a note kept in the imported scenario, at most
MAX_IMPORT_SECONDS = 10.0                # reading one workbook; the tool stops with a clear error

# Numbers a spreadsheet can hold: Excel's largest is 9.99999999999999E+307; dates are the
# serials of 1900-01-01 to 9999-12-31.
MAX_CELL_NUMBER = 1e308
FIRST_DATE_SERIAL = 1
LAST_DATE_SERIAL = 2_958_465
