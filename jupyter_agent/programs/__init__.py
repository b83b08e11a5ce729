"""Programs as deployable units: references, the built-in base layer, the
deployed versions' files, loading, the deploy checks and the registry runs resolve through.

A program is a named, versioned unit with an entry point of the loop's shape: a pure
generator function ``(run_id, chat_id) -> EffectGen`` that reaches the world only through
the effect catalogue. See ``docs/programs.md``.

Imports core/ (the built-in programs), store/ (program rows), trace/ (the deploy checks'
replays) and runtime/kernels (the check process's sandbox). Used by the assembly,
runtime/programs, cli/, and (references, the built-ins) by store/ and trace/.
"""
