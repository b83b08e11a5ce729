"""Programs as deployable units (issue 16): references, the built-in base layer, the
deployed versions' files, loading, the deploy checks and the registry runs resolve through.

A program is a named, versioned unit with an entry point of the loop's shape: a pure
generator function ``(run_id, chat_id) -> EffectGen`` that reaches the world only through
the effect catalogue. See ``docs/programs.md``.
"""
