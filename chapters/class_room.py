"""Class mode (/class): a teacher asks the room a question, students vote from their phones, the projector
shows how many answered and, once revealed, the counts; after a discussion the room votes again and both
votes stand side by side (Mazur's peer instruction). Everything a class is lives in the class store
(classroom/), so every view and every server process sees one room.

This page picks the view from the URL:
    /class                            the teacher (ui/sections/class_teacher.py)
    /class?code=CODE&view=projector   the room's screen (ui/sections/class_projector.py)
    /class?join=CODE                  a phone: sent on to the phone page (classroom/web, /phone?join=CODE),
                                      a thin page outside Streamlit; the server redirects such links itself,
                                      this is the page's answer where it does not
"""
import streamlit as st

from classroom import codes, web
from ui.content.class_text import plain
from ui.sections import class_projector, class_teacher
from ui.server import join_link
from ui.server.class_store import attempt, store

PARAM_MAX = 64  # longest query value looked at; anything longer is refused unread
PARAMS = ("join", "code", "view")


def read_params() -> dict[str, str]:
    """The class's query values, refused with a message (and a stop) when a value cannot be one of ours."""
    values = {}
    for name in PARAMS:
        raw = st.query_params.get(name)
        if raw is None:
            continue
        if len(raw) > PARAM_MAX:
            st.error(f"This link's **{name}** value is {len(raw)} characters long; a class link's values are at most "
                     f"{PARAM_MAX}. Ask for the link again or type the class code.", icon=":material/link_off:")
            st.stop()
        values[name] = raw
    return values


def checked_code(raw: str) -> str:
    code = codes.normalize_code(raw)
    if code is None:
        st.error(f"“{plain(raw[:PARAM_MAX])}” is not a class code: a code is 6 letters and digits, as on the "
                 "screen at the front of the room.", icon=":material/pin:")
        st.stop()
    return code


def phone_link(code: str) -> None:
    """A phone that reached the Streamlit page with a join link: the link to the phone page."""
    _, error = attempt(store().state, code)
    if error:
        st.error(error, icon=":material/pin:")
        return
    st.subheader(f"Join class {code[:3]} {code[3:]}")
    where = join_link.current()
    link = web.phone_url(where.url, code) if where.url else f"{web.PATH}?join={code}"
    st.link_button("Open the class vote", link, type="primary", icon=":material/login:")


params = read_params()
if "join" in params:
    phone_link(checked_code(params["join"]))
elif "code" in params:
    if params.get("view", "projector") != "projector":
        st.error(f"“{plain(params['view'])}” is not a view of a class: the room's screen is view=projector.",
                 icon=":material/link_off:")
        st.stop()
    class_projector.show(checked_code(params["code"]))
else:
    class_teacher.show()
