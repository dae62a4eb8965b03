"""Folded 'go deeper' sections of the chapters, one module each; each chapter imports its own."""
