"""Tables as a class reads them: an empty cell shows a dash, never Streamlit's "None", and a table
too wide for a projector says that it scrolls sideways (its grid hides the columns that do not fit)."""
import pandas as pd
import streamlit as st

DASH = "—"
SCROLL_HINT = "↔ Scroll the table sideways (Shift + wheel, or the arrow keys inside it) to see all its columns."
# Main column at 1024×768 with the sidebar open, and what a grid column needs per character and around
# its text (Streamlit's grid sizes a column to its header and widest cell, at most ~60 characters).
NARROWEST_MAIN_PX = 620
PX_PER_CHAR, PX_PER_COLUMN, MAX_CHARS = 7.5, 26, 60


def readable(data, formats: dict[str, str] | None = None) -> pd.DataFrame:
    """`data` (a DataFrame or a list of row dicts) with every empty cell (None, NaN) shown as DASH.

    The columns named in `formats` become text, each number written with its format spec (".3f"); a
    numeric column with gaps that `formats` does not name is written as it prints. Other columns keep
    their type, so they still sort as numbers."""
    frame = pd.DataFrame(data).copy()
    formats = formats or {}
    for column in frame.columns:
        empty = frame[column].isna()
        spec = formats.get(column)
        if spec is None and not empty.any():
            continue
        frame[column] = [DASH if gap else (format(v, spec) if spec else str(v))
                         for v, gap in zip(frame[column].tolist(), empty.tolist())]
    return frame


def estimated_width(frame: pd.DataFrame) -> float:
    """About how many pixels Streamlit's grid needs to show every column of `frame`."""
    width = 0.0
    for column in frame.columns:
        chars = max([len(str(column))] + [len(str(v)) for v in frame[column].tolist()])
        width += min(chars, MAX_CHARS) * PX_PER_CHAR + PX_PER_COLUMN
    return width


def show(data, *, key: str, formats: dict[str, str] | None = None, **dataframe_args) -> None:
    """`st.dataframe` of `readable(data, formats)` without the index; under a table that will not fit
    a projector's width, SCROLL_HINT."""
    frame = readable(data, formats)
    st.dataframe(frame, hide_index=True, key=key, **dataframe_args)
    if estimated_width(frame) > NARROWEST_MAIN_PX:
        st.caption(SCROLL_HINT)
