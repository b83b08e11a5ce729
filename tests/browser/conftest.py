"""Fixtures every browser test module shares: one fake provider and one real ``jupyter
lab`` per module, and pytest-jupyter's autouse fixtures turned off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_agent.llm.fake import FakeProvider
from tests.browser.lab import LabServer


# pytest-jupyter's autouse fixtures break Playwright's sync API at teardown.
@pytest.fixture
def jp_asyncio_loop() -> None:
    return None


@pytest.fixture
def jp_server_cleanup() -> None:
    return None


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([]) as provider:
        yield provider


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    server.start()
    yield server
    server.stop()
