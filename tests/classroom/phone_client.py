"""The phone's routes (classroom/web) served for a test, and a phone that talks to them as the page's
script does: its own cookie jar (one device), JSON calls, the ETag it holds. Every body a phone receives
is kept, so a test can read exactly what reached it."""
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from http.cookiejar import CookieJar

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware

from classroom import web


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PhoneServer:
    """classroom/web's routes and middleware over `open_store`, served by uvicorn in a thread on a free port.
    `forwarded_allow_ips`: the proxies whose X-Forwarded-For is believed (uvicorn's default: this machine)."""

    def __init__(self, open_store, joins_per_minute: int | None = None, forwarded_allow_ips: str | None = None):
        app = Starlette(routes=web.routes(open_store, joins_per_minute),
                        middleware=[Middleware(web.OldJoinLinks)])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off", forwarded_allow_ips=forwarded_allow_ips))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "PhoneServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the phone routes' test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class Answer:
    def __init__(self, status: int, headers, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Phone:
    """One device: a cookie jar, the ETag of the last state, everything received."""

    def __init__(self, base: str, code: str):
        self.base, self.code = base, code
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)
        self.etag = None
        self.received: list[bytes] = []

    def request(self, method: str, path: str, body=None, headers=None, raw: bytes | None = None) -> Answer:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        hdrs = {"Content-Type": "application/json"} if data is not None else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=hdrs)
        try:
            with self.opener.open(req, timeout=30) as r:
                answer = Answer(r.status, r.headers, r.read())
        except urllib.error.HTTPError as err:
            answer = Answer(err.code, err.headers, err.read())
        self.received.append(answer.body)
        return answer

    def open_page(self) -> list[Answer]:
        """What a browser fetches for the join link: the page, its script and style."""
        return [self.request("GET", f"{web.PATH}?join={self.code}"), self.request("GET", f"{web.PATH}/phone.js"),
                self.request("GET", f"{web.PATH}/phone.css")]

    def join(self) -> Answer:
        answer = self.request("POST", f"{web.PATH}/api/join", {"code": self.code})
        self.etag = answer.headers.get("ETag")
        return answer

    def state(self, fresh: bool = False) -> Answer:
        """A poll (with the ETag held, unless `fresh`: a reload)."""
        headers = {} if fresh or not self.etag else {"If-None-Match": self.etag}
        answer = self.request("GET", f"{web.PATH}/api/state?code={self.code}", headers=headers)
        if answer.status == 200:
            self.etag = answer.headers.get("ETag")
        return answer

    def vote(self, question: str, option, round_=1) -> Answer:
        return self.request("POST", f"{web.PATH}/api/vote",
                            {"code": self.code, "question": question, "round": round_, "option": option})
