"""A simulator for the harness tests of the `sim:CMD` backend, quick to start (no oracle, no
numpy): it answers each request with a state of zero words in the files and shapes case.json
lists (so two of them agree on every case), and misbehaves on the cases it is told to: die of
SIGSEGV, hang, print a line that is not JSON, exit with status 0 without answering, write a
100-byte tmem.bin, answer twice (at once, or the second time 0.3 s later), or answer with JSON nested 1,000 deep. With --pid-log FILE it
appends its process id to FILE for each request, so that a test can count the simulators started."""

from __future__ import annotations

import argparse
import json
import os
import math
import signal
import sys
import time

FAULTS = ("crash", "hang", "garbage", "exit", "truncate", "twice", "late-twice", "nest")


def answer(request: dict, faults: dict[str, list[str]]) -> dict | None:
    case_id = request["case_id"]
    faults = {k.replace("_", "-"): v for k, v in faults.items()}
    if case_id in faults["crash"]:
        os.kill(os.getpid(), signal.SIGSEGV)
    if case_id in faults["hang"]:
        time.sleep(3600)
    if case_id in faults["garbage"]:
        print("Simulator v0.1 ready, loading case...", flush=True)
        return None
    if case_id in faults["exit"]:
        sys.exit(0)
    if case_id in faults["nest"]:
        print("[" * 1000 + "]" * 1000, flush=True)
        return None
    with open(request["case"], encoding="utf-8") as f:
        case = json.load(f)
    state = case["state"]
    for part in [state["tmem"], *state["loads"], *([state["hopper_d"]] if state["hopper_d"] else [])]:
        with open(os.path.join(request["out"], part["file"]), "wb") as f:
            f.write(bytes(4 * math.prod(part["shape"])))
    if case_id in faults["truncate"]:
        with open(os.path.join(request["out"], state["tmem"]["file"]), "r+b") as f:
            f.truncate(100)
    return {"case_id": case_id, "status": "ok"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for fault in FAULTS:
        parser.add_argument(f"--{fault}-on", dest=fault.replace("-", "_"), action="append", default=[], metavar="CASE_ID")
    parser.add_argument("--pid-log", metavar="FILE")
    args = vars(parser.parse_args())
    pid_log = args.pop("pid_log")
    for line in sys.stdin:
        request = json.loads(line)
        if pid_log:
            with open(pid_log, "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()}\n")
        reply = answer(request, args)
        if reply is not None:
            print(json.dumps(reply), flush=True)
            if request["case_id"] in args["twice"] + args["late_twice"]:
                time.sleep(0.3 if request["case_id"] in args["late_twice"] else 0)
                print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
