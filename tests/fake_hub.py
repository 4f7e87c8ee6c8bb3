"""A fake Hugging Face Hub: a local HTTP server that serves folders the way the Hub's API serves repositories.

Enough of the Hub for huggingface_hub 2.4.0's snapshot_download and hf_hub_download (no xet, no auth):

  GET  /api/models/{repo_id}                          model info: id, sha, siblings [{rfilename}], config, ...
  GET  /api/models/{repo_id}/revision/{revision}      the same at a revision ("main" or the repo's commit sha)
  GET  /api/models/{repo_id}/tree/{revision}[/{path}] the file listing (?recursive=true), as list_repo_tree reads it
  HEAD /{repo_id}/resolve/{revision}/{filename}       the file's metadata: X-Repo-Commit, ETag, Content-Length,
                                                      and X-Linked-Etag / X-Linked-Size for LFS files (weights)
  GET  /{repo_id}/resolve/{revision}/{filename}       the file, with a Range header honoured (206)

snapshot_download asks the model info for the commit sha (skipped when the revision already is a sha), then the
tree listing (cached on disk under trees/<sha>.json), then HEAD + GET per file it lacks (the HEAD's X-Repo-Commit
and ETag are required; the blob is stored under its ETag; Content-Length / X-Linked-Size is checked against the
bytes received). Any other /api/ path is a 404 (huggingface_hub asks GET /api/agent-harnesses once a process and
shrugs off a failure). Errors carry the
X-Error-Code header huggingface_hub maps to its exceptions (RepoNotFound, RevisionNotFound, EntryNotFound).

Every repo has one fixed commit sha (sha1 of its id, or the one given). Every request is recorded in `requests`,
so a test can say which files were fetched; `stop()` closes the port, as if the Hub became unreachable, and
`start()` opens it again on the same port. Responses close the connection (HTTP/1.0), so a stopped hub is truly
gone: no pooled keep-alive connection goes on being served.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import re
import shutil
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

# Files the Hub keeps in LFS (as .gitattributes does for weights): ETag is their sha256, not the git blob id.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx", ".msgpack", ".h5")
LFS_MIN_SIZE = 10 * 1024 * 1024
LAST_MODIFIED = "2025-01-01T00:00:00.000Z"


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # unquoted, without the query
    query: str = ""
    range: str | None = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class _File:
    path: str  # in the repo, '/'-separated
    local: Path
    size: int
    blob_id: str  # git blob sha1
    sha256: str | None  # LFS files only

    @property
    def etag(self) -> str:
        return self.sha256 or self.blob_id


class _Repo:
    def __init__(self, repo_id: str, folder: Path, sha: str):
        self.repo_id, self.folder, self.sha = repo_id, Path(folder), sha
        self._files: dict[str, _File] | None = None

    @property
    def files(self) -> dict[str, _File]:
        """The folder's files, hashed once on first use (the folder stands for one commit)."""
        if self._files is None:
            files = {}
            for local in sorted(p for p in self.folder.rglob("*") if p.is_file()):
                rel = local.relative_to(self.folder).as_posix()
                if rel.startswith(".cache/") or rel.startswith(".git/"):
                    continue
                data = local.read_bytes()
                lfs = rel.endswith(LFS_SUFFIXES) or len(data) >= LFS_MIN_SIZE
                blob_id = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                files[rel] = _File(
                    rel,
                    local,
                    len(data),
                    blob_id,
                    hashlib.sha256(data).hexdigest() if lfs else None,
                )
            self._files = files
        return self._files

    def tree_entry(self, f: _File) -> dict:
        entry = {"type": "file", "oid": f.blob_id, "size": f.size, "path": f.path}
        if f.sha256:
            entry["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": 134}
        return entry

    def info(self) -> dict:
        config = {}
        if "config.json" in self.files:
            try:
                config = {
                    "model_type": json.loads(self.files["config.json"].local.read_text()).get(
                        "model_type"
                    )
                }
            except ValueError:
                pass
        return {
            "_id": self.sha[:24],
            "id": self.repo_id,
            "modelId": self.repo_id,
            "author": self.repo_id.split("/")[0] if "/" in self.repo_id else None,
            "sha": self.sha,
            "lastModified": LAST_MODIFIED,
            "createdAt": LAST_MODIFIED,
            "private": False,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": ["transformers", "safetensors"],
            "library_name": "transformers",
            "config": config,
            "siblings": [{"rfilename": path} for path in self.files],
        }


