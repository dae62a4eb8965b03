"""What a generation is asked for, as one frozen, hashable object (transformers hands down one
GenerationConfig, gpt-fast one set of sampling kwargs): the prompt, how many new tokens, the sampling
transform, the seed and the end-of-text token. A page can cache on it; `speculative_generate`,
`tree_generate` and `autoregressive_generate` take it in place of the prompt, or the same values as
keywords for the simple call. An analysis that runs many prompts takes the prompts and one request as
their template (`for_prompt`), and a timed run makes every run the same length (`fixed_length`)."""
from dataclasses import dataclass, fields, replace

import torch

from .sampling_config import SamplingConfig


@dataclass(frozen=True)
class GenerationRequest:
    prompt_ids: tuple[int, ...] = ()  # the prompt's token ids (a list or a 1-D tensor is stored as a tuple); () in a template
    max_new_tokens: int = 40  # new tokens at most (fewer when eos comes first)
    sampling: SamplingConfig = SamplingConfig()  # the transform of p and q before drawing (GREEDY: argmax)
    seed: int | None = None  # the generation's own random generator; None: a fresh seed, reported in the result
    eos_token_id: int | str | None = "model"  # stop after this token; "model": the target's own; None: never

    def __post_init__(self):
        ids = self.prompt_ids
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"prompt_ids must be 1-D, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        object.__setattr__(self, "prompt_ids", tuple(ids))  # the values are checked where the target is known

    def fixed_length(self) -> "GenerationRequest":
        """This request with end-of-text stopping nothing, so that it makes exactly max_new_tokens tokens:
        what every timed run asks for, since runs compared (plain against speculative, one drafter against
        another) must make the same number of tokens for their times to compare."""
        return replace(self, eos_token_id=None)

    def for_prompt(self, prompt_ids, index: int = 0) -> "GenerationRequest":
        """This request as a template for the index-th of several prompts: that prompt, seeded with
        seed + index (a seed of None counts as 0), so that every contestant decodes prompt i from the
        same seed and a measurement over many prompts is reproducible."""
        return replace(self, prompt_ids=prompt_ids, seed=(self.seed or 0) + index)


DEFAULTS = {f.name: f.default for f in fields(GenerationRequest) if f.name != "prompt_ids"}


def as_request(prompt_ids, max_new_tokens: int = 40, sampling: SamplingConfig = SamplingConfig(),
               seed: int | None = None, eos_token_id: int | str | None = "model",
               seed_default: int | None = None) -> GenerationRequest:
    """The request a generate function was given: `prompt_ids` itself when it is a GenerationRequest
    (then the other values must be left at the function's defaults: the request carries them), else
    one made of the keywords. `seed_default` is the calling function's own default seed."""
    if not isinstance(prompt_ids, GenerationRequest):
        return GenerationRequest(prompt_ids, max_new_tokens, sampling, seed, eos_token_id)
    given = {"max_new_tokens": max_new_tokens, "sampling": sampling, "seed": seed, "eos_token_id": eos_token_id}
    defaults = {**DEFAULTS, "seed": seed_default}
    clash = [name for name, value in given.items() if value != defaults[name] or type(value) is not type(defaults[name])]
    if clash:
        raise ValueError(f"{', '.join(clash)} given beside a GenerationRequest: set them in the request")
    return prompt_ids
