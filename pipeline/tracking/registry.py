"""The model registry: every candidate checkpoint is a version; aliases say which one is which.

`challenger` follows the newest candidate; `champion` moves only through `promote`, which demands a passing gate
decision, so the alias the next iteration starts from cannot move by accident. Checkpoints are plain directories
(no MLflow flavor): each is logged as a run artifact and registered with that artifact as its source.

Both steps are idempotent, so a rerun (or a run again after a kill) changes nothing that already happened: a
version carries its checkpoint's digest as a tag, and the same files find the same version instead of becoming a
new one; promoting the version `champion` already points at moves nothing.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.agents import directory_digest
from pipeline.errors import InputError, TrackingError
from pipeline.tracking.config import TrackingConfig
from pipeline.tracking.records import GateRecord

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from pipeline.tracking.tracker import IterationTracker

log = logging.getLogger(__name__)

CHALLENGER = "challenger"
CHAMPION = "champion"
CHECKPOINT_ARTIFACT = "checkpoint"
DIGEST_TAG = "agentloop.checkpoint_digest"


class PromotionRefused(TrackingError, RuntimeError):
    """`promote` was called with a gate decision that does not allow promotion."""


def _ensure_model(client: MlflowClient, name: str) -> None:
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(name)
    except MlflowException:
        try:
            client.create_registered_model(
                name, description="Checkpoints of the agentloop agent; aliases: champion (gated), challenger (latest)."
            )
        except MlflowException:
            client.get_registered_model(name)  # another run created it in between; anything else raises here


def _set_challenger(tracker: IterationTracker, version: str) -> None:
    """Under the registry's lock, like every alias move: two runs setting an alias at once collide in the store."""
    from pipeline.tracking.aliaslock import registry_lock

    name = tracker.config.model_name
    with registry_lock(tracker.config.tracking_uri, name):
        tracker.client.set_registered_model_alias(name, CHALLENGER, version)


def register_checkpoint(
    tracker: IterationTracker, checkpoint_dir: str | Path, tags: Mapping[str, str] | None = None
) -> str:
    """Log ``checkpoint_dir`` under the tracker's active run and register it; alias `challenger` → the new version.

    ``tags`` go on the version beside the iteration's (e.g. the digests of the data that trained it)."""
    src = Path(checkpoint_dir)
    if not src.is_dir():
        raise InputError(f"checkpoint {src} is not a directory")
    run = tracker.active
    client, name = tracker.client, tracker.config.model_name
    digest = directory_digest(src)
    _ensure_model(client, name)
    known = version_of_digest(client, name, digest)
    if known is not None:
        _set_challenger(tracker, known)
        run.set_tags({"agentloop.model_version": known})
        if run is not tracker:
            tracker.set_tags({"agentloop.model_version": known})
        log.info("%s: already registered as %s version %s (alias %s)", src, name, known, CHALLENGER)
        return known
    artifact = CHECKPOINT_ARTIFACT
    if client.list_artifacts(run.run_id, CHECKPOINT_ARTIFACT):
        # a stage run logged again (reused) already holds another version's files: never write over them
        artifact = f"{CHECKPOINT_ARTIFACT}-{digest[:12]}"
    run.log_artifact(src, artifact)
    mv = client.create_model_version(
        name,
        source=f"{run.artifact_uri()}/{artifact}",
        run_id=run.run_id,
        tags={
            "agentloop.iteration": str(tracker.iteration),
            "agentloop.agent": tracker.agent,
            "agentloop.git_commit": tracker.commit or "",
            DIGEST_TAG: digest,
            **(tags or {}),
        },
        description=f"{tracker.run_name}: candidate checkpoint",
    )
    version = _one_version_of_digest(client, name, digest, str(mv.version))
    _set_challenger(tracker, version)
    run.set_tags({"agentloop.model_version": version})
    if run is not tracker:
        tracker.set_tags({"agentloop.model_version": version})
    log.info("registered %s version %s (alias %s)", name, version, CHALLENGER)
    return version


