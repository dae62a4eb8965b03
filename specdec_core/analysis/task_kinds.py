""""Hard tasks are easier" (Leviathan et al. 2022, section 4): within a hard task, the formulaic
stretches are easy to guess, so the drafter agrees more there. Measured here as alpha per kind of
text, by the core's one acceptance method (`acceptance.acceptance`: teacher-forced E[sum min(p, q)]
over every position), on three kinds of passage."""
from ..sampling_config import SamplingConfig
from .acceptance import acceptance
from .stats import Pacing

# Three kinds of passage, each a few lines of play-script English (any GPT-2 tokenizer reads them).
KINDS = {
    "formulaic": (
        "Enter KING and QUEEN, with Attendants.\n\nKING:\nWelcome, my lord.\n\nQUEEN:\nWelcome, my lord.\n\n"
        "Exeunt.\n\nEnter HAMLET.\n\nHAMLET:\nMy lord.\n\nExit.\n\nEnter HORATIO.\n\nHORATIO:\nMy lord.\n\n"
        "Exit.\n\nEnter MARCELLUS.\n\nMARCELLUS:\nMy lord.\n\nExeunt."),
    "self-repeating": (
        "HAMLET:\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
        "HAMLET:\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
        "HAMLET:\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"),
    "free verse": (  # Whitman, "Song of Myself" (1855): no metre, no rhyme, no refrain
        "I celebrate myself, and sing myself,\nAnd what I assume you shall assume,\nFor every atom belonging "
        "to me as good belongs to you.\nI loafe and invite my soul,\nI lean and loafe at my ease observing a "
        "spear of summer grass."),
}


def alpha_by_kind(target, draft, tokenizer, sampling: SamplingConfig = SamplingConfig(), kinds=None,
                  context_length: int | None = None, *, pacing: Pacing = Pacing()) -> dict[str, dict]:
    """{kind: acceptance.acceptance(...)} for each passage of `kinds` (default KINDS), cut to the models'
    context; the pacing's slot is taken around each measurement (a page's generation slot)."""
    out = {}
    for kind, text in (kinds or KINDS).items():
        ids = tokenizer.encode(text)
        if context_length is not None:
            ids = ids[:context_length]
        with pacing.slot():
            out[kind] = acceptance(target, draft, [ids], sampling)
    return out
