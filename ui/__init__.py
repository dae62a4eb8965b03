"""Shared pieces of the app's pages (the logic lives in specdec_core), one folder per job. Imports go one way
only, top to bottom (tests/app/test_ui_layers.py checks it):

    chapters/ -> ui/sections -> ui/widgets, ui/server -> ui/state -> ui/content

    ui/frame.py     the frame app.py draws around every page (page config, navigation, sidebar, next link)
    ui/sections/    a chapter's folded "Go deeper" parts that run the core and draw; one entry point, show(...)
    ui/widgets/     drawing only, runs no model: token chips, charts, palette, tables, the round stepper,
                    the token tree, layout (and the hidden run marker the browser tests wait on)
    ui/server/      admission (the generation queue), the cached model pair and cached model work (Home's
                    headline, the class demos), the press-measure-store helper (demo), the operator's rules
                    read from the environment (operator), the server's cost profile, launch
    ui/state/       settings and session state: the app's defaults, validated settings, the classroom rules
                    they are checked against, the sidebar that edits them (and the URL)
    ui/content/     words and data only: the chapter list, the quiz bank, reading, the paper's and peers' figures
ui/widgets and ui/server, side by side, never import each other; test machinery (the test server) lives in tests/.

A page (in chapters/) typically calls:
    settings.current()                 the validated sidebar settings (a Settings; .sampling, .signature());
                                       ui/state/settings.py is plain Python, ui/state/sidebar.py draws it and syncs the URL;
                                       ui/state/defaults.py holds the app's default prompt, γ and temperature
    models.require_pair()              the loaded ModelPair, or a friendly error and st.stop()
    models.require_prompt_ids(pair)    the prompt's token ids, or a friendly message and st.stop()
    models.prompt_problem(pair, s)     the same check without stopping: (ids, message or None)
    models.pair_key(pair)              a cache key that changes when the models are retrained
    admission.slot("what")             context manager around any button-triggered model work: waits
                                       in the server's queue (visible "Queued — N ahead") for a slot
    admission.cached(max_entries=N)    decorator instead of @st.cache_data for cached generations
    admission.on_round / on_token      core callbacks that let Streamlit stop a long run (tab closed)
    admission.Throttle()               ~10 redraws a second for live progress drawn inside a slot
    operator.rules()                   the operator's classroom rules (pairs offered, bounds on one request)
    chips.chip / chips.chips / chips.provenance_html / chips.show / chips.show_legend / chips.KINDS
    measure.cost_profile / measure.draft_costs   c and v(γ) of this machine, from short runs' own passes
    measure.pass_sweep                 one pass over k positions (behind a button)
    demo.run / demo.latest / demo.spread_note   press → measure → store (per session, or
                                       shared=True per server) → stale note; a figure's spread
    demo.measuring / demo.keep         a measurement's progress bar and its one Pacing; store the result
    admission.pacing                   the core's Pacing: a generation slot per run, progress between runs
    tree_view.tree_figure              a verified round's token tree, drawn
    charts.prob_bars / charts.token_label / charts.labels_for / charts.log_ticks
    charts.P_COLOR, Q_COLOR, RESIDUAL_COLOR, MUTED, INK   colours of the viewer's theme, read on each use
    palette.color("accepted")          any colour by its role, for the viewer's light or dark theme;
                                       never a hex code in a page (tests/app/test_palette.py checks them)
    tables.show(rows, key=...)         a table with dashes for empty cells, and a scroll hint when wide
    layout.intro / layout.paper_badge / layout.measured_badge
    stepper                            (round, step) walk through a RoundTrace, for step-through widgets
Chapters are listed once, in chapters.CHAPTERS.
"""
# Nothing is imported here: `import ui.state.settings` (plain Python) must not pull in Streamlit.
