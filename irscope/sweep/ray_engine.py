"""--cluster ray[:ADDRESS]: compiles as Ray tasks on any node's CPUs, timing in one Ray actor per GPU.

connect      ray.init on ADDRESS (host:port, ray://host:port, auto), or a local Ray when none is
             given; refused in one line, before any work, when the address does not answer or
             --time is asked of a cluster without a GPU
compile_all  one task a config (num_cpus=1; a compile needs no GPU), at most as many in flight as
             the cluster has CPUs, so that --timeout counts from a task's start. Each task dumps
             with irscope's cache on its node (the node's IRSCOPE_CACHE_DIR or ~/.cache/irscope);
             on the caller's node it writes into -o directly, elsewhere it sends the folder back
             as a tar, published under -o atomically. A task lost with its node (or its worker,
             while a node died) is compiled again on a live node, up to RETRIES times, and the
             config says so (Config.retried); a crash with every node alive is the config's
             result ("crashed"), as in the local pool
Timers       one long-lived actor per GPU (num_gpus=1), each wrapping a TimingSession exactly as
             the local sweep does (start, add as configs compile, then bench.run), on its node;
             the reference config (the first survivor) goes to every actor, the rest to the
             least loaded. An actor that dies loses its configs, which are timed again on the
             others (with the reference), and the sweep notes it. timed.conclude ranks across
             actors by ratio to the reference and re-times the finalists on one GPU.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from irscope import artifacts
from irscope.compile import dump
from irscope.errors import BadInput, CompileFailure, IrscopeError
from irscope.kernel import loader
from irscope.kernel.spec import KernelSpec
from irscope.sweep.configs import Config
from irscope.sweep.timed import Batch, local_device
from irscope.timing import bench
from irscope.timing.launch import Launch
from irscope.timing.session import TimingSession
from irscope.timing.variant import Variant

RETRIES = 3  # times a config lost with a node is compiled again elsewhere
CONNECT_SECONDS = 5.0
_KERNELS: dict[tuple[str, str], Any] = {}  # in a Ray worker: each kernel file is run once per process


def parse_cluster(text: str | None) -> tuple[str, str | None]:
    """--cluster local | ray | ray:ADDRESS -> (engine, address)."""
    if text is None or text == "local":
        return "local", None
    engine, sep, address = text.partition(":")
    if engine != "ray" or (sep and not address.strip()):
        raise BadInput(
            f"--cluster {text!r}: give local, ray (a local Ray, or RAY_ADDRESS) or ray:ADDRESS "
            "(host:port, ray://host:port, auto)"
        )
    return "ray", address.strip() or None


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS


def _reachable(address: str, timeout: float = CONNECT_SECONDS) -> str | None:
    """Why a host:port (or ray://host:port) is no Ray head; None when it answers as one might.

    Ray's GCS (and the Ray client server behind ray://) speak gRPC: HTTP/2, whose server answers the
    client's connection preface with a SETTINGS frame. Anything else listening on the port (a web
    server, a database, a stray socket) answers otherwise or not at all, where ray.init would retry
    for minutes printing Ray's own log lines; this probe takes at most `timeout` seconds."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "not host:port"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(HTTP2_PREFACE)
            head = b""
            deadline = time.monotonic() + timeout
            while len(head) < 9 and time.monotonic() < deadline:
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError:
        return f"something listens there but did not answer as Ray's GCS (gRPC) within {timeout:.0f} s"
    except OSError as e:
        return e.strerror or str(e) or type(e).__name__
    if len(head) < 9 or head[3] != 0x04:
        return "something listens there, but it is not Ray's GCS (it does not speak gRPC)"
    return None


