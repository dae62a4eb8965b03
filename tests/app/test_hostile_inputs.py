"""A classroom server takes anything: odd and hostile prompts, edited links, unavailable or broken
models, thirty students at once. Each case ends in a friendly message in the page (never a
traceback), and nothing a student types can name a file. Also: the operator's classroom rules, and the
admission gate that queues generations (ui/server/admission.py). Bundled pair, few tokens."""
import math
import shutil
import threading
import time
import tomllib
from pathlib import Path

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.testing.v1 import AppTest

from specdec_core import pairs
from specdec_core.pairs import ASSETS, PAIRS, PairSpec
from ui.server import admission, models, operator
from ui.server.admission import Gate
from ui.state import settings
from ui.state.rules import CUSTOM, ClassroomRules, NotAllowed, check_custom_pair, is_hub_id, looks_like_path_or_url, rules_from

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120  # how long a thread may take to get somewhere: generous, so a busy machine only makes it slower
APP = str(ROOT / "app.py")
SCRIPT = "<script>alert('x')</script><img src=x onerror=alert(1)> & <b>bold</b>"


def app(page: str | None = None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params = {k: str(v) for k, v in query.items()}
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def texts(at, kind: str) -> str:
    return " ".join(e.value for e in getattr(at, kind))


def decode(at) -> AppTest:
    """Serial Tax: slow motion off, press Decode."""
    at.toggle(key="st_slow").set_value(False).run()
    at.button(key="st_run").click().run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def fresh_models():
    """Forget loaded pairs and failures before and after (the test changes what loading finds)."""
    models.forget_pairs()
    yield
    models.forget_pairs()


# --- edited links -------------------------------------------------------------------------------------

@pytest.mark.parametrize("query, field, expected, needle", [
    ({"gamma": "0"}, "gamma", 1, "γ 0 is outside 1–16"),
    ({"gamma": "1000000"}, "gamma", 16, "γ 1000000 is outside 1–16"),
    ({"temp": "-1"}, "temperature", 0.0, "temperature -1 is outside"),
    ({"temp": "NaN"}, "temperature", 1.0, "temperature `NaN` is not a finite number"),
    ({"temp": "inf"}, "temperature", 1.0, "temperature `inf` is not a finite number"),
    ({"top_p": "0"}, "top_p", 0.01, "top-p 0 is outside"),
    ({"max_new": "1000000000"}, "max_new_tokens", 200, "max new tokens 1000000000 is outside"),
    ({"seed": "-1"}, "seed", 0, "seed -1 is outside"),
    ({"seed": str(2**80)}, "seed", 2**31 - 1, f"seed {2**80} is outside"),
    ({"seed": "9" * 5000}, "seed", 0, "is not a whole number"),
    ({"top_k": "abc"}, "top_k", 0, "top-k `abc` is not a whole number"),
    ({"max_new": "0"}, "max_new_tokens", 1, "max new tokens 0 is outside"),
    ({"pair": "no-such-pair"}, "pair", "shakespeare", "unknown model pair `no-such-pair`"),
    ({"pair": "/etc/passwd"}, "pair", "shakespeare", "looks like a file path or a web address"),
    ({"pair": "../../assets/models/shakespeare-target"}, "pair", "shakespeare", "looks like a file path"),
    ({"pair": "C:\\Windows\\system32"}, "pair", "shakespeare", "looks like a file path"),
    ({"pair": "https://evil.example/model"}, "pair", "shakespeare", "looks like a file path or a web address"),
    ({"pair": "file:///etc/passwd"}, "pair", "shakespeare", "looks like a file path or a web address"),
    ({"pair": "custom", "target": "/etc", "draft": "gpt2"}, "pair", "shakespeare", "custom pairs are switched off"),
], ids=lambda v: str(v)[:40] if not isinstance(v, dict) else "&".join(f"{k}={str(x)[:25]}" for k, x in v.items()))
def test_hostile_query_parameters_are_clamped_with_a_message(query, field, expected, needle):
    at = app(**query)
    value = getattr(at.session_state["settings"], field)
    assert value == expected and (not isinstance(value, float) or math.isfinite(value))
    warnings = texts(at, "warning")
    assert needle in warnings, warnings
    assert at.query_params["pair"] == "shakespeare"  # the URL is rewritten to what runs


def test_a_link_cannot_smuggle_markdown_into_a_message():
    at = app(pair="`[click](https://evil.example)`", gamma="`[x](https://evil.example)`")
    warnings = texts(at, "warning")
    assert "`?[click](https://evil.example)?`" in warnings  # inside a code span: shown, not a link
    assert "`?[x](https://evil.ex`…" in warnings


def test_untrusted_text_in_messages_cannot_leave_its_code_span():
    quoted = settings.shown("`[click](https://evil.example)` \x00 <b>")
    assert quoted.count("`") == 2 and "\x00" not in quoted


def test_every_hostile_link_at_once_still_decodes():
    at = app(gamma="1e6", temp="-1", top_p="0", max_new="1e9", seed=str(2**80), pair="https://evil.example/x",
             prompt="\x00ROMEO:\x07")
    assert texts(at, "warning").count("The link") == 7  # pair, prompt, γ, temperature, top-p, seed, max new
    at.switch_page("chapters/serial_tax.py").run()
    decode(at)
    assert any("tok-target" in h.value for h in at.html)


# --- odd prompts ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt, needle", [
    ("", "prompt is empty"),
    ("   \n\t  ", "prompt is empty"),
    ("\x00\x00", "prompt is empty"),  # control characters only: removed, then empty
    ("ROMEO: " * 200, "context window"),  # with 200 new tokens, more than the pair's window holds
])
def test_unusable_prompts_get_a_message_on_generating_pages(prompt, needle):
    at = app(max_new=200)
    at.text_area(key="s_prompt").set_value(prompt).run()
    for page in ("chapters/home.py", "chapters/serial_tax.py", "chapters/round_by_round.py", "chapters/race.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        assert needle in texts(at, "warning"), page


def test_hundred_thousand_character_prompt_from_the_widget():
    """The text area's max_chars is enforced by the browser and again by Streamlit on the server."""
    at = app("chapters/serial_tax.py")
    at.text_area(key="s_prompt").set_value("ROMEO: " + "x y " * 25_000).run()
    assert not at.exception
    assert len(at.session_state["settings"].prompt) == settings.MAX_PROMPT_CHARS
    assert "context window" in texts(at, "warning")  # 1000 characters are more tokens than the pair holds
    assert not any("tok-target" in h.value for h in at.html)  # nothing was generated from it


def test_hundred_thousand_character_prompt_from_a_link():
    at = app(prompt="HAMLET: " + "ab " * 33_331)
    assert "The link's prompt was 100,001 characters long; only the first 1,000 are kept" in texts(at, "warning")
    assert len(at.session_state["settings"].prompt) == settings.MAX_PROMPT_CHARS
    at.switch_page("chapters/round_by_round.py").run()
    assert not at.exception and "context window" in texts(at, "warning")


@pytest.mark.parametrize("prompt", [
    "ROMEO: 🦜🔥 thou art 👩‍👩‍👧 a 🇬🇧 flag",  # emoji, a ZWJ family, a flag: multi-byte tokens
    "مرحبا بالعالم ROMEO: שלום עולם",  # right to left, mixed with left to right
    "ROMEO:\u202e evil override\u202c \u200f and a zero-width joiner\u200d",  # bidi controls (format chars, kept)
], ids=["emoji", "rtl", "bidi"])
def test_unicode_prompts_decode_and_render(prompt):
    at = app(max_new=8, temp=0)
    at.text_area(key="s_prompt").set_value(prompt).run()
    at.switch_page("chapters/serial_tax.py").run()
    decode(at)
    assert at.session_state["settings"].prompt == prompt  # nothing lost
    assert at.session_state["st_result"]["tokens"]
    chips_html = " ".join(h.value for h in at.html)
    assert 'dir="auto"' in chips_html and "unicode-bidi:isolate" in chips_html
    # Nothing was said about the prompt (a note that the machine was busy while it timed is about the machine).
    assert not [w.value for w in at.warning if "machine was busy" not in w.value]


def test_control_characters_and_nul_are_removed_with_a_message():
    at = app(max_new=6)
    at.text_area(key="s_prompt").set_value("ROMEO:\x00 But\x1b[31m soft\x07\r\nJULIET:").run()
    assert not at.exception
    s = at.session_state["settings"]
    assert s.prompt == "ROMEO: But[31m soft\nJULIET:"
    assert "3 control characters (such as NUL)" in texts(at, "warning")
    at.switch_page("chapters/serial_tax.py").run()
    decode(at)
    assert all("\x00" not in h.value for h in at.html)


@pytest.mark.parametrize("page", ["chapters/serial_tax.py", "chapters/round_by_round.py", "chapters/race.py",
                                  "chapters/identical_outputs.py", "chapters/impact.py"])
def test_html_in_the_prompt_is_shown_as_text(page):
    at = app(page, prompt=SCRIPT, max_new=6, temp=0)
    bodies = " ".join(h.value for h in at.html)
    # (the lab shows only the prompt's first tokens: the rest of the markup may be cut off there)
    assert "&lt;script&gt;" + ("" if page == "chapters/identical_outputs.py" else "alert(&#x27;x&#x27;)&lt;/script&gt;") in bodies
    assert "&lt;img src=x onerror=alert(1)&gt;" in bodies or page == "chapters/identical_outputs.py"
    assert "<script" not in bodies and "<img" not in bodies and "<b>" not in bodies


# --- models that cannot be had --------------------------------------------------------------------------

def test_hub_pair_without_network_gives_a_message(monkeypatch, fresh_models):
    real = pairs.from_pretrained

    def offline(ref, device, local_files_only):  # as if the hub models were never downloaded here
        if not Path(ref).is_dir():
            raise OSError(f"{ref} is not in the local cache")
        return real(ref, device, local_files_only)

    monkeypatch.setattr(pairs, "hub_reachable", lambda *a, **k: False)
    monkeypatch.setattr(pairs, "from_pretrained", offline)
    at = app()
    at.selectbox(key="s_pair").set_value("gpt2").run()
    assert not at.exception
    assert "cannot be reached" in texts(at, "error")
    assert "No live figure" in texts(at, "warning")
    at.switch_page("chapters/race.py").run()
    assert not at.exception
    assert "cannot be loaded" in texts(at, "error") and "shakespeare" in texts(at, "info")


def test_corrupt_bundled_weights_give_a_message(tmp_path, monkeypatch, fresh_models):
    for name in ("shakespeare-target", "shakespeare-draft", "shakespeare-draft-ce"):
        shutil.copytree(ASSETS / name, tmp_path / name)
    (tmp_path / "shakespeare-target" / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    spec = PAIRS["shakespeare"]
    monkeypatch.setitem(PAIRS, "shakespeare", PairSpec(
        str(tmp_path / "shakespeare-draft"), str(tmp_path / "shakespeare-target"), spec.description,
        ((spec.extra_drafts[0][0], str(tmp_path / "shakespeare-draft-ce")),), bundled=True,
        draft_label=spec.draft_label))
    at = app()
    assert "corrupt or unreadable" in texts(at, "error")
    for page in ("chapters/serial_tax.py", "chapters/identical_outputs.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        assert "corrupt or unreadable" in texts(at, "error")


def test_server_paths_are_not_shown_to_students():
    assert models._public(f"missing: {ROOT}/assets/models/x/config.json") == "missing: assets/models/x/config.json"


def test_a_broken_loader_gives_a_sentence_not_a_traceback(monkeypatch, fresh_models):
    def explode(*args, **kwargs):
        raise RuntimeError("CUDA error: something deep inside torch")

    monkeypatch.setattr(models, "load_pair", explode)
    at = app("chapters/round_by_round.py")
    assert "could not be loaded here (RuntimeError)" in texts(at, "error")
    assert "deep inside torch" not in texts(at, "error")


# --- the operator's classroom rules ----------------------------------------------------------------------------

def test_classroom_rules_defaults_are_safe():
    p = rules_from({}, cpu_count=8, torch_threads=2)
    assert p.pairs == tuple(PAIRS) and p.default_pair == "shakespeare"
    assert not p.allow_custom and p.custom_allowlist == () and CUSTOM not in p.choices
    assert p.max_concurrent == 4 and p.max_new_tokens == settings.MAX_NEW_CAP and not p.problems


def test_classroom_rules_parse_and_report_what_they_ignore():
    p = rules_from({"SPECDEC_PAIRS": "gpt2, shakespeare, nope", "SPECDEC_ALLOW_CUSTOM": "yes",
                     "SPECDEC_CUSTOM_ALLOWLIST": ["org/model-a", "/etc/passwd", "../x", "https://h/x", "C:\\m", "gpt2"],
                     "SPECDEC_MAX_CONCURRENT": "3", "SPECDEC_MAX_NEW_TOKENS": "64", "SPECDEC_MAX_LAB_SAMPLES": "1e9",
                     "SPECDEC_MAX_ROUNDS": "lots"})
    assert p.pairs == ("gpt2", "shakespeare") and p.default_pair == "gpt2"
    assert p.custom_enabled and p.custom_allowlist == ("org/model-a", "gpt2") and p.choices[-1] == CUSTOM
    assert (p.max_concurrent, p.max_new_tokens, p.max_lab_samples, p.max_rounds) == (3, 64, 20_000, 200)
    assert len(p.problems) == 7  # nope, four non-hub ids, the lab bound, the rounds
    assert rules_from({"SPECDEC_PAIRS": "nope"}).pairs == tuple(PAIRS)
    assert not rules_from({"SPECDEC_ALLOW_CUSTOM": "1"}).custom_enabled  # on, but nothing allowed


@pytest.mark.parametrize("text, hub", [("gpt2", True), ("org/model-a", True), ("distilbert/distilgpt2", True),
                                       ("/etc/passwd", False), ("../model", False), ("org/../x", False),
                                       ("a/b/c", False), ("~/models", False), ("C:\\models", False),
                                       ("https://huggingface.co/gpt2", False), ("file:///x", False), ("", False),
                                       (".hidden", False), ("org/model%2f..", False), ("a" * 200, False)])
def test_hub_ids_and_paths(text, hub):
    assert is_hub_id(text) == hub
    if not hub and text:
        assert looks_like_path_or_url(text) or not is_hub_id(text)


def test_custom_pairs_only_from_the_allow_list(tmp_path):
    on = ClassroomRules(allow_custom=True, custom_allowlist=("org/a", "org/b"))
    check_custom_pair("org/a", "org/b", on, root=tmp_path)
    for target, draft, needle in [("org/a", "org/c", "not on this server's list"),
                                  ("/etc", "org/b", "not a path"), ("org/a", "", "needs a draft")]:
        with pytest.raises(NotAllowed, match=needle):
            check_custom_pair(target, draft, on, root=tmp_path)
    with pytest.raises(NotAllowed, match="switched off"):
        check_custom_pair("org/a", "org/b", ClassroomRules(), root=tmp_path)
    (tmp_path / "org" / "a").mkdir(parents=True)  # a hub id that is also a local directory: refused
    with pytest.raises(NotAllowed, match="local path"):
        check_custom_pair("org/a", "org/b", on, root=tmp_path)


def test_environment_wins_over_secrets(monkeypatch):
    monkeypatch.setattr(operator, "_secrets", lambda: {"SPECDEC_PAIRS": "gpt2", "SPECDEC_MAX_NEW_TOKENS": 50})
    monkeypatch.setenv("SPECDEC_MAX_NEW_TOKENS", "70")
    p = operator.rules()
    assert p.pairs == ("gpt2",) and p.max_new_tokens == 70


def test_operator_limits_the_pairs_students_see(monkeypatch):
    monkeypatch.setenv("SPECDEC_PAIRS", "shakespeare")
    monkeypatch.setenv("SPECDEC_MAX_NEW_TOKENS", "24")
    at = app(pair="gpt2", max_new=100)
    assert at.selectbox(key="s_pair").options == ["shakespeare — " + PAIRS["shakespeare"].description]
    warnings = texts(at, "warning")
    assert "`gpt2` is not offered on this server" in warnings and "max new tokens 100 is outside 1–24" in warnings
    assert at.session_state["settings"].max_new_tokens == 24 and at.number_input(key="s_max_new").max == 24


def test_custom_pair_menus_offer_only_the_allow_list(monkeypatch, fresh_models):
    monkeypatch.setenv("SPECDEC_ALLOW_CUSTOM", "1")
    monkeypatch.setenv("SPECDEC_CUSTOM_ALLOWLIST", "org/model-a,org/model-b,/etc/passwd")
    monkeypatch.setattr(pairs, "hub_reachable", lambda *a, **k: False)
    at = app(pair="custom", target="org/model-a", draft="../../etc/passwd")
    assert "custom pair, but the custom draft must be a hub id" in texts(at, "warning")
    assert at.session_state["settings"].pair == "shakespeare"
    at.selectbox(key="s_pair").set_value(CUSTOM).run()
    assert not at.exception
    assert at.selectbox(key="s_target").options == ["org/model-a", "org/model-b"]
    assert at.selectbox(key="s_draft").options == ["org/model-a", "org/model-b"]
    assert "cannot be loaded" in texts(at, "error")  # no network here: a sentence, not a traceback
    assert at.query_params["pair"] == CUSTOM and at.query_params["target"] == "org/model-a"
    again = app(**at.query_params)  # the link reproduces the choice
    assert (again.session_state["settings"].pair, again.session_state["settings"].draft) == (CUSTOM, "org/model-b")


# --- shipped configuration ------------------------------------------------------------------------------

def test_shipped_config_hides_tracebacks_and_keeps_xsrf_and_cors():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"
    assert config.get("server", {}).get("enableXsrfProtection", True) is True
    assert config.get("server", {}).get("enableCORS", True) is True
    assert not (ROOT / ".streamlit" / "secrets.toml").exists() or "secrets.toml" in (ROOT / ".gitignore").read_text()


# --- admission control ----------------------------------------------------------------------------------

def test_gate_is_first_come_first_served_and_bounded():
    g = Gate(2)
    a, b, c, d = (g.enter() for _ in range(4))
    assert g.try_acquire(a) and not g.try_acquire(c)  # c is not first in line
    assert g.try_acquire(b) and not g.try_acquire(c)  # first in line now, but both slots are taken
    assert (g.running, g.waiting, g.ahead(c), g.ahead(d)) == (2, 2, 0, 1)
    g.leave(c)  # c gave up (its tab was closed)
    assert g.ahead(d) == 0 and not g.try_acquire(d)
    g.release()
    assert g.try_acquire(d) and g.running == 2 and g.max_running == 2
    e = g.enter(weight=2)  # exclusive: waits for both slots
    g.release()
    assert not g.try_acquire(e)
    g.release()
    assert g.try_acquire(e) and g.running == 2


@pytest.fixture
def small_gate(monkeypatch):
    g = Gate(1)
    monkeypatch.setattr(admission, "gate", lambda: g)
    monkeypatch.setattr(admission, "POLL_S", 0.01)
    return g


def test_a_measurement_grows_only_while_no_classmate_needs_a_slot(small_gate):
    from ui.server import demo

    assert demo.repeats_cap(5, 15) == 15  # an idle server: a busy machine gets more repetitions
    ticket = small_gate.enter()
    assert small_gate.try_acquire(ticket) and demo.repeats_cap(5, 15) == 5  # somebody is generating
    waiting = small_gate.enter()
    small_gate.release()
    assert small_gate.waiting == 1 and demo.repeats_cap(5, 15) == 5  # somebody is waiting
    small_gate.leave(waiting)
    assert demo.repeats_cap(5, 15) == 15


def test_slot_is_freed_by_errors_and_is_reentrant(small_gate):
    with pytest.raises(ZeroDivisionError):
        with admission.slot():
            with admission.slot():  # nested: no second slot, no deadlock
                assert small_gate.running == 1
                raise ZeroDivisionError("an error inside the slot")
    assert small_gate.running == 0 and small_gate.waiting == 0


def test_a_stopped_run_leaves_the_queue_and_frees_its_slot(small_gate, monkeypatch):
    """Streamlit stops a run (tab closed, rerun) by raising at an interrupt point: while queued, the
    place in line is given up; while generating, the slot is given back."""
    stopped = set()  # names of the threads whose session asked to stop

    def checkpoint():
        if threading.current_thread().name in stopped:
            raise StopException()

    monkeypatch.setattr(admission, "checkpoint", checkpoint)
    holding, outcome = threading.Event(), {}

    def holder():
        try:
            with admission.slot():
                holding.set()
                while True:  # a long generation that checks in every round
                    admission.checkpoint()
                    time.sleep(0.01)
        except StopException:
            outcome["holder"] = "stopped"

    def waiter():
        try:
            with admission.slot():
                outcome["waiter"] = "ran"
        except StopException:
            outcome["waiter"] = "stopped while queued"

    holder_thread, waiter_thread = threading.Thread(target=holder), threading.Thread(target=waiter)
    holder_thread.start()
    assert holding.wait(WAIT_S)
    waiter_thread.start()
    deadline = time.monotonic() + WAIT_S
    while small_gate.waiting < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert small_gate.waiting == 1 and small_gate.running == 1
    stopped.add(waiter_thread.name)  # the queued student closes the tab
    waiter_thread.join(WAIT_S)
    assert outcome == {"waiter": "stopped while queued"} and small_gate.waiting == 0 and small_gate.running == 1
    stopped.add(holder_thread.name)  # the generating student changes a setting mid-generation
    holder_thread.join(WAIT_S)
    assert outcome["holder"] == "stopped"
    assert small_gate.running == 0 and small_gate.waiting == 0
    with admission.slot():  # and the next student gets in at once
        assert small_gate.running == 1


def test_queue_message_counts_who_is_ahead():
    assert "Queued — 3 ahead of you" in admission.queue_message(3, 2, 2, "your race")
    assert "Queued — you are next" in admission.queue_message(0, 1, 1, "your race")
    assert "Your race will start by itself" in admission.queue_message(0, 1, 1, "your race")


def test_a_page_waits_in_line_and_shows_its_place(monkeypatch):
    """All slots taken: the page's decoding waits (showing its place) and runs once one is freed."""
    g = admission.gate()
    shown = []
    real = admission.queue_message

    def queued(*a):  # the page shows its place: only then is the slot freed, however slow the machine
        if not shown:
            threading.Thread(target=g.release, kwargs={"weight": g.limit}).start()
        shown.append(a[:3])
        return real(*a)

    monkeypatch.setattr(admission, "queue_message", queued)
    at = app("chapters/serial_tax.py", max_new=5)
    at.toggle(key="st_slow").set_value(False).run()
    blocker = g.enter(weight=g.limit)
    assert g.try_acquire(blocker)
    at.button(key="st_run").click().run()
    assert not at.exception
    assert at.session_state["st_result"]["passes"] == 5
    assert shown and shown[0] == (0, g.limit, g.limit)  # next in line, every slot busy
    assert not any("Queued" in i.value for i in at.info)  # the message is gone once it ran
    assert g.running == 0 and g.waiting == 0


def test_greedy_requests_share_one_cached_result():
    """At temperature 0 the seed changes nothing, so a class sharing a prompt shares one computation."""
    assert settings.Settings(temperature=0, seed=7).effective_seed == 0
    assert settings.Settings(temperature=0.5, seed=7).effective_seed == 7
    g = admission.gate()
    app(temp=0, seed=11, max_new=5, prompt="KING:\nSo shaken as we are")
    before = g.admitted
    at = app(temp=0, seed=12, max_new=5, prompt="KING:\nSo shaken as we are")
    assert g.admitted == before  # the second student's live figure came from the cache: no slot taken
    assert any(m.label == "Same tokens as plain decoding" and m.value == "yes" for m in at.metric)


def test_cached_generations_skip_the_queue_when_already_computed(monkeypatch):
    g = Gate(1)
    monkeypatch.setattr(admission, "gate", lambda: g)
    calls = []

    @admission.cached(max_entries=8)
    def square(x: int, _ignored=None) -> int:
        calls.append(x)
        return x * x

    square.clear()
    assert square(3) == 9 and g.admitted == 1
    assert square(3, _ignored=object()) == 9 and g.admitted == 1  # a hit: no slot, no computation
    assert square(4) == 16 and g.admitted == 2 and calls == [3, 4]