def _one_version_of_digest(client: MlflowClient, name: str, digest: str, created: str) -> str:
    """The first version of this checkpoint, the later ones deleted: MLflow's client retries a create whose reply
    was lost (its first try may have landed), and two runs may register the same files at once. A duplicate holds
    nothing the first does not (the same digest), and left alone it would be a version without an alias."""
    from mlflow.exceptions import MlflowException

    found = sorted(
        int(mv.version) for mv in client.search_model_versions(f"name = '{name}' and tags.`{DIGEST_TAG}` = '{digest}'")
    )
    first = str(found[0]) if found else created
    for extra in found[1:]:
        try:
            if client.get_model_version(name, str(extra)).aliases:  # another run's, already in use: left alone
                continue
            client.delete_model_version(name, str(extra))
        except MlflowException:  # deleted by the other run that found it
            continue
        log.warning(
            "%s version %s duplicated version %s (same checkpoint %s): deleted", name, extra, first, digest[:12]
        )
    return first


class PromotionOvertaken(TrackingError, RuntimeError):
    """`champion` moved while this run trained: it no longer points at the version the run was gated against."""

    def __init__(self, message: str, current: str | None) -> None:
        super().__init__(message)
        self.current = current


class _Unchecked:
    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Any = _Unchecked()
"""`gated_against` for a promotion that was not gated against the champion (it moves whatever is there)."""


def promote(
    version: str | int,
    decision: Mapping[str, Any],
    *,
    config: TrackingConfig | None = None,
    tracker: IterationTracker | None = None,
    gated_against: str | None = UNCHECKED,
) -> None:
    """Move alias `champion` to ``version``; refuses unless ``decision`` is a gate decision with promote = true.

    The move is compare-and-set (`pipeline.tracking.aliaslock`): under the registry's lock the alias is read again,
    and when ``gated_against`` is given (the champion's version the gate measured against, None for "there was
    none") and the champion is no longer that version, nothing moves: PromotionOvertaken names both versions
    (the run stops; a rerun gates against the new champion)."""
    from pipeline.tracking.aliaslock import registry_lock

    gate = GateRecord.parse(decision)
    if not gate.promote:
        raise PromotionRefused(f"gate blocked version {version}: {'; '.join(gate.reasons) or 'no reason given'}")
    config = config or (tracker.config if tracker else TrackingConfig())
    client = tracker.client if tracker else config.client()
    with registry_lock(config.tracking_uri, config.model_name) as held:
        previous = _alias_version(client, config.model_name, CHAMPION)
        if previous == str(version):
            if tracker is not None:
                tracker.set_tags({"agentloop.promoted_version": str(version)})
            log.info("%s version %s is already %s; nothing to move", config.model_name, version, CHAMPION)
            return
        if gated_against is not UNCHECKED and previous != (None if gated_against is None else str(gated_against)):
            if tracker is not None:
                tracker.set_tags({"agentloop.overtaken_by": previous or "none"})
            raise PromotionOvertaken(
                f"{config.model_name} {CHAMPION} moved while this run trained: it is version {previous}, this run was"
                f" gated against {'no champion' if gated_against is None else f'version {gated_against}'};"
                f" version {version} is registered but not promoted (rerun to gate it against version {previous})",
                previous,
            )
        client.set_registered_model_alias(config.model_name, CHAMPION, str(version))
        client.set_model_version_tag(config.model_name, str(version), "agentloop.promoted_over", previous or "none")
    if tracker is not None:
        tracker.set_tags({"agentloop.promoted_version": str(version)})
    log.info("promoted %s version %s to %s (was %s; %s)", config.model_name, version, CHAMPION, previous, held)


PRODUCTION = "production"
DEPLOYED_OVER = "agentloop.deployed_over."
"""Tag prefix on a version: ``agentloop.deployed_over.ALIAS`` = the version ALIAS pointed at before it (or "none")."""


