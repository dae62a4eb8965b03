"""Analyses behind the chapters, built on the algorithm one level up: statistics of traced rounds
(round_stats), which computed distributions were used (usage), the one measurement method (stats:
medians, spreads and interleaved contests; pass_costs: c and v(k); acceptance: teacher-forced α), the
live race and the drafter shoot-out (race), α per drafter over enough rounds (drafter_rounds), fixed
against adaptive γ (policy_compare), tree against chain (trees), the exactness lab and its documented
run (lab), every rule's verdict and economics (rule_costs), lossless against lossy (fidelity), and
batches and the first token (batching). Nothing here samples on its own: every generation goes through
specdec_core.speculative (batches through specdec_core.batch).
"""
