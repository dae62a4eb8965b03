"""The phone's side of class mode, served beside the Streamlit app by the same server and port: a
small page (static HTML, CSS and JS that never builds HTML from text) and three JSON calls.

    GET  /phone?join=CODE            the page (the QR code's link); the old /class?join=CODE redirects here
    POST /phone/api/join             {"code"} -> the state; the student id goes into an HttpOnly cookie
    GET  /phone/api/state?code=CODE  the state (ETag: the class's change counter; a 304 when unchanged)
    POST /phone/api/vote             {"code", "question", "round", "option"} -> the state with the vote in

A waiting phone asks for the state every POLL_S with the ETag it holds. Nothing changed: an empty 304,
no JSON built, after one indexed read of the class's version shared by every poll of the next
VERSION_FRESH_S. A refusal of the store is a JSON
{"error": sentence} with a 4xx status, the same sentences the store gives the Streamlit views.
Cross-site requests are refused (a POST must be JSON, and come from this origin when the browser
says where it comes from); the student cookie is SameSite=Strict, HttpOnly, per class.

A join takes a seat: one network address may take at most `joins_per_minute` seats of a class a minute
(the operator's SPECDEC_CLASS_JOINS_PER_MINUTE, default 5). The address is the connection's peer, or,
from a proxy the operator trusts (uvicorn's FORWARDED_ALLOW_IPS, by default this machine only), the
address that proxy reports in X-Forwarded-For.

No request is a 500: every input (body, header, query, cookie) is checked where it is read, and what
still goes wrong is answered as a JSON sentence by `guarded` (503 when the database fails, 500 with the
traceback logged for a bug of ours).
"""
import functools
import json
import logging
import os
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .. import codes
from ..errors import BadInput, ClassError, RoomLocked, TooManyRequests, UnknownClass, UnknownStudent, VoteNotOpen
from ..store import JOINS_PER_ADDRESS
from .view import personal, room_state

PATH = "/phone"  # the page; its calls live under PATH/api
POLL_S = 1.5  # how often a waiting phone asks for the state (the page reads it from data-poll)
BODY_MAX = 1024  # bytes of a request body looked at; anything longer is refused unread
VERSION_FRESH_S = 0.25  # polls within this long of a read of a class's change counter share that read
ROOMS_KEPT = 256  # classes whose room state a server keeps (one entry each, its latest version)
COOKIE_MAX_AGE_S = 12 * 3600  # a phone stays the same student for a school day
STATIC = Path(__file__).resolve().parent / "static"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
STATUS = {UnknownClass: 404, UnknownStudent: 403, RoomLocked: 403, VoteNotOpen: 409, TooManyRequests: 429}
UNAVAILABLE = "Class mode is not available on this server"
JOINS_ENV_VAR = "SPECDEC_CLASS_JOINS_PER_MINUTE"  # the operator's setting: seats per address per class per minute
log = logging.getLogger(__name__)


def joins_per_minute_setting() -> int:
    """The operator's SPECDEC_CLASS_JOINS_PER_MINUTE (a whole number 1-500), else JOINS_PER_ADDRESS."""
    raw = os.environ.get(JOINS_ENV_VAR, "").strip()
    if not raw:
        return JOINS_PER_ADDRESS
    if not raw.isdigit() or not 1 <= int(raw) <= 500:
        raise ValueError(f"{JOINS_ENV_VAR} must be a whole number from 1 to 500 (seats per address per minute)")
    return int(raw)


def phone_url(class_page_url: str, code: str) -> str:
    """The join link: the phone page beside the class page at `class_page_url` (same scheme, host, port
    and path prefix), e.g. http://192.168.1.20:8501/class -> http://192.168.1.20:8501/phone?join=CODE."""
    base = class_page_url.rstrip("/").rsplit("/", 1)[0]
    return f"{base}{PATH}?join={code}"


def sentence(err: BaseException) -> str:
    """A refusal as a sentence (capital, full stop), at most 300 characters."""
    text = (str(err).strip() or type(err).__name__)[:300]
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


def refusal(err: BaseException) -> JSONResponse:
    status = next((s for kind, s in STATUS.items() if isinstance(err, kind)), 400)
    return JSONResponse({"error": sentence(err)}, status_code=status, headers=SECURITY_HEADERS)


def cookie_name(code: str) -> str:
    return f"cm_{code}"


def etag(version: int, student: str | None) -> str:
    """The state's validator: the class's change counter, and whether this phone holds a student id (a
    phone's own vote changes only through its own calls, which answer with the new state)."""
    return f'"{version}{"s" if student else "n"}"'


def student_of(request: Request, code: str) -> str | None:
    """The student id this phone's cookie holds for class `code` (unchecked), or None."""
    value = request.cookies.get(cookie_name(code))
    return value if value and codes.is_token(value) else None


