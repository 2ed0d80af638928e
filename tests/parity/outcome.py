"""What the parity checks share: the probe or cvtrain argument they start from, and their ending: each
failure on a line, then ok or the count, and the exit status CTest reads."""
import argparse


def probe_path(doc):
    """The --probe PROGRAM a check is given (its docstring `doc` is the --help text)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    return parser.parse_args().probe


def cvtrain_path(doc):
    """The --cvtrain PROGRAM a check of the command line is given (`doc`: the --help text)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cvtrain", required=True)
    return parser.parse_args().cvtrain


def finish(failures):
    for failure in failures:
        print("FAIL", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0
