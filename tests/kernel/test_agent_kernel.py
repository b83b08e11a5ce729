"""The agent kernel driven through jupyter_client: structured results, values, apps, sh."""

from __future__ import annotations

import re

import pytest

from jupyter_agent.core.digest.cells import OmittedPrints
from jupyter_agent.kernel.capture import PRINTS_HEAD, PRINTS_TAIL
from jupyter_agent.runtime.kernels.pool import AgentKernelHandle
from tests.plugins.kernels import RecordingHost


async def test_print_calls_and_stdout_bursts_are_numbered(agent_kernel: AgentKernelHandle):
    code = (
        'print("one")\n'
        'print("two", "parts", sep="-")\n'
        'print("no newline", end="")\n'
        'print("after")\n'
        "import sys\n"
        'sys.stdout.write("burst "); sys.stdout.write("one"); sys.stdout.flush()\n'
        'sys.stdout.write("burst two\\n")\n'
        'print("last print")\n'
    )
    result = await agent_kernel.run_cell("c1", code, timeout_s=30)
    assert result.error is None
    assert [v.text for v in result.prints] == [
        "one",
        "two-parts",
        "no newline",
        "after",
        "burst one",
        "burst two",
        "last print",
    ]
    assert result.outputs[0] == {
        "output_type": "stream",
        "name": "stdout",
        "text": "one\ntwo-parts\nno newlineafter\nburst oneburst two\nlast print\n",
    }


