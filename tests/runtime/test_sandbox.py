"""``KernelPool.kernel_sandbox`` and the private runtime dir, with real kernels.

``bwrap`` tests run where bubblewrap works (skipped with the reason otherwise); the
``user:NAME`` test creates a throwaway OS user when root. Refusals are tested for each
unavailable choice, and once at a real server's start.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from traitlets import TraitError

from jupyter_agent.runtime.kernels import sandbox
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.kernels.sandbox import SandboxUnavailable, check_sandbox, parse_sandbox
from jupyter_agent.server.auth.isolation import sandbox_hidden
from tests.rest_stub import free_port
from tests.runtime.procs import kill_all, leaving_bash, leaving_cell, marker, wait_count


def _bwrap_reason() -> str | None:
    try:
        check_sandbox(parse_sandbox("bwrap"))
    except SandboxUnavailable as exc:
        return str(exc)
    return None


needs_bwrap = pytest.mark.skipif(_bwrap_reason() is not None, reason=str(_bwrap_reason()))


def _fake_runtime_dir(tmp_path: Path) -> Path:
    runtime = tmp_path / "server-runtime"
    runtime.mkdir()
    (runtime / "jpserver-4242.json").write_text('{"token": "server-token-canary"}')
    return runtime


async def _prints(handle, code: str) -> list[str]:
    result = await handle.run_cell(uuid.uuid4().hex[:8], code, timeout_s=30)
    assert result.error is None, result.error
    return [p.text for p in result.prints]


# -- the trait and its refusals -----------------------------------------------------------


def test_trait_values():
    assert KernelPool(None, kernel_sandbox="user:agent").sandbox == sandbox.Sandbox("user", "agent")
    for bad in ("", "docker", "user:", "BWRAP"):
        with pytest.raises(TraitError, match=r"KernelPool\.kernel_sandbox"):
            KernelPool(None, kernel_sandbox=bad)


def test_refused_without_a_bwrap_binary(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable) as info:
        KernelPool(None, kernel_sandbox="bwrap").check()
    assert "KernelPool.kernel_sandbox" in str(info.value)
    assert "apt-get install bubblewrap" in str(info.value)


def test_refused_when_bwrap_cannot_make_namespaces(monkeypatch, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="cannot create its namespaces") as info:
        KernelPool(None, kernel_sandbox="bwrap").check()
    assert "No permissions to create new namespace" in str(info.value)


def test_refused_for_a_missing_or_own_user():
    with pytest.raises(SandboxUnavailable, match="no OS user 'no-such-agent-user'"):
        KernelPool(None, kernel_sandbox="user:no-such-agent-user").check()
    import pwd

    me = pwd.getpwuid(os.geteuid()).pw_name
    with pytest.raises(SandboxUnavailable, match="the server's own user"):
        KernelPool(None, kernel_sandbox=f"user:{me}").check()


def test_server_refuses_to_start_with_an_unavailable_sandbox(tmp_path):
    dirs = {name: tmp_path / name for name in ("config", "data", "runtime", "root")}
    for folder in dirs.values():
        folder.mkdir()
    config = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "KernelPool": {"kernel_sandbox": "user:no-such-agent-user"},
    }
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
    }
    argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1"]
    argv += [f"--ServerApp.port={free_port()}", f"--ServerApp.root_dir={dirs['root']}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "KernelPool.kernel_sandbox = 'user:no-such-agent-user'" in done.stderr
    assert "useradd" in done.stderr
    assert "Traceback" not in done.stderr


# -- none: the private runtime dir ----------------------------------------------------------


async def test_kernel_gets_a_private_runtime_dir(kernel_manager: AsyncMultiKernelManager, tmp_path):
    runtime = _fake_runtime_dir(tmp_path)
    pool = KernelPool(
        kernel_manager, size=0, root_dir=str(tmp_path), server_runtime_dir=str(runtime)
    )
    handle = await pool.acquire(cwd=str(tmp_path))
    place = pool._places[handle.kernel_id]
    try:
        assert place.runtime_dir.stat().st_mode & 0o777 == 0o700
        assert place.kernel_dir.stat().st_mode & 0o777 == 0o700
        assert place.connection_file.is_file()
        assert kernel_manager.get_kernel(handle.kernel_id).connection_file == str(
            place.connection_file
        )
        code = (
            "import os, glob\n"
            "from jupyter_core.paths import jupyter_runtime_dir\n"
            "print(jupyter_runtime_dir())\n"
            "print(sorted(os.listdir(jupyter_runtime_dir())))\n"
        )
        lines = await _prints(handle, code)
        assert lines == [str(place.runtime_dir), f"['{place.connection_file.name}']"]
    finally:
        await pool.discard(handle)
    assert not place.kernel_dir.exists()


# -- bwrap ---------------------------------------------------------------------------------


@pytest.fixture
async def bwrap_pool(kernel_manager: AsyncMultiKernelManager, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    runtime = _fake_runtime_dir(tmp_path)
    pool = KernelPool(
        kernel_manager,
        size=0,
        kernel_sandbox="bwrap",
        root_dir=str(root),
        server_runtime_dir=str(runtime),
    )
    pool.check()
    yield pool
    await pool.stop()


@needs_bwrap
async def test_bwrap_hides_the_server(bwrap_pool: KernelPool, tmp_path):
    start = time.monotonic()
    handle = await bwrap_pool.acquire(cwd=None)
    print(f"bwrap kernel start: {time.monotonic() - start:.3f} s")
    runtime = tmp_path / "server-runtime"
    home_canary = Path.home() / f".ja-canary-{uuid.uuid4().hex}"
    home_canary.write_text("home")
    try:
        code = (
            "import os\n"
            f"print(os.path.exists('/proc/{os.getpid()}/environ'))\n"
            f"print(os.listdir({str(runtime)!r}))\n"
            f"print(os.path.exists({str(home_canary)!r}))\n"
            "print(len([p for p in os.listdir('/proc') if p.isdigit()]) < 10)\n"
        )
        assert await _prints(handle, code) == ["False", "[]", "False", "True"]
    finally:
        home_canary.unlink()


@needs_bwrap
async def test_bwrap_writes_only_in_root_and_scratch(bwrap_pool: KernelPool, tmp_path):
    handle = await bwrap_pool.acquire(cwd=str(tmp_path / "root"))
    place = bwrap_pool._places[handle.kernel_id]
    outside = Path(sys.prefix) / f"bwrap-probe-{uuid.uuid4().hex}"
    hidden_tmp = tmp_path / "outside.txt"  # under /tmp: the sandbox's own /tmp, read-only here
    code = (
        "import os\n"
        "def attempt(path):\n"
        "    try:\n"
        "        open(path, 'w').write('ok')\n"
        "        return 'wrote'\n"
        "    except OSError as exc:\n"
        "        return f'errno {exc.errno}'\n"
        "print(attempt('in-root.txt'))\n"
        f"print(attempt({str(place.scratch_dir / 's.txt')!r}))\n"
        f"print(attempt({str(outside)!r}))\n"
        f"attempt({str(hidden_tmp)!r})\n"
    )
    assert await _prints(handle, code) == ["wrote", "wrote", "errno 30"]  # EROFS
    assert (tmp_path / "root" / "in-root.txt").read_text() == "ok"
    assert (place.scratch_dir / "s.txt").read_text() == "ok"
    assert not hidden_tmp.exists()
    assert not outside.exists()


@needs_bwrap
async def test_bwrap_cell_interrupt_by_timeout_keeps_the_kernel(bwrap_pool: KernelPool):
    handle = await bwrap_pool.acquire(cwd=None)
    assert await _prints(handle, "x = 41\nprint('ready')") == ["ready"]
    start = time.monotonic()
    result = await handle.run_cell("slow", "import time\ntime.sleep(60)", timeout_s=1.0)
    assert result.error is not None
    assert result.error.ename == "CellTimeout"
    assert time.monotonic() - start < 10
    assert "restart" not in (result.error.evalue or "")  # interrupted, not restarted
    assert await _prints(handle, "print(x + 1)") == ["42"]


@needs_bwrap
async def test_bwrap_discard_ends_every_descendant(bwrap_pool: KernelPool):
    handle = await bwrap_pool.acquire(cwd=None)
    mark = marker()
    try:
        assert await _prints(handle, leaving_cell(mark)) == ["started"]
        assert (await handle.run_bash(leaving_bash(mark), timeout_s=30)).returncode == 0
        assert len(wait_count(mark, 3)) == 3
        await bwrap_pool.discard(handle)
        assert wait_count(mark, 0, timeout_s=0) == []
    finally:
        kill_all(mark)


# -- user:NAME -----------------------------------------------------------------------------


def _closed_ancestors(path: str) -> list[Path]:
    real = Path(os.path.realpath(path))
    return [p for p in real.parents if not p.stat().st_mode & stat.S_IXOTH]


@pytest.fixture
def throwaway_user():
    """A new system user; while it exists, the folders above this Python that others
    cannot traverse (a pyenv under /root, 0700) get o+x (not o+r), restored after."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("creating a throwaway OS user needs root and useradd")
    name = f"ja{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--system", "--no-create-home", name], check=True)
    opened = _closed_ancestors(sys.executable)
    for folder in opened:
        folder.chmod(folder.stat().st_mode | stat.S_IXOTH)
    try:
        yield name
    finally:
        for folder in opened:
            folder.chmod(folder.stat().st_mode & ~stat.S_IXOTH)
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        subprocess.run(["userdel", name], check=False)


