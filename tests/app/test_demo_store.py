"""ui.server.demo's store: a result kept per session, or once for the whole server (shared=True), each with the
settings it answers, so that a page shows it only while they match (or under a stale note)."""
from ui.server import demo


def run(signature, value):
    return demo.execute("t_shared", signature, lambda progress: {"x": value}, progress=False, slot=False,
                        shared=True)


def test_a_shared_result_is_kept_for_the_server_by_its_settings():
    first = run(("a",), 1)
    assert first == {"x": 1, "signature": ("a",)}
    assert demo.latest("t_shared", ("a",), shared=True) is first
    run(("b",), 2)
    assert demo.latest("t_shared", ("a",), shared=True)["x"] == 1  # every setting keeps its own result
    assert demo.latest("t_shared", ("b",), shared=True)["x"] == 2
    assert demo.latest("t_shared", ("c",), shared=True) is None  # other settings: hidden (or a stale note)
    for i in range(demo.SHARED_ENTRIES):
        run((i,), i)
    assert demo.latest("t_shared", ("a",), shared=True) is None  # the oldest make room
    assert demo.latest("t_shared", (demo.SHARED_ENTRIES - 1,), shared=True)["x"] == demo.SHARED_ENTRIES - 1
