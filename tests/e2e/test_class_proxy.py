"""Class mode beyond one machine (scripts/class_proxy_run.py): deploy/nginx-class.conf fills and nginx accepts
it; a small room runs through nginx in front of two app processes on one PostgreSQL, every view and the
store agree with the votes cast, and both processes served browsers, each browser always the same one."""
import subprocess

import pytest

from classroom.tools.pg import PostgresMissing, bin_dir
from tests.e2e.test_browser import pytestmark as needs_chromium
from tests.scripts import load_script


@pytest.fixture(scope="module")
def script():
    module = load_script("class_proxy_run")
    try:
        module.nginx_binary()
    except module.NginxMissing as err:
        pytest.skip(f"{err}")
    return module


def test_the_template_fills_and_nginx_accepts_it(script, tmp_path):
    text = script.nginx_config("127.0.0.1:18080", tmp_path, [18501, 18502])
    assert "server 127.0.0.1:18501;" in text and '"127.0.0.1:18502" 127.0.0.1:18502;' in text
    assert "proxy_set_header Upgrade $http_upgrade;" in text and "listen 127.0.0.1:18080;" in text
    # Every location hands the app the phone's own address (what it counts seats by), never a client's claim.
    assert text.count("proxy_set_header X-Forwarded-For $remote_addr;") == text.count("location ") == 2
    assert "$proxy_add_x_forwarded_for" not in text
    (tmp_path / "nginx.conf").write_text(text)
    checked = subprocess.run([script.nginx_binary(), "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_log_reader_counts_websockets_and_requests_off_their_pin(script, tmp_path):
    log = tmp_path / "access.log"
    log.write_text('127.0.0.1 "GET /_stcore/stream HTTP/1.1" 101 upstream=127.0.0.1:1 pin="127.0.0.1:1"\n'
                   '127.0.0.1 "GET /class HTTP/1.1" 200 upstream=127.0.0.1:2 pin="-"\n'
                   '127.0.0.1 "GET /static/x.js HTTP/1.1" 200 upstream=127.0.0.1:2 pin="127.0.0.1:1"\n'
                   '127.0.0.1 "GET /favicon.ico HTTP/1.1" 404 upstream=- pin=""\n')
    assert script.requests_per_app(log) == {"127.0.0.1:1": {"requests": 1, "websockets": 1, "off pin": 0},
                                            "127.0.0.1:2": {"requests": 2, "websockets": 0, "off pin": 1}}


@needs_chromium
@pytest.mark.browser
@pytest.mark.slow
def test_a_small_room_through_nginx_on_two_processes_and_postgresql(script, tmp_path):
    try:
        bin_dir()
    except PostgresMissing as err:
        pytest.skip(f"{err}")
    seen = script.run(phones=3, log_dir=tmp_path)
    assert script.problems(seen) == []
    assert seen["join link"].startswith(seen["proxy"])  # the operator's SPECDEC_PUBLIC_URL: the proxy, not a process
    assert sum(seen["store tally"].values()) == 3 and seen["joined"] == seen["answers"] == 3
    assert set(seen["served by"].values()) == set(seen["apps"])
