"""The agent kernelspec's provisioner: where the pool's kernels put their connection file and
how they are wrapped (sandbox).

The ``jupyter-agent`` kernelspec names ``jupyter-agent-provisioner`` (an entry point of
``jupyter_client.kernel_provisioners``). Started by the pool, a kernel's ``start_kernel``
carries one extra keyword, ``jupyter_agent_launch`` (the JSON form of
:class:`~jupyter_agent.runtime.kernels.sandbox.LaunchPlan`); this provisioner then

- writes the connection file at the plan's path (the kernel's private dir, not the
  server's runtime dir),
- switches the kernel to ``interrupt_mode: message`` when the plan says so (a SIGINT sent
  to a bwrap process group kills the sandbox),
- makes the connection file the sandbox user's (``user:NAME``),
- runs the command under the plan's ``python`` when it names one (another environment:
  ``KernelPool.python``),
- prefixes the command (``bwrap ... --``) and adds the Popen ``user``/``group`` arguments.

Without the keyword (the kernelspec chosen in a notebook) it is jupyter_client's
``LocalProvisioner`` unchanged. On a restart jupyter_client passes the same keywords
again, so the plan holds across restarts.
"""

from __future__ import annotations

import os
from typing import Any

from jupyter_client.provisioning.local_provisioner import LocalProvisioner

__all__ = ["LAUNCH_KEY", "PROVISIONER_NAME", "AgentProvisioner"]

#: The name the kernelspec's ``metadata.kernel_provisioner.provisioner_name`` gives.
PROVISIONER_NAME = "jupyter-agent-provisioner"
#: The ``start_kernel`` keyword carrying the launch plan.
LAUNCH_KEY = "jupyter_agent_launch"


class AgentProvisioner(LocalProvisioner):
    """``LocalProvisioner`` that follows the pool's launch plan (see the module docstring)."""

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Place the connection file, then wrap the command the local provisioner built."""
        plan = kwargs.pop(LAUNCH_KEY, None)
        if not isinstance(plan, dict):
            result: dict[str, Any] = await super().pre_launch(**kwargs)
            return result
        km = self.parent
        connection_file = str(plan["connection_file"])
        if km is not None and km.connection_file != connection_file:
            km.connection_file = connection_file
        if plan.get("interrupt_mode"):
            # The kernel's own spec object (loaded for this manager): others are unaffected.
            self.kernel_spec.interrupt_mode = str(plan["interrupt_mode"])
        launch: dict[str, Any] = await super().pre_launch(**kwargs)
        if plan.get("python"):  # another environment (KernelPool.python): its interpreter
            launch["cmd"] = [str(plan["python"]), *launch["cmd"][1:]]
        uid, gid = plan.get("uid"), plan.get("gid")
        if uid is not None and gid is not None:
            os.chown(connection_file, int(uid), int(gid))
            launch["user"], launch["group"], launch["extra_groups"] = int(uid), int(gid), []
        launch["cmd"] = [*plan.get("prefix", []), *launch["cmd"]]
        return launch
