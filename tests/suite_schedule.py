"""How ``make test`` spreads a lane's test files over its two pytest-xdist workers.

A lane on one process left half of a 2-core box idle: measured on 2026-12-07, the pinned lane kept
1.22 cores busy on average over its 18 minutes (servers and trainers wait on sockets, launchers on
processes, pytest on imports), so ``make test`` runs ``-n 2 --dist loadfile``. Two rules on top of
xdist's ``loadfile``:

- **Files that share a system resource run on one worker**, one after the other:
  :data:`SHARED` names them (the network-namespace tests build bridges and veth pairs in the
  root namespace).  Every other resource a test uses is its own: ports are probed free, temporary
  files live under the test's ``tmp_path``, processes are found by the test's own paths.
- **The heaviest files go first**, so the last file to finish is a short one (longest-processing-
  time-first): each file's seconds are read from :data:`WEIGHTS` (``.ci/suite-durations.txt``, one
  ``seconds path`` line a file, written by ``.ci/record_durations.py`` from a lane's ``--durations=0``
  output); a file missing there counts as one second.  A stale list costs only balance.

The order is only the workers' choice: ``make test`` without xdist, and ``--shuffle``, keep theirs.
"""
from __future__ import annotations

from pathlib import Path

#: Files whose tests must not overlap with each other's, by the name of what they share.
SHARED = {
    "tests/launch/test_netns_launch.py": "network namespaces",
    "tests/partition/test_distributed_netns.py": "network namespaces",
}

WEIGHTS = Path(__file__).resolve().parent.parent / ".ci" / "suite-durations.txt"
UNKNOWN_SECONDS = 1.0


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the resource its file shares with others."""
    path = nodeid.split("::", 1)[0]
    return SHARED.get(path, path)


def weights(path: Path = WEIGHTS) -> dict[str, float]:
    """Seconds per unit of work (a shared resource sums its files' seconds)."""
    seconds: dict[str, float] = {}
    if not path.exists():
        return seconds
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        value, name = line.split(maxsplit=1)
        unit = unit_of(name.strip())
        seconds[unit] = seconds.get(unit, 0.0) + float(value)
    return seconds


def heaviest_first(items: list) -> None:
    """Order ``items`` (in place) unit by unit, the heaviest unit first; within a unit, as collected.
    Both workers run this on the same collection, so they agree (xdist checks that they do)."""
    seconds = weights()
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(unit_of(item.nodeid), index)
    items.sort(key=lambda item: (-seconds.get(unit_of(item.nodeid), UNKNOWN_SECONDS),
                                 first_seen[unit_of(item.nodeid)]))


def scheduler(config, log):
    """xdist's ``loadfile`` scheduling with :func:`unit_of` as its unit and the collection's order
    (:func:`heaviest_first`) kept, instead of xdist's order by number of tests."""
    from xdist.scheduler import LoadFileScheduling

    class SuiteScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return SuiteScheduling(config, log)
