"""A seat per phone, not per request: the phone page's join takes at most a few seats of a class per
network address a minute (the store's `join_from`; `join`, the store's own API, is not limited); the
address behind a proxy is believed only from the proxy the operator names; the teacher's lock stops new
seats while the seated keep voting. Every refusal is a sentence and writes nothing."""
import pytest

import classroom
from classroom import web
from classroom.web import phone as phone_routes
from tests.classroom.phone_client import Phone, PhoneServer
from tests.classroom.support import snapshot


@pytest.fixture
def info(store):
    info = store.create_class(["q-four", "q-two"])
    store.open_vote(info.code, info.teacher_key, "q-four")
    return info


def test_one_address_takes_five_seats_a_minute_and_another_address_is_not_held_back(store, info, clock):
    for _ in range(classroom.JOINS_PER_ADDRESS):
        store.join_from(info.code, "192.0.2.7")
    before = snapshot(store)
    with pytest.raises(classroom.TooManyRequests, match="too many phones joined from your network"):
        store.join_from(info.code, "192.0.2.7")
    assert snapshot(store) == before
    store.join_from(info.code, "192.0.2.8")  # a neighbour is not held back
    clock.now += classroom.JOIN_WINDOW_S + 1
    store.join_from(info.code, "192.0.2.7")  # a minute later: again
    assert store.state(info.code).students == classroom.JOINS_PER_ADDRESS + 2


def test_the_stores_own_join_is_not_limited_and_no_address_is_stored_in_plain(store, info):
    for _ in range(3 * classroom.JOINS_PER_ADDRESS):
        store.join(info.code)
    store.join_from(info.code, "198.51.100.23", per_window=1)
    with pytest.raises(classroom.TooManyRequests):
        store.join_from(info.code, "198.51.100.23", per_window=1)
    assert store.state(info.code).students == 3 * classroom.JOINS_PER_ADDRESS + 1
    assert "198.51.100.23" not in repr(snapshot(store))


def test_a_locked_room_takes_no_new_seat_and_the_seated_keep_voting(store, info):
    seated = store.join(info.code)
    with pytest.raises(PermissionError):
        store.lock(info.code, "not-the-key")
    store.lock(info.code, info.teacher_key)
    assert store.state(info.code).locked
    before = snapshot(store)
    for join in (lambda: store.join(info.code), lambda: store.join_from(info.code, "192.0.2.9")):
        with pytest.raises(classroom.RoomLocked, match="locked this class"):
            join()
    assert snapshot(store) == before
    store.vote(info.code, seated, "q-four", 2)
    assert store.tally(info.code, "q-four")[2] == 1
    store.lock(info.code, info.teacher_key, locked=False)
    assert not store.state(info.code).locked
    store.join(info.code)
    assert store.state(info.code).students == 2


def test_hostile_addresses_and_limits_are_refused_plainly(store, info):
    for address in (None, "", 7, "x" * 257):
        with pytest.raises(classroom.BadInput):
            store.join_from(info.code, address)
    for limit in ("5", 2.5, True):
        with pytest.raises(classroom.BadInput):
            store.join_from(info.code, "192.0.2.1", per_window=limit)
    store.join_from(info.code, "☃ not an address, still only hashed")


def test_the_phone_page_refuses_a_sixth_seat_from_one_address_with_a_sentence(store, info):
    with PhoneServer(lambda: store) as server:
        phones = [Phone(server.url, info.code) for _ in range(classroom.JOINS_PER_ADDRESS + 1)]
        for phone in phones[:-1]:
            assert phone.join().status == 200
        before = snapshot(store)
        refused = phones[-1].join()
        assert refused.status == 429
        assert refused.json()["error"].startswith("Too many phones joined from your network in the last minute")
        assert snapshot(store) == before
        assert phones[0].join().status == 200  # a phone already seated is still welcome (its cookie)
        assert phones[0].vote("q-four", 1).status == 200
        # Through the proxy this machine trusts (uvicorn's default: loopback), each phone's own address counts.
        other = Phone(server.url, info.code)
        assert other.request("POST", f"{web.PATH}/api/join", {"code": info.code},
                             headers={"X-Forwarded-For": "10.1.2.3"}).status == 200


def test_a_forwarded_address_is_believed_only_from_the_proxy_the_operator_names(store, info):
    with PhoneServer(lambda: store, forwarded_allow_ips="192.0.2.250") as server:  # the proxy is elsewhere
        answers = [Phone(server.url, info.code).request("POST", f"{web.PATH}/api/join", {"code": info.code},
                                                        headers={"X-Forwarded-For": f"10.9.0.{n}",
                                                                 "X-Real-IP": f"10.9.0.{n}"}).status
                   for n in range(classroom.JOINS_PER_ADDRESS + 1)]
    assert answers == [200] * classroom.JOINS_PER_ADDRESS + [429]  # every one counted as 127.0.0.1


def test_the_operator_sets_the_seats_per_address(store, info, monkeypatch):
    monkeypatch.setenv(phone_routes.JOINS_ENV_VAR, "2")
    assert phone_routes.joins_per_minute_setting() == 2
    with PhoneServer(lambda: store) as server:  # None: the operator's setting
        assert [Phone(server.url, info.code).join().status for _ in range(3)] == [200, 200, 429]
    for bad in ("0", "many", "501", "-1"):
        monkeypatch.setenv(phone_routes.JOINS_ENV_VAR, bad)
        with pytest.raises(ValueError, match="SPECDEC_CLASS_JOINS_PER_MINUTE"):
            phone_routes.joins_per_minute_setting()


def test_a_locked_room_tells_a_new_phone_why_and_the_seated_phone_votes(store, info):
    with PhoneServer(lambda: store) as server:
        seated = Phone(server.url, info.code)
        seated.join()
        store.lock(info.code, info.teacher_key)
        refused = Phone(server.url, info.code).join()
        assert refused.status == 403 and "locked this class" in refused.json()["error"]
        assert seated.join().status == 200 and seated.vote("q-four", 3).json()["mine"] == 3
        store.lock(info.code, info.teacher_key, locked=False)
        assert Phone(server.url, info.code).join().status == 200