async def test_user_sandbox_runs_the_kernel_as_that_user(
    kernel_manager: AsyncMultiKernelManager, throwaway_user: str
):
    import pwd

    uid = pwd.getpwnam(throwaway_user).pw_uid
    root = Path(tempfile.mkdtemp(prefix="ja-user-root-"))
    root.chmod(0o777)
    pool = KernelPool(
        kernel_manager, size=0, kernel_sandbox=f"user:{throwaway_user}", root_dir=str(root)
    )
    pool.check()
    try:
        handle = await pool.acquire(cwd=str(root))
        place = pool._places[handle.kernel_id]
        assert place.connection_file.stat().st_uid == uid
        code = (
            "import os\n"
            "print(os.getuid())\n"
            "open('by-agent.txt', 'w').write('ok')\n"
            "try:\n"
            f"    open('/proc/{os.getpid()}/environ').read()\n"
            "    print('read the server environ')\n"
            "except OSError as exc:\n"
            "    print(type(exc).__name__)\n"
        )
        assert await _prints(handle, code) == [str(uid), "PermissionError"]
        assert (root / "by-agent.txt").stat().st_uid == uid
        mark = marker()
        assert await _prints(handle, leaving_cell(mark)) == ["started"]
        assert len(wait_count(mark, 2)) == 2
        await pool.discard(handle)
        assert wait_count(mark, 0, timeout_s=0) == []
    finally:
        await pool.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_user_sandbox_refused_when_the_server_cannot_switch_users(throwaway_user: str):
    # The check itself, run as an unprivileged user (the throwaway one), naming another.
    code = (
        "from jupyter_agent.runtime.kernels.sandbox import *\n"
        "try:\n"
        "    check_sandbox(parse_sandbox('user:root'))\n"
        "except SandboxUnavailable as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        ["runuser", "-u", throwaway_user, "--", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd="/",
    )
    assert "may not switch users" in done.stdout, done.stderr
    assert "KernelPool.kernel_sandbox" in done.stdout


