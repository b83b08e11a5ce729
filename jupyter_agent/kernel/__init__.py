"""The agent kernel: an IPython kernel whose namespace is run_cell's environment."""
