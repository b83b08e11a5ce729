"""Model access: one adapter module per provider, profiles, tool modes, the transport.

Adapters are pure (``build_request`` -> :class:`~jupyter_agent.llm.spec.RequestSpec`,
``parse_reply`` -> :class:`~jupyter_agent.messages.LLMReply`); only ``transport.py`` (and
the fake provider, which serves HTTP) imports httpx. Imports the top-level contracts
(effects, messages, tools), never core/. Used by core/ (the chat call), runtime/, trace/
and the server (the transport, embeddings).
"""
