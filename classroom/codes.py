"""The class's secrets and names: join codes, teacher keys, student ids, and how each is checked.

A join code is read off a projector from the back of a room, so it is short and drawn from an alphabet
without look-alikes (no 0/O, 1/I). The teacher key is a bearer secret: the database keeps only its
SHA-256, and keys are compared in constant time. A student id is an opaque random token.
"""
import hashlib
import hmac
import re
import secrets

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # 32 symbols: no 0, O, 1, I
CODE_LENGTH = 6  # 32**6 ≈ 1.07e9 codes
STUDENT_ID_BYTES = 16  # token_urlsafe(16): 22 characters, 128 bits
TEACHER_KEY_BYTES = 24  # token_urlsafe(24): 32 characters, 192 bits
TOKEN_MAX = 64  # longest student id or teacher key looked at; anything longer is refused unread
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CODE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")


def new_code() -> str:
    """A fresh random join code (uniqueness is the database's unique key's job)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(text: str) -> str | None:
    """The code a person meant: case, spaces and dashes ignored; None when it cannot be a code."""
    if len(text) > 4 * CODE_LENGTH:  # checked before any work on a hostile string
        return None
    code = re.sub(r"[\s-]", "", text).upper()
    return code if _CODE.fullmatch(code) else None


def new_teacher_key() -> str:
    """A fresh teacher key: shown once to the teacher, never to the room."""
    return secrets.token_urlsafe(TEACHER_KEY_BYTES)


def hash_key(key: str) -> str:
    """The stored form of a teacher key. A plain SHA-256 is enough: the key is 192 random bits, so
    there is nothing for a slow, salted hash to protect against guessing."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_matches(key, stored_hash: str) -> bool:
    """Whether `key` is the teacher key whose hash is stored (constant-time; any non-token is False)."""
    if not isinstance(key, str) or not _TOKEN.fullmatch(key):
        return False
    return hmac.compare_digest(hash_key(key), stored_hash)


def hash_address(class_key: str, address: str) -> str:
    """The stored form of a phone's network address, keyed by a value of its class: the same address in
    two classes gives unrelated values. Not a secret from whoever reads the database (trying every IPv4
    address finds it); it keeps addresses out of plain sight in the rows."""
    return hmac.new(class_key.encode("ascii"), address.encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]


def new_student_id() -> str:
    """A fresh opaque student id."""
    return secrets.token_urlsafe(STUDENT_ID_BYTES)


def is_token(text: str) -> bool:
    """Whether `text` has the shape of a student id (letters, digits, '-', '_'; at most TOKEN_MAX)."""
    return len(text) <= TOKEN_MAX and _TOKEN.fullmatch(text) is not None
