"""Screenshots of the teacher's view with the joined count and the room's lock, at 1280x720: the app as
`make run` starts it, a class of N phones (the phone page's calls), the teacher's page resumed with the
class's code and key in headless Chromium; before the lock, after Lock room (a new phone refused), and
after Unlock room.

    .venv/bin/python scripts/class_teacher_shots.py --out /tmp/shots --phones 12
"""
import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import classroom  # noqa: E402
from classroom.tools import serve  # noqa: E402
from classroom.tools.phones import Phone  # noqa: E402
from classroom.tools.room import started  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--phones", type=int, default=12)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-class-shots-")))
        url = f"sqlite:///{folder}/class.sqlite3"
        server = started(stack, url, folder / "server.log")
        store = classroom.open_store(url)
        info = store.create_class([q.id for q in store.bank.questions if q.demo is None][:3])
        store.open_vote(info.code, info.teacher_key, store.state(info.code).question_ids[0])
        for i in range(args.phones):
            Phone(i, "127.0.0.1", server.port, info.code).join_class()
        pw = stack.enter_context(sync_playwright())
        browser = pw.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{server.url}/class", timeout=120_000)
        serve.wait_idle(page, 120_000)
        page.get_by_text("Resume a class after a reload").click()
        page.get_by_label("Class code", exact=True).fill(info.code)
        page.get_by_label("Teacher key", exact=True).fill(info.teacher_key)
        page.get_by_role("button", name="Resume the class").click()
        lock = page.get_by_role("button", name="Lock room")
        lock.wait_for(timeout=120_000)

        def shot(name: str) -> None:
            page.get_by_text("Students joined").scroll_into_view_if_needed()
            page.mouse.wheel(0, 200)
            page.wait_for_timeout(500)
            page.screenshot(path=args.out / name)
            print("saved", args.out / name)

        shot("teacher-joined-unlocked-1280x720.png")
        lock.click()
        page.get_by_role("button", name="Unlock room").wait_for(timeout=60_000)
        refused = Phone(args.phones, "127.0.0.1", server.port, info.code)
        refused.join_class()
        print("a new phone while locked:", refused.errors[0][:160] if refused.errors else "joined (wrong)")
        shot("teacher-room-locked-1280x720.png")
        page.get_by_role("button", name="Unlock room").click()
        page.get_by_role("button", name="Lock room").wait_for(timeout=60_000)
        later = Phone(args.phones + 1, "127.0.0.1", server.port, info.code)
        later.join_class()
        page.wait_for_function(f"() => document.body.innerText.includes('{args.phones + 1}')", timeout=30_000)
        shot("teacher-unlocked-again-1280x720.png")
        print("joined:", store.state(info.code).students, "locked:", store.state(info.code).locked)
        browser.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
