"""The MCP server's stdin pruner on hostile lines, against the SDK's own parser reading a
valid request of the same size, timed in the same run (medians of repeats): the pruner
runs in front of that parser on every line, so the parse is the floor it is measured by.
Then the whole server: how long a real `strato mcp` takes to answer a ping sent right
behind each hostile line, against a ping behind the valid request.

Hostile shapes: an open string followed by escaped quotes (reproduction 8 of issue 25,
quadratic before: 120 KB took about a minute), brackets opened and closed past the cut
depth (the most work per character), and objects nested without end.

    python -m bench.mcp_stdin [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import mcp_types as types

from strato.mcp.stdin import prune

CALL = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stratum_validate","arguments":'
PING = b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'


def lines(size: int) -> dict[str, str]:
    """Each hostile shape, and the valid request, about ``size`` characters long."""
    fill = size - len(CALL)
    return {
        "valid request (baseline)": CALL + json.dumps({"spec": [{"a": 1}] * ((fill - 12) // 10)}) + "}}",
        "open string, escaped quotes": CALL + "[" * 150 + '"' + '\\"' * (fill // 2 - 76),
        "brackets past the cut": CALL + "[" * 150 + "[]" * (fill // 2 - 75),
        "objects nested, never closed": CALL + '{"a":' * (fill // 5),
    }


def median_s(fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def parse(line: str) -> None:
    with contextlib.suppress(ValueError):  # a malformed line: the SDK drops it
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)


class Server:
    """A real `strato mcp` over pipes, past its handshake."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "strato.cli", "mcp", "--root", str(root)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "bench", "version": "1"}}
        self.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
                  + b"\n")
        self.read()
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        doc: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return doc

    def answer_after(self, line: str) -> None:
        """Send ``line`` and a ping; return once the ping is answered."""
        self.send(line.encode() + b"\n" + PING)
        while self.read().get("id") != 9:
            pass

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        server = Server(Path(tmp))
        try:
            print(f"{'line':<30} {'size':>8} {'prune s':>8} {'cpu s':>7} {'/ parse':>8} "
                  f"{'answered s':>10} {'/ valid':>8}")
            for size in (120_000, 1 << 20):
                shapes = lines(size)
                base = shapes["valid request (baseline)"]
                floor = median_s(partial(parse, base), args.repeat, time.process_time)
                served = median_s(partial(server.answer_after, base), args.repeat)
                for label, line in shapes.items():
                    took = median_s(partial(prune, line), args.repeat)
                    cpu = median_s(partial(prune, line), args.repeat, time.process_time)
                    answered = median_s(partial(server.answer_after, line), args.repeat)
                    print(f"{label:<30} {len(line):>8} {took:>8.3f} {cpu:>7.3f} {cpu / floor:>7.1f}x "
                          f"{answered:>10.3f} {answered / served:>7.1f}x")
                print(f"{'(SDK parse, valid line, cpu)':<30} {len(base):>8} {'':>8} {floor:>7.3f}")
        finally:
            server.close()


if __name__ == "__main__":
    main()
