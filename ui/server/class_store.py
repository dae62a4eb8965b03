"""This server process's class store: one per database URL, shared by the teacher's and the projector's
Streamlit views and by the phone's routes (classroom/web, mounted by app.py), so they see one room."""
import functools

import streamlit as st

import classroom
from ui.content.class_text import sentence
from ui.server import class_demos


@functools.lru_cache(maxsize=4)
def _open(url: str) -> classroom.Store:
    return classroom.open_store(url, bank=class_demos.bank())


def shared() -> classroom.Store:
    """The store on the operator's SPECDEC_CLASS_DB (opened once per URL; a failure is retried next call)."""
    return _open(classroom.default_url())


def store() -> classroom.Store:
    """The shared store for a Streamlit view, or a message and a stop."""
    try:
        return shared()
    except Exception as err:  # a bad SPECDEC_CLASS_DB, an unreadable question file, a database that is down
        st.info(f"Class mode is not available on this server: {sentence(err)} (the operator sets the class "
                f"database with {classroom.ENV_VAR}).", icon=":material/database:")
        st.stop()


def attempt(call, *args, **kwargs):
    """(result, None) or (None, what to tell the visitor): every refusal of the store becomes a sentence."""
    try:
        return call(*args, **kwargs), None
    except PermissionError:
        return None, ("This browser does not hold this class's teacher key, so it cannot run the class. "
                      "Resume with the key file saved when the class started.")
    except classroom.ClassError as err:
        return None, sentence(err)
