"""Fault injection: every fault ends with a clear turn, nothing acknowledged is lost.

Real ``jupyter server`` subprocesses (:mod:`tests.faults.server`) with the scripted fake
provider over loopback; the server is killed with the effect log's hook
(``JUPYTER_AGENT_FAULT``, ``docs/fault-injection.md``). Where each fault is covered:

==========================================  ===================================================
fault                                        tests
==========================================  ===================================================
server SIGKILLed before/after a model call,  ``test_crash_boundaries.py`` (real server, restart);
a cell, the reply, the turn write            in process: ``tests/runtime/test_scenarios.py``
                                             ``::test_crash_recovery_writes_a_minimal_turn``
steering message queued, then a crash        ``test_crash_boundaries.py``; in process:
                                             ``tests/runtime/test_durability.py``
store locked / unwritable at any point       ``tests/runtime/test_durability.py``,
                                             ``tests/server/test_store_faults.py``,
                                             ``tests/store/test_file_faults.py``
the hook itself; effect logs 0600            ``test_fault_hook.py``; ``tests/trace/test_log.py``
provider 429 then success                    ``test_provider_faults.py``; transport:
                                             ``tests/llm/test_transport.py`` (retry-after forms,
                                             cap)
provider 5xx (retries run out)               ``test_provider_faults.py``; transport: retryable /
                                             terminal statuses, attempts running out
provider hangs past the deadline             ``test_provider_faults.py``; transport: deadline,
                                             deadline over backoff
malformed body                               ``test_provider_faults.py``; transport (JSON, SSE)
error event mid-stream                       ``test_provider_faults.py``; transport (after
                                             deltas: error; before: retried)
provider 401 / bad tier                      ``tests/runtime/test_scenarios.py`` (in process)
kernel killed mid-cell                       ``test_kernel_faults.py``; handle:
                                             ``tests/runtime/test_kernels.py``
cell hanging past ``cell_timeout_s``         ``test_kernel_faults.py``; handle: runaway cell
cell ignoring SIGINT past the timeout        ``test_kernel_faults.py``; handle: restart, output
                                             kept (``tests/runtime/test_live_kernel.py``)
a cell printing 1M values                    ``test_kernel_faults.py``; kernel:
                                             ``tests/kernel/test_agent_kernel.py``; digest:
                                             ``tests/core/test_digest.py``
==========================================  ===================================================
"""
