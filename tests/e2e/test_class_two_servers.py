"""One room, two server processes, one class database: the teacher runs the class in a browser on
server A; the phones (the phone page's calls, tests/classroom/phone_client.py) and the projector (a
browser) are on server B. Both see the same room: the votes, the reveal, the right answer the teacher
chose to show. Then B restarts, and the phones and the projector find all of it again."""
import re

import pytest

from classroom.tools import serve
from tests.classroom.phone_client import Phone
from tests.e2e.test_browser import SCRIPT_TIMEOUT_MS, pytestmark

__all__ = ["pytestmark"]
SEEN_S = 20  # a phone's or the projector's poll is 1.5 s; a loaded machine may take a few


def started(tmp, name: str, url: str) -> serve.Server:
    return serve.Server(tmp / f"{name}.log", env={"SPECDEC_CLASS_DB": url})


def healthy(server: serve.Server) -> serve.Server:
    try:
        return server.wait_healthy()
    except serve.ServerDidNotStart as err:
        server.stop()
        pytest.fail(str(err))


def until(check, what: str, seconds: float = SEEN_S):
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s")


def test_teacher_on_one_server_phones_and_projector_on_another_and_a_restart(tmp_path, browser):
    url = f"sqlite:///{tmp_path / 'class.sqlite3'}"
    a, b = started(tmp_path, "a", url), started(tmp_path, "b", url)  # both start at once
    servers = [healthy(a), healthy(b)]
    teacher_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        teacher = teacher_ctx.new_page()
        teacher.goto(f"{a.url}/class", wait_until="domcontentloaded")
        teacher.locator(".st-key-cm_start button").click(timeout=SCRIPT_TIMEOUT_MS)
        teacher.wait_for_selector(".cm-code", timeout=SCRIPT_TIMEOUT_MS)
        code = re.sub(r"\s", "", teacher.locator(".cm-code").inner_text())
        teacher.locator(".st-key-cm_open button").click(timeout=SCRIPT_TIMEOUT_MS)
        teacher.wait_for_selector(".st-key-cm_close", timeout=SCRIPT_TIMEOUT_MS)

        phones = [Phone(b.url, code) for _ in range(2)]
        for phone in phones:
            assert phone.join().json()["joined"]
        question = until(lambda: phones[0].state(fresh=True).json()["question"], "the open vote on B")
        for phone, option in zip(phones, (0, 1)):
            assert phone.vote(question["id"], option).json()["mine"] == option
        answers = '[data-testid="stMetric"]:has-text("Answers in this vote") [data-testid="stMetricValue"]'
        until(lambda: teacher.locator(answers).first.inner_text() == "2", "B's votes on A's count")

        teacher.locator(".st-key-cm_reveal button").click()  # "Close and reveal", on A
        teacher.locator(".st-key-cm_show_answer button").click(timeout=SCRIPT_TIMEOUT_MS)
        teacher.wait_for_selector(".st-key-cm_show_answer", state="detached", timeout=SCRIPT_TIMEOUT_MS)
        results = until(lambda: phones[0].state().status == 200 and phones[0].state(fresh=True).json()["results"],
                        "A's reveal on B's phones")
        until(lambda: phones[0].state(fresh=True).json()["results"]["right"] is not None, "the shown answer on B")
        right = phones[0].state(fresh=True).json()["results"]["right"]
        assert results["rounds"][0]["counts"][:2] == [1, 1]

        projector_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
        projector = projector_ctx.new_page()
        projector.goto(f"{b.url}/class?code={code}&view=projector", wait_until="domcontentloaded")
        projector.get_by_text(f"Right answer: {'ABCD'[right]}").wait_for(timeout=SCRIPT_TIMEOUT_MS)

        b.stop()  # B restarts; A and the database go on
        servers.remove(b)
        b = healthy(started(tmp_path, "b2", url))
        servers.append(b)
        for phone, option in zip(phones, (0, 1)):
            phone.base = b.url  # the same device (its cookie), the server back on another port
            state = phone.state(fresh=True).json()
            assert state["joined"] and state["mine"] == option
            assert state["results"]["right"] == right and state["results"]["rounds"][0]["counts"][:2] == [1, 1]
        projector.goto(f"{b.url}/class?code={code}&view=projector", wait_until="domcontentloaded")
        projector.get_by_text(f"Right answer: {'ABCD'[right]}").wait_for(timeout=SCRIPT_TIMEOUT_MS)
        projector_ctx.close()
    finally:
        teacher_ctx.close()
        for server in servers:
            server.stop()