def connect(address: str | None, need_gpu: bool) -> dict[str, float]:
    """Join (or start) the Ray cluster; its resources. BadInput: unreachable, no Ray, no GPU for --time."""
    try:
        import ray
    except ImportError:
        raise BadInput("--cluster ray needs Ray: pip install 'irscope[ray]'") from None
    shown = address or "a local Ray"
    if address and address != "auto" and (why := _reachable(address)) is not None:
        raise BadInput(
            f"--cluster ray:{address}: the Ray address does not answer ({why}); give the head's "
            "host:port (ray status shows it), ray://host:10001 or auto"
        )
    if not ray.is_initialized():
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise BadInput(
                f"--cluster ray:{shown}: could not join the cluster ({str(e).splitlines()[0][:200]})"
            ) from None
    resources = ray.cluster_resources()
    if need_gpu and resources.get("GPU", 0) < 1:
        raise BadInput(
            f"--time: the Ray cluster at {shown} has no GPU ({int(resources.get('CPU', 0))} CPUs, "
            "0 GPUs); time on a cluster with GPU nodes, or leave out --time"
        )
    return resources


# ---------------------------------------------------------------- compiles as tasks


def compile_task(job: dict[str, Any]) -> dict[str, Any]:
    """A Ray task: one config compiled (or served by the cache) on this node; the result, and the folder
    as a tar when this node is not the caller's."""
    import ray

    here = ray.get_runtime_context().get_node_id()
    local = here == job["caller_node"]
    out_dir = Path(job["out_dir"]) if local else Path(tempfile.mkdtemp(prefix="irscope-ray-"))
    try:
        key = (job["file"], job["kernel"])
        if key not in _KERNELS:
            _KERNELS[key] = loader.select_kernels(job["file"], [job["kernel"]])[0].fn
        spec = KernelSpec(job["kernel"], job["file"], _KERNELS[key], job["args"])
        result = dump.dump(spec, job["settings"], out_dir, use_cache=job["use_cache"], with_sass=job["with_sass"])
        doc = {"status": "ok", "folder": str(result.folder), "node": here, "cached": result.cached}
        if not local:
            doc["relative"] = str(result.folder.relative_to(out_dir))
            doc["tar"] = _tar(result.folder)
    except CompileFailure as e:
        doc = {
            "status": "does not fit" if e.stage == "resources" else "compile failed",
            "reason": f"stage {e.stage}: {e.reason}"[:500],
            "node": here,
        }
    except BadInput as e:
        doc = {"status": "bad input", "reason": str(e)[:500], "node": here}
    finally:
        if not local:
            shutil.rmtree(out_dir, ignore_errors=True)
    return doc


