"""Why the class store refused a call: a small hierarchy of ValueError, one class per reason.

A page catches `ClassError` and shows its message as it is: every message is plain words a student or
a teacher can act on. A wrong teacher key is not among them: that is a `PermissionError`, raised by the
store itself, so no page can mistake it for a typo.
"""


class ClassError(ValueError):
    """Base of every refusal of a class-store call (nothing was written)."""


class BadInput(ClassError):
    """An argument of the wrong type, size or shape (before any database is asked)."""


class UnknownClass(ClassError):
    """No class has this join code (or it has expired)."""


class UnknownStudent(ClassError):
    """This student id did not join this class."""


class UnknownQuestion(ClassError):
    """The question is not in the bank, or not in this class."""


class VoteNotOpen(ClassError):
    """The vote for this question and round is not open (not yet opened, or closed)."""


class BadOption(ClassError):
    """The option index is outside the question's options."""


class RoomLocked(ClassError):
    """The teacher locked the room: no new student may join (those seated still vote)."""


class TooManyRequests(ClassError):
    """A flood: too many votes from one student, too many joins from one address, a full class, too many classes."""
