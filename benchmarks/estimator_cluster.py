"""Examples per second of a distributed premade Estimator job: compat_mts against TF 2.15's tf.estimator, in one run.

The job of tests/estimator_job.py (a `DNNClassifier` under `train_and_evaluate`, census-shaped numeric input),
one process per task on loopback ports as a job manager starts them: a chief, two workers and one ps task, no
evaluator (it would compete for the two cores). TF 2.15 runs the same program in a child virtualenv
(tests/tf215.py). The throughput is measured between two of the chief's checkpoints, from their files' times:
after `--warmup` steps (the imports, the graph, the session's creation and TF 2.15's staggered worker starts,
5 and 10 s, are not part of it) to the last, at `--steps`. The sides alternate for `--rounds` rounds, so machine
load hits both alike; the ratio is the median over rounds of compat_mts's examples/s over TF 2.15's. Exits 1
below `--goal`.

    python benchmarks/estimator_cluster.py [--rounds 3] [--steps 1200] [--warmup 200] [--goal 1.0]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import sys
import tempfile
import pathlib

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)

from tests.test_estimator_cluster import Job  # noqa: E402  (the job launcher of the tests)

TASKS = (('ps', 0), ('worker', 0), ('worker', 1), ('chief', 0))
BATCH_SIZE = 64


def _examples_per_sec(model_dir: str, warmup: int) -> float:
    found = []
    for index in glob.glob(os.path.join(model_dir, 'model.ckpt-*.index')):
        step = int(re.search(r'model\.ckpt-(\d+)\.index$', index).group(1))
        found.append((step, os.path.getmtime(index)))
    found.sort()
    first = next((step, when) for step, when in found if step >= warmup)
    last = found[-1]
    return (last[0] - first[0]) * BATCH_SIZE / (last[1] - first[1])


def _round(implementation: str, steps: int, warmup: int) -> float:
    root = pathlib.Path(tempfile.mkdtemp(prefix=f'estimator-cluster-{implementation}-'))
    job = Job(root, implementation, max_steps=steps, tasks=TASKS)
    try:
        codes = job.wait([('chief', 0)])
    finally:
        job.kill()
    if codes[('chief', 0)] != 0:
        raise SystemExit(f'{implementation}: the chief exited {codes}:\n{job.report()}')
    return _examples_per_sec(job.model_dir, warmup)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--steps', type=int, default=1200)
    parser.add_argument('--warmup', type=int, default=200)
    parser.add_argument('--goal', type=float, default=1.0)
    args = parser.parse_args()
    os.environ.update(JOB_SAVE_STEPS='100', JOB_BATCH_SIZE=str(BATCH_SIZE), JOB_MARK_BATCHES='0')
    load_before = os.getloadavg()[0]
    rounds = []
    for _ in range(args.rounds):
        ours = _round('compat_mts', args.steps, args.warmup)
        theirs = _round('tf215', args.steps, args.warmup)
        rounds.append({'compat_mts': round(ours, 1), 'tf215': round(theirs, 1), 'ratio': round(ours / theirs, 3)})
        print(json.dumps(rounds[-1]), flush=True)
    ratio = statistics.median(r['ratio'] for r in rounds)
    print(
        json.dumps(
            {'ratio_median': ratio, 'load_before': round(load_before, 2), 'load_after': round(os.getloadavg()[0], 2)}
        )
    )
    return 0 if ratio >= args.goal else 1


if __name__ == '__main__':
    sys.exit(main())
