"""Class mode's join panel, on the teacher's screen and the projector: the big code, the QR code and the
join link, which opens the phone page (classroom/web) beside the class page at the address the room
reaches (ui/server/join_link.py), or a plain warning where no such address is known."""
import streamlit as st

from classroom import web
from ui.server import join_link
from ui.widgets import class_views


def show(code: str, *, big: bool = True) -> None:
    """The join panel for class `code` (`big`: the teacher's screen; otherwise the projector's column)."""
    where = join_link.current()
    if where.url is None:
        st.warning(f"**No join link.** {where.warning}", icon=":material/wifi_off:")
        return
    st.html(class_views.join_panel_html(code, web.phone_url(where.url, code), big=big))
