"""Data of the offline demo model: ``demo_script.json``, the fake provider's script.

See :mod:`jupyter_agent.runtime.settings.demo` for how it is served.
"""
