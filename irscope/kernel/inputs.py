"""Checks of command-line input that need no kernel, made before anything compiles or runs: the
output folder (-o), a log file (--script-log), each parameter named once (--arg/--const), and
option values that must not be empty (--target). Each failure is one BadInput line.

Every command that writes a dump can use check_output_dir (dump, passes, capture, diff, sweep); the
CLI's shared spec options go through take_shared.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from irscope import stages
from irscope.errors import BadInput
from irscope.kernel import loader
from irscope.kernel.specfile import read_spec_document

TARGET_CHOICES = (
    "cuda:80|90|100|120, hip:gfx90a|gfx942|gfx950, or a100, h100, h200, b200, rtx5090, mi250x, mi300x, mi355x"
)


def take_shared(load_timeout: float, out_dir: str | os.PathLike[str], target: str | None, named_args, consts) -> Path:
    """The shared spec options' checks: --load-timeout (knobs.LOAD_TIMEOUT, the loader's limit), --target
    not empty, each parameter named once by --arg/--const; returns -o as a Path. Given only what it checks,
    so the options it does not read (--set, the pins) never pass through here."""
    loader.set_load_timeout(load_timeout)
    check_request_text(target, named_args, consts)
    return out_path(out_dir)


def check_dump_flags(stage: str | None, as_json: bool, out_dir: Path, with_lines: bool = False) -> None:
    """dump (and capture): --stage and --json exclude each other; the output folder can be written; dump's
    --lines (the hot lines under the summary) goes with neither."""
    if stage and as_json:
        raise BadInput(
            "--stage and --json: choose one (--stage prints one stage's text, --json the whole dump "
            "as a document whose 'stages' name each stage's file)"
        )
    check_output_dir(out_dir)
    if with_lines and (stage or as_json):
        raise BadInput(
            "--lines: shows the hot lines under the summary; with --stage or --json use irscope lines DIR [--json]"
        )


def check_capture_only(
    script_args,
    script_log,
    compile_only: bool,
    jobs: int | None = None,
    time_limit: float | None = None,
    no_sass: bool = False,
) -> None:
    """ARGS, --script-log, --compile-only, --jobs, --time-limit and --no-sass belong to a capture (irscope
    capture SCRIPT), not to dump's kernel file or spec file."""
    extra = [
        name
        for name, given in (
            ("ARGS", script_args),
            ("--script-log", script_log),
            ("--compile-only", compile_only),
            ("--jobs", jobs),
            ("--time-limit", time_limit),
            ("--no-sass", no_sass),
        )
        if given not in (None, (), [], False)
    ]
    if extra:
        raise BadInput(
            f"{', '.join(extra)}: appl{'ies' if len(extra) == 1 else 'y'} when FILE is a script run for "
            f"capture (irscope capture SCRIPT), not to a kernel file or spec file"
        )


def check_stage_for_target(stage: str | None, target) -> None:
    """--stage names a stage of the other vendor (amdgcn for a cuda target): refused before compiling."""
    other = "hip" if target.backend == "cuda" else "cuda"
    if stage in stages.names(vendor=other):
        raise BadInput(
            f"--stage {stage}: {target.name} has no {stage} stage (its last stages: "
            f"{', '.join(stages.names(vendor=target.backend))})"
        )


def check_stage(results, stage: str) -> None:
    """dump --stage: the stage must exist for every kernel dumped (a cuda dump has no amdgcn)."""
    for r in results:
        if stage not in r.manifest["stages"]:
            raise BadInput(
                f"stage {stage!r} does not exist for {r.manifest['kernel']} on {r.manifest['target']}; "
                f"stages: {', '.join(r.manifest['stages'])}"
            )


def out_path(text: str | os.PathLike[str], flag: str = "-o") -> Path:
    """-o's text as a folder path; empty text is refused (Path('') would silently mean '.')."""
    if not str(text).strip():
        raise BadInput(f"{flag}: empty; give a folder for the dump (default: irscope-out)")
    return Path(text)


