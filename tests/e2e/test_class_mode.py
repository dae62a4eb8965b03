"""Class mode in real browsers: a teacher at projector size (1280×720), two students on phone-sized
screens (390×844) and the room's projector view, all on one server with a class store of its own.

Students open the link the teacher's page shows (the phone page, classroom/web), join, vote; a reload is
the same student; the teacher sees the count rise without reloading, closes, reveals; a second vote;
both rounds side by side, on the teacher's screen and on the phones, the phone's own vote marked with
◆ and the right answer with ✓. The teacher key never reaches the projector's page or URL; no page
shows an exception; axe-core finds nothing serious on any of the three views. Screenshots go to $SPECDEC_SCREENSHOTS (default tmp/screenshots/) as class-*.png, and the
latencies measured on the way (a student's page seeing the teacher's move, the teacher's count seeing
a vote) to class-latency.json beside them (docs/class_mode.md quotes a run).
"""
import json
import re
import time

import accessibility
import pytest

from classroom.tools import serve
from tests.e2e.test_browser import SCRIPT_TIMEOUT_MS, SHOTS, assert_no_exception, pytestmark

__all__ = ["pytestmark"]  # skipped, like the other browser tests, where no Chromium is found
TEACHER = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
SEEN_WITHIN_MS = 15_000  # a phone and the projector poll every 1.5 s; a loaded machine may take a few polls
OPTION = "button[data-option]"  # the phone page's answer buttons (classroom/web/static/phone.js)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("class")
    env = {"SPECDEC_CLASS_DB": f"sqlite:///{tmp / 'class.sqlite3'}"}
    try:
        with serve.Server(tmp / "server.log", env=env) as s:
            yield s.url
    except serve.ServerDidNotStart as err:
        pytest.fail(str(err))




def idle(page, after_action: bool = False) -> None:
    serve.wait_idle(page, SCRIPT_TIMEOUT_MS, after_action)


def press(page, key: str) -> None:
    """Click the button with this widget key (it must be there; Playwright waits until it can be clicked)."""
    page.locator(f".st-key-{key} button").first.click()


def metric(page, label: str) -> str:
    return page.locator(f'[data-testid="stMetric"]:has-text("{label}") [data-testid="stMetricValue"]').first.inner_text()


def seen(page, check, what: str) -> float:
    """Seconds until `check()` holds on `page` without any reload (it polls the store)."""
    start = time.monotonic()
    deadline = start + SEEN_WITHIN_MS / 1000
    while time.monotonic() < deadline:
        try:
            if check():
                return time.monotonic() - start
        except Exception:  # an element between two draws
            pass
        page.wait_for_timeout(100)
    raise AssertionError(f"{what}: not seen within {SEEN_WITHIN_MS / 1000:.0f} s")


def seen_by_all(pages, check, what: str) -> list[float]:
    """Seconds until `check(page)` holds on each page, all watched at once (no reloads)."""
    start = time.monotonic()
    times: dict[int, float] = {}
    while len(times) < len(pages) and time.monotonic() - start < SEEN_WITHIN_MS / 1000:
        for i, page in enumerate(pages):
            if i not in times:
                try:
                    if check(page):
                        times[i] = time.monotonic() - start
                except Exception:  # an element between two draws
                    pass
        pages[0].wait_for_timeout(50)
    assert len(times) == len(pages), f"{what}: seen on {len(times)} of {len(pages)} pages within {SEEN_WITHIN_MS} ms"
    return [times[i] for i in range(len(pages))]


def has_text(page, text: str):
    return lambda: page.get_by_text(text, exact=False).first.is_visible()


def axe(page, where: str) -> None:
    found = accessibility.axe_findings(page) + accessibility.low_contrast_chart_marks(page) + \
        accessibility.small_chart_text(page) + accessibility.low_contrast_chart_text(page)
    assert not found, f"{where}: " + "\n".join(map(str, found))


def axe_phone(page, where: str) -> None:
    """axe-core on the phone page (no plotly chart there: its counts are text beside each bar)."""
    found = accessibility.axe_findings(page)
    assert not found, f"{where}: " + "\n".join(map(str, found))


