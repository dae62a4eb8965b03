"""The first visitor of a freshly started server is like every other: their first interaction counts,
at the root URL and on a chapter's deep link (a teacher's shared link). Each test starts its own server.

Before the chapters moved out of a folder named pages/, Streamlit served the first run of every
process in its legacy multipage mode, with other widget ids than later runs, and that first click
or sidebar change was lost."""
import re

from tests.e2e.test_browser import (
    SCRIPT_TIMEOUT_MS,
    VIEWPORT,
    assert_no_exception,
    click,
    pytestmark,
    streamlit_server,
    wait_idle,
)

__all__ = ["pytestmark"]  # skipped, like the other browser tests, where no Chromium is found




def _first_page(browser, url):
    context = browser.new_context(viewport=VIEWPORT)
    return context, context.new_page()


def test_first_sidebar_change_at_the_root_url_counts(browser, tmp_path):
    with streamlit_server(tmp_path / "server.log") as url:
        context, page = _first_page(browser, url)
        try:
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector('.st-key-s_gamma input[type="range"]', timeout=SCRIPT_TIMEOUT_MS)
            wait_idle(page)
            thumb = page.locator('.st-key-s_gamma input[type="range"]')
            thumb.focus()
            thumb.press("ArrowRight")  # the first interaction of this server's first visitor: γ 4 -> 5
            page.wait_for_url(re.compile(r"[?&]gamma=5(&|$)"), timeout=60_000)
            wait_idle(page, after_action=True)
            assert page.locator('.st-key-s_gamma [data-testid="stSliderThumbValue"]').inner_text().strip() == "5"
            assert_no_exception(page, "home on a fresh server")
        finally:
            context.close()


def test_first_click_on_a_deep_link_counts(browser, tmp_path):
    with streamlit_server(tmp_path / "server.log") as url:
        context, page = _first_page(browser, url)
        try:
            page.goto(f"{url}/serial_tax", wait_until="domcontentloaded")
            page.wait_for_selector(".st-key-st_run button", timeout=SCRIPT_TIMEOUT_MS)
            wait_idle(page)
            click(page, "st_run")  # the first interaction of this server's first visitor
            wait_idle(page, after_action=True)
            page.locator(".st-key-st_cumulative").wait_for(state="visible", timeout=60_000)
            assert_no_exception(page, "serial_tax on a fresh server")
        finally:
            context.close()
