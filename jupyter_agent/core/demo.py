"""The demo model's name, as every layer reads it.

The labelled demo model (:mod:`jupyter_agent.runtime.settings.demo`) answers when no real
model is configured. Its turn records name it (``llm.model``), and what reads turns back
tells them apart by it: a demo turn is never indexed for recall nor summarised into the
chat's history as if a model had said it (:func:`is_demo_model`).
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEMO_MODEL", "DEMO_STAND_IN", "is_demo_model"]

#: The model name of the demo's tier, turn records and traces.
DEMO_MODEL: Final = "jupyter-agent-demo"
#: What a chunk summary is given for a demo turn's reply (its scripted text is left out).
DEMO_STAND_IN: Final = "[the offline demo model answered this turn: no real model replied]"


def is_demo_model(model: str | None) -> bool:
    """True for the demo model's name."""
    return model == DEMO_MODEL
