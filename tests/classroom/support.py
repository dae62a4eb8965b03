"""What the class-store tests share: their own question bank (never the app's file), and the whole
database as plain data, to show that a refused call wrote nothing."""
from sqlalchemy import select

from classroom.schema import metadata

BANK_RAW = [
    {"id": "q-four", "kind": "choice", "chapter": "chapters/home.py", "prompt": "Four options?",
     "options": ["a", "b", "c", "d"], "answer": 1, "explanation": "Because."},
    {"id": "q-two", "kind": "choice", "chapter": "chapters/home.py", "prompt": "Two options?",
     "options": ["yes", "no"], "answer": 0, "explanation": "Because."},
    {"id": "q-demo", "kind": "choice", "chapter": "chapters/race.py", "prompt": "Predict the race.",
     "options": ["x", "y", "z"], "answer": 2, "explanation": "Run it and see.",
     "demo": {"page": "race", "gamma": 4}},
]


def snapshot(store) -> dict:
    """Every row of every table of the store, sorted: equal snapshots mean nothing was written."""
    with store.engine.connect() as conn:
        return {name: sorted(tuple(row) for row in conn.execute(select(table)))
                for name, table in metadata.tables.items()}
