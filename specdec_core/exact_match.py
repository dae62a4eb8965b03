"""The exact-match rule: exact, and wasteful. Draw the target's own token y ~ p and keep the draft x
only when y = x; otherwise emit y. Several implementations shipped it because it is obviously
correct: the token that comes out is always one the target drew. It is, but it accepts less.

A draft x ~ q is kept with probability p(x), so acceptance falls from the paper's sum_x min(p, q) to
sum_x p(x) q(x), which is smaller whenever neither distribution is one-hot (e.g. p = q uniform over
V tokens: 1/V against 1). On a rejection the emitted y is y ~ p given y != x, i.e. p with x removed,
renormalised; adding both branches gives p(y) again, so the chi-square test passes it.

Written with the sampler's Rule interface: "y = x" for y ~ p has probability p(x), and the rejected
branch draws from p without x, which is the same distribution as drawing y first.
"""
import torch

from .speculative import Rows, Rule


def _keep_if_target_draws_it(rows: Rows) -> torch.Tensor:
    return rows.p_x  # P(y = x) for y ~ p: the target's chance of drawing the very draft


def _target_draw_other_than_x(rows: Rows, i: int) -> torch.Tensor:
    p = rows.p[i].clone()
    p[rows.x[i]] = 0.0  # rejected means y != x: the target's draw, conditioned on not being x
    total = p.sum()
    return p / total if total > 0 else rows.p[i]


EXACT_MATCH = Rule("exact match: draw y ~ p, keep the draft only if y = x", _keep_if_target_draws_it,
                   _target_draw_other_than_x)
