"""Secret scrubbing cost on a cell's output.

Run: ``python bench/bench_scrub.py [N]`` (default N=20 repetitions; medians printed).

A 1 MB output (printable text with digits and hex, like a log or an ``env`` dump) and a
cell result holding it as 1000 prints, cleaned by a :class:`Scrubber` that knows 40
secrets (the size of a busy server environment), against the same result cleaned by
:data:`NO_SECRETS` (surrogate repair only) and against doing nothing. Also the same
1 MB with one key in it (the replacement path), and a 1 MB stream fed in 64 KB chunks
through a :class:`LiveScrubber` (live output).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber

MB = 1_000_000


def _text(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 =-_/:.\n"
    return "".join(rng.choice(alphabet) for _ in range(size))


def _secrets(count: int) -> dict[str, str]:
    rng = random.Random(2)
    out = {"sk-ant-api03-" + "".join(rng.choice("abcdef0123456789") for _ in range(80)): "KEY"}
    for i in range(count - 1):
        value = "".join(rng.choice("abcdef0123456789") for _ in range(rng.randint(16, 64)))
        out[value] = f"SECRET_{i}"
    return out


def _median_s(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str]) -> None:
    n = int(argv[1]) if len(argv) > 1 else 20
    text = _text(MB)
    secrets = _secrets(40)
    scrubber = Scrubber(secrets)
    key = next(iter(secrets))
    with_key = text[: MB // 2] + key + text[MB // 2 + len(key) :]
    prints = [text[i : i + 1000] for i in range(0, MB, 1000)]
    result: dict[str, Any] = {
        "prints": [{"text": p, "chars": len(p)} for p in prints],
        "outputs": [{"output_type": "stream", "name": "stdout", "text": text}],
    }

    def live() -> None:
        feed = scrubber.live()
        for i in range(0, MB, 65536):
            feed.feed({"output_type": "stream", "name": "stdout", "text": text[i : i + 65536]})
        feed.close()

    base = _median_s(lambda: None, n)
    plain = _median_s(lambda: NO_SECRETS.clean(text), n)
    clean = _median_s(lambda: scrubber.clean(text), n)
    hit = _median_s(lambda: scrubber.clean(with_key), n)
    result_none = _median_s(lambda: NO_SECRETS.clean_json(result), n)
    result_40 = _median_s(lambda: scrubber.clean_json(result), n)
    live_s = _median_s(live, n)
    assert key not in scrubber.clean(with_key)
    print(f"1 MB text, {len(scrubber)} secrets, medians of {n}:")
    print(f"  repair only (NO_SECRETS)      {plain * 1e3:8.2f} ms")
    print(f"  repair + scrub, no secret in  {clean * 1e3:8.2f} ms")
    print(f"  repair + scrub, one key in    {hit * 1e3:8.2f} ms")
    print(f"  live, 64 KB chunks            {live_s * 1e3:8.2f} ms")
    print(f"cell result (1000 prints + 1 MB stream output, 2 MB of text): {n} runs")
    print(f"  clean_json NO_SECRETS         {result_none * 1e3:8.2f} ms")
    print(f"  clean_json 40 secrets         {result_40 * 1e3:8.2f} ms")
    print(f"  ratio scrub / repair only     {result_40 / max(result_none, 1e-9):8.2f}x")
    print(f"  (nothing: {base * 1e6:.1f} us)")


if __name__ == "__main__":
    main(sys.argv)
