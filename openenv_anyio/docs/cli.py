"""``openenv-anyio docs``: generate the protocol reference from the spec, or check it is fresh."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["configure", "run"]

DEFAULT_OUT = {"markdown": Path("protocol/reference"), "html": Path("build/reference")}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``docs`` arguments (no heavy imports here)."""
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: protocol/reference for markdown, build/reference for html)",
    )
    parser.add_argument(
        "--format",
        choices=("markdown", "html"),
        default="markdown",
        help="markdown: one page per frame plus an index and one per code registry; html: one self-contained page",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and name the stale files if DIR differs from what would be generated",
    )
    parser.add_argument(
        "--spec-root",
        type=Path,
        metavar="DIR",
        help="directory holding the spec version directory v1/ (default: the bundled spec)",
    )


def _regenerate_command(args: argparse.Namespace) -> str:
    parts = ["openenv-anyio docs"]
    if args.out is not None:
        parts.append(f"--out {args.out}")
    if args.format != "markdown":
        parts.append(f"--format {args.format}")
    if args.spec_root is not None:
        parts.append(f"--spec-root {args.spec_root}")
    return " ".join(parts)


def _default_out(fmt: str) -> Path:
    """The default output directory; for Markdown the project's ``protocol/reference`` in
    the current folder or the nearest folder above it that has one (the command then works
    from anywhere in the project)."""
    default = DEFAULT_OUT[fmt]
    if fmt == "markdown":
        here = Path.cwd()
        for folder in (here, *here.parents):
            if (folder / default).is_dir():
                return default if folder == here else folder / default
    return default


def run(args: argparse.Namespace) -> int:
    """Generate (or check) the reference; a broken spec is one line on stderr and exit 1."""
    from openenv_anyio.core import SpecError, load_spec

    from . import DocsError, generate
    from .output import stale_files, write_files

    out: Path = args.out if args.out is not None else _default_out(args.format)
    try:
        spec = load_spec(args.spec_root.resolve() if args.spec_root is not None else None)
        files = generate(spec, args.format)
    except (DocsError, SpecError) as exc:
        print(f"openenv-anyio docs: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    if args.check:
        if not out.is_dir():
            where = (
                f"{out} does not exist" if args.out is not None else f"no {out} in {Path.cwd()} or a folder above it"
            )
            print(f"openenv-anyio docs: {where}; run from the project, or pass --out DIR", file=sys.stderr)
            return 1
        stale = stale_files(files, out)
        if stale:
            print(
                f"openenv-anyio docs: {out} is stale: {', '.join(stale)}; "
                f"regenerate with `{_regenerate_command(args)}`",
                file=sys.stderr,
            )
            return 1
        print(f"{out}: up to date ({len(files)} files)")
        return 0
    try:
        changed = write_files(files, out)
    except OSError as exc:
        print(f"openenv-anyio docs: cannot write {out}: {exc}", file=sys.stderr)
        return 1
    print(f"{out}: {len(files)} files, {len(changed)} changed" + (f" ({', '.join(changed)})" if changed else ""))
    return 0
