"""The coordinator's cache service: what cluster workers read and write instead of the coordinator's disk.

A stdlib HTTP server in a thread of the coordinator, on the address workers reach it by. Every
request carries the run's random token. It serves:

- ``GET /blob/<sha256>``: a file's bytes from the coordinator's blob folder (shipping by content);
- ``GET|HEAD|PUT|DELETE /work/<path>``: an entry of a content store below ``<work>/cache`` (model
  responses, container runs, system answers); a PUT is an atomic write;
- ``POST /budget``: ``{"limit": USD|null, "charge": USD}``: charges the judge budget of the run
  (one per limit, shared by every worker) and says whether it is spent (``{"spent": ..., "over": ...}``);
- ``POST /claim/<path>``: takes the ``flock`` of a content store entry's ``.lock`` below ``<work>/cache``
  (evalkit.store.ContentStore.claim), answers 200 once it is held, and holds it until the worker closes the
  connection: finished, or dead (its kernel closes the socket). Identical work wanted by two workers at once
  (the same judge request, the same container run) is then done once, as between the tasks of one host.

`ServiceRef` is the picklable address a call carries; its methods are the worker's side.
Why a service rather than shipping cache entries with the artifact: the entries a stage reads
(which container run, which model answer) are only known inside the stage, so the coordinator
cannot send them ahead, and the budget must be counted at one place while calls run.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import secrets
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Iterator

from evalkit.executors.blobs import BlobStore, FileRef, MissingBlob
from evalkit.fsutil import atomic_write_text, ensure_dir

HEADER = "X-Evalkit-Token"
CLAIM_WAIT_S = 6 * 3600.0
"""How long a worker waits for a claim another worker holds (the other's call: a judge request with its retries, a
container run up to its timeout) before the cache service counts as unreachable."""


class ServiceUnreachable(OSError):
    """A worker could not reach the coordinator's cache service (an infrastructure failure, never the stage's)."""


@dataclass(frozen=True)
class ServiceRef:
    """Where a worker reaches the coordinator's cache service (carried with each call)."""

    url: str
    """``http://HOST:PORT`` of the service."""
    token: str
    """The run's secret: requests without it are refused."""

    def _request(self, method: str, path: str, body: bytes | None = None) -> bytes | None:
        req = urllib.request.Request(f"{self.url}{path}", data=body, method=method, headers={HEADER: self.token})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise ServiceUnreachable(f"the coordinator's cache service ({self.url}) answered {exc.code} to "
                                     f"{method} {path}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise ServiceUnreachable(f"the coordinator's cache service ({self.url}) is unreachable: {exc}") from None

    def fetch_missing(self, blobs: BlobStore, refs: Iterable[FileRef]) -> int:
        """Fetch into ``blobs`` every blob of ``refs`` it lacks (links have none); returns how many were fetched."""
        fetched = 0
        for ref in {r.sha256: r for r in refs if r.link is None}.values():
            if blobs.has(ref.sha256):
                continue
            data = self._request("GET", f"/blob/{ref.sha256}")
            if data is None:
                raise MissingBlob(f"blob {ref.sha256[:12]}... is not on the coordinator ({self.url})")
            dest = blobs.path(ref.sha256)
            ensure_dir(dest.parent)
            tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, dest)
            fetched += 1
        return fetched

    def read(self, rel: str) -> bytes | None:
        return self._request("GET", f"/work/{rel}")

    def write(self, rel: str, data: bytes) -> None:
        self._request("PUT", f"/work/{rel}", data)

    def has(self, rel: str) -> bool:
        return self._request("HEAD", f"/work/{rel}") is not None

    def delete(self, rel: str) -> None:
        self._request("DELETE", f"/work/{rel}")

    @contextlib.contextmanager
    def claim(self, rel: str) -> Iterator[None]:
        """Hold the coordinator's lock ``<work>/<rel>`` while within (see ``POST /claim`` above): the claim lasts as
        long as this connection, so it ends when the block does or when this process dies."""
        url = urllib.parse.urlsplit(self.url)
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=CLAIM_WAIT_S)
        try:
            conn.request("POST", f"/claim/{rel}", headers={HEADER: self.token, "Content-Length": "0"})
            answer = conn.getresponse()
            answer.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise ServiceUnreachable(f"the coordinator's cache service ({self.url}) is unreachable: {exc}") from None
        if answer.status != 200:
            conn.close()
            raise ServiceUnreachable(f"the coordinator's cache service ({self.url}) answered {answer.status} to "
                                     f"POST /claim/{rel}")
        try:
            yield
        finally:
            conn.close()

    def budget(self, limit: float | None, charge: float = 0.0) -> dict[str, Any]:
        """Charge ``charge`` USD to the run's budget of ``limit`` and return ``{"spent", "over"}``."""
        raw = self._request("POST", "/budget", json.dumps({"limit": limit, "charge": charge}).encode())
        return json.loads(raw or b"{}")


