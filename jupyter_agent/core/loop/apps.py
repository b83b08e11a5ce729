"""The in-cell apps as data: what the model can call from inside a cell.

An app method is an effect performed by the host (the server), never inside the kernel:
the kernel forwards the call over the kernel protocol, the driver performs and logs it as
an ``app.call`` effect whose ``parent`` is the seq of the cell's ``cell.run``. This module
is the single catalogue (:data:`ALL_APPS`) used by the kernel (to build the proxies), the
driver (to know what is a mutation) and the prompt (one line per method).

The prompt of a program version lists :func:`apps_for` that version
(:attr:`~jupyter_agent.core.loop.features.Features.apps`): an app is listed from its
``since`` version on (``memory`` from ``toolcaller@v4``, ``notebook`` from ``toolcaller@v5``)
(a method from its own ``since``: the ``notebook`` app's look at the person's kernel,
``variables``, ``inspect``, ``kernel_state``, ``fetch`` and ``run``, from ``toolcaller@v8``)
and left out of the older versions' prompts, so their recorded runs replay byte-identically;
the kernel binds every app whatever the version. :data:`APPS` is the list ``toolcaller@v1``
to ``@v3`` were recorded with (``apps_for(3)``). The shapes, :class:`AppSpec` and
:class:`MethodSpec`, are :mod:`jupyter_agent.core.app_spec`'s (also importable from here).
"""

from __future__ import annotations

from dataclasses import replace

from jupyter_agent.core.app_spec import AppSpec, MethodSpec

__all__ = ["ALL_APPS", "APPS", "AppSpec", "MethodSpec", "apps_for", "find_method"]


