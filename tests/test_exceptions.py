"""The error tree: one root, every class in the docstring's tree, the reason codes, and the
compatibility names the other modules still export."""

from __future__ import annotations

import re

import pytest

from jupyter_agent import exceptions
from jupyter_agent.exceptions import (
    AgentError,
    BadRequest,
    ClientError,
    CliFailure,
    Conflict,
    Forbidden,
    NotFound,
    NotSupported,
    PayloadTooLarge,
    RequestError,
    SettingsError,
    StoreError,
    StoreUnavailable,
    Unavailable,
)


def _tree() -> list[type[BaseException]]:
    """Every class under AgentError (and AgentError itself)."""
    found: list[type[BaseException]] = [AgentError]
    for cls in found:
        found.extend(sub for sub in cls.__subclasses__() if sub not in found)
    return found


def test_every_class_is_in_the_docstring_tree_and_exported() -> None:
    doc = exceptions.__doc__ or ""
    tree = doc.split("::", 1)[1]
    named = set(re.findall(r"[├└│ ]── (\w+)", tree)) | {"AgentError", "RunCancelled"}
    for cls in _tree():
        if cls.__module__ != exceptions.__name__:
            continue  # a test's or another module's subclass
        assert cls.__name__ in named, f"{cls.__name__} is missing from the docstring's tree"
        assert cls.__name__ in exceptions.__all__, cls.__name__
    for name in named:
        assert name in exceptions.__all__, name


def test_the_four_old_roots_are_in_the_tree_under_their_old_names() -> None:
    from jupyter_agent import client
    from jupyter_agent.cli import trace as cli_trace
    from jupyter_agent.runtime.settings import overrides as settings

    assert client.ClientError is ClientError
    assert settings.SettingsError is SettingsError
    assert cli_trace.CliFailure is CliFailure
    for cls in (ClientError, SettingsError, CliFailure):
        assert issubclass(cls, AgentError)
    assert issubclass(SettingsError, BadRequest)
    assert issubclass(CliFailure, ClientError)


@pytest.mark.parametrize(
    ("cls", "reason"),
    [
        (BadRequest, "bad_request"),
        (SettingsError, "bad_settings"),
        (Forbidden, "forbidden"),
        (NotFound, "not_found"),
        (Conflict, "exists"),
        (PayloadTooLarge, "body_too_large"),
        (NotSupported, "not_supported"),
        (Unavailable, "unavailable"),
    ],
)
def test_request_errors_carry_a_message_and_a_reason(cls: type[RequestError], reason: str) -> None:
    error = cls("what went wrong")
    assert (str(error), error.message, error.reason) == (
        "what went wrong",
        "what went wrong",
        reason,
    )
    assert cls("x", reason="bad_text").reason == "bad_text"
    assert "what went wrong" in repr(error)


def test_store_unavailable_is_both_a_store_error_and_unavailable() -> None:
    error = StoreUnavailable("database is locked")
    assert isinstance(error, StoreError)
    assert isinstance(error, Unavailable)
    assert error.reason == "unavailable"
    assert error.retry_after_s == 5
    assert Unavailable("down").retry_after_s is None


def test_client_errors_keep_their_attributes() -> None:
    error = ClientError(404, "no run", "not_found", addr="http://h/")
    assert (error.status, error.message, error.reason, error.addr) == (
        404,
        "no run",
        "not_found",
        "http://h/",
    )
    assert str(error) == "no run"
    failure = CliFailure("no such log file: x")
    assert (failure.status, failure.reason, failure.addr) == (None, None, None)
    assert str(failure) == "no such log file: x"
    assert repr(failure).startswith("CliFailure(")
