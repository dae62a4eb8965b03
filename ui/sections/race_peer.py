"""Wall-Clock Race → Go deeper: the same pair in llama.cpp, beside this core, as recorded by
scripts/bench/llama_cpp_peer.py (not live: llama.cpp does not run inside the app)."""
import pandas as pd
import streamlit as st

from ui.content import peer


def show() -> None:
    saved = peer.recorded()
    if saved is None:
        st.info("No llama.cpp comparison is recorded here: `python scripts/bench/llama_cpp_peer.py` builds llama.cpp, "
                "runs both engines side by side and saves one.")
        return
    st.markdown(
        f"The bundled pair converted to llama.cpp's format and run by llama.cpp ({saved['llama_cpp']}'s source) and "
        f"by this app's core, greedy, {saved['tokens']} new tokens on {saved['prompts']} held-out prompts, one "
        f"thread, the two engines interleaved over {saved['repetitions']} repetitions. **Recorded, not live:** "
        f"{saved['when']} on {saved['cpu']}, by `scripts/bench/llama_cpp_peer.py`. Times are medians over the prompts, "
        "with the fastest and slowest prompt; every text is checked against this core's plain greedy text.")
    rows = pd.DataFrame([{"engine, precision, decoding": r["contestant"], "ms (median)": r["ms"],
                          "fastest–slowest prompt": f"{r['low']:.0f}–{r['high']:.0f}",
                          "speedup over its own plain": f"{r['speedup_over_own_plain']:.2f}×",
                          "same text as ours": r["texts_equal_to_ours"]} for r in saved["rows"]])
    st.dataframe(rows, hide_index=True, width="stretch",
                 column_config={"ms (median)": st.column_config.NumberColumn(format="%.0f")})