def test_bwrap_mounts_proc_dev_and_tmp_again_over_a_root_of_slash(tmp_path):
    place = sandbox.KernelPlace("k1", tmp_path, "tag")
    args = sandbox.bwrap_prefix(place, root_dir="/", hidden=[], binary="bwrap")
    bound = args.index("--bind")
    assert args[bound : bound + 3] == ["--bind", "/", "/"]
    after = args[bound + 3 :]
    for flag, mount in (("--proc", "/proc"), ("--dev", "/dev"), ("--tmpfs", "/tmp")):
        assert any(after[i : i + 2] == [flag, mount] for i in range(len(after))), (flag, after)


def test_bwrap_never_binds_back_a_folder_holding_an_emptied_one(monkeypatch, tmp_path):
    home = os.path.realpath(os.path.expanduser("~"))
    monkeypatch.setattr(sys, "path", [home, *sys.path])  # `python -m` from the home folder
    place = sandbox.KernelPlace("k1", tmp_path, "tag")
    args = sandbox.bwrap_prefix(place, root_dir=str(tmp_path), hidden=[], binary="bwrap")
    pairs = [args[i + 1] for i, a in enumerate(args) if a == "--ro-bind"]
    assert home not in pairs
    assert "/tmp" not in pairs


def test_a_key_references_variable_never_reaches_the_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENROUTER", "sk-or-not-caught-by-a-name-pattern")
    pool = KernelPool(AsyncMultiKernelManager(), size=0, root_dir=str(tmp_path))
    assert "OPENROUTER" in pool.kernel_env()  # no pattern of the filter catches the name
    pool.env_drop.add("OPENROUTER")  # what assembly does for every env: key reference
    assert "OPENROUTER" not in pool.kernel_env()


