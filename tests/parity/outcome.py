"""What the parity checks share: the probe argument they start from, and their ending: each
failure on a line, then ok or the count, and the exit status CTest reads."""
import argparse


def probe_path(doc):
    """The --probe PROGRAM a check is given (its docstring `doc` is the --help text)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    return parser.parse_args().probe


def finish(failures):
    for failure in failures:
        print("FAIL", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0
