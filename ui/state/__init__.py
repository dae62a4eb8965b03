"""Per-user state: the validated settings, the sidebar that edits them and keeps the URL in step, stored demo results.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
