"""Data of the offline demo model: ``demo_script.json``, the fake provider's script.

Data only: imports nothing. Used by :mod:`jupyter_agent.runtime.settings.demo`, which
serves it.
"""