def check_request_text(target: str | None, named_args, consts, flag: str = "--target") -> None:
    """--target given but empty; a parameter named twice by --arg/--const."""
    if target is not None and not target.strip():
        raise BadInput(f"{flag}: empty; give a target: {TARGET_CHOICES}")
    check_named_once(named_args, consts)


def check_named_once(named_args, consts) -> None:
    """--arg/--const: each parameter once (a positional --signature element and a name may both
    give one: the named form wins, as documented; the same NAME twice is a mistake)."""
    seen: dict[str, str] = {}
    for flag, items in (("--arg", named_args), ("--const", consts)):
        for item in items or ():
            key = item.partition("=")[0].strip()
            if key and key in seen:
                raise BadInput(
                    f"{flag} {item!r}: parameter {key!r} is already given by {seen[key]}; give each parameter once"
                )
            seen[key] = f"{flag} {item!r}"


def check_output_dir(path: Path | str, flag: str = "-o") -> None:
    """Refuse an output folder that cannot be written: empty, a file or device, under a file, or
    where this user cannot write. Creates nothing: a probe file is made and removed in the
    nearest folder that exists."""
    if not str(path).strip():
        raise BadInput(f"{flag}: empty; give a folder")
    p = Path(path)
    probe = p
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        what = "" if probe == p else f" ({probe} is not a folder)"
        raise BadInput(f"{flag} {path}: not a folder{what}; give a folder irscope may write in")
    try:
        if not os.access(probe, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
        # and a real probe: as root, os.access says yes on a read-only mount
        fd, name = tempfile.mkstemp(prefix=".irscope-probe-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise BadInput(
            f"{flag} {path}: cannot write in {probe} ({e.strerror or type(e).__name__}); "
            f"give a folder irscope may write in"
        ) from None


def check_output_file(path: Path | str | None, flag: str, example: str) -> Path:
    """A file irscope will write (-o, --html, --script-log, --db, --write-recipe): a regular file or a
    new one, in a folder that exists and can be written. A folder, device, FIFO or socket at the path is
    refused, before any work: irscope replaces or appends to what is there, and a device node (as root,
    /dev/full) must never be replaced by a page. `example` names a file to suggest for a folder."""
    if path is None or not str(path).strip():
        raise BadInput(f"{flag}: empty; give a file to write, e.g. {example}")
    p = Path(path)
    if str(path).endswith(("/", os.sep)) or p.is_dir():
        raise BadInput(f"{flag} {path}: is a folder; give a file to write, e.g. {p / example}")
    if os.path.lexists(p):
        try:
            mode = p.stat().st_mode
        except OSError as e:  # a dangling link, a loop
            raise BadInput(f"{flag} {path}: cannot be followed ({e.strerror or e}); give a regular file") from None
        if not stat.S_ISREG(mode):
            kind = (
                "a device"
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a FIFO"
                if stat.S_ISFIFO(mode)
                else "a socket"
                if stat.S_ISSOCK(mode)
                else "not a regular file"
            )
            raise BadInput(f"{flag} {path}: is {kind}; irscope writes only regular files, give a file path")
        if not os.access(p, os.W_OK):
            raise BadInput(f"{flag} {path}: cannot be written")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        what = " (it is a file)" if os.path.lexists(parent) else ""
        raise BadInput(f"{flag} {path}: {parent} is not an existing folder{what}")
    check_output_dir(parent, flag)
    return p


def check_log_file(path: Path | str | None, flag: str = "--script-log") -> Path | None:
    """--script-log: a regular file (or a new one) to take the script's output."""
    return None if path is None else check_output_file(path, flag, "script.log")


def check_not_spec_file(file: Path) -> None:
    """signature: a spec file is refused, naming the kernel file whose parameters it specializes."""
    if file.suffix == ".json" and file.is_file():
        doc = read_spec_document(file)
        raise BadInput(
            f'{file}: a spec file, not a kernel file: its specialization is its "args" (kernel '
            f"{doc['kernel']} of {doc['file']}); for the kernel's parameters run irscope signature "
            f"{doc['file']}"
        )
