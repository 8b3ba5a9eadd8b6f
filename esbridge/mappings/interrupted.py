"""What an interrupted ``esbridge index reindex`` leaves, in words: where the alias points, what became of the
half-built version and of the old version's write block, and what to run next."""

from __future__ import annotations

import re
from collections.abc import Callable

from esbridge import errors
from esbridge.engines.base import Engine


def describe_failure(exc: BaseException) -> str:
    """One line for an exception, also for those without a message (KeyboardInterrupt)."""
    return str(exc) or type(exc).__name__


def version_of(alias: str, index: str) -> int | None:
    match = re.fullmatch(re.escape(alias) + r"-v(\d+)", index)
    return int(match.group(1)) if match else None


def alias_on(engine: Engine, alias: str, new: str) -> bool | None:
    """Whether the alias points to ``new``; None when its targets cannot be read."""
    try:
        return engine.alias_targets(alias) == [new]
    except BaseException:  # Ctrl-C again, or the engine gone
        return None


def moved_words(alias: str, old: str, new: str, *, moved: bool | None, lift_block: bool, deleting: bool = False) -> str:
    """What an interrupted reindex says once the alias moved to ``new`` (``moved``), or may have (None)."""
    drop = f"`esbridge index drop --version {version_of(alias, old)}` deletes it"
    if moved is None:
        return (
            f"the alias swap was sent but its answer was lost, and where {alias} points could not be read: "
            f"`esbridge index list` shows it. If it points to {new}, the reindex is done and {old}, kept, may "
            f"still refuse writes ({drop}); if it points to {old}, run `esbridge index reindex` again"
        )
    if deleting:
        kept = f"{old} may not have been deleted: {drop}"
    elif lift_block:
        kept = f"{old} is kept and may still refuse writes (index.blocks.write); nothing writes to it, and {drop}"
    else:
        kept = f"{old} is kept, write-blocked as it was before"
    return f"the reindex is done: {alias} points to {new}, which holds every chunk and takes writes; {kept}"


def undo_interrupted(
    engine: Engine, alias: str, old: str, new: str, copied_by_another: Callable[[], bool] | None
) -> str:
    """Undo a reindex interrupted before the alias moved, as ``IndexManager._abandon`` does, and say what that
    left: a second Ctrl-C (or an engine gone) stops the undoing. ``copied_by_another``: None when ``old`` was
    write-blocked before, else whether a later reindex copies it under this one's block (which then stays); asked
    as part of the undoing, so a second Ctrl-C while it reads the versions is said too."""
    stays = f"{alias} still points to {old}"
    rerun = "run `esbridge index reindex` again, which builds a new, writable version"
    try:
        engine.delete_index(new, missing_ok=True)
    except BaseException as exc:
        return (
            f"{stays}, but the half-built {new} could not be deleted ({describe_failure(exc)}) and {old} may still "
            f"refuse writes: {rerun}, and `esbridge index drop --version {version_of(alias, new)}` deletes "
            f"{new}"
        )
    if copied_by_another is None:
        return f"nothing was changed: {stays}, write-blocked as before, and the half-built {new} was deleted"
    try:
        if copied_by_another():
            return (
                f"{stays}, which stays write-blocked for the later `esbridge index reindex` that copies it now, and "
                f"the half-built {new} was deleted"
            )
        engine.set_write_block(old, False)
    except BaseException as exc:
        return (
            f"{stays} and the half-built {new} was deleted, but {old} may still refuse writes (lifting its write "
            f"block was stopped: {describe_failure(exc)}): {rerun}"
        )
    return (
        f"nothing was changed: {stays}, which takes writes again, and the half-built {new} was deleted; run "
        "`esbridge index reindex` again to build the new version"
    )


def kept_for_the_task(
    engine: Engine, alias: str, old: str, new: str, exc: errors.ReindexTaskRunning, *, lift_block: bool
) -> BaseException:
    """What a reindex raises when its server task was not confirmed cancelled: ``new`` is kept (the task may still
    write into it; deleted, the engine would re-create it with a mapping of its own guessing, which the next
    reindex would then meet), and ``old`` takes writes again when ``lift_block``."""
    words = (
        f"{alias} still points to {old}; {new} was kept, not deleted, as the task may still write into it: once "
        f"the task has ended, `esbridge index drop --version {version_of(alias, new)}` deletes it"
    )
    if lift_block:
        try:
            engine.set_write_block(old, False)
            words += f"; {old} takes writes again"
        except BaseException as lift:  # Ctrl-C again, or the engine gone
            words += (
                f"; {old} may still refuse writes (lifting its write block failed: {describe_failure(lift)}): run "
                "`esbridge index reindex` again, which builds a new, writable version"
            )
    if exc.interrupted:
        return errors.ReindexInterrupted(f"{exc.reason}; {words}")
    return errors.ReindexTaskRunning(
        f"{exc.reason}; {words}",
        task_id=exc.task_id,
        interrupted=False,
        url=exc.url,
        operation=exc.operation,
        index=exc.index,
    )
