"""The app's defaults: the prompt, γ and temperature a new visitor starts from (the sidebar's first values,
and what a link without them means).

They are chosen to be the core's documented lab run (specdec_core.analysis.lab.DOCUMENTED_PROMPT, _GAMMA and
_TEMPERATURE): with them, on the bundled pair, Identical Outputs' lab passes the exact rule and fails every
broken one at its default K and seed. tests/app/test_settings_plain.py checks that the two agree.
"""
DEFAULT_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"
DEFAULT_GAMMA = 4  # draft tokens per round
DEFAULT_TEMPERATURE = 1.0  # the target's own distribution; 0 = greedy
