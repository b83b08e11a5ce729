"""Fixtures every browser test module shares: one fake provider, one real ``jupyter lab``,
one Debian chromium and one page per module (its viewport the module's ``VIEWPORT``, its
console errors kept in ``page.console_errors``), and pytest-jupyter's autouse fixtures
turned off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS, LabServer, open_lab

_VIEWPORT = {"width": 1400, "height": 900}


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def page(request: pytest.FixtureRequest, browser: Browser, lab: LabServer) -> Iterator[Page]:
    context = browser.new_context(viewport=getattr(request.module, "VIEWPORT", _VIEWPORT))
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.console_errors = errors  # type: ignore[attr-defined]
    open_lab(pg, lab)
    yield pg
    context.close()
