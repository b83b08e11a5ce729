"""The ``jupyter agent`` command line: one module per verb group (trace, replay, memory,
program), :mod:`.options` (what the verbs share), the rendering of what they print, and
:mod:`.main` (the parser, ``main``; it imports the verbs, never the reverse).
May import the client, trace/, core/ and the top-level contracts;
never server/ or runtime/ internals.
Used by the ``jupyter-agent`` console script and ``jupyter agent``.
"""
