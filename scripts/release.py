"""Make a release here (issue 32): ``bash scripts/release [--version X.Y.Z] [--dry-run]``.

1. version: ``--version`` writes it to its one place, ``jupyter_agent/__init__.py``'s
   ``__version__`` (hatch reads the wheel's version there), and to the labextension's
   ``package.json`` (what ``jupyter labextension list`` shows); without it, the current one;
2. the extension built for production (``jlpm build:prod``, needs Node; ``--reuse-bundle``
   keeps the bundle already built), then ``python -m build``: an sdist and a wheel built
   from it, whose data holds the built extension, the server extension's config and the
   agent's kernelspec;
3. ``twine check`` and ``check-wheel-contents``, and the wheel's own layout;
4. the wheel installed into a fresh venv with **no Node on PATH** (each PATH folder
   holding ``node``, ``npm``, ``jlpm``... is replaced by a copy of links without them), then
   a smoke test from that venv: the listings (``jupyter labextension list`` shows
   ``jupyter-agent`` enabled OK, the server extension, the kernelspec), ``jupyter lab``
   ready with the extension on its page, ``GET agent/status`` (this version, the demo) and
   one demo turn (no key anywhere);
5. ``CHANGELOG.md``'s new section from the commits since the last tag (with no tag, all
   commits, or those after ``--since REV``), the curated ``Unreleased`` entries moved
   under it (see :func:`changelog_section`).

``--dry-run`` writes nothing in the clone (no version, no changelog: it prints the section
it would write) and builds into a temporary folder. ``--lend-site-packages`` (the tests'
way, with no registry): the fresh venv gets the wheel with ``--no-deps --no-index`` and
borrows this interpreter's dependencies through a ``.pth`` line (a folder a ``.pth`` line
adds has its own ``.pth`` files ignored, so this clone's editable install stays out of
sight: the run checks that ``jupyter_agent`` imports from the fresh venv). ``--report
FILE`` writes the figures as JSON. Exit 1 on any failed step.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "scripts"), str(REPO)]

from release_smoke import Failed, node_free_path, smoke  # noqa: E402

from tests.plugins.fresh_venv import venv_env  # noqa: E402

VERSION_FILE = REPO / "jupyter_agent" / "__init__.py"
PACKAGE_JSON = REPO / "labextension" / "package.json"
CHANGELOG = REPO / "CHANGELOG.md"
_VERSION = re.compile(r"^\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?$")
_VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.M)
#: What the wheel must hold (its data: the prebuilt extension, the server config, the kernel).
WHEEL_DATA = (
    "share/jupyter/labextensions/jupyter-agent/package.json",
    "share/jupyter/labextensions/jupyter-agent/install.json",
    "etc/jupyter/jupyter_server_config.d/jupyter_agent.json",
    "share/jupyter/kernels/jupyter-agent/kernel.json",
)
#: Commit subjects that say nothing a user sees (the history keeps them).
_INTERNAL = re.compile(r"^(merge\b|review\b|tests?\b|bench\b|ci\b|wip\b)", re.I)
_KINDS = (
    ("Security", re.compile(r"\b(security|vulnerab\w*|cve|harden\w*)\b", re.I)),
    ("Removed", re.compile(r"^(remove|drop|delete)\w*\b", re.I)),
    ("Fixed", re.compile(r"\b(fix\w*|bug\w*|crash\w*|regression)\b", re.I)),
    ("Added", re.compile(r"^(add|new|introduce|support)\w*\b", re.I)),
)


def current_version() -> str:
    found = _VERSION_LINE.search(VERSION_FILE.read_text())
    if found is None:
        raise Failed(f"no __version__ line in {VERSION_FILE}")
    return found.group(1)


def npm_version(version: str) -> str:
    """``version`` (PEP 440) as npm writes it: ``1.2.0rc1`` is ``1.2.0-rc.1``."""
    found = re.match(r"^(\d+\.\d+\.\d+)(?:(a|b|rc)(\d+))?$", version)
    if found is None:
        raise Failed(f"not a release version: {version!r}")
    base, kind, number = found.groups()
    names = {"a": "alpha", "b": "beta", "rc": "rc"}
    return f"{base}-{names[kind]}.{number}" if kind else base


def write_version(version: str) -> None:
    """The version's one place, and the labextension's package.json that mirrors it."""
    text = VERSION_FILE.read_text()
    VERSION_FILE.write_text(_VERSION_LINE.sub(f'__version__ = "{version}"', text, count=1))
    package = json.loads(PACKAGE_JSON.read_text())
    package["version"] = npm_version(version)
    PACKAGE_JSON.write_text(json.dumps(package, indent=2) + "\n")


def git(*args: str, repo: Path = REPO) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if done.returncode != 0:
        raise Failed(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def last_tag(repo: Path = REPO) -> str | None:
    done = subprocess.run(
        ["git", "describe", "--tags", "--abbrev=0"], cwd=repo, capture_output=True, text=True
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def kind_of(subject: str) -> str:
    """The Keep a Changelog group of a commit subject (``Changed`` when nothing says)."""
    for kind, pattern in _KINDS:
        if pattern.search(subject):
            return kind
    return "Changed"


def changelog_section(
    version: str, today: dt.date, since: str | None, curated: str, repo: Path = REPO
) -> str:
    """The new ``## [version] - today`` section: ``curated`` (the ``Unreleased`` entries
    people wrote) first, then one entry per commit after ``since`` (a tag or a revision;
    none: every commit), grouped by :func:`kind_of`, oldest first, merges and internal
    subjects (review, tests, bench, ci) left out. The group headings name the range."""
    span = f"{since}..HEAD" if since else "HEAD"
    subjects = git("log", "--no-merges", "--reverse", "--format=%s", span, repo=repo)
    groups: dict[str, list[str]] = {}
    for subject in filter(None, (s.strip() for s in subjects.splitlines())):
        if not _INTERNAL.match(subject):
            groups.setdefault(kind_of(subject), []).append(subject)
    origin = f"the commits since {since}" if since else "every commit (no earlier tag)"
    parts = [f"## [{version}] - {today.isoformat()}", ""]
    if curated.strip():
        parts += [curated.strip(), ""]
    for kind in ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"):
        if groups.get(kind):
            parts += [f"### {kind} ({origin})", *(f"- {s}" for s in groups[kind]), ""]
    if len(parts) == 2:
        parts += [f"No user-visible change in {origin}.", ""]
    return "\n".join(parts)


def split_unreleased(text: str) -> tuple[str, str, str]:
    """``(head, unreleased body, rest)`` of a changelog: the head ends with the
    ``## [Unreleased]`` line (added when missing), the body runs to the next ``## ``."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("## [Unreleased]")), None)
    if start is None:
        first = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
        return "".join(lines[:first]) + "## [Unreleased]\n\n", "", "".join(lines[first:])
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "".join(lines[: start + 1]) + "\n", "".join(lines[start + 1 : end]), "".join(lines[end:])