def same_origin(request: Request) -> bool:
    """Whether a POST comes from this site: JSON (a cross-site form cannot send that without asking),
    and an Origin header, where the browser sends one, naming this host."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    try:
        return urlsplit(origin).netloc == request.headers.get("host")
    except ValueError:  # not a URL at all (say, "http://[")
        return False


def client_address(request: Request) -> str:
    """The address a request came from: the peer, or what a trusted proxy reported (uvicorn's
    ProxyHeadersMiddleware has already put it in the scope)."""
    return request.client.host if request.client and request.client.host else "unknown"


async def small_json(request: Request) -> dict:
    """The request's JSON object, refused (BadInput) when it is longer than BODY_MAX or not an object."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > BODY_MAX:
            raise BadInput(f"the request is longer than {BODY_MAX} bytes")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadInput("the request is not JSON") from None
    except RecursionError:  # "[[[[..." nested deeper than Python's stack, inside the size cap
        raise BadInput("the request is nested too deeply") from None
    if not isinstance(data, dict):
        raise BadInput("the request is not a JSON object")
    return data


def class_code(value) -> str:
    """A class code as the store keeps it (UnknownClass, in the store's words, when it cannot be one)."""
    if not isinstance(value, str) or len(value) > 64:
        raise UnknownClass("this is not a class code: a code is 6 letters and digits, as on the screen")
    code = codes.normalize_code(value)
    if code is None:
        raise UnknownClass("this is not a class code: a code is 6 letters and digits, as on the screen")
    return code


def guarded(handler):
    """A route that answers every failure as a JSON sentence: a refusal of the store (4xx), a database
    that fails (503, one log line), anything else (500, logged with its traceback: a bug to fix)."""
    @functools.wraps(handler)
    async def route(self, request: Request) -> Response:
        try:
            return await handler(self, request)
        except (ClassError, Unavailable) as err:
            return refusal(err)
        except SQLAlchemyError as err:
            log.warning("class store failed on %s: %s", request.url.path, type(err).__name__)
            return JSONResponse({"error": "The class store is busy or down: try again in a moment."},
                                status_code=503, headers=SECURITY_HEADERS)
        except Exception:
            log.exception("the phone route %s failed", request.url.path)
            return JSONResponse({"error": "Something went wrong on the server: tell the teacher."},
                                status_code=500, headers=SECURITY_HEADERS)
    return route


