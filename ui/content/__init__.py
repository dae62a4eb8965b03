"""What the app teaches with, as words and data: the chapter list, the quiz bank, reading lists, the paper's and
peers' figures. Runs no model and imports nothing else from ui.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
