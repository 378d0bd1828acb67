"""Run a function in many threads at once (the cache tests, tests/nocuda/security/test_concurrency.py)."""

import threading


def run_threads(count: int, target) -> list:
    """Run ``target()`` in ``count`` threads released together; return results or exceptions."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results[index] = target()
        except BaseException as exc:  # noqa: BLE001 - collected for the test to inspect
            results[index] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
