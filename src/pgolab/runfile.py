"""A run as one file (`pgolab export`, `pgolab import`): how a run travels between machines.

The file is gzipped JSON holding everything the store keeps of the run: its identity, options and
host, every target with its build record and binary digest, every sample, every excluded block
with its reason, and, if asked, the exported profiles of its PGO targets. It carries its format
version and a digest of its content, checked on import: a truncated or edited file is refused, not
half imported. Importing the same file twice changes nothing.

A run killed on one machine continues on another: rebuild the same binaries there (the same
digests: reproducible builds, PGO ones from the exported profiles), import the file, run the same
command. A run that measures wall-clock QPS names its machine in its identity, so it continues
only on the same kind of CPU; a cost-only run continues anywhere (bench.run_identity).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from . import __version__, labels, paths, profile_file
from .errors import PgolabError
from .record import BuildRecord
from .variants import parse as parse_variant
from .stages.bolt import bolt_profile_of
from .stages.pgo import PROFILE_IMPORT
from .store import Store

FORMAT = 1
# The name a _bolt target's BOLT profile has in a run file, after its label.
BOLT_SUFFIX = ".bolt"


@dataclass(frozen=True)
class Imported:
    run: str
    run_id: int
    samples_added: int
    samples_in_file: int
    profiles: list[Path]
    left_out: list[str]      # what the exporting machine said the file lacks


def _content_digest(content: dict) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Exported:
    """What `pgolab export` wrote: how many samples, which profiles, and which the file lacks and why."""
    samples: int
    profiles: list[str]
    left_out: list[str]


def export_run(store: Store, run_ref: str, out: Path, with_profiles: bool = False) -> Exported:
    """Write a stored run to `out`."""
    data, content = _exported(store, run_ref, with_profiles)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    tmp.write_bytes(data)
    tmp.replace(out)
    return Exported(len(content["samples"]), sorted(content.get("profiles", {})), content.get("profiles_left_out", []))


def exported(store: Store, run_ref: str, with_profiles: bool = False) -> tuple[bytes, int]:
    """A stored run as the bytes of its run file (what a cluster's task sends back), and how many
    samples it holds."""
    data, content = _exported(store, run_ref, with_profiles)
    return data, len(content["samples"])


def _exported(store: Store, run_ref: str, with_profiles: bool) -> tuple[bytes, dict]:
    run = store.run(run_ref)
    if run is None:
        raise PgolabError(f"no stored run {run_ref!r} in {store.path}", hint="`pgolab report --list` shows them")
    content = store.rows(run.id)
    if with_profiles:
        content["profiles"], content["profiles_left_out"] = _profiles_of(store, run.id)
    document = {"format": FORMAT, "pgolab": __version__, "digest": _content_digest(content), "content": content}
    return gzip.compress(json.dumps(document).encode()), content


def _profiles_of(store: Store, run_id: int) -> tuple[dict[str, str], list[str]]:
    """name -> a profile file (base64), for another machine to build the same binaries: under a target's
    label, the profile it trained (or the file it was compiled from); under a twin's name, the profile
    of the twin a target compiled with (_bolt, _split, a link-only axis); `<label>.bolt`, a _bolt
    target's BOLT profile. And what the file still lacks, each with what to do."""
    found, left_out = {}, []
    for t in store.targets(run_id):
        record = t.description
        if not isinstance(record, BuildRecord):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                _carry(record, Path(tmp) / "profile.tgz", found, t.label, left_out)
            except PgolabError as exc:     # a damaged file or record: the rest of the run still travels
                left_out.append(f"{t.label}: {_one_line(exc)}")
    return found, left_out


def _encoded(path: Path) -> str:
    """A profile file as a run file holds it."""
    return base64.b64encode(path.read_bytes()).decode()


def _one_line(exc: PgolabError) -> str:
    return f"{exc.message}: {exc.hint}" if exc.hint else exc.message


def _put(found: dict[str, str], name: str, data: str, label: str, left_out: list[str]) -> None:
    """A profile into the file under `name`, unless another target put a different one there (two
    trainings of one build: the first stays, and the file says which target's profile it lacks)."""
    if found.setdefault(name, data) != data:
        left_out.append(f"{label}: the profile {name} it compiled with is another than the one of that name "
                        "already in the file (two trainings of one build): give its build there its own "
                        "profile file (pgolab build ... --profile FILE)")


def _carry(record: BuildRecord, out: Path, found: dict[str, str], label: str, left_out: list[str]) -> None:
    """One target's profiles into `found`, what is missing into `left_out`."""
    variant = parse_variant(record.variant)
    read_from = record.profile.get(PROFILE_IMPORT, {}).get("file")
    tree, _ = labels.split(label)

    def named(build: str) -> str:
        """A profile's name in the file: the build whose training it is, in the target's tree."""
        return labels.in_tree(tree, build) if tree else build
    if variant.reads_profile and read_from is not None:
        # Compiled from a file (its own, or its twin's): that file, which names its training.
        if Path(read_from).is_file():
            _put(found, named(profile_file.read_identity(Path(read_from)).trained_build or record.label),
                 _encoded(Path(read_from)), label, left_out)
        else:
            left_out.append(f"{label}: compiled from {read_from}, which is no longer there: give that file")
    elif variant.reads_profile:
        try:
            identity = profile_file.export_compiled_with(record, out)
        except PgolabError as exc:
            left_out.append(f"{label}: the profile it compiled with: {_one_line(exc)}")
        else:
            # (A twin that is a target too gives the same file's name: one file of one training.)
            _put(found, named(identity.trained_build), _encoded(out), label, left_out)
    merged = (record.bolt or {}).get("bolt-merge")
    if merged and bolt_profile_of(record.dir, merged, out) is not None:
        _put(found, f"{label}{BOLT_SUFFIX}", _encoded(out), label, left_out)
    elif merged:
        where = record.dir / "final" / "bolt"
        left_out.append(f"{label}: its BOLT profile, " + (
            f"not on this machine ({where} is missing)" if not where.is_dir() else
            "merged before pgolab recorded what it is a profile of" if "profile_identity" not in merged else
            "written to since its merge") + ": BOLT trains again there, into another binary")


def read(path: Path) -> dict:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PgolabError(f"{path} is not a pgolab run file: {exc}", hint="give a file written by `pgolab export`")
    return decoded(data, str(path))


def decoded(data: bytes, path: str, hint: str = "") -> dict:
    """A run file's content, checked against its format and its own digest; `path` names it in errors,
    `hint` says what to do where the file did not come from `pgolab export`."""
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PgolabError(f"{path} is not a pgolab run file: {exc}",
                          hint=hint or "give a file written by `pgolab export`")
    version = document.get("format") if isinstance(document, dict) else None
    if not isinstance(version, int) or version > FORMAT:
        raise PgolabError(f"{path} is a run file of format {version!r}; this pgolab reads up to {FORMAT}",
                          hint=hint or "upgrade pgolab, or export the run again with this one")
    if _content_digest(document.get("content", {})) != document.get("digest"):
        raise PgolabError(f"{path} does not match its own digest (truncated or edited)",
                          hint=hint or "export the run again and copy the whole file")
    return document["content"]


def import_run(store: Store, path: Path) -> Imported:
    """Bring a run file into the store: the run if it is new, else what the store lacks of it."""
    return import_content(store, read(path))


def import_content(store: Store, content: dict) -> Imported:
    """A run file's checked content (read, decoded) into the store."""
    run_id, added = store.add_rows(content)
    profiles = []
    if content.get("profiles"):
        folder = paths.home() / "profiles" / content["run"]["name"]
        folder.mkdir(parents=True, exist_ok=True)
        for label, data in content["profiles"].items():
            # Named as a folder of profiles names them: the folder is also `--profiles` for the run's command.
            target = folder / f"{label}{profile_file.SUFFIX}"
            target.write_bytes(base64.b64decode(data))
            profiles.append(target)
    return Imported(content["run"]["name"], run_id, added, len(content["samples"]), profiles,
                    list(content.get("profiles_left_out", [])))
