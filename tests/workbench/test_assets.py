"""The policy hashes that let the graph frame run `tropo view`'s inline code, and only it."""

from __future__ import annotations

import base64
import hashlib

from workbench.assets import graph_hashes, inline_hashes


def test_the_graph_frame_may_run_exactly_tropo_views_inline_code() -> None:
    page = '<style>a{}</style><script id="data" type="application/json">{"x":1}</script>' \
           '<script>run()</script><script src="x.js"></script><SCRIPT defer>more()</SCRIPT>'
    hashes = inline_hashes(page)
    expected = {"sha256-" + base64.b64encode(hashlib.sha256(b).digest()).decode()
                for b in (b"a{}", b"run()", b"more()")}
    assert set(hashes) == expected
    assert len(graph_hashes()) >= 2  # view.html's own script and style
