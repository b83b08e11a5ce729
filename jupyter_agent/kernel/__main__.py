"""``python -m jupyter_agent.kernel -f CONNECTION_FILE``: launch the agent kernel."""

from __future__ import annotations

from ipykernel.kernelapp import IPKernelApp

from jupyter_agent.kernel.kernel import AgentKernel


def main() -> None:
    """Start an :class:`AgentKernel` (ipykernel's launcher with our kernel class)."""
    IPKernelApp.launch_instance(kernel_class=AgentKernel)


if __name__ == "__main__":
    main()
