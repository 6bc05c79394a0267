"""A process of tests/test_directory_lock.py's race: takes the lock of a fresh directory in each round, at once
with the other processes (a barrier), and reports which rounds it won. Imports no TensorFlow."""

from __future__ import annotations

import os

from compat_mts.checkpoint_dir import directory_lock


def race(root: str, rounds: int, barrier, results) -> None:
    won = []
    for round_number in range(rounds):
        directory = os.path.join(root, f'round-{round_number}')
        os.makedirs(directory, exist_ok=True)
        barrier.wait(timeout=120)
        try:
            directory_lock.lock_directory(directory)
            won.append(round_number)
        except directory_lock.CheckpointDirectoryInUseError:
            pass
        barrier.wait(timeout=120)
    results.put((os.getpid(), won))
