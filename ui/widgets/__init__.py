"""Drawing pieces shared by pages: token chips, charts, the theme palette, tables, the round stepper, layout badges.
They draw what they are given: no model runs, and nothing from ui/server or ui/sections.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
