"""Providers on loopback servers with 20 ms latency (no network, no real key).

- 200 uncached calls at concurrency 8 through the anthropic provider (SDK) and the openai provider
  (Chat Completions over httpx2): calls per second of each;
- the same 200 calls to the openai server with ``rate_limits: {openai: {rpm: 50, window_s: 1}}``
  (50 requests per second): calls per second and the most requests the server saw in any 1 s window;
- re-reading the 200 cached answers.

Prints the figures; the last line is one JSON object. Run: ``python benchmarks/providers.py [--smoke]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_openai import FakeOpenAI, windows  # noqa: E402
from fake_server import FakeAnthropic  # noqa: E402

from evalkit.llm.calls import LLMRequest  # noqa: E402
from evalkit.llm.client import ModelClient  # noqa: E402
from evalkit.llm.settings import JudgeSettings, RateLimit  # noqa: E402

N = 200
LATENCY_S = 0.02


def requests(tag: str, n: int = N) -> list[LLMRequest]:
    return [LLMRequest(model="bench-model", messages=[{"role": "user", "content": f"{tag} question {i}"}],
                       max_tokens=16) for i in range(n)]


def timed(client: ModelClient, batch: list[LLMRequest]) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(client.call, batch))
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--smoke", action="store_true",
                    help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON)")
    n = 16 if ap.parse_args().smoke else N
    warnings.simplefilter("ignore")
    os.environ.update({"ANTHROPIC_API_KEY": "sk-bench", "OPENAI_API_KEY": "sk-bench"})
    os.environ.pop("EVALKIT_JUDGE_MODEL", None)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with FakeAnthropic(latency_s=LATENCY_S) as server:
            client = ModelClient(JudgeSettings(base_url=server.base_url, concurrency=8), Path(tmp) / "a")
            figures["anthropic_calls_per_s"] = n / timed(client, requests("a", n))
        with FakeOpenAI(latency_s=LATENCY_S) as server:
            client = ModelClient(JudgeSettings(provider="openai", base_url=server.base_url, concurrency=8),
                                 Path(tmp) / "o")
            figures["openai_calls_per_s"] = n / timed(client, requests("o", n))
            figures["cached_reread_s"] = timed(client, requests("o", n))
        with FakeOpenAI(latency_s=LATENCY_S) as server:
            limited = JudgeSettings(provider="openai", base_url=server.base_url, concurrency=8,
                                    rate_limits={"openai": RateLimit(rpm=50, window_s=1.0)})
            client = ModelClient(limited, Path(tmp) / "r")
            figures["rate_limited_calls_per_s"] = n / timed(client, requests("r", n))
            figures["rate_limited_max_in_1s_window"] = windows([r["at"] for r in server.requests], 1.0)
    for name, value in figures.items():
        print(f"{name:32} {value:10.2f}")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
