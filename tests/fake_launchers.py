"""Stand-ins for a campaign's GPU worker launcher (`tcgen05_conformance.campaign.run`), named to the
campaign as `tests.fake_launchers:<factory>` and made in the worker processes it spawns.

Each returns the words a GPU computing exactly the expected D would store (the host-only
launcher's), except where it is told to go wrong: the first launch group a worker of the given
index runs in a run that no other worker's misbehaviour names raises as a CUDA error does, exits as a crashing process does, or sleeps as a
hanging kernel does, and does so again wherever that group runs again, as a faulting kernel
would (so a batch that fails is narrowed down to it); or it flips one D bit, once. The group is
named in a marker file in the folder named by $FAKE_LAUNCHER_MARKERS, created with O_EXCL by
the first process that misbehaves, so other groups, and a restarted worker's, behave.
`WrongChecker` stands in for an integer checker that is wrong where the tensor core is right."""

from __future__ import annotations

import hashlib
import os
import pickle
import time

from tcgen05_conformance.campaign.run import HostOnlyLauncher
from tcgen05_conformance.campaign.stream import StreamGroup, count_idle

MARKERS = "FAKE_LAUNCHER_MARKERS"
CUDA_FAULT = "CUDA driver error CUDA_ERROR_ILLEGAL_INSTRUCTION"


def claim_first(what: str, group: str) -> bool:
    """True for the first process of the run that asks about `what`, which names `group` for it."""
    try:
        marker = os.open(os.path.join(os.environ[MARKERS], what), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(marker, group.encode())
    os.close(marker)
    return True


def misbehaviour_of(group: str) -> str | None:
    """How `group` misbehaves, if a marker named it (a flip happens once only: None)."""
    folder = os.environ[MARKERS]
    for name in os.listdir(folder):
        how = name.split("-")[0]
        if how in ("raise", "exit", "hang"):  # the folder may hold other things: a test's tmp_path
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                if f.read() == group:
                    return how
    return None


def identity(group) -> str:
    """A launch group, named across processes: its programs' stream tiles, or its packed inputs."""
    data = group.source.tiles if isinstance(group, StreamGroup) else group.batch
    return hashlib.sha1(pickle.dumps(data)).hexdigest()


class Misbehaving(HostOnlyLauncher):
    """The host-only launcher, but worker `target`'s first launch of a group no marker names does
    `how`, once per run."""

    def __init__(self, index: int, target: int, how: str):
        super().__init__(index)
        self.index, self.target, self.how = index, target, how
        self.name = f"stand-in GPU {index}"

    def launch(self, group):
        return self.misbehave(group, super().launch(group))

    def stream_launch(self, group, expected):
        return self.misbehave(group, super().stream_launch(group, expected))

    def misbehave(self, group, words):
        name = identity(group)
        # a group another worker's misbehaviour names (rerun here after that worker was lost) is not
        # this worker's to take: it behaves as named below
        first = self.index == self.target and misbehaviour_of(name) is None and claim_first(f"{self.how}-{self.index}", name)
        if self.how == "flip":
            if first:
                words = words.copy()
                words.flat[5] ^= 1
            return words
        how = self.how if first else misbehaviour_of(name)
        if how == "raise":
            raise RuntimeError(CUDA_FAULT)
        if how == "exit":
            os._exit(3)
        if how == "hang":
            time.sleep(3600)
        return words


def well(index: int) -> Misbehaving:
    return Misbehaving(index, -1, "")


def raise_on_0_exit_on_1(index: int) -> Misbehaving:
    return Misbehaving(index, index, "raise" if index == 0 else "exit")


def hang_on_0(index: int) -> Misbehaving:
    return Misbehaving(index, 0, "hang")


def flip_on_0(index: int) -> Misbehaving:
    return Misbehaving(index, 0, "flip")


def unusable_1(index: int) -> Misbehaving:
    if index == 1:
        raise RuntimeError("stand-in GPU 1 is sm_100; campaign runs sm_90a kernels")
    return Misbehaving(index, -1, "")


def unusable(index: int) -> Misbehaving:
    raise RuntimeError(f"stand-in GPU {index} is sm_100; campaign runs sm_90a kernels")


class WrongChecker(HostOnlyLauncher):
    """The host-only launcher whose checker gets one element of program `program` of every launch
    group wrong (one bit flipped), while the words it returns carry the right D, as a GPU would.
    The first launch group of a chunk starts with the chunk's first program, which the model
    samples; with 4 data sets per instruction and a cross-check interval of 4, its program 1
    is not sampled."""

    def __init__(self, index: int, program: int):
        super().__init__(index)
        self.program, self.right = program, None

    def reference(self, group):
        self.right = super().reference(group)
        wrong = self.right.copy()
        if len(wrong) > self.program:
            wrong[self.program].flat[3] ^= 1
        return wrong

    def launch(self, group):
        return self.right

    def stream_reference(self, ops, form):
        right = super().stream_reference(ops, form)
        self.right = right
        wrong = right.copy()
        if len(wrong) > self.program:
            wrong[self.program].flat[3] ^= 1
        return wrong

    def stream_launch(self, group, expected):
        return self.right


def checker_wrong_in_sample(index: int) -> WrongChecker:
    return WrongChecker(index, 0)


def checker_wrong_outside_sample(index: int) -> WrongChecker:
    return WrongChecker(index, 1)


def flip_on_each(index: int) -> Misbehaving:
    """Every worker flips one D bit on its first launch: a run of one chunk has one flip,
    whichever worker the chunk goes to."""
    return Misbehaving(index, index, "flip")



class Timed(Misbehaving):
    """`Misbehaving`, reporting GPU seconds where a GPU's launcher adds them up: `LAUNCH_S` of busy
    "launch" time and `IDLE_S` of "idle" time per launch group, when a group launched on the
    host path returns, and when a queued batch's groups are collected."""

    LAUNCH_S, IDLE_S = 0.002, 0.5

    def timed(self, groups: int) -> None:
        self.seconds["launch"] += groups * self.LAUNCH_S
        for _ in range(groups):
            count_idle(self.seconds, self.IDLE_S)

    def launch(self, group):
        words = super().launch(group)
        self.timed(1)
        return words

    def stream_collect(self, queued):
        results = super().stream_collect(queued)
        self.timed(len(results))
        return results


def timed(index: int) -> Timed:
    return Timed(index, -1, "")


def timed_raise_on_0(index: int) -> Timed:
    return Timed(index, 0, "raise")


class SlowToOpen(Misbehaving):
    """`Misbehaving` (well behaved) that takes `OPEN_S` to open, as a GPU's launcher takes to
    create its CUDA context."""

    OPEN_S = 0.3

    def __init__(self, index: int):
        time.sleep(self.OPEN_S)
        super().__init__(index, -1, "")


def slow_to_open(index: int) -> SlowToOpen:
    return SlowToOpen(index)