def _tar(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return buf.getvalue()


def _unpack(doc: dict[str, Any], out_dir: Path) -> Path:
    """A folder sent back from another node, published under -o whole (artifacts.publish)."""
    final = out_dir / doc["relative"]
    tmp = artifacts.make_tmp(final)
    with tarfile.open(fileobj=io.BytesIO(doc["tar"]), mode="r:gz") as tar:
        tar.extractall(tmp, filter="data")
    artifacts.publish(tmp, final)
    return final


def compile_all(
    configs: list[Config],
    out_dir: Path,
    timeout: float,
    done: Callable[[Config], None],
    *,
    use_cache: bool,
    with_sass: bool,
) -> None:
    """Every config as a Ray task (see the module's docstring); `done` sees each result as it comes."""
    import ray

    task = ray.remote(num_cpus=1, max_retries=0)(compile_task)
    # through Ray Client (ray://) this process is on no node: every folder comes back as a tar
    caller = "" if _client_mode() else ray.get_runtime_context().get_node_id()
    base = {
        "out_dir": str(Path(out_dir).resolve()),
        "use_cache": use_cache,
        "with_sass": with_sass,
        "caller_node": caller,
    }
    queued = list(configs)
    flight: dict[Any, tuple[Config, float, set[str]]] = {}
    tries: dict[int, int] = {}
    while queued or flight:
        slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        while queued and len(flight) < slots:
            cfg = queued.pop(0)
            ref = task.remote(
                dict(base, file=cfg.spec.file, kernel=cfg.spec.kernel, args=cfg.spec.args, settings=cfg.settings)
            )
            flight[ref] = (cfg, time.perf_counter(), _alive())
        ready, _ = ray.wait(list(flight), num_returns=1, timeout=0.2)
        for ref in ready:
            cfg, started, nodes = flight.pop(ref)
            cfg.seconds = time.perf_counter() - started
            try:
                doc = ray.get(ref)
            except ray.exceptions.RayTaskError as e:  # an exception in irscope: the config's result
                cfg.status, cfg.reason = "crashed", str(e.cause if hasattr(e, "cause") else e).splitlines()[0][:300]
            except ray.exceptions.RayError as e:  # the worker or its node is gone
                lost = nodes - _alive()
                if lost and tries.get(cfg.index, 0) < RETRIES:
                    tries[cfg.index] = tries.get(cfg.index, 0) + 1
                    cfg.retried = (
                        f"lost with node {min(lost)[:12]} ({type(e).__name__}); compiled again "
                        f"on a live node ({tries[cfg.index]}x)"
                    )
                    queued.insert(0, cfg)
                    continue
                cfg.status, cfg.reason = (
                    "crashed",
                    (
                        f"the compiler process died ({type(e).__name__})"
                        if not lost
                        else f"lost with its node {RETRIES + 1} times"
                    ),
                )
            else:
                cfg.node = doc.get("node", "")
                if doc["status"] == "ok":
                    folder = Path(doc["folder"]) if "tar" not in doc else _unpack(doc, Path(out_dir))
                    cfg.status = "cached" if doc.get("cached") else "ok"
                    cfg.folder = str(folder)
                    cfg.stats = json.loads((folder / "manifest.json").read_text())["stats"]
                else:
                    cfg.status, cfg.reason = doc["status"], doc["reason"]
            done(cfg)
        now = time.perf_counter()
        for ref, (cfg, started, _) in list(flight.items()):
            if now - started > timeout:
                ray.cancel(ref, force=True)
                flight.pop(ref)
                cfg.seconds = now - started
                cfg.status, cfg.reason = "timed out", f"no result after {timeout:g} s"
                done(cfg)


def _client_mode() -> bool:
    import ray.util.client

    return ray.util.client.ray.is_connected()


def _alive() -> set[str]:
    import ray

    return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}


# ---------------------------------------------------------------- timing actors


class TimingActor:
    """One GPU's timing: a TimingSession on the actor's node, fed as configs compile (bench's method)."""

    def __init__(self, launch: Launch, measure: dict[str, Any]) -> None:
        self.launch, self.measure = launch, measure
        self.session: TimingSession | None = None
        self.variants: list[Variant] = []

    def where(self) -> str:
        import ray

        ctx = ray.get_runtime_context()
        gpus = ",".join(str(g) for g in ctx.get_accelerator_ids().get("GPU", []))
        return f"GPU {gpus or '?'} of node {ctx.get_node_id()[:12]}"

    def device(self) -> str | None:
        return local_device()

    def start(self) -> None:
        self.session = TimingSession()
        self.variants = []
        self.session.start(
            self.launch,
            ref=self.measure.get("ref"),
            max_seconds=self.measure["max_seconds"],
            prune=self.measure["prune"],
            warmup=1,
            graph=self.measure["graph"],
            duty=self.measure["duty"],
        )

    def add(self, job: dict[str, Any]) -> str:
        """Compile here (Triton's cache on this node serves a binary made before) and hand to the session."""
        key = (job["file"], job["kernel"])
        if key not in _KERNELS:
            _KERNELS[key] = loader.select_kernels(job["file"], [job["kernel"]])[0].fn
        v = Variant(job["name"], KernelSpec(job["kernel"], job["file"], _KERNELS[key], job["args"]), job["settings"])
        bench.compile_variants([v])
        self.variants.append(v)
        if v.status == "ok":
            assert self.session is not None, "start() before add()"  # the engine starts each batch first
            self.session.add(v)
        return v.status

    def finish(self) -> bench.BenchReport:
        assert self.session is not None, "start() before finish()"
        try:
            return bench.run(
                self.variants, self.launch, max_seconds=self.measure["max_seconds"], session=self.session, compiled=True
            )
        finally:
            self.session.close()


