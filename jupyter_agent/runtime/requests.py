"""Checks of request bodies for the agent service, and the error it answers them with.

Pure functions: each returns the clean value or raises :class:`ServiceError` (a 4xx status,
a message for a person, a short reason), which the handlers turn into ``{message, reason}``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ServiceError",
    "bad",
    "chat_title",
    "check_control",
    "check_relative_path",
    "check_view",
    "not_found",
]

_TITLE_WORDS = 6


class ServiceError(Exception):
    """A refused request: ``status`` (4xx), a message for a person and a short ``reason``."""

    def __init__(self, status: int, message: str, reason: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


def bad(message: str, reason: str = "bad_request") -> ServiceError:
    return ServiceError(400, message, reason)


def not_found(message: str) -> ServiceError:
    return ServiceError(404, message, "not_found")


def chat_title(text: str, words: int = _TITLE_WORDS) -> str:
    """A chat's title from its first message: its first ``words`` words (80 chars at most)."""
    parts = text.split()
    title = " ".join(parts[:words])
    if len(parts) > words:
        title += " …"
    return title[:80]


def check_relative_path(path: Any, what: str) -> str:
    """A contents path (``/``-separated, relative to the root), or ServiceError 400.

    A leading ``/`` is the root; ``..`` components, backslashes and NUL are refused, so no
    path escapes the contents root.
    """
    if not isinstance(path, str) or not path.strip():
        raise bad(f"{what} must be a non-empty contents path", "bad_path")
    clean = path.strip().lstrip("/")
    parts = clean.split("/")
    if not clean or "\\" in clean or "\0" in clean or any(p in ("..", "") for p in parts):
        raise bad(f"{what} {path!r} is not a path inside the server's root", "bad_path")
    return "/".join(p for p in parts if p != ".")


def check_control(control: Any) -> dict[str, Any] | None:
    if control is None:
        return None
    if not isinstance(control, dict) or control.get("kind") != "break":
        raise bad('\'control\' must be {"kind": "break", "hard"?: bool}', "bad_control")
    if not isinstance(control.get("hard", False), bool):
        raise bad("'control.hard' must be true or false", "bad_control")
    return control


_VIEW_TYPES: dict[str, tuple[type, ...]] = {
    "path": (str,),
    "cell": (str, int),
    "selection": (str,),
}


def check_view(view: Any) -> dict[str, Any] | None:
    if view is None:
        return None
    if not isinstance(view, dict):
        raise bad("'view' must be an object {path?, cell?, selection?}", "bad_view")
    clean: dict[str, Any] = {}
    for key, value in view.items():
        kinds = _VIEW_TYPES.get(key)
        if kinds is None:
            raise bad(f"'view' has an unknown key {key!r}", "bad_view")
        if value is None:
            continue
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise bad(f"'view.{key}' has the wrong type", "bad_view")
        clean[key] = value
    if "path" in clean:
        clean["path"] = check_relative_path(clean["path"], "'view.path'")
    return clean or None
