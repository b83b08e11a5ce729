"""The ``fake_provider`` fixture: start a scripted fake model provider on loopback.

``fake = fake_provider(script, expect_key=None, prefix_cache=False, **options)`` starts a
:class:`~jupyter_agent.llm.fake.server.FakeProvider` (see ``docs/fake-script.md``) and stops it at
teardown. Anthropic base URL: ``fake.base_url``; OpenAI base URL: ``fake.base_url + "/v1"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.fake.script import Script
from jupyter_agent.llm.fake.server import FakeProvider

FakeFactory = Callable[..., FakeProvider]


@pytest.fixture
def fake_provider() -> Iterator[FakeFactory]:
    started: list[FakeProvider] = []

    def start(
        script: Script | list[Any] | dict[str, Any] | str | Path,
        *,
        expect_key: str | None = None,
        prefix_cache: bool = False,
        **options: Any,
    ) -> FakeProvider:
        fake = FakeProvider(
            script, expect_key=expect_key, prefix_cache=prefix_cache, **options
        ).start()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()