@needs_bwrap
async def test_bwrap_hides_the_data_dir_config_dirs_and_a_database_elsewhere(
    kernel_manager: AsyncMultiKernelManager, tmp_path
):
    # Everything inside the root dir (bound writable: visible unless hidden on purpose),
    # so what hides them is the pool's hiding, not the empty /tmp.
    root = tmp_path / "root"
    data, config, runtime, elsewhere = (root / n for n in ("data", "etc", "run", "srv"))
    for folder in (data, config, runtime, elsewhere):
        folder.mkdir(parents=True)
    (data / "agent.sqlite").write_text("alice-canary")
    (config / "jupyter_server_config.json").write_text('{"db_url": "postgresql://pw-canary"}')
    (runtime / "jpserver-1.json").write_text('{"token": "token-canary"}')
    db = elsewhere / "team.sqlite"
    db.write_text("alice-canary")
    Path(f"{db}-journal").write_text("alice-canary")
    pool = KernelPool(
        kernel_manager,
        size=0,
        kernel_sandbox="bwrap",
        root_dir=str(root),
        data_dir=data,
        server_runtime_dir=str(runtime),
        hidden=sandbox_hidden(f"sqlite:///{db}", [str(config)]),
    )
    pool.check()
    try:
        handle = await pool.acquire(cwd=str(root))
        code = (
            "import os\n"
            "def show(path):\n"
            "    try:\n"
            "        return open(path).read()\n"
            "    except OSError as exc:\n"
            "        return type(exc).__name__\n"
            f"print(sorted(os.listdir({str(data)!r})))\n"
            f"print(os.listdir({str(config)!r}), os.listdir({str(runtime)!r}))\n"
            f"print(show({str(db)!r}), show({str(db) + '-journal'!r}))\n"
            f"print(sorted(os.listdir({str(elsewhere)!r})))\n"
        )
        lines = await _prints(handle, code)
        assert lines[:2] == ["['kernels']", "[] []"]  # only the kernel's own dirs, bound back
        # /dev/null in place: empty, or unreadable where the bind is nodev (here)
        assert lines[2] in (" ", "PermissionError PermissionError"), lines
        assert lines[3] == "['team.sqlite', 'team.sqlite-journal']"
    finally:
        await pool.stop()
    assert db.read_text() == "alice-canary"  # the server's file is untouched


def test_sandbox_hidden_names_the_config_dirs_and_a_sqlite_file(tmp_path):
    db = tmp_path / "x" / "a.sqlite"
    hidden = sandbox_hidden(f"sqlite:///{db}", ["/etc/jupyter", ""], str(tmp_path / "c.py"))
    assert hidden == [
        "/etc/jupyter",
        str(tmp_path),
        *(f"{db}{suffix}" for suffix in ("", "-journal", "-wal", "-shm")),
    ]
    assert sandbox_hidden("postgresql+psycopg://u:pw@h/db", ["/etc/jupyter"]) == ["/etc/jupyter"]
    assert sandbox_hidden("not a url", []) == []
