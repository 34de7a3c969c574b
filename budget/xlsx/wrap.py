"""Long text wrapped so the printed page keeps every word: a text wider than the room it may
overflow into wraps (in its own column, or merged across the empty cells to the sheet's last
column), and each row is as tall as its longest wrapped cell. It reads the cells' text and
style ids directly (no proxies), so it lives beside cells.py among openpyxl's internals."""

from __future__ import annotations

from copy import copy
from operator import itemgetter

from openpyxl.styles import Alignment
from openpyxl.styles.cell_style import StyleArray

from ..core.text import display_width, has_wide, wrapped_lines
from .cells import ALIGNMENT, FONT_ID, LETTERS, column_dimension, row_dimension, set_row_height, set_style_id

WRAP_TOP = Alignment(wrap_text=True, vertical="top")
_column_of = itemgetter(1)           # a cell key's column
_WIDTHS: dict[str, tuple[int, bool]] = {}


def text_width(text: str) -> tuple[int, bool]:
    """(display_width, has_wide) of a text, remembered: a book measures the same labels often."""
    known = _WIDTHS.get(text)
    if known is None:
        if len(_WIDTHS) >= 65536:
            _WIDTHS.clear()
        known = _WIDTHS[text] = (display_width(text), has_wide(text))
    return known


def line_height(cjk: bool) -> int:
    """Points per line of wrapped 11-point text: a CJK face (Noto Sans CJK) sets its lines taller."""
    return 17 if cjk else 15


