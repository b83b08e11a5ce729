"""The Jupyter Server extension: the only place effects happen, and the REST/WebSocket API."""