def new_changelog(text: str, section: str) -> str:
    """``text`` with ``section`` under an emptied ``## [Unreleased]``."""
    head, _, rest = split_unreleased(text)
    return head + section.rstrip("\n") + "\n\n" + rest


def run(cmd: list[str], cwd: Path = REPO, env: dict[str, str] | None = None) -> float:
    """Run ``cmd``; its time in seconds, or :class:`Failed` with its output's tail."""
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        out = (done.stdout[-3000:] + done.stderr[-3000:]).strip()
        raise Failed(f"{' '.join(cmd)} exited {done.returncode}:\n{out}")
    return time.perf_counter() - started


def build(out: Path, reuse_bundle: bool, isolation: bool) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    if not reuse_bundle:
        if shutil.which("jlpm") is None:
            raise Failed("building the extension needs jlpm and Node (or --reuse-bundle)")
        figures["extension_build_s"] = run(["jlpm", "build:prod"], cwd=REPO / "labextension")
    elif not (REPO / "jupyter_agent" / "labextension" / "package.json").exists():
        raise Failed("--reuse-bundle, but no built extension in jupyter_agent/labextension")
    cmd = [sys.executable, "-m", "build", "--outdir", str(out)]
    figures["build_s"] = run(cmd if isolation else [*cmd, "--no-isolation"])
    return figures


def check(out: Path, version: str) -> tuple[Path, Path]:
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise Failed(f"expected one wheel and one sdist in {out}: {wheels + sdists}")
    wheel, sdist = wheels[0], sdists[0]
    run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)])
    # W002 (duplicate files) is checked below instead: the kernelspec is in the package
    # (`jupyter agent kernel install` copies it) and in the data (Jupyter lists it), and
    # that pair is the only duplicate allowed.
    run([sys.executable, "-m", "check_wheel_contents", "--ignore", "W002", str(wheel)])
    data = f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.data/data/"
    by_content: dict[bytes, list[str]] = {}
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        for name in names:
            if not name.endswith("/") and ".dist-info/" not in name:
                by_content.setdefault(zf.read(name), []).append(name)
    allowed = sorted(["jupyter_agent/kernel/resources/kernel.json", data + WHEEL_DATA[3]])
    duplicates = [sorted(n) for n in by_content.values() if len(n) > 1]
    if [d for d in duplicates if d != allowed and not all(n.endswith("__init__.py") for n in d)]:
        raise Failed(f"the wheel holds duplicate files: {duplicates}")
    missing = [p for p in WHEEL_DATA if data + p not in names]
    if missing:
        raise Failed(f"the wheel lacks {missing}")
    with zipfile.ZipFile(wheel) as zf:
        bundled = json.loads(zf.read(data + WHEEL_DATA[0]))["version"]
    if (wheel.name.split("-")[1], bundled) != (version, npm_version(version)):
        raise Failed(f"{wheel.name} carries the extension {bundled}, not {version}")
    if not any(
        n.startswith(data + "share/jupyter/labextensions/jupyter-agent/static/") for n in names
    ):
        raise Failed("the wheel has no built extension (static/)")
    return wheel, sdist


