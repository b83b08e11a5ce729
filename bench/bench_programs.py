"""Run start with a deployed program vs the built-in one, and deploy time (issue 16).

Run: ``python bench/bench_programs.py [--turns 30] [--deploys 10]``. In-process: the run
manager and driver of the package, a SQLite store, the program registry and service, the
fake model on loopback (chat-only turns: one model call, no cell), a real agent kernel
pool (a chat-only run does not wait for it).

Two agents of one store run side by side, interleaved: ``agent`` (the built-in
``toolcaller@v6``) and ``deployed``, whose layer runs a *deployed copy of v6* (a one-line
program that yields what ``toolcaller@v6`` yields), so both runs ask for the same effects
and the difference is what running a deployed version costs: the registry's resolve, the
hashed header and summary, and every step in a worker thread under the step deadline.

Prints, per run (medians; delta = deployed - built-in, and the ratio):

- **resolve**: ``ProgramRegistry.resolve(agent, "toolcaller")`` once loaded (one indexed
  ``activation_mark`` query; the active map and the module are cached);
- **opening**: :func:`~jupyter_agent.runtime.runs.opening.open_run` (resolve, the run
  summary stored, the log created with its header);
- **steps**: the program driven over a recorded chat-only run's effects (the host's
  guard; inline vs threaded under the watchdog), no I/O: every step of the run;
- **turn**: a whole chat-only turn, message sent to turn stored (goal: at most 1 ms more
  per run once loaded);

and the deploy time of ``examples/programs/plan_first`` (every check: files, compile,
import in isolation, the smoke test against the shipped scenario, its own recorded
scenario replayed; then the store and the cache): the first deploy, then a deploy of the
same files again (checked in full, then answered by the stored version), and the checks
alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHAT = [{"text": "Hello."}]
EXAMPLE = ROOT / "examples" / "programs" / "plan_first"
#: ``toolcaller@v6`` as a deploy: the same effects, run the way a deployed version runs.
V4_COPY = {
    "program.py": (
        "from jupyter_agent.core import loop\n\n\n"
        "def program(run_id, chat_id):\n"
        '    return (yield from loop.program("toolcaller@v6", run_id, chat_id))\n'
    )
}


def _med_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def _row(what: str, built_in: list[float], deployed: list[float]) -> None:
    b, d = _med_ms(built_in), _med_ms(deployed)
    ratio = d / b if b else float("nan")
    print(f"{what:<34} {b:9.3f} ms {d:9.3f} ms   delta {d - b:+8.3f} ms   {ratio:5.2f}x")


async def main(turns: int, deploys: int) -> None:
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.cli.main import install_kernelspec
    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.programs.deploy_checks import check_deploy
    from jupyter_agent.programs.files import read_source
    from jupyter_agent.programs.registry import ProgramRegistry
    from jupyter_agent.programs.service import ProgramService
    from jupyter_agent.runtime.ids import new_id, now_iso
    from jupyter_agent.runtime.programs.guard import ProgramGuard, drive_program
    from jupyter_agent.runtime.runs.opening import open_run
    from jupyter_agent.trace.log import read_log
    from jupyter_agent.trace.replay import Replayer
    from tests.runtime.harness import close_harness, make_harness

    tmp = Path(tempfile.mkdtemp(prefix="bench-programs-"))
    os.environ["JUPYTER_DATA_DIR"] = str(tmp / "jdata")
    install_kernelspec(user=True)
    km = AsyncMultiKernelManager()
    fake = FakeProvider({"steps": CHAT, "repeat": True}).start()
    harness = await make_harness(tmp, fake, km)
    store, services = harness.store, harness.manager.services
    registry = ProgramRegistry(store, cache_dir=tmp / "programs")
    services.programs = registry
    service = ProgramService(store, registry)

    # (b) deploy time: the example, first deploy then the same files again; checks alone.
    files = read_source(EXAMPLE)
    t0 = time.perf_counter()
    first = await service.deploy("toolcaller", files, agent="planner")
    first_s = time.perf_counter() - t0
    again, checks = [], []
    for _ in range(deploys):
        t0 = time.perf_counter()
        answer = await service.deploy("toolcaller", files, agent="planner")
        again.append(time.perf_counter() - t0)
        assert answer["program"]["ref"] == first["program"]["ref"]
        t0 = time.perf_counter()
        await asyncio.to_thread(check_deploy, "toolcaller", files)
        checks.append(time.perf_counter() - t0)

    # (a) the v6 copy for agent "deployed"; "agent" keeps the built-in.
    copy = await service.deploy("toolcaller", V4_COPY, agent="deployed")
    agents = ("agent", "deployed")
    chats = {a: store.create_chat(chat_id=new_id("chat"), title=a, now=now_iso(), agent=a).id
             for a in agents}  # fmt: skip
    for agent in agents:  # load: the first run of each imports / reads what it needs
        await harness.ask(chats[agent], "warm up")
        assert (await asyncio.to_thread(registry.resolve, agent, "toolcaller")).builtin == (
            agent == "agent"
        )

    resolve: dict[str, list[float]] = {a: [] for a in agents}
    for _ in range(2000):
        for agent in agents:
            t0 = time.perf_counter()
            registry.resolve(agent, "toolcaller")
            resolve[agent].append(time.perf_counter() - t0)

    opening: dict[str, list[float]] = {a: [] for a in agents}
    for i in range(turns):
        for agent in agents:
            item = {"kind": "message", "text": f"open {i}", "id": new_id("msg"), "at": now_iso()}
            t0 = time.perf_counter()
            opened = await open_run(
                services, harness.config(agent), harness.manager.log_path, chats[agent], [item]
            )
            opening[agent].append(time.perf_counter() - t0)
            opened.effect_log.close()
            assert opened.summary.programs[0] == (
                copy["active"] if agent == "deployed" else opened.summary.programs[0]
            )

    turn_s: dict[str, list[float]] = {a: [] for a in agents}
    runs: dict[str, str] = {}
    for i in range(turns):
        for agent in agents if i % 2 == 0 else agents[::-1]:
            t0 = time.perf_counter()
            turn = await harness.ask(harness_chat(store, agent, new_id, now_iso), f"hi {i}")
            turn_s[agent].append(time.perf_counter() - t0)
            runs[agent] = turn.run_id
            assert turn.programs is not None
            assert turn.programs[0].startswith(
                "toolcaller@v6#" if agent == "agent" else "toolcaller@v"
            )

    # The program's steps alone: one recorded chat-only run, inline vs threaded.
    trace = read_log(harness.manager.log_path(runs["agent"]))
    run_id, chat_id = str(trace.header["run_id"]), str(trace.header["chat_id"])
    steps: dict[str, list[float]] = {a: [] for a in agents}
    pooled: list[float] = []
    effects = 0
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=1)
    for _ in range(turns * 3):
        for agent in agents:
            resolved = registry.resolve(agent, "toolcaller")
            replayer = Replayer(trace)

            async def perform(effect: Any, replayer: Replayer = replayer) -> Any:
                return replayer.answer(effect)

            guard = ProgramGuard(resolved.ref.text, {}, elapsed=lambda: 0.0)
            t0 = time.perf_counter()
            await drive_program(
                resolved.factory(run_id, chat_id),
                perform,
                guard,
                threaded=not resolved.builtin,
            )
            steps[agent].append(time.perf_counter() - t0)
            replayer.finish()
            effects = replayer.position
        # The floor of a threaded step: the same steps through one shared worker thread
        # (``run_in_executor``), no watchdog: what a pooled step would cost.
        replayer = Replayer(trace)
        gen = registry.resolve("deployed", "toolcaller").factory(run_id, chat_id)
        t0 = time.perf_counter()
        going, value = await loop.run_in_executor(pool, _advance, gen, None)
        while going:
            going, value = await loop.run_in_executor(pool, _advance, gen, replayer.answer(value))
        pooled.append(time.perf_counter() - t0)
        replayer.finish()

    pool.shutdown()
    await close_harness(harness)
    fake.stop()
    await km.shutdown_all(now=True)

    print(f"deployed: {copy['program']['ref']} (a copy of toolcaller@v6) for agent 'deployed'")
    print(f"{'per run (medians)':<34} {'built-in':>12} {'deployed':>12}")
    _row("resolve (once loaded)", resolve["agent"], resolve["deployed"])
    _row("opening (resolve+summary+header)", opening["agent"], opening["deployed"])
    _row(f"steps ({effects} effects, no I/O)", steps["agent"], steps["deployed"])
    _row("  floor: a shared worker thread", steps["agent"], pooled)
    _row(f"whole chat-only turn (n={turns})", turn_s["agent"], turn_s["deployed"])
    per_step = (_med_ms(steps["deployed"]) - _med_ms(steps["agent"])) / max(effects, 1)
    per_pooled = (_med_ms(pooled) - _med_ms(steps["agent"])) / max(effects, 1)
    print(
        f"a deployed step costs {per_step * 1000:.0f} us more (the run's worker thread);"
        f" through a plain shared thread {per_pooled * 1000:.0f} us (goal: 1 ms per run)"
    )
    print()
    print(f"deploy of {EXAMPLE.relative_to(ROOT)} ({first['program']['ref']}):")
    print(f"  first deploy (checks + smoke + scenario + store) {first_s * 1000:8.1f} ms")
    print(f"  the same files again, median of {deploys}          {_med_ms(again):8.1f} ms")
    print(f"  the checks alone, median of {deploys}              {_med_ms(checks):8.1f} ms")


def _advance(gen: Any, value: Any) -> tuple[bool, Any]:
    """One step: (True, the effect yielded) or (False, the value returned)."""
    try:
        return True, next(gen) if value is None else gen.send(value)
    except StopIteration as stop:
        return False, stop.value


def harness_chat(store: Any, agent: str, new_id: Any, now_iso: Any) -> str:
    """A new chat of ``agent`` (each turn in a chat of its own: no history grows)."""
    return str(
        store.create_chat(chat_id=new_id("chat"), title=agent, now=now_iso(), agent=agent).id
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--deploys", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.deploys))