class DeployError(TrackingError, RuntimeError):
    """A deployment alias cannot move as asked (no such version, nothing to roll back to)."""


def _check_alias_name(alias: str) -> None:
    if alias in (CHAMPION, CHALLENGER):
        raise DeployError(f"--alias {alias}: moved by the loop itself (promote, register); deploy another alias")
    if not alias or not alias.replace("-", "").replace("_", "").isalnum():
        raise DeployError(f"--alias {alias!r}: expected letters, digits, '-' or '_'")


def deploy(alias: str = PRODUCTION, version: str | int | None = None, config: TrackingConfig | None = None) -> dict:
    """Move ``alias`` to ``version`` (default: the champion's), recording on that version the one it replaces, so
    `rollback` can move it back; returns {"alias", "version", "previous"} (previous None: it was unset).

    Under the registry's lock, like every alias move. Deploying the version already there moves nothing."""
    from pipeline.tracking.aliaslock import registry_lock
    from pipeline.tracking.bounds import check_reachable, tracking_errors

    _check_alias_name(alias)
    config = config or TrackingConfig()
    check_reachable(config.tracking_uri)
    with tracking_errors(config.tracking_uri):
        client = config.client()
        target, _ = resolve_version(CHAMPION if version is None else version, config)
        with registry_lock(config.tracking_uri, config.model_name):
            previous = _alias_version(client, config.model_name, alias)
            if previous != target:
                client.set_model_version_tag(config.model_name, target, DEPLOYED_OVER + alias, previous or "none")
                client.set_registered_model_alias(config.model_name, alias, target)
    log.info("%s %s: version %s (was %s)", config.model_name, alias, target, previous)
    return {"alias": alias, "version": target, "previous": previous}


def rollback(alias: str = PRODUCTION, config: TrackingConfig | None = None) -> dict:
    """Move ``alias`` back to the version it pointed at before its current one (recorded by `deploy`); a second
    rollback goes one further back. Returns {"alias", "version", "previous"} (previous: the version left)."""
    from pipeline.tracking.aliaslock import registry_lock
    from pipeline.tracking.bounds import check_reachable, tracking_errors

    _check_alias_name(alias)
    config = config or TrackingConfig()
    check_reachable(config.tracking_uri)
    with tracking_errors(config.tracking_uri):
        client = config.client()
        with registry_lock(config.tracking_uri, config.model_name):
            current = _alias_version(client, config.model_name, alias)
            if current is None:
                raise DeployError(
                    f"{config.model_name} has no alias {alias} in {config.tracking_uri}: nothing deployed"
                )
            mv = client.get_model_version(config.model_name, current)
            before = (mv.tags or {}).get(DEPLOYED_OVER + alias)
            if not before or before == "none":
                raise DeployError(
                    f"{config.model_name} {alias} (version {current}) records no earlier version:"
                    " nothing to roll back to"
                )
            client.set_registered_model_alias(config.model_name, alias, before)
    log.info("%s %s rolled back: version %s (was %s)", config.model_name, alias, before, current)
    return {"alias": alias, "version": before, "previous": current}


def version_of_digest(client: MlflowClient, name: str, digest: str) -> str | None:
    """The (first) version registered from a checkpoint with this digest, or None."""
    found = client.search_model_versions(f"name = '{name}' and tags.`{DIGEST_TAG}` = '{digest}'")
    return str(min(int(mv.version) for mv in found)) if found else None


def _alias_version(client: MlflowClient, name: str, alias: str) -> str | None:
    from mlflow.exceptions import MlflowException

    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except MlflowException:  # no such model or no such alias
        return None


def alias_version(alias: str, config: TrackingConfig | None = None) -> str | None:
    """The version behind ``alias`` of the configured model, or None while it is unset."""
    config = config or TrackingConfig()
    return _alias_version(config.client(), config.model_name, alias)


