"""The join link's address (ui/server/join_link.py): a loopback address the teacher's browser used becomes
this machine's LAN address, the operator's SPECDEC_PUBLIC_URL wins, no reachable address gives a warning
and no link, and any other address is used as the browser reached it."""
import pytest

from ui.server.join_link import checked_public_url, is_loopback, join_url, lan_addresses

LAN = ["192.168.1.20"]


@pytest.mark.parametrize("browser", ["http://localhost:8501/class", "http://127.0.0.1:8501/class",
                                     "http://127.3.4.5:8501/class", "http://[::1]:8501/class",
                                     "http://0.0.0.0:8501/class", "http://app.localhost:8501/class", None])
def test_a_loopback_address_becomes_the_lan_address(browser):
    where = join_url(browser, 8501, None, LAN)
    assert (where.url, where.source, where.warning) == ("http://192.168.1.20:8501/class", "network", None)


def test_the_lan_address_takes_the_servers_port_and_the_browsers_scheme_and_path():
    # A teacher behind an SSH tunnel reached localhost:9000; phones reach the server's own port.
    assert join_url("https://localhost:9000/base/class", 8502, None, LAN, base_path="base/").url == \
        "https://192.168.1.20:8502/base/class"
    assert join_url("http://localhost:8501/class", 8501, "", ["fd00::5"]).url == "http://[fd00::5]:8501/class"


def test_loopback_lan_addresses_are_skipped_for_the_first_reachable_one():
    assert join_url("http://localhost:8501/class", 8501, None, ["127.0.0.1", "", "10.0.0.7"]).url == \
        "http://10.0.0.7:8501/class"


@pytest.mark.parametrize("lan", [[], ["127.0.0.1"], ["::1", "0.0.0.0"]])
def test_no_lan_address_gives_a_warning_and_no_link(lan):
    where = join_url("http://localhost:8501/class", 8501, None, lan)
    assert where.url is None
    assert "SPECDEC_PUBLIC_URL" in where.warning and "localhost" in where.warning


@pytest.mark.parametrize("browser", ["http://localhost:8501/class", "http://192.168.1.20:8501/class", None])
def test_the_operators_public_url_wins(browser):
    where = join_url(browser, 8501, "https://class.school.example/specdec/", LAN)
    assert (where.url, where.source) == ("https://class.school.example/specdec/class", "public")
    assert join_url(browser, 8501, "https://class.school.example", [], page="/phone", base_path="/base").url == \
        "https://class.school.example/phone"  # the public address is the app's root: no base path added


@pytest.mark.parametrize("bad", ["class.school.example", "ftp://class.school.example", "https://",
                                 "https://teacher:secret@class.school.example", "https://a.example/?x=1",
                                 "https://a.example/#top", "https://a.example:port", "https://a b.example",
                                 "https://a.example/" + "x" * 400, "javascript:alert(1)"])
def test_an_unusable_public_url_gives_a_warning_that_never_echoes_it(bad):
    where = join_url("http://192.168.1.20:8501/class", 8501, bad, LAN)
    assert where.url is None and "SPECDEC_PUBLIC_URL" in where.warning
    assert "secret" not in where.warning and "school.example" not in where.warning and "alert" not in where.warning
    assert checked_public_url(bad) is None


@pytest.mark.parametrize("browser", ["http://192.168.1.20:8501/class", "https://specdec.school.example/class",
                                     "http://teacher-laptop.local:8501/class", "http://[fd00::2]:8501/class"])
def test_a_non_loopback_address_is_used_as_the_browser_reached_it(browser):
    where = join_url(browser, 9999, None, ["10.0.0.7"])
    assert (where.url, where.source) == (browser, "browser")


def test_a_non_loopback_address_keeps_its_scheme_and_port_and_opens_the_page_asked_for():
    assert join_url("https://specdec.school.example:8443/base/class", 8501, None, [], base_path="/base").url == \
        "https://specdec.school.example:8443/base/class"
    assert join_url("http://192.168.1.20:8501/class", 8501, None, [], page="/phone").url == \
        "http://192.168.1.20:8501/phone"  # the phone's own page, whichever page the teacher is on


def test_what_counts_as_loopback():
    assert all(map(is_loopback, ["localhost", "LOCALHOST.", "127.0.0.1", "127.255.0.9", "::1", "[::1]", "0.0.0.0",
                                 "::", "x.localhost"]))
    assert not any(map(is_loopback, ["192.168.1.20", "10.0.0.1", "fd00::2", "localhost.example", "class.local"]))


def test_lan_addresses_follow_what_the_server_listens_on(monkeypatch):
    from streamlit import net_util
    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "192.168.1.20")
    assert lan_addresses(None) == lan_addresses("0.0.0.0") == lan_addresses("") == ["192.168.1.20"]
    assert lan_addresses("10.1.2.3") == ["10.1.2.3"]  # one address only: the one a phone can reach
    assert lan_addresses("127.0.0.1") == ["127.0.0.1"]  # ... which join_url then refuses as loopback
    assert lan_addresses("unix:///run/specdec.sock") == []
