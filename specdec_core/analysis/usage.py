"""Where the speedup lives: which of the distributions each target pass computed ended up used.

A target pass over k positions computes k next-token distributions. Plain decoding feeds one new
token per pass, so it computes one distribution and uses it. A speculative round feeds the last
committed token and n drafts, computing n + 1 distributions: those at the accepted drafts are used
(each confirmed its draft), the one at the first rejection or after the last draft is used to draw the
corrective or bonus token, and those after a rejection are discarded (the next round recomputes them).
"""
import pandas as pd

from ..trace import GenerationResult

STATUSES = ("target", "accepted", "corrective", "bonus", "discarded")
COLUMNS = ["pass", "position", "status", "token"]


def pass_usage(result: GenerationResult) -> pd.DataFrame:
    """One row per distribution a decoding target pass computed: the pass (1-based), the output
    position it predicts (0-based), what became of it (one of STATUSES) and the token it gave
    (the draft it judged or the token drawn from it; -1 for discarded ones)."""
    rows = []
    if not result.rounds:  # plain decoding: pass i predicts position i and is used
        rows = [{"pass": i + 1, "position": i, "status": "target", "token": t} for i, t in enumerate(result.tokens)]
        return pd.DataFrame(rows, columns=COLUMNS)
    for r in result.rounds:
        used = len(r.emitted)  # fewer than n_accepted + 1 only when EOS or the length cut the round
        for i in range(len(r.draft_tokens) + 1):
            if i >= used:
                status, token = "discarded", -1
            elif i < r.n_accepted:
                status, token = "accepted", r.draft_tokens[i]
            else:
                status, token = r.next_kind, r.next_token
            rows.append({"pass": r.index + 1, "position": r.position + i, "status": status, "token": token})
    return pd.DataFrame(rows, columns=COLUMNS)


def usage_summary(frame: pd.DataFrame) -> dict:
    """Passes, distributions computed, distributions used (= tokens), and the share used."""
    computed = len(frame)
    used = int((frame["status"] != "discarded").sum()) if computed else 0
    passes = int(frame["pass"].max()) if computed else 0
    return {"passes": passes, "computed": computed, "used": used,
            "used_share": used / computed if computed else float("nan"),
            "tokens_per_pass": used / passes if passes else float("nan")}
