"""The join link from a second machine's point of view (scripts/class_join_link_netns.py): a teacher who opened
localhost on the server projects a link and a QR code that a phone in another network namespace opens; with
no network beyond the server, the teacher sees the warning and no QR code. Needs root (ip netns)."""
import os
import shutil

import pytest

from tests.e2e.test_browser import pytestmark as needs_chromium
from tests.scripts import load_script


@needs_chromium
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("curl"),
                    reason="needs root, ip (iproute2) and curl to make two network namespaces")
def test_a_phone_on_the_network_opens_the_link_a_teacher_on_localhost_projects():
    script = load_script("class_join_link_netns")
    seen = script.demo()
    lan, alone = seen["on a network"], seen["no network"]
    assert lan["teacher opened"].startswith("http://localhost:")
    assert lan["join link"].startswith(f"http://{script.SERVER_IP}:{script.PORT}/phone?join=")
    assert lan["streamlit's Network URL"] == f"http://{script.SERVER_IP}:{script.PORT}"  # what `streamlit run` prints
    assert lan["qr code"] and lan["phone curl"] == "200" and "Join" in lan["join button"]
    if shutil.which("zbarimg"):
        assert lan["qr code carries"] == lan["join link"]
    assert alone["join link"] is None and not alone["qr code"]
    assert any("No join link" in w and "SPECDEC_PUBLIC_URL" in w for w in alone["warnings"])
