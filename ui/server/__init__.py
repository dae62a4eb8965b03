"""Server plumbing: admission (the generation queue), the cached model pair and cached model work (Home's
headline, the class demos), the press-measure-store helper (demo), the operator's rules read from the
environment, the server's cost profile, launch. May use ui/state and ui/content, never ui/widgets or ui/sections.

Nothing is imported here, so importing one module does not pull in the others (or Streamlit)."""