def shot(page, name: str, at: str | None = None) -> None:
    """A screenshot of what the viewport shows (with `at`: scrolled to that element)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    if at:
        page.locator(at).first.scroll_into_view_if_needed()
    page.wait_for_timeout(600)  # charts finish their transition
    page.screenshot(path=str(SHOTS / f"class-{name}.png"))


def test_a_class_of_two_phones_votes_twice_and_the_room_sees_both_votes(server, browser):
    latency: dict[str, list[float]] = {"student sees the vote open": [], "teacher's count shows a vote": [],
                                       "student sees the close": [], "student sees the reveal": [],
                                       "student sees the second vote": [], "student sees the next question": []}
    teacher_ctx = browser.new_context(viewport=TEACHER, accept_downloads=True)
    phones = [browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
              for _ in range(2)]
    projector_ctx = browser.new_context(viewport=TEACHER)
    try:
        teacher = teacher_ctx.new_page()
        teacher.goto(f"{server}/class", wait_until="domcontentloaded")
        teacher.wait_for_selector(".st-key-cm_start button", timeout=SCRIPT_TIMEOUT_MS)
        idle(teacher)
        axe(teacher, "teacher, before the class")
        press(teacher, "cm_start")
        teacher.wait_for_selector(".cm-code", timeout=SCRIPT_TIMEOUT_MS)
        idle(teacher, after_action=True)
        code = re.sub(r"\s", "", teacher.locator(".cm-code").inner_text())
        link = teacher.locator(".cm-join").inner_text()
        assert re.fullmatch(r"[A-Z2-9]{6}", code) and f"/phone?join={code}" in link
        join = re.search(r"https?://\S+", link).group(0)
        with teacher.expect_download() as download:
            press(teacher, "cm_key_download")
        key = json.loads(open(download.value.path()).read())["teacher_key"]
        assert key not in teacher.content() and key not in teacher.url  # the key file carries it, the page never
        shot(teacher, "teacher-1280-start")

        press(teacher, "cm_open")
        teacher.wait_for_selector(".st-key-cm_close button", timeout=SCRIPT_TIMEOUT_MS)
        idle(teacher, after_action=True)

        students = []
        for ctx in phones:
            page = ctx.new_page()
            page.goto(join, wait_until="domcontentloaded")  # the link as the QR code carries it
            page.locator("#join-button").wait_for(timeout=SCRIPT_TIMEOUT_MS)
            if not students:
                shot(page, "student-390-join")
                axe_phone(page, "student, joining")
            page.locator("#join-button").click()
            t0 = time.monotonic()
            page.wait_for_selector(OPTION, timeout=SCRIPT_TIMEOUT_MS)
            latency["student sees the vote open"].append(time.monotonic() - t0)
            students.append(page)
        first = students[0].locator(OPTION).first.get_attribute("data-question")  # the first question's id
        assert seen(teacher, lambda: metric(teacher, "Students joined") == "2", "two students joined")
        students[1].reload()  # a reload is the same student (the phone's cookie), not a new one
        students[1].wait_for_selector(OPTION, timeout=SCRIPT_TIMEOUT_MS)
        assert students[1].locator("#join-button").is_hidden()

        for i, (page, option) in enumerate(zip(students, ("B", "C")), start=1):
            page.locator(f'{OPTION}[data-option="{"ABCD".index(option)}"]').click()
            page.get_by_text(f"Your answer is in: {option}").wait_for(timeout=30_000)
            latency["teacher's count shows a vote"].append(
                seen(teacher, lambda i=i: metric(teacher, "Answers in this vote") == str(i), f"vote {i} counted"))
        students[0].locator(f'{OPTION}[data-option="2"]').click()  # changes B -> C
        students[0].get_by_text("Your answer is in: C").wait_for(timeout=30_000)
        chosen = students[0].locator(f'{OPTION}[aria-pressed="true"]')
        assert chosen.count() == 1 and "◆ your answer" in chosen.inner_text() and "✓" not in chosen.inner_text()
        teacher.wait_for_timeout(2000)
        assert metric(teacher, "Answers in this vote") == "2"  # a changed vote replaces, never adds
        assert metric(teacher, "Students joined") == "2"
        shot(students[0], "student-390")
        axe_phone(students[0], "student, voting")

        press(teacher, "cm_close")
        latency["student sees the close"] += seen_by_all(
            students, lambda p: p.get_by_text("The vote is closed").first.is_visible(), "the close")
        # The phones read the close from the store; the teacher's own rerun may still be drawing its buttons.
        teacher.wait_for_selector(".st-key-cm_reopen button", timeout=SCRIPT_TIMEOUT_MS)
        idle(teacher)
        press(teacher, "cm_reveal")
        teacher.wait_for_selector(".st-key-cm_teacher_hist .js-plotly-plot", timeout=60_000)
        latency["student sees the reveal"] += seen_by_all(
            students, lambda p: p.locator("#results .round").count() > 0, "the reveal")
        assert "✓" not in students[0].locator("#results").inner_text()  # the right answer waits for the teacher

        press(teacher, "cm_revote")
        latency["student sees the second vote"] += seen_by_all(
            students, lambda p: p.locator(f'{OPTION}[data-round="2"]').count() > 0, "the second vote")
        for page in students:
            page.locator(f'{OPTION}[data-round="2"][data-option="1"]').click()
            page.get_by_text("Your answer is in: B").wait_for(timeout=30_000)
        seen(teacher, lambda: metric(teacher, "Answers in this vote") == "2", "both second votes counted")
        press(teacher, "cm_reveal")
        teacher.wait_for_selector(".st-key-cm_teacher_hist .js-plotly-plot", timeout=60_000)
        idle(teacher, after_action=True)
        legend = teacher.locator(".st-key-cm_teacher_hist .legendtext").all_text_contents()
        assert any("First vote" in t for t in legend) and any("Second vote" in t for t in legend), legend
        assert_no_exception(teacher, "teacher, after both votes")
        shot(teacher, "teacher-1280-results", at=".st-key-cm_teacher_hist")
        axe(teacher, "teacher, after both votes")
        for page in students:
            seen(page, lambda page=page: page.locator("#results .round").count() >= 2, "both votes on the phone")
        assert "✓" in students[1].locator("#results").inner_text()  # after the second vote, the right answer
        assert "Right answer" in students[1].locator("#results").inner_text()
        shot(students[1], "student-390-results", at="#results")
        axe_phone(students[1], "student, results")

        projector = projector_ctx.new_page()
        projector.goto(f"{server}/class?code={code}&view=projector", wait_until="domcontentloaded")
        projector.wait_for_selector(".st-key-cm_projector_hist .js-plotly-plot", timeout=SCRIPT_TIMEOUT_MS)
        idle(projector)
        assert key not in projector.content() and key not in projector.url
        assert projector.locator('[data-testid="stMain"] button, [data-testid="stMain"] input').count() == 0
        assert projector.locator('[data-testid="stSidebar"]').is_hidden()
        assert_no_exception(projector, "projector")
        shot(projector, "projector-1280")
        axe(projector, "projector")

        press(teacher, "cm_next")  # the next question, its vote open at once
        latency["student sees the next question"] = seen_by_all(
            students, lambda p: p.locator(f'{OPTION}:not([data-question="{first}"])').count() > 0,
            "the next question")
        latency["projector sees the next question"] = seen_by_all(
            [projector], lambda p: p.get_by_text("Question 2 of").first.is_visible(), "the next question, projected")
        projector.wait_for_timeout(500)
    except BaseException:
        for n, ctx in enumerate((teacher_ctx, *phones, projector_ctx)):
            for page in ctx.pages:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / f"class-failed-{n}.png"))
        raise
    finally:
        for ctx in (teacher_ctx, *phones, projector_ctx):
            ctx.close()
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "class-latency.json").write_text(json.dumps(latency, indent=1))
    print(json.dumps({k: [round(v, 2) for v in vs] for k, vs in latency.items()}))
