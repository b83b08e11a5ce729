"""Settings and agents: per-owner tier overrides, the key policy, readiness, model profiles,
agents and their spaces, and the demo model. May import llm/ tiers and profiles, the store.
Used by the assembly, the service and the server's settings routes.
"""
