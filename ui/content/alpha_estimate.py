"""Why the app's measured α (the mean of min(1, p/q) over the drafts the target judged) tends to read above the paper's
α: the pages that show it give the same reason in the same words."""

# A draft at position i > 1 is judged only when drafts 1 … i − 1 were accepted, and runs of acceptances come
# in predictable text, so judged drafts over-sample easy stretches (the α Dial's chart by position shows it).
WHY_IT_LEANS_HIGH = "a later draft is judged only after the earlier ones passed, which happens more in easy stretches"