async def test_print_writing_many_chunks_is_one_value(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell("c1", 'print(*range(50), sep="\\n")', timeout_s=30)
    assert len(result.prints) == 1
    assert result.prints[0].text == "\n".join(map(str, range(50)))


async def test_last_value_is_kept_as_object(agent_kernel: AgentKernelHandle):
    first = await agent_kernel.run_cell("c1", "x = {'a': [1, 2]}\nx", timeout_s=30)
    assert first.last is not None
    assert first.last.repr.text == "{'a': [1, 2]}"
    assert first.last.type_name == "dict"
    assert first.execution_count == 1
    assert {
        "output_type": "execute_result",
        "data": {"text/plain": "{'a': [1, 2]}"},
        "metadata": {},
        "execution_count": 1,
    } in first.outputs
    second = await agent_kernel.run_cell(
        "c2", 'v = values.get("c1", "last")\nprint(v is x, type(v).__name__)', timeout_s=30
    )
    assert [p.text for p in second.prints] == ["True dict"]
    assert second.last is None


async def test_large_value_is_cut_and_kept_whole(agent_kernel: AgentKernelHandle):
    big = await agent_kernel.run_cell("c1", 'print("x" * 1_000_000)', timeout_s=30)
    (value,) = big.prints
    assert value.chars == 1_000_000
    assert len(value.text) < 100_000
    assert value.truncated
    assert big.outputs_truncated
    again = await agent_kernel.run_cell(
        "c2", 'print(len(values.get("c1", 1)), set(values.get("c1", 1)))', timeout_s=30
    )
    assert [p.text for p in again.prints] == ["1000000 {'x'}"]


async def test_values_errors_are_clear(agent_kernel: AgentKernelHandle):
    await agent_kernel.run_cell("c1", 'print("a")', timeout_s=30)
    missing = await agent_kernel.run_cell("c2", 'values.get("c9", 1)', timeout_s=30)
    assert missing.error is not None
    assert missing.error.ename == "ValueNotFound"
    assert "c9" in missing.error.evalue
    assert "c1" in missing.error.evalue
    out_of_range = await agent_kernel.run_cell("c3", 'values.get("c1", 2)', timeout_s=30)
    assert out_of_range.error is not None
    assert "printed 1 value" in out_of_range.error.evalue


async def test_exception_gives_error_result(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell(
        "c1", 'print("before")\ndef f():\n    raise ValueError("bad thing")\nf()', timeout_s=30
    )
    assert result.failed
    assert result.error is not None
    assert result.error.ename == "ValueError"
    assert result.error.evalue == "bad thing"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(result.error.traceback))
    assert "----> 4 f()" in plain
    assert 'raise ValueError("bad thing")' in plain
    assert [p.text for p in result.prints] == ["before"]
    assert result.outputs[-1]["output_type"] == "error"
    assert result.outputs[-1]["ename"] == "ValueError"


async def test_stderr_is_apart(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell(
        "c1", 'import sys\nprint("out")\nprint("err", file=sys.stderr)', timeout_s=30
    )
    assert [p.text for p in result.prints] == ["out"]
    assert result.stderr is not None
    assert result.stderr.text == "err\n"


async def test_matplotlib_shows_png_and_display_is_captured(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell(
        "c1",
        "import matplotlib.pyplot as plt\n"
        "from IPython.display import display, HTML\n"
        'display(HTML("<b>hi</b>"))\n'
        "plt.plot([1, 2, 3]);\n",
        timeout_s=60,
    )
    assert result.error is None, result.error
    assert result.displays[0]["text/html"] == "<b>hi</b>"
    assert any("image/png" in d for d in result.displays)
    kinds = [o["output_type"] for o in result.outputs]
    assert kinds.count("display_data") == 2


async def test_sequential_app_calls_are_recorded_in_order(agent_kernel: AgentKernelHandle):
    host = RecordingHost()
    code = (
        'a = chat.post("working")\n'
        'b = llm.chat("q1")\n'
        'c = llm.chat([{"role": "user", "content": "q2"}], tier="vision")\n'
        'd = llm.chat("q3", system="be brief")\n'
        "print(a, b, c, d)"
    )
    result = await agent_kernel.run_cell("c1", code, timeout_s=30, host=host, parent=7)
    assert result.error is None, result.error
    assert [(c.app, c.method, c.seq) for c in result.app_calls] == [
        ("chat", "post", 101),
        ("llm", "chat", 102),
        ("llm", "chat", 103),
        ("llm", "chat", 104),
    ]
    assert result.app_calls[0].mutation
    assert not result.app_calls[1].mutation
    assert result.app_calls[1].args == {"messages": "q1", "tier": "classify", "system": ""}
    assert [p.text for p in result.prints] == [
        "chat.post#101 llm.chat#102 llm.chat#103 llm.chat#104"
    ]
    assert [c[3] for c in host.calls] == [7, 7, 7, 7]
    assert agent_kernel.stdin_round_trips == 4


async def test_failed_app_call_raises_app_call_error(agent_kernel: AgentKernelHandle):
    host = RecordingHost(fail=("chat.post",))
    result = await agent_kernel.run_cell(
        "c1",
        'try:\n    chat.post("x")\nexcept AppCallError as e:\n    print("caught", e)\n'
        'chat.post("y")',
        timeout_s=30,
        host=host,
    )
    assert [p.text for p in result.prints] == ["caught chat.post refused"], result
    assert result.error is not None
    assert result.error.ename == "AppCallError"
    assert [(c.ok, c.error) for c in result.app_calls] == [
        (False, "chat.post refused"),
        (False, "chat.post refused"),
    ]


async def test_batch_of_five_is_one_round_trip(agent_kernel: AgentKernelHandle):
    host = RecordingHost(delay_s=0.2, fail=("chat.post",))
    code = (
        'rs = batch(*[llm.chat.spec(f"q{i}") for i in range(4)], ("chat", "post", {"text": "t"}))\n'
        "print([r.ok for r in rs])\n"
        "print(rs[0].unwrap(), rs[4].error)"
    )
    result = await agent_kernel.run_cell("c1", code, timeout_s=30, host=host)
    assert result.error is None, result.error
    assert agent_kernel.stdin_round_trips == 1
    assert len(host.calls) == 5
    assert host.max_in_flight == 5  # performed concurrently by the host
    assert next(p.text for p in result.prints) == "[True, True, True, True, False]"
    assert result.prints[1].text.endswith("chat.post refused")
    assert len(result.app_calls) == 5
    assert {c.batch for c in result.app_calls} == {1}
    assert [c.args["messages"] for c in result.app_calls[:4]] == ["q0", "q1", "q2", "q3"]


async def test_app_call_without_host_object_is_an_error(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell("c1", 'llm.chat("q")', timeout_s=30, host=None)
    assert result.error is not None
    assert result.error.ename == "AppCallError"
    assert "no app host" in result.error.evalue


async def test_input_in_agent_cell_is_a_clear_error(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell("c1", 'input("name? ")', timeout_s=10)
    assert result.error is not None
    assert result.error.ename == "InputNotAvailable"
    assert "input() is not available" in result.error.evalue
    assert agent_kernel.stdin_round_trips == 0


async def test_bash_sets_sh_last(agent_kernel: AgentKernelHandle):
    bash = await agent_kernel.run_bash("echo out; echo err >&2; exit 3", timeout_s=10)
    assert bash.stdout.text == "out\n"
    assert bash.stderr.text == "err\n"
    assert bash.returncode == 3
    assert not bash.timed_out
    cell = await agent_kernel.run_cell(
        "c1", "print(sh.last.stdout.strip(), sh.last.returncode)", timeout_s=10
    )
    assert [p.text for p in cell.prints] == ["out 3"]


async def test_bash_timeout_and_bounded_output(agent_kernel: AgentKernelHandle):
    slow = await agent_kernel.run_bash("sleep 30", timeout_s=0.5)
    assert slow.timed_out
    assert slow.returncode is None
    assert slow.duration_s < 10
    big = await agent_kernel.run_bash("head -c 300000 /dev/zero | tr '\\0' y", timeout_s=10)
    assert big.stdout.chars == 300_000
    assert big.stdout.truncated


async def test_sh_inside_a_cell(agent_kernel: AgentKernelHandle):
    result = await agent_kernel.run_cell(
        "c1", 'r = sh("echo hello")\nprint(r.stdout.strip(), sh.last is r)', timeout_s=10
    )
    assert [p.text for p in result.prints] == ["hello True"]


@pytest.mark.parametrize("code", ['chat.post("x")', 'batch(llm.chat.spec("q"))'])
async def test_unknown_stdin_request_does_not_hang(agent_kernel: AgentKernelHandle, code: str):
    # after an app call (the stdin connection is up), a non-agent prompt sent by the kernel
    # itself is answered with an error object instead of waiting forever
    result = await agent_kernel.run_cell(
        "c1",
        code + "\n"
        "k = get_ipython().kernel\n"
        "print(k._input_request('plain prompt', k._get_shell_context_var("
        "k._shell_parent_ident), k.get_parent('shell')))\n",
        timeout_s=10,
        host=RecordingHost(),
    )
    assert result.prints, result
    assert "jupyter-agent calls only" in result.prints[0].text
    assert agent_kernel.stdin_round_trips == 2


async def test_many_prints_send_the_first_and_last_and_keep_all(agent_kernel: AgentKernelHandle):
    n = PRINTS_HEAD + PRINTS_TAIL + 2_000
    r = await agent_kernel.run_cell("c1", f"for i in range({n}): print(i)", timeout_s=60)
    assert len(r.prints) == PRINTS_HEAD + PRINTS_TAIL
    assert r.prints_omitted == OmittedPrints(
        first=PRINTS_HEAD + 1,
        count=2_000,
        chars=sum(len(str(i)) for i in range(PRINTS_HEAD, PRINTS_HEAD + 2_000)),
    )
    assert r.prints_total == n
    assert r.prints[PRINTS_HEAD].text == str(PRINTS_HEAD + 2_000)
    assert r.print_number(PRINTS_HEAD) == PRINTS_HEAD + 2_001
    # The kernel keeps every value: the omitted ones too.
    r2 = await agent_kernel.run_cell(
        "c2", f"print(values.get('c1', {PRINTS_HEAD + 7}), values.get('c1', {n}))", timeout_s=60
    )
    assert r2.prints[0].text == f"{PRINTS_HEAD + 6} {n - 1}"
