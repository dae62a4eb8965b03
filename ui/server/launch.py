"""Start the app the way `streamlit run app.py` does, after importing the heavy libraries once.

    .venv/bin/python -m ui.server.launch [streamlit options, e.g. --server.port 8501]

A Streamlit server imports a page's modules on its first script run, so without this the first
visitor of a fresh server waits for torch, transformers' GPT-2 code, pandas and plotly (several
seconds on a 2-core machine). Imported here, before the server starts, they are already in
`sys.modules` when that first run asks for them. `make run` and the browser tests start the app this way.
"""
import importlib
import pkgutil
import sys


def preload() -> None:
    """Import what every page needs, so a fresh server's first visit does not pay for it: torch, pandas,
    plotly, the core with transformers' GPT-2 code, and every analysis module the chapters draw from."""
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    import torch  # noqa: F401

    import specdec_core.analysis
    import specdec_core.drafters  # noqa: F401  (pulls in transformers' GPT-2 modeling code)
    import specdec_core.pairs  # noqa: F401

    for module in pkgutil.iter_modules(specdec_core.analysis.__path__):
        importlib.import_module(f"specdec_core.analysis.{module.name}")


def main(argv: list[str] | None = None) -> None:
    """Preload, then hand over to Streamlit's own command line: `streamlit run app.py ARGV`."""
    preload()
    from streamlit.web import cli

    cli.main(["run", "app.py", *(sys.argv[1:] if argv is None else argv)], prog_name="streamlit")


if __name__ == "__main__":
    main()
