"""Server plumbing: admission (the generation queue),
the operator's rules, the cached model pair, the server's cost profile, the test server.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
