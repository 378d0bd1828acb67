"""``python -m gpulab.cache``: look at the build cache, clear it, and prepare or check a shared folder.

::

    python -m gpulab.cache info              this user's cache, layer by layer
    python -m gpulab.cache clear             remove this user's entries (never a shared folder's)
    python -m gpulab.cache warm NOTEBOOKS... --targets sm_80,sm_90 --out DIR
                                             run the notebooks so DIR holds every build they make, then publish DIR
    python -m gpulab.cache publish DIR       make DIR, filled by BuildCache(DIR), readable as a shared folder
                                             (only a folder gpulab's cache made, holding nothing else)
    python -m gpulab.cache check DIR         how a learner's gpulab will see DIR in GPULAB_SHARED_CACHE_DIR
"""

from __future__ import annotations

import argparse
import sys

from . import cache_info, clear_cache
from .share import inspect_shared, publish
from .trust import Untrusted


def _info(args: argparse.Namespace) -> int:
    print(cache_info())
    return 0


def _clear(args: argparse.Namespace) -> int:
    before = cache_info()
    clear_cache()
    print(f"removed {before.disk_entries} entries from {before.directory}")
    return 0


def _warm(args: argparse.Namespace) -> int:
    from ..errors import GpulabError
    from ..notebook.warm import warm

    targets = [t for t in args.targets.split(",") if t.strip()]
    try:
        print(warm(args.notebooks, args.out, targets))
    except (GpulabError, Untrusted, OSError) as exc:
        print(f"cannot warm {args.out}: {exc}", file=sys.stderr)
        return 1
    return _publish(argparse.Namespace(folder=args.out))


def _publish(args: argparse.Namespace) -> int:
    try:
        report = publish(args.folder)
    except (Untrusted, OSError) as exc:
        print(f"cannot publish {args.folder}: {exc}", file=sys.stderr)
        return 1
    print(report)
    return 0 if report.ok else 1


def _check(args: argparse.Namespace) -> int:
    report = inspect_shared(args.folder)
    print(report)
    return 0 if report.ok else 1


def parser() -> argparse.ArgumentParser:
    """The command line: one sub-command per job."""
    top = argparse.ArgumentParser(prog="python -m gpulab.cache", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="show this user's cache, layer by layer").set_defaults(run=_info)
    commands.add_parser("clear", help="remove this user's entries (never a shared folder's)").set_defaults(run=_clear)
    fill = commands.add_parser("warm", help="run notebooks (no GPU needed) so that a folder holds every build "
                                            "they make, as learners' runs look them up; then publish it")
    fill.add_argument("notebooks", nargs="+", help="notebooks, or folders of them")
    fill.add_argument("--out", required=True, help="the folder to fill (yours; created if missing)")
    fill.add_argument("--targets", default="", help="compute capabilities of the class's GPUs, comma-separated "
                                                  "(sm_80,sm_90); the notebooks also run once as with no GPU")
    fill.set_defaults(run=_warm)
    share = commands.add_parser("publish", help="make a folder gpulab's cache filled readable by all, as a shared "
                                                "folder (folder 0755, entries 0644; entries that fail checks "
                                                "removed; says what it changed); refuses a folder that holds "
                                                "anything else")
    share.add_argument("folder", help="a folder you own, filled by `warm` or BuildCache(folder, shared=())")
    share.set_defaults(run=_publish)
    check = commands.add_parser("check", help="judge a folder as learners' gpulab will (run it as a learner)")
    check.add_argument("folder", help="a folder meant for GPULAB_SHARED_CACHE_DIR")
    check.set_defaults(run=_check)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return its exit status (1 when a folder or an entry is refused)."""
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