class FakeHub:
    """The fake Hub over `repos` ({repo_id: folder}); `shas` fixes a repo's commit sha (default: sha1 of its id)."""

    def __init__(self, repos: dict[str, str | Path], shas: dict[str, str] | None = None):
        shas = shas or {}
        self.repos = {
            rid: _Repo(rid, Path(folder), shas.get(rid) or self.default_sha(rid))
            for rid, folder in repos.items()
        }
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @staticmethod
    def default_sha(repo_id: str) -> str:
        return hashlib.sha1(f"fake-hub:{repo_id}".encode()).hexdigest()

    # -- running -------------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> FakeHub:
        """Serve on a free port of 127.0.0.1 (the same port again after a stop)."""
        if self._server is not None:
            return self
        for repo in self.repos.values():
            _ = repo.files  # hash the files now, not in several handler threads at once
        handler = type("Handler", (_Handler,), {"hub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-hub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the port: from now on a connection is refused, as when the Hub cannot be reached."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what was asked ------------------------------------------------------------------------------------------

    def sha(self, repo_id: str) -> str:
        return self.repos[repo_id].sha

    @property
    def repo_requests(self) -> list[Request]:
        """The requests about a served repo (model info, tree, files): not huggingface_hub's once-a-process
        GET /api/agent-harnesses, which it sends when it first builds its User-Agent."""
        with self._lock:
            requests = list(self.requests)
        return [
            r
            for r in requests
            if self._find_repo(r.path.removeprefix("/api/models/").lstrip("/"))[0]
        ]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def file_requests(
        self, repo_id: str | None = None, method: str | None = None
    ) -> list[tuple[str, str, str]]:
        """(method, repo_id, filename) of every /resolve/ request, in order; filtered by repo and method."""
        out = []
        with self._lock:
            requests = list(self.requests)
        for r in requests:
            for rid in self.repos:
                prefix = f"/{rid}/resolve/"
                if r.path.startswith(prefix):
                    filename = (
                        r.path[len(prefix) :].split("/", 1)[1]
                        if "/" in r.path[len(prefix) :]
                        else ""
                    )
                    if (repo_id is None or rid == repo_id) and (
                        method is None or r.method == method
                    ):
                        out.append((r.method, rid, filename))
        return out

    def fetched(self, repo_id: str | None = None) -> list[str]:
        """The filenames whose content was downloaded (GET on /resolve/), in order."""
        return [filename for _, _, filename in self.file_requests(repo_id, "GET")]

    def requested(self, repo_id: str | None = None) -> set[str]:
        """The filenames asked about at all (HEAD or GET on /resolve/)."""
        return {filename for _, _, filename in self.file_requests(repo_id)}

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _find_repo(self, rest: str) -> tuple[_Repo | None, str]:
        """The repo a path starts with (longest id first) and what follows it."""
        for rid in sorted(self.repos, key=len, reverse=True):
            if rest == rid or rest.startswith(rid + "/"):
                return self.repos[rid], rest[len(rid) :]
        return None, rest


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub
    protocol_version = "HTTP/1.0"
    server_version = "FakeHub/1.0"

    def log_message(self, format, *args):  # quiet: the requests are recorded in hub.requests
        pass

    def do_GET(self):
        self._serve(body=True)

    def do_HEAD(self):
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        split = urlsplit(self.path)
        path = unquote(split.path)
        self.hub._record(Request(self.command, path, split.query, self.headers.get("Range")))
        try:
            if path.startswith("/api/models/"):
                self._api(path[len("/api/models/") :], parse_qs(split.query), body)
            elif path.startswith(
                "/api/"
            ):  # e.g. /api/agent-harnesses, which huggingface_hub asks once a process
                self._error(404, None, "Not found", body=body)
            else:
                self._resolve(path.lstrip("/"), body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- /api/models/... -----------------------------------------------------------------------------------------

    def _api(self, rest: str, query: dict, body: bool) -> None:
        repo, tail = self.hub._find_repo(rest)
        if repo is None:
            return self._error(401, "RepoNotFound", "Repository not found", body=body)
        if tail == "":
            return self._json(repo.info(), body)
        m = re.fullmatch(r"/revision/([^/]+)", tail)
        if m:
            if not self._revision_ok(repo, m.group(1), body):
                return
            return self._json(repo.info(), body)
        m = re.fullmatch(r"/tree/([^/]+)(/.*)?", tail)
        if m:
            if not self._revision_ok(repo, m.group(1), body):
                return
            return self._tree(repo, (m.group(2) or "").strip("/"), query, body)
        return self._error(404, None, "Not found", body=body)

    def _revision_ok(self, repo: _Repo, revision: str, body: bool) -> bool:
        if revision in ("main", repo.sha):
            return True
        self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", body=body)
        return False

    def _tree(self, repo: _Repo, folder: str, query: dict, body: bool) -> None:
        recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
        prefix = folder + "/" if folder else ""
        if folder and not any(path.startswith(prefix) for path in repo.files):
            return self._error(
                404, "EntryNotFound", f"{folder} does not exist", repo=repo, body=body
            )
        entries, folders = [], set()
        for path, f in repo.files.items():
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for depth in range(1, len(parts)):  # the folders on the way, as the Hub lists them
                sub = prefix + "/".join(parts[:depth])
                if (recursive or depth == 1) and sub not in folders:
                    folders.add(sub)
                    entries.append(
                        {
                            "type": "directory",
                            "oid": hashlib.sha1(sub.encode()).hexdigest(),
                            "size": 0,
                            "path": sub,
                        }
                    )
            if recursive or len(parts) == 1:
                entries.append(repo.tree_entry(f))
        self._json(entries, body)

    # -- /{repo_id}/resolve/{revision}/{filename} ----------------------------------------------------------------

    def _resolve(self, rest: str, body: bool) -> None:
        repo, tail = self.hub._find_repo(rest)
        m = re.fullmatch(r"/resolve/([^/]+)/(.+)", tail) if repo else None
        if repo is None or m is None:
            return self._error(
                401 if repo is None else 404,
                "RepoNotFound" if repo is None else None,
                "Repository not found" if repo is None else "Not found",
                body=body,
            )
        revision, filename = m.groups()
        if not self._revision_ok(repo, revision, body):
            return
        f = repo.files.get(filename)
        if f is None:
            return self._error(
                404, "EntryNotFound", f"{filename} does not exist", repo=repo, body=body
            )

        start, end, status = 0, f.size - 1, 200
        wanted = self.headers.get("Range")
        if wanted:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
            if m and (m.group(1) or m.group(2)):
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)), f.size - 1) if m.group(2) else f.size - 1
                else:  # bytes=-N: the last N bytes
                    start = max(f.size - int(m.group(2)), 0)
                if start >= f.size or start > end:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{f.size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206

        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("X-Repo-Commit", repo.sha)
        self.send_header("ETag", f'"{f.etag}"')
        if f.sha256:
            self.send_header("X-Linked-Etag", f'"{f.sha256}"')
            self.send_header("X-Linked-Size", str(f.size))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{f.size}")
        self.send_header("Last-Modified", email.utils.formatdate(1735689600, usegmt=True))
        self.send_header("Connection", "close")
        self.end_headers()
        if body:
            with open(f.local, "rb") as stream:
                stream.seek(start)
                left = end - start + 1
                while left > 0:
                    chunk = stream.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)

    # -- replies -------------------------------------------------------------------------------------------------

    def _json(self, data, body: bool) -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _error(
        self,
        status: int,
        code: str | None,
        message: str,
        repo: _Repo | None = None,
        body: bool = True,
    ) -> None:
        payload = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if repo is not None:
            self.send_header("X-Repo-Commit", repo.sha)
        self.send_header("Connection", "close")
        self.end_headers()
        if body:
            self.wfile.write(payload)


