"""What a deploy's check process says reaches the server scrubbed of known secrets.

The check process runs the program's code; with no sandbox it can read what the server's
user can (``/proc/<server>/environ``), and whatever it prints or raises becomes the
refusal's message and the server's log line. Known secrets in it are redacted.
"""

from __future__ import annotations

import pytest

from jupyter_agent.exceptions import ProgramRefused
from jupyter_agent.programs.check_process import CheckProcess
from jupyter_agent.programs.deploy_checks import check_static
from jupyter_agent.runtime.secrets import Scrubber

SECRET = "sk-check-secret-0123456789abcdef"

LEAKER = f"""import sys
sys.stderr.write("stderr: {SECRET}\\n")
raise RuntimeError("found {SECRET}")
"""


@pytest.mark.timeout(60)
async def test_a_refusal_names_no_known_secret() -> None:
    checked = check_static("toolcaller", {"program.py": LEAKER})
    scrubber = Scrubber({SECRET: "A_KEY"})
    with pytest.raises(ProgramRefused) as info:
        await CheckProcess(timeout_s=20, clean=scrubber.clean).run(checked)
    assert SECRET not in info.value.message
    assert "[redacted: A_KEY]" in info.value.message
    # without a scrubber the same program's text comes back as it was (the test can fail)
    with pytest.raises(ProgramRefused) as plain:
        await CheckProcess(timeout_s=20).run(checked)
    assert SECRET in plain.value.message