def lend_scripts(bin_: Path) -> None:
    """The console scripts of the lent dependencies (``jupyter``, ``jupyter-lab``...), as
    pip would have written them into ``bin_`` had it installed them there."""
    python = bin_ / "python"
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"] == "jupyter-agent-runtime":
            continue
        for ep in dist.entry_points.select(group="console_scripts"):
            target = bin_ / ep.name
            if target.exists():
                continue
            module, _, attr = ep.value.partition(":")
            call = f"from {module} import {attr.split('.')[0]} as _m\n"
            call += f"sys.exit(_m{''.join('.' + a for a in attr.split('.')[1:])}())\n"
            target.write_text(f"#!{python}\nimport sys\n{call}")
            target.chmod(0o755)


def install(wheel: Path, base: Path, lend: bool) -> tuple[Path, dict[str, str], float]:
    """A fresh venv with ``wheel`` installed and Node off PATH; its env and install time."""
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    env = venv_env(venv, base / "home")
    # (and not this interpreter's bin: its `jupyter-lab` would run this clone's install)
    own = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != own)
    env["PATH"] = node_free_path(path, base / "path")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    if lend:
        site = Path(
            subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    "-c",
                    "import sysconfig;print(sysconfig.get_path('purelib'))",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        lent = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
        (site / "_lent_dependencies.pth").write_text("".join(f"{p}\n" for p in lent))
        lend_scripts(venv / "bin")
        took = run([*pip, "--no-deps", "--no-index", str(wheel)], env=env)
    else:
        took = run([*pip, str(wheel)], env=env)
    return venv, env, took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/release", description=__doc__.split("\n")[0])
    parser.add_argument("--version", help="the release's version, X.Y.Z (default: the current one)")
    parser.add_argument("--dry-run", action="store_true", help="write nothing in the clone")
    parser.add_argument("--since", help="the changelog's start (default: the last tag)")
    parser.add_argument("--out", type=Path, help="where the artifacts go (default: dist/)")
    parser.add_argument("--reuse-bundle", action="store_true", help="keep the built extension")
    parser.add_argument(
        "--no-isolation", action="store_true", help="python -m build --no-isolation"
    )
    parser.add_argument("--lend-site-packages", action="store_true", help="no registry: see above")
    parser.add_argument("--keep", action="store_true", help="keep the fresh venv's folder")
    parser.add_argument("--report", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    version = args.version or current_version()
    if not _VERSION.match(version):
        parser.error(f"--version {version!r}: expected X.Y.Z (or X.Y.ZaN, bN, rcN)")
    if args.version and args.dry_run and args.version != current_version():
        print(f"(dry run: the artifacts keep the current version {current_version()})")
    base = Path(tempfile.mkdtemp(prefix="jupyter-agent-release-"))
    out = args.out or (base / "dist" if args.dry_run else REPO / "dist")
    report: dict[str, Any] = {"version": current_version() if args.dry_run else version}
    try:
        if args.version and not args.dry_run:
            write_version(version)
        print("==> build (sdist, then the wheel from it)", flush=True)
        out.mkdir(parents=True, exist_ok=True)
        for old in [*out.glob("*.whl"), *out.glob("*.tar.gz")]:
            old.unlink()
        report |= build(out, args.reuse_bundle, not args.no_isolation)
        print("==> twine check, check-wheel-contents, the wheel's data", flush=True)
        wheel, sdist = check(out, report["version"])
        report |= {"wheel": str(wheel), "wheel_bytes": wheel.stat().st_size}
        report |= {"sdist": str(sdist), "sdist_bytes": sdist.stat().st_size}
        print("==> install into a fresh venv with no Node on PATH", flush=True)
        venv, env, report["install_s"] = install(wheel, base, args.lend_site_packages)
        print("==> smoke test: listings, jupyter lab, agent/status, one demo turn", flush=True)
        report |= smoke(venv, env, base, report["version"])
        since = args.since or last_tag()
        _, curated, _ = split_unreleased(CHANGELOG.read_text())
        section = changelog_section(version, dt.date.today(), since, curated)
        report["changelog_since"] = since
        if args.dry_run:
            print("==> CHANGELOG.md's new section (dry run: not written)\n" + section)
        else:
            CHANGELOG.write_text(new_changelog(CHANGELOG.read_text(), section))
            print(f"==> CHANGELOG.md: section [{version}] written")
        if since is None:
            print(
                "NOTE: no tag in this clone: the changelog lists every commit (or use --since REV)"
            )
    except Failed as failed:
        print(f"FAILED: {failed}\n(its folder: {base})", file=sys.stderr)
        return 1
    finally:
        if not args.keep:  # the artifacts of a dry run stay (their path is in the report)
            for folder in ("venv", "home", "path"):
                shutil.rmtree(base / folder, ignore_errors=True)
    for key, value in report.items():
        print(f"    {key}: {round(value, 1) if isinstance(value, float) else value}")
    if args.report:
        args.report.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