ALL_APPS: tuple[AppSpec, ...] = (
    AppSpec(
        name="chat",
        doc="The chat this run answers in.",
        methods=(
            MethodSpec(
                name="post",
                signature="chat.post(text: str) -> str",
                doc="Post a progress bubble (not the final reply) to the chat; returns its id.",
                mutation=True,
            ),
        ),
    ),
    AppSpec(
        name="llm",
        doc="Model calls made by the host (no credential ever enters the kernel).",
        methods=(
            MethodSpec(
                name="chat",
                signature=(
                    'llm.chat(messages: list[dict] | str, tier: str = "classify", '
                    "system: str = '') -> str"
                ),
                doc=(
                    "One model call on the classify or vision tier; messages are "
                    '{"role", "content"} dicts or a plain string; returns the reply text.'
                ),
            ),
        ),
    ),
    AppSpec(
        name="memory",
        doc=(
            "Facts that outlive this chat (the person's preferences, project facts), kept on "
            "the server and searchable with the history of earlier chats."
        ),
        since=4,
        methods=(
            MethodSpec(
                name="save",
                signature='memory.save(text: str, category: str = "general") -> str',
                doc=(
                    "Keep one stable fact for later chats under a short category "
                    "(preferences, project, data, ...); returns its id. A text that holds "
                    "a secret or looks like a credential is refused."
                ),
                mutation=True,
            ),
            MethodSpec(
                name="search",
                signature=(
                    "memory.search(query: str, k: int = 5, history: bool = False) -> list[dict]"
                ),
                doc=(
                    "The k facts that best match the query, best first ({kind, id, text, "
                    "score, category, created, ...}); history=True also searches the turns "
                    "and summaries of earlier chats."
                ),
            ),
            MethodSpec(
                name="forget",
                signature="memory.forget(id: str) -> bool",
                doc="Delete a fact by id; False when there is no such fact.",
                mutation=True,
            ),
            MethodSpec(
                name="list",
                signature="memory.list(category: str | None = None) -> list[dict]",
                doc="Every fact (of one category), newest first ({id, text, category, ...}).",
            ),
        ),
    ),
    AppSpec(
        name="notebook",
        doc=(
            "The person's notebooks (contents paths under the server's root). You never "
            "change a notebook yourself: you propose edits, the person applies them."
        ),
        since=5,
        methods=(
            MethodSpec(
                name="read",
                signature="notebook.read(path: str | None = None) -> NotebookView",
                doc=(
                    "The notebook the person has open (or the one at path). End a cell with "
                    "it (nb = notebook.read(); nb) to see its cells: ids, sources, outputs "
                    "digested like cell results; .cells is a list of {id, cell_type, source, "
                    "outputs, execution_count}, .output(cell_id, n) a whole output the "
                    "digest cut."
                ),
            ),
            MethodSpec(
                name="propose",
                signature="notebook.propose(path: str, edits: list[dict]) -> str",
                doc=(
                    "Propose edits by cell id, each with a short reason: "
                    '{"op": "insert", "after": id | None, "source", "cell_type"?}, '
                    '{"op": "replace", "cell_id", "source"}, {"op": "delete", "cell_id"}, '
                    '{"op": "move", "cell_id", "after": id | None}. Returns the proposal id '
                    "at once; the person sees the diff and applies it or not, and you are "
                    "told the outcome."
                ),
                mutation=True,
            ),
            MethodSpec(
                name="variables",
                signature="notebook.variables(path: str | None = None) -> KernelVariables",
                doc=(
                    "The variables of the person's live kernel (of the notebook they have "
                    "open, or the one at path), read-only: name, type and a short shape "
                    "(DataFrame rows x columns with dtypes, ndarray shape and dtype, list "
                    "length, a scalar's repr); modules, functions and _private names left "
                    "out. The person's kernel is never changed by a look."
                ),
                since=8,
            ),
            MethodSpec(
                name="inspect",
                signature="notebook.inspect(name: str, path: str | None = None) -> str",
                doc=(
                    "A richer summary of one of the person's variables (DataFrame: head, "
                    "describe, nulls per column; array: stats; object: repr, attributes)."
                ),
                since=8,
            ),
            MethodSpec(
                name="kernel_state",
                signature="notebook.kernel_state(path: str | None = None) -> dict",
                doc=(
                    "Whether a kernel is attached to the notebook, its language, whether it "
                    "is busy, its execution count and last_error: the traceback of the "
                    "person's most recent failed cell (None when none failed)."
                ),
                since=8,
            ),
            MethodSpec(
                name="fetch",
                signature="notebook.fetch(name: str, path: str | None = None) -> object",
                doc=(
                    "A copy of one of the person's variables in YOUR kernel (df = "
                    "notebook.fetch('df')): work on it freely, the person's stays as it is. "
                    "Values over the server's size limit are refused."
                ),
                since=8,
            ),
            MethodSpec(
                name="run",
                signature="notebook.run(code: str, path: str | None = None) -> dict",
                doc=(
                    "Run code in the PERSON's kernel (it changes their state): the person "
                    "sees the code and approves it first; returns {status, "
                    "execution_count, output}. Only when they asked for it; prefer fetch."
                ),
                mutation=True,
                since=8,
            ),
        ),
    ),
)


def apps_for(version: int) -> tuple[AppSpec, ...]:
    """The apps the system prompt of ``toolcaller@v{version}`` lists, each with the methods
    it lists from their ``since`` on (see the module doc)."""
    out = []
    for app in ALL_APPS:
        if app.since > version:
            continue
        methods = tuple(m for m in app.methods if m.since <= version)
        out.append(app if methods == app.methods else replace(app, methods=methods))
    return tuple(out)


#: The apps of the prompts of ``toolcaller@v1`` to ``@v3`` (as recorded).
APPS: tuple[AppSpec, ...] = apps_for(3)


def find_method(app: str, method: str) -> MethodSpec | None:
    """The spec of ``app.method``, or None when no such app method exists."""
    for spec in ALL_APPS:
        if spec.name == app:
            for m in spec.methods:
                if m.name == method:
                    return m
    return None
