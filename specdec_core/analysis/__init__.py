"""Analyses behind the chapters, built on the algorithm one level up: statistics of traced rounds
(round_stats), which computed distributions were used (usage), the one measurement method (measure),
the race and the drafter shoot-out (race), and the exactness lab (lab). Nothing here samples on its own:
every generation goes through specdec_core.sampler.
"""
