"""What a model's config and weights say about running it: its window, its vocabulary, and whether it
is a plain GPT-2 that the lean passes reproduce."""
from transformers import GPT2LMHeadModel, PreTrainedModel


def context_length(model: PreTrainedModel) -> int:
    """The model's maximum number of positions (prompt + generated tokens)."""
    cfg = model.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError(f"cannot tell the context length of {type(model).__name__}")


def vocab_size(model: PreTrainedModel) -> int:
    """Size of the model's output distribution."""
    return int(model.get_output_embeddings().weight.shape[0])


def lean_gpt2(model) -> bool:
    """Whether `model` is a plain GPT-2 that GPT2Pass reproduces op for op."""
    cfg = model.config
    return (type(model) is GPT2LMHeadModel and not model.training
            and getattr(cfg, "_attn_implementation", None) == "sdpa" and cfg.activation_function == "gelu_new"
            and not cfg.add_cross_attention and not cfg.scale_attn_by_inverse_layer_idx
            and not cfg.reorder_and_upcast_attn and model.lm_head.bias is None)
