"""The test suite's own layout: what pytest needs to collect every file in one run."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_name_of_its_own():
    # The test folders are not packages, so pytest imports each module by its file name alone: a second file of
    # one name fails to collect ("import file mismatch") wherever one worker collects both.
    names = Counter(path.name for path in TESTS.rglob("test_*.py") if "node_modules" not in path.parts)
    assert not [name for name, count in names.items() if count > 1], names.most_common(5)