def champion_version(config: TrackingConfig | None = None) -> str | None:
    """The version behind alias `champion`, or None before any promotion."""
    config = config or TrackingConfig()
    return _alias_version(config.client(), config.model_name, CHAMPION)


def challenger_version(config: TrackingConfig | None = None) -> str | None:
    """The version behind alias `challenger` (the newest candidate), or None before any registration."""
    config = config or TrackingConfig()
    return _alias_version(config.client(), config.model_name, CHALLENGER)


def _download(client: MlflowClient, config: TrackingConfig, mv: Any, dst: Path) -> Path:
    """A version's files into ``dst`` through the configured client (`models:/` URIs would consult MLflow's
    global registry URI instead of ours)."""
    import mlflow.artifacts

    dst.mkdir()
    run_root = client.get_run(mv.run_id).info.artifact_uri.rstrip("/") if mv.run_id else None
    if run_root and mv.source.startswith(run_root + "/"):
        return Path(client.download_artifacts(mv.run_id, mv.source[len(run_root) + 1 :], str(dst)))
    return Path(
        mlflow.artifacts.download_artifacts(artifact_uri=mv.source, dst_path=str(dst), tracking_uri=config.tracking_uri)
    )


class RegistryError(TrackingError, RuntimeError):
    """The registry has no such version, or what it holds is not what it recorded."""


def resolve_version(which: str | int, config: TrackingConfig | None = None) -> tuple[str, str]:
    """(version, how it was named) for `champion`, `challenger` or a version number; RegistryError if none."""
    config = config or TrackingConfig()
    client = config.client()
    name = str(which)
    if name in (CHAMPION, CHALLENGER):
        version = _alias_version(client, config.model_name, name)
        if version is None:
            raise RegistryError(f"{config.model_name} has no {name} yet in {config.tracking_uri}: run an iteration")
        return version, name
    if not name.isdigit() or int(name) < 1:
        raise RegistryError(f"{name!r}: expected {CHAMPION}, {CHALLENGER} or a version number")
    from mlflow.exceptions import MlflowException

    try:
        client.get_model_version(config.model_name, str(int(name)))
    except MlflowException:
        raise RegistryError(f"{config.model_name} has no version {int(name)} ({config.tracking_uri})") from None
    return str(int(name)), f"version {int(name)}"


def fetch_version(dst: str | Path, which: str | int, config: TrackingConfig | None = None) -> tuple[str, str]:
    """Download a version's files into ``dst`` (replacing it) and check them against the digest registered with
    them; returns (version, digest). A mismatch is an error naming both digests, and ``dst`` is left untouched.

    The download goes to a sibling temporary directory first, so ``dst`` is never left half-written.
    """
    config = config or TrackingConfig()
    version, named = resolve_version(which, config)
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    client = config.client()
    mv = client.get_model_version(config.model_name, version)
    registered = (mv.tags or {}).get(DIGEST_TAG)
    if not registered:
        raise RegistryError(f"{config.model_name} version {version} ({named}) records no {DIGEST_TAG}: cannot check it")
    with tempfile.TemporaryDirectory(dir=dst.parent, prefix=f".{dst.name}.") as tmp:
        got = Path(_download(client, config, mv, Path(tmp) / "files"))
        fetched = directory_digest(got)
        if fetched != registered:
            raise RegistryError(
                f"{config.model_name} version {version} ({named}): the fetched files' digest {fetched} is not the"
                f" registered {DIGEST_TAG} {registered}"
            )
        if dst.exists():
            shutil.rmtree(dst)
        got.rename(dst)
    log.info("fetched %s version %s (%s, digest %s) into %s", config.model_name, version, named, fetched[:12], dst)
    return version, fetched


def champion_checkpoint(dst: str | Path, config: TrackingConfig | None = None) -> Path | None:
    """Download the champion's files into ``dst`` (replacing it, digest checked); None when there is no champion."""
    config = config or TrackingConfig()
    if champion_version(config) is None:
        return None
    fetch_version(dst, CHAMPION, config)
    return Path(dst)
