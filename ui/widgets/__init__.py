"""Drawing pieces shared by pages: token chips, charts, the theme palette, tables, the round stepper, layout badges.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
