"""The events the panel receives and the steps a run's detail lists: one tagged dataclass
per type (:mod:`.types`, :mod:`.steps`) and their TypeScript mirror (:mod:`.ts_mirror`, which
imports the two; ``python -m jupyter_agent.core.events.ts_mirror`` prints it).
Pure: imports only the codec. Used by the driver, the event bus, the trace views and the
TypeScript generator.
"""