# -- the repos the tests serve ---------------------------------------------------------------------------------------

ORG = "agentloop-test"
TINY = ("tiny-qwen3_5", "tiny-gemma4", "tiny-gemma4-assistant")
UNSUPPORTED = f"{ORG}/tiny-unsupported"
UNSUPPORTED_MODEL_TYPE = "llama_unknown"


def prepare_repos(work: Path, models_dir: Path) -> dict[str, Path]:
    """Folders for the fake Hub, copied into `work` so a rebuild of models/ cannot change them mid-test.

    agentloop-test/tiny-qwen3_5 always (built here if `models_dir` lacks it), agentloop-test/tiny-gemma4 and
    tiny-gemma4-assistant when `models_dir` has them, and agentloop-test/tiny-unsupported: tiny-qwen3_5 with a
    config.json whose model_type no family knows."""
    work.mkdir(parents=True, exist_ok=True)
    repos: dict[str, Path] = {}
    for name in TINY:
        source, copy = models_dir / name, work / name
        if (source / "config.json").exists() and (source / "model.safetensors").exists():
            shutil.copytree(source, copy, dirs_exist_ok=True)
        elif name == "tiny-qwen3_5":
            from agentloop import tiny_models

            copy.mkdir(parents=True, exist_ok=True)
            tiny_models.build_qwen3_5(copy)
        else:
            continue
        repos[f"{ORG}/{name}"] = copy
    unsupported = work / "tiny-unsupported"
    shutil.copytree(repos[f"{ORG}/tiny-qwen3_5"], unsupported, dirs_exist_ok=True)
    config = json.loads((unsupported / "config.json").read_text())
    config["model_type"] = UNSUPPORTED_MODEL_TYPE
    (unsupported / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    repos[UNSUPPORTED] = unsupported
    return repos
