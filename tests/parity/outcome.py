"""The ending every parity check shares: each failure on a line, then ok or the count, and the
exit status CTest reads."""


def finish(failures):
    for failure in failures:
        print("FAIL", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0
