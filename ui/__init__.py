"""Shared pieces of the app's pages (rendering and settings only; the logic lives in specdec_core).

Pages use:
    settings.current()                 the validated sidebar settings (a Settings)
    models.require_pair()              the loaded ModelPair, or a friendly error and st.stop()
    models.require_prompt_ids(pair)    the prompt's token ids, or a friendly message and st.stop()
    chips.chip / chips.chips / chips.provenance_html / chips.show / chips.show_legend
    measure.sweep / measure.cost_profile / measure.draft_costs   cached timings of the pair here
    charts.prob_bars / charts.token_label
    layout.intro                       the two-sentence "what you see" and one thing to try
"""
from . import chapters, charts, chips, layout, measure, models, settings

__all__ = ["chapters", "charts", "chips", "layout", "measure", "models", "settings"]
