"""The scripted fake model provider: a loopback HTTP server (:mod:`.server`) speaking the real
Anthropic and OpenAI wires (:mod:`.wire`, :mod:`.sse`), its scripts, prompt cache and embeddings.
Imports the stdlib and httpx only. Used by the tests, the offline demo and the benches.
"""
