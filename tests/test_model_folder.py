"""model_folder: real downloads with huggingface_hub, from the fake Hub of tests/fake_hub.py into a temporary cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants
from huggingface_hub.errors import (
    IncompleteSnapshotError,
    LocalEntryNotFoundError,
    RevisionNotFoundError,
)

from agentloop import model_families
from agentloop.model_backends import model_folder
from agentloop.model_backends.model_folder import checkpoint_files, download
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.model_families import Sampling, UnsupportedModel
from tests.fake_hub import ORG, UNSUPPORTED

QWEN = f"{ORG}/tiny-qwen3_5"
NOT_WEIGHTS = {"config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty MODELS_DIR for model_folder to download into."""
    folder = tmp_path / "models"
    monkeypatch.setattr(model_folder, "MODELS_DIR", folder)
    return folder


def snapshot(cache: Path, repo_id: str, sha: str) -> Path:
    return cache / f"models--{repo_id.replace('/', '--')}" / "snapshots" / sha


def files_in(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def generates(path_or_id: str) -> SimpleBackend:
    """Load the model with SimpleBackend and greedily generate a few tokens."""
    b = SimpleBackend(path_or_id, device="cpu")
    events = list(
        b.generate(
            b.encode(b.render([{"role": "user", "content": "hi"}], None, False)),
            Sampling(temperature=0, max_new_tokens=5),
            lambda: False,
        )
    )
    tokens = [ev for ev in events if ev["type"] == "token"]
    assert 1 <= len(tokens) <= 5
    return b


def go_offline(monkeypatch) -> None:
    """HF_HUB_OFFLINE=1, as huggingface_hub sees it: it read the variable into constants at import."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_download_fetches_every_file_into_the_cache_and_loads(fake_hub, fake_hub_repos, cache):
    sha = fake_hub.sha(QWEN)
    b = generates(QWEN)  # SimpleBackend downloads the id itself

    folder = snapshot(cache, QWEN, sha)
    assert b.folder == folder
    source = fake_hub_repos[QWEN]
    assert files_in(folder) == files_in(source)
    for name in files_in(source):
        assert (folder / name).read_bytes() == (source / name).read_bytes()
        assert (folder / name).resolve().parent == (
            cache / f"models--{ORG}--tiny-qwen3_5" / "blobs"
        ).resolve()
    assert (cache / f"models--{ORG}--tiny-qwen3_5" / "refs" / "main").read_text() == sha
    # Each file came down once: config.json first and alone, then the rest (it was not fetched a second time).
    fetched = fake_hub.fetched(QWEN)
    assert fetched[0] == "config.json"
    assert sorted(fetched) == sorted(files_in(source))

    assert all(f"/resolve/{sha}/" in r.path for r in fake_hub.requests if "/resolve/" in r.path)

    # Downloading again asks the Hub for the commit (once for config.json, once for the rest) and fetches nothing.
    fake_hub.clear()
    assert download(QWEN) == str(folder)
    assert [str(r) for r in fake_hub.repo_requests] == [f"GET /api/models/{QWEN}/revision/main"] * 2


def test_download_only_some_files(fake_hub, fake_hub_repos, cache):
    folder = Path(download(QWEN, only=["*.json"]))
    json_files = {name for name in files_in(fake_hub_repos[QWEN]) if name.endswith(".json")}
    assert "tokenizer.json" in json_files
    assert files_in(folder) == json_files == fake_hub.requested(QWEN)


def test_unsupported_model_type_is_refused_after_config_json_alone(fake_hub, cache):
    with pytest.raises(UnsupportedModel, match="llama_unknown"):
        download(UNSUPPORTED)
    assert fake_hub.requested(UNSUPPORTED) == {"config.json"}
    assert fake_hub.fetched(UNSUPPORTED) == ["config.json"]
    assert not any(r.path.endswith(".safetensors") for r in fake_hub.requests)

    for refused in (checkpoint_files, SimpleBackend):
        with pytest.raises(UnsupportedModel):
            refused(UNSUPPORTED)
    assert fake_hub.requested(UNSUPPORTED) == {"config.json"}
    assert not list(cache.rglob("*.safetensors"))


@pytest.mark.parametrize("how", ["hub stopped", "HF_HUB_OFFLINE=1"])
def test_a_downloaded_model_starts_with_the_hub_unreachable(fake_hub, cache, monkeypatch, how):
    folder = download(QWEN)
    if how == "hub stopped":
        fake_hub.stop()
    else:
        go_offline(monkeypatch)
    fake_hub.clear()

    assert download(QWEN) == folder
    assert checkpoint_files(QWEN) == folder
    b = generates(QWEN)
    assert str(b.folder) == folder
    assert fake_hub.repo_requests == []


@pytest.mark.parametrize("how", ["hub stopped", "HF_HUB_OFFLINE=1"])
def test_unreachable_hub_and_nothing_cached_is_an_error(fake_hub, cache, monkeypatch, how):
    if how == "hub stopped":
        fake_hub.stop()
    else:
        go_offline(monkeypatch)
    with pytest.raises(LocalEntryNotFoundError):
        download(QWEN)


def test_unreachable_hub_with_only_the_checkpoint_files_cached(fake_hub, cache):
    # A server's copy has everything but the weights: that still starts offline; the whole model does not.
    folder = checkpoint_files(QWEN)
    fake_hub.stop()
    assert checkpoint_files(QWEN) == folder
    with pytest.raises(IncompleteSnapshotError, match="model.safetensors"):
        download(QWEN)


def test_pinned_revision(fake_hub, cache, monkeypatch):
    sha = fake_hub.sha(QWEN)
    monkeypatch.setitem(model_families.REVISIONS, QWEN, sha)
    folder = Path(download(QWEN))
    assert folder == snapshot(cache, QWEN, sha)
    assert folder.name == sha
    assert (folder / "model.safetensors").exists()
    # A commit sha needs no model info to resolve it: only the listing at that commit, and the files.
    assert not any(r.path.startswith(f"/api/models/{QWEN}/revision/") for r in fake_hub.requests)
    assert any(r.path.startswith(f"/api/models/{QWEN}/tree/{sha}") for r in fake_hub.requests)
    assert {name for _, _, name in fake_hub.file_requests(QWEN)} == files_in(folder)
    assert all(f"/resolve/{sha}/" in r.path for r in fake_hub.requests if "/resolve/" in r.path)

    fake_hub.stop()  # pinned and cached: no Hub needed at all
    assert download(QWEN) == str(folder)


def test_pinned_revision_the_hub_lacks_is_an_error(fake_hub, cache, monkeypatch):
    monkeypatch.setitem(model_families.REVISIONS, QWEN, "0" * 40)
    with pytest.raises(RevisionNotFoundError):
        download(QWEN)
    assert fake_hub.requested(QWEN) == set()


def test_checkpoint_files_fetch_everything_but_the_weights(fake_hub, fake_hub_repos, cache):
    folder = Path(checkpoint_files(QWEN))
    assert folder == snapshot(cache, QWEN, fake_hub.sha(QWEN))
    assert not any(r.path.endswith(".safetensors") for r in fake_hub.requests)
    assert NOT_WEIGHTS <= files_in(folder)
    assert files_in(folder) == {
        n for n in files_in(fake_hub_repos[QWEN]) if not n.endswith(".safetensors")
    }

    fake_hub.clear()  # the whole model later: only the weights come down
    download(QWEN)
    assert fake_hub.fetched(QWEN) == ["model.safetensors"]


def test_a_local_folder_is_used_as_it_is(fake_hub, fake_hub_repos, cache):
    local = str(fake_hub_repos[QWEN])
    assert download(local) == local
    assert checkpoint_files(local) == local
    assert str(generates(local).folder) == local
    assert fake_hub.repo_requests == []
    assert not cache.exists()
