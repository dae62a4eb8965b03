"""What every browser test module shares: one headless Chromium per module (Debian's, never a downloaded one)."""
import pytest

from tests.serve import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium for this module's pages, closed when the module is done."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
