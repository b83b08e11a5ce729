"""The credential check of memory texts: what is refused, what passes, and that the reason
never quotes the text."""

from __future__ import annotations

import secrets

import pytest

from jupyter_agent.core.memory.credentials import credential_reason

KNOWN = "plain-known-value-" + secrets.token_hex(6)

REFUSED = [
    ("my key is sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 2, "Anthropic"),
    ("use sk-proj-" + "abcDEF123456ghiJKL789", "API key"),
    ("OPENAI_API_KEY=sk-" + "x" * 40, "API key"),
    ("token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2", "GitHub"),
    ("gho_" + "Z" * 36, "GitHub"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "GitHub"),
    ("slack xoxb-123456789012-abcdefABCDEF", "Slack"),
    ("aws AKIAIOSFODNN7EXAMPLE in prod", "AWS"),
    ("ASIA" + "ABCDEFGHIJ234567", "AWS"),
    ("AIza" + "SyA-1234567890abcdefghijklmnopqrstu", "Google"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", "private key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key"),
    ("-----BEGIN PRIVATE KEY-----", "private key"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "web token",
    ),
    ("Authorization: Bearer abcdefghijklmnop1234", "bearer"),
    ("postgres://admin:hunter22@db.example.com/prod", "URL with a password"),
    ("the db password: hunter2", "password"),
    ("password=correcthorsebattery", "password"),
    ('"api_key": "abcd1234"', "password"),
    ("DB_PASSWORD = s3cr3t!", "password"),
    ("client_secret: 9f8e7d6c", "password"),
    ("API-KEY: zz99", "password"),
    ("token = 12345678", "password"),
    ("here: Qm9vZ1R4aXpQa3J3bE5tTjJ4YnV5ZEh6S1l3VXQ4", "random token"),
    ("hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7", "Hugging Face"),
    ("push with glpat-" + "a1B2c3D4e5F6g7H8i9J0", "GitLab"),
    ("the key is " + "3f8a9c1e5b7d8f0a1c2e3f4a5b6c7d8e", "key"),
    ("api_key: " + "3f8a9c1e5b7d8f0a1c2e3f4a5b6c7d8e9f0a", "key"),
    ("token " + "0123456789abcdef" * 3, "key"),
    ("password is hunter2", "password"),
    ("my password: hunter2", "password"),
    ("The DB password was s3cr3t!.", "password"),
    ("apiKey = 'zz99zz99'", "password"),
    ("note: password=abc12345", "password"),  # a second candidate after a first
    # Command-line flags, a credential word at a name's end, other separators.
    ("run it with --password=hunter2x", "password"),
    ("--api-key=abc123def", "password"),
    ("--token=abc123def", "password"),
    ("PGPASSWORD=hunter2 psql", "password"),
    ("mypassword: hunter22", "password"),
    ("rootpassword=hunter22", "password"),
    ("My password is: hunter2", "password"),
    ('password := "hunter2x"', "password"),
    ("'password' => 'hunter2x'", "password"),
    # A number is a password's value; an all-caps word without ``_`` names no variable.
    ("password: 123456", "password"),
    ("secret = 98765", "password"),
    ("api_key: ABCDEFGH", "password"),
    (f"the value {KNOWN} again", "knows"),
    ("saved [redacted: ANTHROPIC_API_KEY] here", "redacted"),
]

ALLOWED = [
    "The person prefers pandas over polars.",
    "Project data lives in data/sales_2024.parquet",
    "Use the task-list-manager for TODOs",  # "sk-" inside a word
    "The token budget is 800 tokens per run",
    "token: usage",  # a word, not a value
    "password: none",
    "Deadline for the report is 2025-03-01",
    "commit 3f2a9c1e5b7d8f0a1c2e3f4a5b6c7d8e9f0a1b2c is the release",  # hex: lower + digits
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "/home/User/Projects/Data2024/some_file_name_here.csv is the input",
    "secrets are managed in Vault",
    "I like the Bearer of good news",
    "see https://example.com/path?x=1",
    "ssh user@host is the login",
    "Kurzer Text auf Deutsch: Größe ändern",
    "ThisIsAnIdentifierInCamelCaseWithoutDigits",
    # A credential word only counts whole, and a value that names where a secret lives
    # (an environment variable, a lookup) or is a plain number is no secret.
    "Our max_tokens: 4096",
    "Use token: GITHUB_TOKEN",
    "api_key = os.environ['OPENAI_API_KEY']",
    'token = os.getenv("HF_TOKEN")',
    "password: $DB_PASSWORD",
    "column name ProductCategoryIdentifier2024Version3",
    "The tokens limit is 8k",
    "token_limit: 4096",
    "the token budget is 800",
    "The password is required for login.",
    "tokenizer: bpe50k",
    "the key is in the drawer",
    "sha256 digest " + "3f8a9c1e5b7d8f0a1c2e3f4a5b6c7d8e" * 2,
    # A value that refers to where the secret is held is no secret.
    "password=self.password",
    "api_key = settings.OPENAI_API_KEY",
    "password = getpass()",
    "token = request.headers['X-Token']",
    "token: GITHUB_TOKEN",
    "max_tokens: 4096",
    "tokenizer: bpe50k",
    "run with --max-tokens=4096",
]


@pytest.mark.parametrize(("text", "word"), REFUSED)
def test_credential_like_texts_are_refused_with_a_reason_that_quotes_nothing(
    text: str, word: str
) -> None:
    reason = credential_reason(text, [KNOWN, "short"])
    assert reason is not None, text
    assert word.lower() in reason.lower(), (text, reason)
    # The reason names a kind, never any part of the value (a value has a digit or is
    # long; the reason's own words, "password" or "key", may be in the text too).
    for piece in text.replace(":", " ").replace("=", " ").split():
        if len(piece) >= 12 or any(ch.isdigit() for ch in piece):
            assert piece not in reason, (piece, reason)
            assert piece[:8] not in reason, (piece, reason)


@pytest.mark.parametrize("text", ALLOWED)
def test_ordinary_facts_pass(text: str) -> None:
    assert credential_reason(text, [KNOWN]) is None


def test_short_known_values_are_not_looked_for() -> None:
    # A known value under 8 chars would refuse every text holding "true" or "1234".
    assert credential_reason("the flag is true", ["true"]) is None
    assert credential_reason("x " + KNOWN, [KNOWN]) is not None


def test_a_long_text_is_checked_in_linear_time() -> None:
    import time

    start = time.perf_counter()
    texts = (
        "a" * 2000,
        "password" * 250,
        "-" * 2000,
        "sk-" * 600,
        "eyJ." * 500,
        "password: " * 200,
        "a " * 1000,
        "a: " * 700,
        "key is " * 300,
        "key " + "0" * 2000 + "z",
        ("key " + "a" * 31 + " ") * 60,
        "x" * 60 + "\t" * 2000 + ":",
        "ab_cd-" * 400,
        "Ab1" * 700,
        "https://" + "u" * 2000,
        "a://b:c" * 300,
    )
    # Each text ten times over (~20,000 chars): a check that rescans from every position
    # (as a URL pattern without a word start did) takes seconds on one of these alone.
    for text in texts:
        credential_reason(text * 10, [KNOWN])
    assert time.perf_counter() - start < 3.0