def job_of(cfg: Config) -> dict[str, Any]:
    """What an actor needs of a config (the kernel function is loaded on its node)."""
    return {
        "name": cfg.label,
        "file": cfg.spec.file,
        "kernel": cfg.spec.kernel,
        "args": cfg.spec.args,
        "settings": cfg.settings,
    }


class Timers:
    """The actors, one per GPU, and the batches they time (see the module's docstring)."""

    def __init__(
        self, launch: Launch, measure: dict[str, Any], actor_cls: type = TimingActor, count: int | None = None
    ) -> None:
        import ray

        n = count or int(ray.cluster_resources().get("GPU", 0))
        remote = ray.remote(num_gpus=1, num_cpus=0, max_restarts=0)(actor_cls)
        self.actors = [remote.remote(launch, measure) for _ in range(max(1, n))]
        self.where = dict(zip(self.actors, ray.get([a.where.remote() for a in self.actors])))
        self.notes: list[str] = []
        self.reference: Config | None = None
        self.load: dict[Any, list[Config]] = {}
        self.started = False
        self.more = False

    def start(self) -> None:
        """A new batch on every actor (each a fresh timing process); the next config added is its reference."""
        import ray

        if self.started and not any(self.load.values()):  # started and still unused: it serves
            return
        self.load = {a: [] for a in self.actors}
        self.reference = None
        ray.get([a.start.remote() for a in self.actors])
        self.started = True

    def add(self, cfg: Config) -> None:
        """The first survivor to every actor (the reference); each later one to the least loaded."""
        if not self.started:
            self.start()
        if self.reference is None:
            self.reference = cfg
            for a in self.actors:
                self.load[a].append(cfg)
                a.add.remote(job_of(cfg))
            return
        a = min(self.actors, key=lambda x: len(self.load[x]))
        self.load[a].append(cfg)
        a.add.remote(job_of(cfg))

    def finish(self) -> list[Batch]:
        """Every actor's batch; configs of an actor that died are timed again on the others."""
        import ray

        batches: list[Batch] = []
        if not self.started:
            return batches
        self.started = False
        while True:
            refs = {a: a.finish.remote() for a in self.actors if self.load[a]}
            lost: list[Config] = []
            for a, ref in refs.items():
                assert self.reference is not None  # the first config added, to every actor
                try:
                    batches.append(Batch(ray.get(ref), self.where[a], self.reference.label))
                except ray.exceptions.RayTaskError as e:  # irscope's own error on that node: said as it is
                    cause = getattr(e, "cause", None) or e
                    if isinstance(cause, IrscopeError):
                        raise type(cause)(f"timing on {self.where[a]}: {cause}") from None
                    raise IrscopeError(
                        f"timing on {self.where[a]} failed: {str(cause).splitlines()[0][:300]}"
                    ) from None
                except ray.exceptions.RayActorError as e:
                    self.actors.remove(a)
                    again = [c for c in self.load[a] if c is not self.reference]
                    lost += again
                    self.notes.append(
                        f"the timing actor on {self.where[a]} died ({type(e).__name__}); its "
                        f"{len(again)} configs were timed again on another GPU"
                    )
            if not lost:
                return batches
            if not self.actors:
                raise BadInput("every timing actor died; no GPU left in the Ray cluster to time on")
            reference = self.reference
            assert reference is not None  # configs were timed, so the batch had its reference
            self.started = False
            self.start()
            for cfg in [reference, *lost]:
                self.add(cfg)
            self.started = False

    def retime(self, configs: list[Config]) -> Batch:
        """The finalists together on one GPU: the winner and its margin from paired rounds."""
        import ray

        a = self.actors[0]
        ray.get(a.start.remote())
        ray.get([a.add.remote(job_of(c)) for c in configs])
        return Batch(ray.get(a.finish.remote()), self.where[a], configs[0].label)

    def device(self) -> str | None:
        """The first actor's GPU's name (the database's condition), asked on its node."""
        import ray

        return ray.get(self.actors[0].device.remote())

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
