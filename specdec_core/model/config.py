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


def hidden_layers(hidden, n_layer: int) -> tuple[int, ...]:
    """Which hidden states a pass hands back for its `hidden` argument: none for False, the final one for
    True, else the ones named, numbered as transformers' hidden_states are (0 the embeddings, i the
    residual stream after block i, n_layer the final state after the last norm), side by side in the
    order named (a feature of len(layers) * E per token)."""
    if hidden is True:
        return (n_layer,)
    if not hidden:
        return ()
    layers = tuple(hidden)
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= n_layer for i in layers):
        raise ValueError(f"hidden states are numbered 0..{n_layer} in this model, got {hidden!r}")
    return layers
