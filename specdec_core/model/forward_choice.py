"""Which forward pass a model runs, for the one place that compares them: the benchmark.

The core runs a plain GPT-2 through its own lean pass (compiled_pass.py, or python_pass.py's reference) and any
other causal LM through the model's own transformers forward (transformers_pass.py). `TransformersForward(model)`
marks a model to take the second way even where the first could run, so the benchmark can time our
sampler on transformers' forward with the very calls it times on ours: pass it wherever a target or a
drafter model goes. It is a view, not a copy: every attribute is the wrapped model's, and nothing in
the model changes (a cached model stays read-only).
"""
from transformers import PreTrainedModel

FORWARDS = ("core", "transformers")  # the lean GPT-2 pass where the model allows it; the model's own forward
ALL_FORWARDS = (*FORWARDS, "exact")  # CachedLM's: also the Python reference pass, transformers' bits


class TransformersForward:
    """`model`, run through its own transformers forward by every pass made of it (`pass_choice.model_pass`)."""

    def __init__(self, model: PreTrainedModel):
        self.model = model

    def __getattr__(self, name: str):  # config, parameters(), get_output_embeddings(), ...: the model's
        return getattr(self.model, name)


def check_forward(forward: str, allowed: tuple[str, ...] = FORWARDS) -> str:
    """`forward` if it names one of `allowed`, else ValueError."""
    if forward not in allowed:
        raise ValueError(f"forward must be one of {allowed}, got {forward!r}")
    return forward


def with_forward(model: PreTrainedModel, forward: str):
    """`model` for the forward named "core" (as it is) or "transformers" (`TransformersForward`)."""
    return model if check_forward(forward) == "core" else TransformersForward(model)
