"""A local stand-in for the Hugging Face hub, for the tests of `preflight.resolve.hub`.

It answers what huggingface_hub 2.x asks of a model repository, as its
`file_download.get_hf_file_metadata` / `hf_hub_download` and
`HfApi.parse_safetensors_file_metadata` send it:

- `HEAD /<org>/<name>/resolve/<revision>/<file>`: 200 with `X-Repo-Commit`, `ETag` and
  `Content-Length` (what `get_hf_file_metadata` reads); 404 with `X-Error-Code:
  EntryNotFound` (and `X-Repo-Commit`) for a file the repository lacks, `RepoNotFound`
  for a repository it does not serve;
- `GET` of the same URL: the file (hf_hub_download), or with `Range: bytes=A-B` the bytes
  asked for as 206 (the safetensors header reads: `bytes=0-100000`, then
  `bytes=8-<header end>` for a longer header).

Every request is logged (`requests`: method, path, Range), so a test can tell that a run
asked nothing at all.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]],
                      metadata: Optional[dict] = None) -> bytes:
    """A valid safetensors file of zero-filled tensors, written by hand: the 8-byte
    little-endian header length, the JSON header, the data."""
    size = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1, "I8": 1,
            "F8_E4M3": 1}
    header: dict = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = size[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


class Hub:
    """`repos`: repo id → {file name → bytes}. Start with `with Hub(repos) as hub:`;
    `hub.url` is the endpoint (HF_ENDPOINT), `hub.requests` what was asked."""

    def __init__(self, repos: dict[str, dict[str, bytes]]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str, Optional[str]]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:        # quiet
                pass

            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

            def do_GET(self) -> None:
                hub._answer(self, body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Hub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        rng = h.headers.get("Range")
        self.requests.append((h.command, h.path, rng))
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", h.path.split("?")[0])
        if m is None:
            return self._send(h, 404, {"X-Error-Code": "RepoNotFound"}, b"", body)
        repo, revision, filename = m.groups()
        files = self.repos.get(repo)
        if files is None:
            return self._send(h, 404, {"X-Error-Code": "RepoNotFound"}, b"", body)
        if revision not in ("main", COMMIT):
            return self._send(h, 404, {"X-Error-Code": "RevisionNotFound"}, b"", body)
        data = files.get(filename)
        if data is None:
            return self._send(h, 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT},
                              b"", body)
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                   "Accept-Ranges": "bytes"}
        r = re.match(r"^bytes=(\d+)-(\d*)$", rng or "")
        if body and r:
            start = int(r.group(1))
            end = min(int(r.group(2)) if r.group(2) else len(data) - 1, len(data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(h, 206, headers, data[start:end + 1], body)
        return self._send(h, 200, headers, data, body)

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, headers: dict, data: bytes,
              body: bool) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if body:
            h.wfile.write(data)