class PhoneRoutes:
    """The routes over one store, opened on first use by `open_store()` (a server whose database is down
    still serves the app; the phone is told so)."""

    def __init__(self, open_store, joins_per_minute: int = JOINS_PER_ADDRESS):
        self.open_store = open_store
        self.joins_per_minute = joins_per_minute
        # The room's part of the state, per class: (version, state). Built once per change the room sees,
        # not once per phone: when the teacher opens a vote, hundreds of phones ask within a poll interval.
        self.rooms: dict[str, tuple[int, dict]] = {}
        self.rooms_lock = threading.Lock()
        # The change counter per class, with when it was read: a room of 500 polls 330 times a second, and
        # all polls within VERSION_FRESH_S share one read (a teacher's move reaches a phone that much later).
        self.versions: dict[str, tuple[int, float]] = {}

    def store(self):
        try:
            return self.open_store()
        except ClassError as err:
            raise Unavailable(f"{UNAVAILABLE}: {sentence(err)}") from None
        except Exception:  # a database that is down: the operator reads the server log, the room a sentence
            raise Unavailable(f"{UNAVAILABLE} right now: tell the teacher.") from None

    def fresh_version(self, code: str) -> int | None:
        """The class's change counter if it was read less than VERSION_FRESH_S ago, else None."""
        kept = self.versions.get(code)
        return kept[0] if kept is not None and time.monotonic() - kept[1] < VERSION_FRESH_S else None

    def read_version(self, store, code: str) -> int:
        """The class's change counter, read now (and kept for the polls of the next VERSION_FRESH_S)."""
        read_at = time.monotonic()
        version = store.room_version(code)
        with self.rooms_lock:
            if len(self.versions) >= ROOMS_KEPT and code not in self.versions:
                self.versions.pop(next(iter(self.versions)))
            self.versions[code] = (version, read_at)
        return version

    async def version(self, store, code: str) -> int:
        """The class's change counter as read at most VERSION_FRESH_S ago (no thread, no database), else now."""
        version = self.fresh_version(code)
        return version if version is not None else await run_in_threadpool(self.read_version, store, code)

    def room(self, store, code: str) -> dict:
        """The room's part of the state: kept per class for its latest version (no read when that version
        was read less than VERSION_FRESH_S ago)."""
        version = self.fresh_version(code)
        if version is None:
            version = self.read_version(store, code)
        kept = self.rooms.get(code)
        if kept is not None and kept[0] >= version:
            return kept[1]
        room = room_state(store, code)
        with self.rooms_lock:
            if len(self.rooms) >= ROOMS_KEPT and code not in self.rooms:
                self.rooms.pop(next(iter(self.rooms)))
            kept = self.rooms.get(code)
            if kept is None or kept[0] < room["version"]:
                self.rooms[code] = (room["version"], room)
        return room

    def state_response(self, store, code: str, student: str | None, voted: tuple | None = None) -> JSONResponse:
        """The phone's state as JSON. `voted`: (question, round, option) this student's vote just recorded,
        which is its own vote in the state when that round is still the current one (no read for it)."""
        room = self.room(store, code)
        q = room["question"]
        if voted is not None and q is not None and (q["id"], room["round"]) == voted[:2]:
            state = {**room, "joined": True, "mine": voted[2]}
        else:
            state = personal(store, room, student)
        return JSONResponse(state, headers={**SECURITY_HEADERS,
                                            "ETag": etag(state["version"], student if state["joined"] else None)})

    async def page(self, request: Request) -> Response:
        return Response(PAGE, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    async def script(self, request: Request) -> Response:
        return Response(SCRIPT, media_type="text/javascript; charset=utf-8", headers=SECURITY_HEADERS)

    async def style(self, request: Request) -> Response:
        return Response(STYLE, media_type="text/css; charset=utf-8", headers=SECURITY_HEADERS)

    @guarded
    async def state(self, request: Request) -> Response:
        code = class_code(request.query_params.get("code", ""))
        student = student_of(request, code)
        store = self.store()
        version = await self.version(store, code)
        if request.headers.get("if-none-match") == etag(version, student):
            return Response(status_code=304, headers={**SECURITY_HEADERS, "ETag": etag(version, student)})
        return await run_in_threadpool(self.state_response, store, code, student)

    @guarded
    async def join(self, request: Request) -> Response:
        if not same_origin(request):
            return JSONResponse({"error": "This request did not come from the class page."}, status_code=403)
        code = class_code((await small_json(request)).get("code"))
        store = self.store()
        student = student_of(request, code)
        known = student is not None and await run_in_threadpool(self.joined, store, code, student)
        if not known:  # this phone has no place in this class yet: one, and only one
            student = await run_in_threadpool(store.join_from, code, client_address(request), self.joins_per_minute)
        response = await run_in_threadpool(self.state_response, store, code, student)
        response.set_cookie(cookie_name(code), student, max_age=COOKIE_MAX_AGE_S, path=PATH, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    @staticmethod
    def joined(store, code: str, student: str) -> bool:
        try:
            store.check_student(code, student)
            return True
        except UnknownStudent:
            return False

    @guarded
    async def vote(self, request: Request) -> Response:
        if not same_origin(request):
            return JSONResponse({"error": "This request did not come from the class page."}, status_code=403)
        data = await small_json(request)
        code = class_code(data.get("code"))
        student = student_of(request, code)
        if student is None:
            raise UnknownStudent("this phone has not joined this class: join again with the code")
        store = self.store()
        question, option, round_ = data.get("question"), data.get("option"), data.get("round")
        return await run_in_threadpool(self.cast, store, code, student, question, round_, option)

    def cast(self, store, code: str, student: str, question, round_, option) -> JSONResponse:
        """The vote recorded, answered with the state (one trip to a worker thread for both)."""
        store.vote(code, student, question, option, round_)
        return self.state_response(store, code, student, (question, round_, option))


class Unavailable(Exception):
    """The class store cannot be opened on this server (503)."""


STATUS[Unavailable] = 503
PAGE = (STATIC / "phone.html").read_text(encoding="utf-8").replace("{{POLL_MS}}", str(int(POLL_S * 1000)))
SCRIPT = (STATIC / "phone.js").read_text(encoding="utf-8")
STYLE = (STATIC / "phone.css").read_text(encoding="utf-8")


def routes(open_store, joins_per_minute: int | None = None) -> list[Route]:
    """The phone's routes, over the store `open_store()` returns (called on each request: cache it).
    `joins_per_minute`: seats one address may take per class per minute (None: the operator's setting)."""
    phone = PhoneRoutes(open_store, joins_per_minute_setting() if joins_per_minute is None else joins_per_minute)
    return [Route(PATH, phone.page, methods=["GET"]),
            Route(f"{PATH}/phone.js", phone.script, methods=["GET"]),
            Route(f"{PATH}/phone.css", phone.style, methods=["GET"]),
            Route(f"{PATH}/api/state", phone.state, methods=["GET"]),
            Route(f"{PATH}/api/join", phone.join, methods=["POST"]),
            Route(f"{PATH}/api/vote", phone.vote, methods=["POST"])]


class OldJoinLinks:
    """ASGI middleware: a join link of the Streamlit phone page (/class?join=CODE, on a printed sheet or
    an old QR code) is sent on to the phone page."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].rstrip("/") == "/class":
            from urllib.parse import parse_qs, urlencode
            join = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("join")
            if join:
                target = f"{PATH}?{urlencode({'join': join[0][:64]})}"
                await RedirectResponse(target, status_code=307)(scope, receive, send)
                return
        await self.app(scope, receive, send)
