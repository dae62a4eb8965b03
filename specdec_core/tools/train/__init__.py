"""Training of the bundled Shakespeare draft/target pair (see `python -m specdec_core.tools.train --help`)."""
