"""The agent's REST routes as methods: one per route, each answering the route's JSON.

:class:`AgentClient` adds them to :class:`~jupyter_agent.client.http.HttpClient`, whose
contracts (the address, the token, what every failure becomes) they keep.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from jupyter_agent.client.events import read_events
from jupyter_agent.client.http import HttpClient, seg

__all__ = ["AgentClient"]


class AgentClient(HttpClient):
    """A synchronous client of one server's agent API; :meth:`events` is asynchronous."""

    # --- status and settings -----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """``GET agent/status``: ``{version, tiers, demo}``."""
        return dict(self._json("GET", "agent/status"))

    def settings(self) -> dict[str, Any]:
        """``GET agent/settings``: the effective settings."""
        return dict(self._json("GET", "agent/settings"))

    def put_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``PUT agent/settings``; returns the effective settings."""
        return dict(self._json("PUT", "agent/settings", body=settings))

    # --- chats -------------------------------------------------------------------------

    def chats(self) -> list[dict[str, Any]]:
        """``GET agent/chats``: the chats."""
        return list(self._json("GET", "agent/chats").get("chats", []))

    def create_chat(self, title: str | None = None, *, agent: str | None = None) -> dict[str, Any]:
        """``POST agent/chats``: the new chat, of ``agent`` (None: the server's default)."""
        body: dict[str, Any] = {"title": title} if title is not None else {}
        if agent is not None:
            body["agent"] = agent
        return dict(self._json("POST", "agent/chats", body=body))

    def import_chat(self, notebook: dict[str, Any], *, title: str | None = None) -> dict[str, Any]:
        """``POST agent/chats/import``: the new chat made from an exported chat notebook
        (its nbformat JSON), named ``title`` (None: the server's default)."""
        body: dict[str, Any] = {"notebook": notebook}
        if title is not None:
            body["title"] = title
        return dict(self._json("POST", "agent/chats/import", body=body))

    def agents(self) -> list[dict[str, Any]]:
        """``GET agent/agents``: the agents the server hosts, the default one first."""
        return list(self._json("GET", "agent/agents").get("agents", []))

    def rename_chat(self, chat_id: str, title: str) -> dict[str, Any]:
        """``PATCH agent/chats/{id}``: the renamed chat."""
        return dict(self._json("PATCH", f"agent/chats/{seg(chat_id)}", body={"title": title}))

    def delete_chat(self, chat_id: str) -> None:
        """``DELETE agent/chats/{id}``."""
        self._request("DELETE", f"agent/chats/{seg(chat_id)}")

    def chat(self, chat_id: str) -> dict[str, Any]:
        """``GET agent/chats/{id}``: the chat with its ``turns``, oldest first."""
        return dict(self._json("GET", f"agent/chats/{seg(chat_id)}"))

    def chat_notebook(self, chat_id: str) -> dict[str, Any]:
        """``GET agent/chats/{id}/notebook``: the whole chat as notebook JSON."""
        return dict(self._json("GET", f"agent/chats/{seg(chat_id)}/notebook"))

    def write_chat_notebook(self, chat_id: str) -> dict[str, Any]:
        """``POST agent/chats/{id}/notebook``: the chat exported into the server's trace
        folder under a fresh name; ``{path, created}``."""
        return dict(self._json("POST", f"agent/chats/{seg(chat_id)}/notebook", body={}))

    def send(
        self,
        chat_id: str,
        text: str,
        view: dict[str, Any] | None = None,
        attachments: list[str] | None = None,
        control: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``POST agent/chats/{id}/messages``: ``{run_id, routed}``."""
        body: dict[str, Any] = {"text": text}
        if view is not None:
            body["view"] = view
        if attachments is not None:
            body["attachments"] = attachments
        if control is not None:
            body["control"] = control
        return dict(self._json("POST", f"agent/chats/{seg(chat_id)}/messages", body=body))

    # --- runs --------------------------------------------------------------------------

    def runs(
        self,
        program: str | None = None,
        limit: int | None = None,
        before: str | None = None,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """``GET agent/runs``: ``{runs: [summary], next}``, newest first; ``owner`` (an
        admin's): that owner's runs, ``*`` every owner's (else the caller's own)."""
        params = {"program": program, "limit": limit, "before": before, "owner": owner}
        return dict(self._json("GET", "agent/runs", params=params))

    def run(self, run_id: str, full: bool = False) -> dict[str, Any]:
        """``GET agent/runs/{run_id}``: the turn record and the effect log (large fields cut
        by the server unless ``full``: ``?full=1``)."""
        params = {"full": "1"} if full else None
        return dict(self._json("GET", f"agent/runs/{seg(run_id)}", params=params))

    def run_log(self, run_id: str) -> str:
        """``GET agent/runs/{run_id}?log=raw``: the run's JSONL effect log, as written."""
        return self._request("GET", f"agent/runs/{seg(run_id)}", params={"log": "raw"}).text

    def run_stats(self, run_id: str) -> dict[str, Any]:
        """``GET agent/runs/{run_id}/stats``: per model call usage and cost, and totals."""
        return dict(self._json("GET", f"agent/runs/{seg(run_id)}/stats"))

    def rerun(
        self, run_id: str, *, model: str | None = None, program: str | None = None
    ) -> dict[str, Any]:
        """``POST agent/runs/{run_id}/rerun``: ``{run_id, rerun_of, program, model}``."""
        body = {k: v for k, v in (("model", model), ("program", program)) if v}
        return dict(self._json("POST", f"agent/runs/{seg(run_id)}/rerun", body=body))

    def start_eval(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST agent/evals``: the eval's state (``running``)."""
        return dict(self._json("POST", "agent/evals", body=body))

    def eval_state(self, eval_id: str) -> dict[str, Any]:
        """``GET agent/evals/{eval_id}``: the eval's state, its results, its report."""
        return dict(self._json("GET", f"agent/evals/{seg(eval_id)}"))

    def run_notebook(self, run_id: str) -> dict[str, Any]:
        """``GET agent/runs/{run_id}/notebook``: the turn as notebook JSON (nbformat v4)."""
        return dict(self._json("GET", f"agent/runs/{seg(run_id)}/notebook"))

    def write_run_notebook(
        self, run_id: str, path: str | None = None, *, overwrite: bool = False
    ) -> dict[str, Any]:
        """``POST agent/runs/{run_id}/notebook``: ``{path, created}``. Without ``path``, into
        the server's trace folder under a fresh name; with it, there (``overwrite`` to
        replace an existing file)."""
        body: dict[str, Any] = {"path": path} if path is not None else {}
        if overwrite:
            body["overwrite"] = True
        return dict(self._json("POST", f"agent/runs/{seg(run_id)}/notebook", body=body))

    def break_run(self, run_id: str, hard: bool = False) -> dict[str, Any]:
        """``POST agent/break/{run_id}``: ``{run_id, state}``."""
        return dict(self._json("POST", f"agent/break/{seg(run_id)}", body={"hard": hard}))

    # --- proposals -----------------------------------------------------------

    def proposals(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """``GET agent/proposals?chat_id=``: the proposals (of one chat), oldest first."""
        body = self._json("GET", "agent/proposals", params={"chat_id": chat_id})
        return list(body["proposals"])

    def decide_proposal(
        self, run_id: str, proposal_id: str, *, apply: bool, cells: list[str] | None = None
    ) -> str:
        """``POST agent/runs/{run_id}/proposals/{proposal_id}``: apply (all, or the edits
        of ``cells``) or discard; the outcome. A conflict is a ClientError 409."""
        body: dict[str, Any] = {"apply": apply}
        if cells is not None:
            body["cells"] = cells
        path = f"agent/runs/{seg(run_id)}/proposals/{seg(proposal_id)}"
        return str(self._json("POST", path, body=body)["outcome"])

    def undo_proposal(self, proposal_id: str) -> str:
        """``POST agent/proposals/{proposal_id}/undo``: the outcome (``undone``)."""
        path = f"agent/proposals/{seg(proposal_id)}/undo"
        return str(self._json("POST", path)["outcome"])

    def approve(
        self, run_id: str, approval_id: str, *, approve: bool = True, rest_of_turn: bool = False
    ) -> dict[str, Any]:
        """``POST agent/runs/{run_id}/approvals/{approval_id}``: answer a run's wait for the
        person (``toolcaller@v5``); ``{run_id, approval_id, approve, rest_of_turn}``."""
        path = f"agent/runs/{seg(run_id)}/approvals/{seg(approval_id)}"
        body = {"approve": approve, "rest_of_turn": rest_of_turn}
        return dict(self._json("POST", path, body=body))

    # --- memories ----------------------------------------------------------------------

    def memories(
        self, q: str | None = None, category: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """``GET agent/memories``: ``{memories, categories}`` (with ``q``: ranked, each
        with its ``score``; else the newest first)."""
        params = {"q": q, "category": category, "limit": limit}
        return dict(self._json("GET", "agent/memories", params=params))

    def list_memories(
        self, q: str | None = None, category: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The ``memories`` of :meth:`memories`."""
        return list(self.memories(q, category, limit).get("memories", []))

    def get_memory(self, memory_id: str) -> dict[str, Any]:
        """``GET agent/memories/{id}``: the fact."""
        return dict(self._json("GET", f"agent/memories/{seg(memory_id)}"))

    def add_memory(self, text: str, category: str | None = None) -> dict[str, Any]:
        """``POST agent/memories``: the new fact (the person's)."""
        body: dict[str, Any] = {"text": text}
        if category is not None:
            body["category"] = category
        return dict(self._json("POST", "agent/memories", body=body))

    def update_memory(
        self, memory_id: str, text: str | None = None, category: str | None = None
    ) -> dict[str, Any]:
        """``PATCH agent/memories/{id}``: the changed fact."""
        body = {k: v for k, v in (("text", text), ("category", category)) if v is not None}
        return dict(self._json("PATCH", f"agent/memories/{seg(memory_id)}", body=body))

    def delete_memory(self, memory_id: str) -> None:
        """``DELETE agent/memories/{id}``."""
        self._request("DELETE", f"agent/memories/{seg(memory_id)}")

    # --- programs -------------------------------------------------------------

    def programs(self) -> dict[str, Any]:
        """``GET agent/programs``: ``{programs: [{name, kind, versions, active}]}``."""
        return dict(self._json("GET", "agent/programs"))

    def program(self, name_or_ref: str) -> dict[str, Any]:
        """``GET agent/programs/{name}`` or ``{name}@v{N}``: one version with its ``files``
        (a ``#hash`` suffix is dropped)."""
        key = name_or_ref.split("#", 1)[0]
        return dict(self._json("GET", f"agent/programs/{seg(key)}"))

    def deploy(
        self,
        name: str,
        files: dict[str, str],
        agent: str | None = None,
        activate: bool = True,
    ) -> dict[str, Any]:
        """``POST agent/programs/{name}``: ``{program, active}`` (admin)."""
        body: dict[str, Any] = {"files": files, "activate": activate}
        if agent:
            body["agent"] = agent
        return dict(self._json("POST", f"agent/programs/{seg(name)}", body=body))

    def rollback(
        self, name: str, agent: str | None = None, to: int | None = None
    ) -> dict[str, Any]:
        """``POST agent/programs/{name}/rollback``: ``{active}`` (admin)."""
        body: dict[str, Any] = {}
        if agent:
            body["agent"] = agent
        if to is not None:
            body["to"] = to
        return dict(self._json("POST", f"agent/programs/{seg(name)}/rollback", body=body))

    # --- events ------------------------------------------------------------------------

    def events_url(self, chat_id: str, since: int = 0) -> str:
        """The WebSocket URL of a chat's events (``ws://`` or ``wss://``; no token in it)."""
        parts = urlsplit(self._addr)
        scheme = "wss" if parts.scheme == "https" else "ws"
        path = f"{parts.path}agent/chats/{seg(chat_id)}/events"
        return urlunsplit((scheme, parts.netloc, path, f"since={int(since)}", ""))

    async def events(self, chat_id: str, since: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The chat's events from ``since`` on, as dicts, until the server closes the socket.

        Stopping the iteration (``break``, cancellation) closes the socket
        (:func:`~jupyter_agent.client.events.read_events`).
        """
        refused = lambda: self._refused("")  # noqa: E731
        socket = read_events(
            self.events_url(chat_id, since),
            self._token,
            timeout=self._timeout,
            shown=self._shown,
            refused=refused,
            failure=self._failure,
        )
        async with contextlib.aclosing(socket) as events:  # the socket closes with us
            async for event in events:
                yield event
