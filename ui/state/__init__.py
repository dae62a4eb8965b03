"""Settings and per-user state: the app's defaults, the validated settings, the classroom rules they are checked
against, the sidebar that edits them and keeps the URL in step. Imports only ui/content from the rest of ui.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
