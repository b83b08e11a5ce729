"""The kernel environment filter."""

from __future__ import annotations

import pytest

from jupyter_agent.runtime.kernels.envfilter import filter_env


@pytest.mark.parametrize(
    "name",
    [
        "MY_API_KEY",
        "some_token",
        "X_SECRET_VALUE",
        "DB_PASSWORD",
        "A_CREDENTIAL",
        "JUPYTER_TOKEN",
        "SSH_AUTH_SOCK",
        "AWS_REGION",
        "AZURE_X",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "KEYRING",
    ],
)
def test_secret_names_are_removed(name: str):
    assert filter_env({name: "v", "PATH": "/bin"}, ()) == {"PATH": "/bin"}


@pytest.mark.parametrize(
    "value",
    [
        "postgres://u:p@h/db",
        "https://user:pa%20ss@example.invalid:8080/x",
        "redis://:pw@host:6379/0",
        "see amqp://guest:guest@rabbit/",
    ],
)
def test_urls_with_a_password_are_removed(value: str):
    assert filter_env({"DATABASE_URL": value, "HOME": "/h"}, ()) == {"HOME": "/h"}


@pytest.mark.parametrize(
    "value",
    ["https://example.invalid/path", "postgres://user@h/db", "a:b@c", "mailto:x@example.invalid"],
)
def test_ordinary_values_pass(value: str):
    assert filter_env({"SOME_URL": value}, ()) == {"SOME_URL": value}


def test_keep_lets_named_variables_through():
    env = {"HF_TOKEN": "t", "AWS_REGION": "eu", "DATABASE_URL": "postgres://u:p@h/db", "X": "1"}
    assert filter_env(env, ["AWS_REGION", "DATABASE_URL"]) == {
        "AWS_REGION": "eu",
        "DATABASE_URL": "postgres://u:p@h/db",
        "X": "1",
    }


def test_input_is_not_modified():
    env = {"MY_API_KEY": "k"}
    filter_env(env, ())
    assert env == {"MY_API_KEY": "k"}
