"""The paper's own figures (Leviathan, Kalman & Matias 2022), in one place: shown on the α Dial and
beside this machine's measured figures in Home's Key Takeaways, always badged "from the paper"."""

SPEEDUP = "2–3×"  # T5-XXL (11B) on TPU-v4 against the T5X implementation, identical outputs (abstract)
# Leviathan et al. (2022), Table 1: (alpha, gamma, operations, speed), assuming c = c_hat = 0.
TABLE_1 = [(0.6, 2, 1.53, 1.96), (0.7, 3, 1.58, 2.53), (0.8, 2, 1.23, 2.44), (0.8, 5, 1.63, 3.69),
           (0.9, 2, 1.11, 2.71), (0.9, 10, 1.60, 6.86)]
# Leviathan et al. (2022), Table 2: T5-XXL (11B) target; (task, drafter, temperature, gamma, alpha, speed).
TABLE_2 = [("EnDe", "T5-small", 0, 7, 0.75, 3.4), ("EnDe", "T5-base", 0, 7, 0.80, 2.8),
           ("EnDe", "T5-large", 0, 7, 0.82, 1.7), ("EnDe", "T5-small", 1, 7, 0.62, 2.6),
           ("EnDe", "T5-base", 1, 5, 0.68, 2.4), ("EnDe", "T5-large", 1, 3, 0.71, 1.4),
           ("CNNDM", "T5-small", 0, 5, 0.65, 3.1), ("CNNDM", "T5-base", 0, 5, 0.73, 3.0),
           ("CNNDM", "T5-large", 0, 3, 0.74, 2.2), ("CNNDM", "T5-small", 1, 5, 0.53, 2.3),
           ("CNNDM", "T5-base", 1, 3, 0.55, 2.2), ("CNNDM", "T5-large", 1, 3, 0.56, 1.7)]
# The row Key Takeaways quotes: EnDe, T5-small drafter, greedy (the paper's best speedup).
HEADLINE_ROW = TABLE_2[0]
