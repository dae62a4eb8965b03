"""Tables as a class reads them: an empty cell shows a dash, never Streamlit's "None"."""
import pandas as pd

DASH = "—"


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
