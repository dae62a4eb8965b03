"""What a page says when greedy speculative decoding's tokens differ from plain decoding's: the words
depend on whether the target's passes are batch-invariant (specdec_core.model.batch_invariant)."""


def greedy_mismatch_reason(batch_invariant: bool) -> str:
    """Why greedy speculative and plain tokens can differ here, in one sentence."""
    if batch_invariant:
        return ("Here each row of a pass over several positions is bit for bit the one-token pass, so no near-tie "
                "can flip: this is a bug, please report it.")
    return ("In exact arithmetic they are the very same tokens; these passes are not batch-invariant (no compiled "
            "pass, another precision or transformers' forward), so a near-tie between two tokens can flip when a "
            "pass over several positions rounds differently from a pass over one.")
