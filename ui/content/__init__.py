"""What the app teaches with: the chapter list, the quiz bank, reading lists, the paper's figures, shared sections.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
