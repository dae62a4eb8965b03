"""The folded "Go deeper" sections of the chapters: one module per section, named <chapter>_<topic>.py,
each with one public `show(...)` that a chapter calls inside its fold (`with layout.deeper("…"):`). A chapter file then reads as
its lesson in order (the idea, the demo, the way on); what an expert wants next lives here, one click away.
Work that costs time (model runs, timings) sits behind a button or toggle inside the section, so an
expander's body (which Streamlit runs even while it is closed) never delays a chapter's first paint.

A chapter's skeleton (ui/widgets/layout.py): `layout.idea(sentence)`, then its demo inside `with layout.demo():`
(the container tests/e2e/test_first_screen.py looks for on the first 1280×720 screen), `layout.try_this(...)`,
then its folds; ui/frame.py adds the link to the next chapter.
"""
