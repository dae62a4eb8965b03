"""Tools around the core: the command line (cli), the benchmark (bench) and the training of the
bundled pair (train). Run them as `specdec generate|bench|train` or `python -m specdec_core ...`.
"""