def text_height(text: str, width: float) -> float:
    """The height in points of a row whose wrapped `text` fills a column `width` characters wide."""
    return (line_height(True) * wrapped_lines(text, width / 1.1) if has_wide(text)
            else 15 * (1 + int(len(text) * 1.1 // width)))


def _alignment_look(align: Alignment) -> tuple[bool, bool]:
    """(turned, wrapped) of an alignment: what wrap_long_text reads of it."""
    return bool(align.text_rotation), bool(align.wrap_text)


class Wrapping:
    """wrap_long_text for one book, with what it learns of the book's styles remembered (the
    style lists only grow while a book is built): each alignment's look, each font's size, the
    top-aligned copy of each alignment, and the wrapping alignment's id."""

    def __init__(self, wb):
        self.wb = wb
        self.wrap_top: int | None = None
        self.top_aligned: dict[int, int] = {}
        self.alignment_looks: dict[int, tuple[bool, bool]] = {}   # alignment id -> _alignment_look
        self.font_sizes: dict[int, float] = {}    # font id -> its size over 11 points

    def wrap_long_text(self, ws) -> None:
        """Text wider than the room it may overflow into (the empty cells to its right, up to
        the sheet's last column) wraps, so the printed page keeps every word and the print range
        stays the sheet's columns: in its own column, or merged across the empty cells to the
        last column when it starts a line of prose. Each row is then as tall as its longest
        wrapped cell (LibreOffice keeps an .xlsx row's stored height).

        Text that fits its own column is passed over first (its room is at least that wide);
        a merge here spans one row and only empty cells, so it changes no other text's room.
        A column's width is read (its dimension made, as openpyxl's factory would) only where
        a text needs it, so the sheet's <cols> stay as they were."""
        cells = ws._cells
        if not cells:
            return
        last = max(map(_column_of, cells))      # ws.max_column
        known: list[float | None] = [None] * (last + 2)   # column -> its width, once read

        def width_of(col: int) -> float:
            width = known[col] = column_dimension(ws, LETTERS[col]).width or 8.43
            return width

        aligns, fonts = self.wb._alignments, self.wb._fonts   # styles by id: no proxies, no copies
        merged = {(rng.min_row, rng.min_col) for rng in ws.merged_cells.ranges}
        looks, widths = self.alignment_looks, _WIDTHS
        texts: list[tuple[int, int]] = []     # text cells that may not fit, not turned nor merged
        for key, c in cells.items():
            if c.data_type != "s":
                continue
            value = c._value
            if not isinstance(value, str):
                continue
            style = c._style
            align = style[ALIGNMENT] if style is not None else 0
            look = looks.get(align)
            if look is None:
                look = looks[align] = _alignment_look(aligns[align])
            if look[0] or key in merged:      # turned, or merged already
                continue
            if not look[1]:                   # fits its own column: fits its room
                shown = widths.get(value)
                if shown is None:
                    shown = text_width(value)
                col = key[1]
                width = known[col]
                if width is None:
                    width = width_of(col)
                if shown[0] <= width * 1.1:
                    continue
            texts.append(key)
        texts.sort()
        lines: dict[int, int] = {}
        cjk: set[int] = set()           # rows with CJK text: its lines are taller
        sizes = self.font_sizes
        get = cells.get
        for key in texts:
            r, col = key
            c = cells[key]
            style = c._style
            look = looks[style[ALIGNMENT] if style is not None else 0]
            text = c._value
            shown, wide = text_width(text)
            own = known[col]
            if own is None:
                own = width_of(col)
            span = col                  # up to the next filled cell, or the last column
            extra = 0                   # the widths right of it, summed left to right
            while span < last:
                right = get((r, span + 1))
                if right is not None and (right._value is not None or right.has_style):
                    break
                span += 1
                width = known[span]
                extra += width_of(span) if width is None else width
            room = own + extra
            width = own
            if look[1]:                 # wraps already
                pass
            elif shown <= room * 1.1:
                continue
            elif span == last and span > col:
                ws.merge_cells(start_row=r, start_column=col, end_row=r, end_column=span)
                width = room
                set_style_id(c, "alignmentId", self.wrap_top_id())
            else:
                set_style_id(c, "alignmentId", self.wrap_top_id())
            font = c._style[FONT_ID] if c._style is not None else 0
            size = sizes.get(font)
            if size is None:
                size = sizes[font] = (fonts[font].sz or 11) / 11
            per_line = max(int(width * 1.1), 1)
            need = wrapped_lines(text, per_line / size) if wide else -(-int(len(text) * size) // per_line)
            if need > lines.get(r, 1):
                lines[r] = need
            elif r not in lines:
                lines[r] = 1
            if wide:
                cjk.add(r)
        self.top_align(ws, lines, cjk, last)


    def top_align(self, ws, lines: dict[int, int], cjk: set[int], last: int) -> None:
        """Each row with a wrapped text of several lines made as tall as that text, its written
        cells aligned to the top (in column order, each alignment copied once per book: the
        styles keep their order; a merge above made only empty cells)."""
        cells, aligns, top = ws._cells, self.wb._alignments, self.top_aligned
        tall = [r for r, n in lines.items() if n > 1]
        for r in tall:
            dim = row_dimension(ws, r)
            height = max(dim.height or 0, line_height(r in cjk) * lines[r])
            set_row_height(dim, height)
        if len(tall) * last > len(cells):     # one pass over the sheet's cells costs less
            rows = set(tall)
            keys = [key for key, c in cells.items() if key[0] in rows and c._value is not None]
            keys.sort()
        else:
            get = cells.get
            keys = [(r, k) for r in tall for k in range(1, last + 1)
                    if (c := get((r, k))) is not None and c._value is not None]
        for key in keys:
            c = cells[key]
            style = c._style
            old = style[ALIGNMENT] if style is not None else 0
            new = top.get(old)
            if new is None:
                if aligns[old].vertical is not None:    # kept (the default never is)
                    top[old] = old
                    continue
                align = copy(aligns[old])     # each alignment copied once
                align.vertical = "top"
                new = top[old] = aligns.add(align)
            if style is None:
                style = c._style = StyleArray()
            style[ALIGNMENT] = new


    def wrap_top_id(self) -> int:
        """The id of the alignment wrap_long_text gives a cell (added on first use, as setting
        cell.alignment would, so the styles keep their order)."""
        if self.wrap_top is None:
            self.wrap_top = self.wb._alignments.add(WRAP_TOP)
        return self.wrap_top