class _Server(ThreadingHTTPServer):
    request_queue_size = socket.SOMAXCONN
    """The listen backlog. socketserver's default, 5, overflowed with a few workers asking at once (measured:
    benchmarks/scale.py, 2,000 SYNs dropped by the kernel): each dropped connection waited the TCP
    retransmission time (1 s, then 3 s), which capped a cluster at ~5.6 calls a second from 4 workers up."""


class CacheService:
    """The HTTP service on the coordinator (a daemon thread; closed with the executor)."""

    def __init__(self, work: Path, blobs: BlobStore, host: str = "127.0.0.1") -> None:
        self.work = Path(work).resolve()
        self.blobs = blobs
        self.token = secrets.token_hex(16)
        self.spent: dict[str, float] = {}
        self._lock = threading.Lock()
        self.server = _Server((host, 0), _handler(self))
        self.server.daemon_threads = True
        self.ref = ServiceRef(f"http://{host}:{self.server.server_address[1]}", self.token)
        threading.Thread(target=self.server.serve_forever, name="evalkit-cache-service", daemon=True).start()

    def work_file(self, rel: str) -> Path | None:
        """``<work>/<rel>`` when it names a file below ``<work>/cache`` (never above), else None."""
        path = (self.work / rel).resolve()
        cache = self.work / "cache"
        return path if path.is_relative_to(cache) and path != cache else None

    def charge(self, limit: float | None, usd: float) -> dict[str, Any]:
        with self._lock:
            key = repr(limit)
            self.spent[key] = spent = self.spent.get(key, 0.0) + usd
        return {"spent": spent, "over": limit is not None and spent >= limit}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(service: CacheService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _reply(self, code: int, body: bytes = b"") -> None:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(body)

        def _target(self) -> Path | None:
            if self.headers.get(HEADER) != service.token:
                self._reply(403)
                return None
            if self.path.startswith("/blob/"):
                sha = self.path[len("/blob/"):]
                if len(sha) == 64 and all(c in "0123456789abcdef" for c in sha):
                    return service.blobs.path(sha)
            elif self.path.startswith("/work/"):
                found = service.work_file(self.path[len("/work/"):])
                if found is not None:
                    return found
            self._reply(400)
            return None

        def do_GET(self) -> None:
            target = self._target()
            if target is None:
                return
            try:
                data = target.read_bytes()
            except (FileNotFoundError, IsADirectoryError):
                self._reply(404)
                return
            self._reply(200, data)

        do_HEAD = do_GET

        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            target = self._target()
            if target is None or self.path.startswith("/blob/"):
                if target is not None:
                    self._reply(400)
                return
            atomic_write_text(target, body.decode("utf-8"))
            self._reply(204)

        def do_DELETE(self) -> None:
            target = self._target()
            if target is None:
                return
            target.unlink(missing_ok=True)
            self._reply(204)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get(HEADER) != service.token:
                self._reply(403)
                return
            if self.path.startswith("/claim/"):
                self._claim(service.work_file(self.path[len("/claim/"):]))
                return
            if self.path != "/budget":
                self._reply(400)
                return
            asked = json.loads(body or b"{}")
            self._reply(200, json.dumps(service.charge(asked.get("limit"), float(asked.get("charge") or 0))).encode())

        def _claim(self, lock: Path | None) -> None:
            self.close_connection = True
            if lock is None or lock.suffix != ".lock":
                self._reply(400)
                return
            ensure_dir(lock.parent)
            with open(lock, "a", encoding="utf-8") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    self._reply(200)
                    self.wfile.flush()
                    self.rfile.read(1)  # returns when the worker closes the connection (done, or dead)
                except OSError:
                    pass
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    return Handler
