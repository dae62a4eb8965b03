"""A byte-level BPE tokenizer trained on the corpus with the `tokenizers` library."""
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

EOS = "<|endoftext|>"


def train_tokenizer(texts: list[str], vocab_size: int = 4096) -> PreTrainedTokenizerFast:
    """Train byte-level BPE on `texts`; token 0 is <|endoftext|>, which ends every play."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    """A transformers tokenizer around a `tokenizers` object, with EOS as bos/eos/pad."""
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, pad_token=EOS)


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    """Load a saved tokenizer.json. (In transformers 5.x, GPT2TokenizerFast(vocab_file=, merges_file=)
    silently builds an EMPTY tokenizer; loading from the single tokenizer file is the safe way.)"""
    path = Path(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    return PreTrainedTokenizerFast(tokenizer_file=str(file), bos_token=EOS, eos_token=EOS, pad_token=EOS)
