"""`cronwright init`: a starter config and an example python target, ready to fire within a minute."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# Each starter file, by its path under the folder it is written to (and under the package's templates/).
FILES = ("cronwright.toml", "scripts/hello.py")


def write_starter(folder: Path) -> list[Path]:
    """Writes the starter files into `folder` and returns their paths.

    Refuses (FileExistsError, naming them) if any of them exists already, before writing anything: it never
    overwrites, and never leaves half a starter behind.
    """
    targets = [folder / name for name in FILES]
    existing = [str(path) for path in targets if path.exists()]
    if existing:
        raise FileExistsError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "cronwright init never overwrites: move them away, or init another folder"
        )
    templates = resources.files("cronwright") / "templates"
    for name, path in zip(FILES, targets, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as file:  # "x": never clobber a file made since the check
            file.write((templates / name).read_text(encoding="utf-8"))
    return targets
