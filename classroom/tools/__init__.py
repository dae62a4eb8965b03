"""Class mode's tools, shipped beside the store so that scripts never import the tests:

    load.py    the load command: `python -m classroom.tools.load {room,lesson,flood,store} ...` (README.md)
    phones.py  a phone as the phone page talks to the server (keep-alive HTTP, cookie, ETag), in a thread
    room.py    a room and a whole lesson of such phones on the app, driven by the teacher's store calls
    crowd.py   the store alone under a room's load, from several OS processes
    serve.py   the app started as `make run` starts it, on a local port (and the headless Chromium settings)
    pg.py      a throwaway PostgreSQL server (initdb in a temporary folder; never for production)
"""
