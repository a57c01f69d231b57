"""Docker sandbox: one labelled, network-less, unprivileged, resource-limited container per run.

The container is created, filled with ``put_archive`` (tree and control files), then started once
per phase (the main run, then each rerun, in the same filesystem); a phase's results are fetched with one
``get_archive`` of ``/work/out``, which holds the phases' folders and the pytest plugin's results folder
(``out/res``) and is root's, so neither the runner nor the tests can rename or swap a folder in it. It is
removed in every case (in the background, evalkit.sandbox.reaper: off the run's path), and leftovers of dead
processes are swept by label. A container is never reused: no state crosses runs. Containers at once are bounded by the container budget (evalkit.sandbox.budget).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from contextlib import ExitStack
from typing import Literal

import docker.errors
import requests.exceptions
from docker.models.containers import Container
from docker.types import LogConfig

from evalkit.counters import COUNTERS
from evalkit.sandbox.archive import SANDBOX_UID, TarBuilder, read_tar_files
from evalkit.sandbox.budget import budget as container_budget
from evalkit.sandbox.dockerclient import DOCKER_FAILURES, client
from evalkit.sandbox.phase import PhaseOutcome, SandboxError, new_nonce
from evalkit.sandbox.reaper import remove_later
from evalkit.sandbox.script import RESULTS_DIR, RESULTS_MODE, RESULTS_OWNER, ControlFiles, sentinel_secret
from evalkit.sandbox.spec import TestRunSpec

log = logging.getLogger(__name__)

LABEL = "evalkit.sandbox"
OWNER_LABEL = "evalkit.sandbox.owner"
DEADLINE_LABEL = "evalkit.sandbox.deadline"
ROOT = "/work"
#: Bytes fetched at most from a phase's results besides its capped test log (JUnit reports...).
RESULTS_EXTRA_BYTES = 64 << 20

_sweep_lock = threading.Lock()
_swept = False


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_leftovers(force: bool = False) -> int:
    """Remove labelled containers left by dead processes on this host or past their deadline.

    Runs once per process (at first use) unless ``force``; returns how many were removed.
    Containers of live processes (another doit run) are left alone. One listing call gives each container's
    labels: other runs create and remove containers meanwhile, and one gone by the time it is looked at (or
    removed by another sweep) is not a failure.
    """
    global _swept
    with _sweep_lock:
        if _swept and not force:
            return 0
        _swept = True
        removed = 0
        host = socket.gethostname()
        api = client().api
        for c in api.containers(all=True, filters={"label": f"{LABEL}=1"}):
            labels = c.get("Labels") or {}
            owner_host, _, pid = labels.get(OWNER_LABEL, ":").rpartition(":")
            try:
                deadline = float(labels.get(DEADLINE_LABEL, "0"))
            except ValueError:
                deadline = 0.0
            dead_owner = owner_host == host and pid.isdigit() and not _pid_alive(int(pid))
            if dead_owner or deadline < time.time():
                try:
                    api.remove_container(c["Id"], force=True, v=True)
                    removed += 1
                except docker.errors.NotFound:
                    continue
                except docker.errors.APIError as exc:  # 409: its removal is already under way (another sweep)
                    if exc.status_code != 409:
                        raise
        return removed


def _ctl_tar(files: dict[str, str], nonce: str, prefix: str, runner_uid: int = SANDBOX_UID,
             sentinel: str | None = None, tar: TarBuilder | None = None) -> bytes:
    """Control files owned by root (the runner cannot change them) and a nonce only it can read (and
    where evalkit's pytest plugin writes, which only the plugin reads before it deletes it)."""
    tar = tar or TarBuilder()
    for name, text in files.items():
        tar.add_bytes(f"{prefix}/{name}", text.encode("utf-8"), 0o755 if name.endswith(".sh") else 0o644, uid=0)
    tar.add_dir(f"{prefix}/secret", 0o700, uid=runner_uid)
    tar.add_bytes(f"{prefix}/secret/nonce", nonce.encode(), 0o600, uid=runner_uid)
    if sentinel is not None:
        tar.add_bytes(f"{prefix}/secret/sentinel", sentinel.encode(), 0o600, uid=runner_uid)
    return tar.getvalue()


class DockerSandbox:
    """One container for one test run; use as a context manager (it is always removed)."""

    isolation: Literal["docker"] = "docker"

    def __init__(self, spec: TestRunSpec, ctl: ControlFiles, image_digest: str) -> None:
        self.spec = spec
        self.ctl = ctl
        self.image_digest: str | None = image_digest
        self.notes: list[str] = []
        self.container: Container | None = None
        self._first_nonce = new_nonce()
        self._first_prefix = new_nonce()
        self._started = False
        self._phases = 1  # folders in out/: the main phase's and the plugin's results, then one per rerun
        self._slot = ExitStack()  # a slot of the container budget, held until close() removes the container
        # A tree already in the image (SWE-bench's /testbed) belongs to the image's root: the runner patches
        # it as that root, still without any capability (so no file of another owner is writable), network
        # or new privileges; ctl/ is root's then too, which the nonce check does not rely on.
        self.runner_uid = 0 if spec.tree_in_image else SANDBOX_UID
        lim = spec.limits
        try:
            cli = client()
            sweep_leftovers()
        except DOCKER_FAILURES as exc:
            raise SandboxError(f"Docker daemon unreachable or failing: {exc}") from exc
        budget = (spec.reruns + 1) * (lim.timeout_s + 60) + 300
        name = f"evalkit-sbx-{uuid.uuid4().hex[:16]}"
        self._budget = container_budget()
        self._slot.enter_context(self._budget.slot())
        try:
            self.container = cli.containers.create(
                image=image_digest,
                command=["/bin/sh", f"{ROOT}/ctl/run.sh", ROOT],
                name=name,
                labels={LABEL: "1", OWNER_LABEL: _owner(), DEADLINE_LABEL: f"{time.time() + budget:.0f}"},
                user=f"{self.runner_uid}:{self.runner_uid}",
                working_dir=spec.tree_in_image or f"{ROOT}/tree",
                environment={"HOME": f"{ROOT}/home", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
                             "PYTHONUNBUFFERED": "1"},  # output reaches the log as it is printed (kept on a timeout)
                network_disabled=True,
                mem_limit=f"{lim.memory_mb}m",
                memswap_limit=f"{lim.memory_mb}m",
                nano_cpus=int(lim.cpus * 1e9),
                pids_limit=lim.pids,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                log_config=LogConfig(
                    type="json-file", config={"max-size": str(max(lim.log_limit_bytes * 2, 1 << 20)), "max-file": "1"}
                ),
            )
        except docker.errors.ImageNotFound as exc:
            self._slot.close()
            raise SandboxError(f"image {spec.image} disappeared before the container was created: {exc}") from exc
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            self._slot.close()
            self._budget.failed(f"create: {exc}")
            raise SandboxError(f"cannot create the container: {exc}") from exc
        except BaseException:
            self._slot.close()
            raise

    def __enter__(self) -> DockerSandbox:
        try:
            self._fill()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def _live(self) -> Container:
        """The container, until close() removes it."""
        if self.container is None:
            raise SandboxError("the sandbox's container was already removed (close() ran)")
        return self.container

    def _fill(self) -> None:
        tar = TarBuilder()
        tar.add_dir("work", 0o755, uid=0)  # root's: the runner cannot swap ctl/ for a folder of its own
        if not self.spec.tree_in_image:  # else the image holds the tree: nothing is copied in
            tar.add_tree(self.spec.tree, "work/tree")
        # out/ is root's: the runner writes in its phase's folder (made here, and by the put before a rerun) and
        # evalkit's pytest plugin in res/ (not listable); one get_archive of out/ fetches both.
        tar.add_dir("work/out", 0o755, uid=0)
        tar.add_dir("work/out/main", 0o755, uid=self.runner_uid)
        tar.add_dir(f"work/out/{RESULTS_DIR}", RESULTS_MODE, uid=RESULTS_OWNER)  # evalkit's pytest plugin: not listable
        tar.add_dir("work/home", 0o755, uid=self.runner_uid)
        tar.add_dir("work/ctl", 0o755, uid=0)
        self._put("/", _ctl_tar({**self.ctl.files, "phase": "main\n"}, self._first_nonce, "work/ctl", self.runner_uid,
                                self._sentinel_secret(self._first_prefix), tar))

    def _sentinel_secret(self, prefix: str) -> str | None:
        if self.ctl.sentinel is None:
            return None
        return sentinel_secret(f"{ROOT}/out/{RESULTS_DIR}/{prefix}", self.spec.tree_in_image or f"{ROOT}/tree",
                               self.ctl.sentinel)

    def _put(self, path: str, data: bytes) -> None:
        try:
            ok = self._live.put_archive(path, data)
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"cannot copy files into the container: {exc}") from exc
        if not ok:
            raise SandboxError("cannot copy files into the container (put_archive refused)")

    def run_phase(self, phase: str, command: str | None) -> PhaseOutcome:
        if phase == "main":
            nonce, prefix = self._first_nonce, self._first_prefix
        else:
            nonce, prefix = new_nonce(), new_nonce()
            files = {"phase": f"{phase}\n"}
            if command is not None:
                files[f"{phase}.cmd"] = command + "\n"
            tar = TarBuilder()
            tar.add_dir(f"out/{phase}", 0o755, uid=self.runner_uid)  # out/ is root's: the phase's folder is made here
            self._put(ROOT, _ctl_tar(files, nonce, "ctl", self.runner_uid, self._sentinel_secret(prefix), tar))
            self._phases += 1
        t0 = time.monotonic()
        with COUNTERS.container():  # "containers running" in `evalkit run`'s live display
            try:
                self._live.start()
            except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
                self._budget.failed(f"start: {exc}")
                raise SandboxError(f"the container did not start: {exc}") from exc
            if phase == "main":  # the first start of this container: how quickly Docker starts them now
                self._budget.started(time.monotonic() - t0)
            state, exit_code = self._wait(self.spec.limits.timeout_s)
        outcome = PhaseOutcome(phase, nonce, state, exit_code, duration_s=time.monotonic() - t0)
        # After a timeout too: what the run printed before the kill is in out/<phase>/ (the log's head). One
        # round trip: out/ holds this phase's folder, the earlier phases' and the plugin's (a share of the cap each).
        cap = (self._phases + 1) * (self.spec.limits.log_limit_bytes + RESULTS_EXTRA_BYTES)
        found, capped = self._fetch(f"{ROOT}/out", cap)
        outcome.files = {name[len(phase) + 1:]: data for name, data in found.items() if name.startswith(phase + "/")}
        outcome.files_capped = capped
        if self.ctl.sentinel is not None:
            mine = f"{RESULTS_DIR}/{prefix}-"
            outcome.sentinel = [data for name, data in sorted(found.items())
                                if name.startswith(mine) and name.endswith(".json") and "/" not in name[len(mine):]]
        if state == "timeout":
            return outcome
        if "runner.txt" not in outcome.files:
            outcome.crash_output = self._logs()
        return outcome

    def _wait(self, timeout: float) -> tuple[Literal["exited", "timeout", "oom"], int | None]:
        try:
            result = self._live.wait(timeout=timeout)
            code = result.get("StatusCode")
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            # docker-py raises ReadTimeout, or ConnectionError wrapping urllib3's read timeout.
            try:
                self._live.reload()
            except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
                raise SandboxError(f"lost the Docker daemon while waiting: {exc}") from exc
            if self._live.status in ("running", "restarting", "paused"):
                self._kill()
                return "timeout", None
            code = self._live.attrs["State"].get("ExitCode")
        try:
            self._live.reload()
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"cannot inspect the container after it exited: {exc}") from exc
        st = self._live.attrs.get("State", {})
        if st.get("OOMKilled"):
            return "oom", code
        if st.get("Error"):
            raise SandboxError(f"the container failed: {st['Error']}")
        return "exited", code

    def _kill(self) -> None:
        try:
            self._live.kill()
            self._live.wait(timeout=30)
        except docker.errors.APIError as exc:
            if "is not running" not in str(exc):
                raise SandboxError(f"cannot kill the timed-out container: {exc}") from exc
        except requests.exceptions.RequestException as exc:  # the daemon went away while we waited
            raise SandboxError(f"lost the Docker daemon while stopping the container: {exc}") from exc

    def _fetch(self, path: str, cap: int) -> tuple[dict[str, bytes], bool]:
        try:
            stream, _stat = self._live.get_archive(path)
        except docker.errors.NotFound:
            return {}, False
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"cannot fetch results from the container: {exc}") from exc
        base = path.rstrip("/").rsplit("/", 1)[-1]
        return read_tar_files(stream, cap, strip=base + "/")

    def _logs(self) -> bytes:
        cap = self.spec.limits.log_limit_bytes
        out = bytearray()
        try:
            for chunk in self._live.logs(stdout=True, stderr=True, stream=True, follow=False):
                out += chunk
                if len(out) >= cap:
                    break
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            return f"(container logs unavailable: {exc})".encode()
        return bytes(out[:cap])

    def close(self) -> None:
        """Hand the container to the reaper (removed in the background, evalkit.sandbox.reaper); its budget
        slot is released once it is gone."""
        if self.container is None:
            self._slot.close()
            return
        container, self.container = self.container, None
        remove_later(str(container.id), str(container.name), self._slot.pop_all().close)
