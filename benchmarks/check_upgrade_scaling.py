"""Whether `compat-mts check` and `upgrade` are linear in their input and within issue 34's goal: 100 files,
and one file of 120,000 lines, each in under 10 s.

Two inputs, each as 100 files and as one file of 12,000 lines and one of 120,000:

- `suite`: the suite's v1 scripts (`benchmarks/upgrade_speed.py`'s `SOURCES`): 100 of them copied round-robin
  under new names, and the same scripts concatenated, round-robin (the first binds `tf` to
  `tensorflow.compat.v1`, so the long files get no `tf_upgrade_v2` renames);
- `v1`: a TensorFlow 1.x training program (`V1_PROGRAM`: `import tensorflow as tf`, `tf.layers`, `tf.summary`,
  hooks, `MonitoredTrainingSession`, `tf.estimator`, plain Python), repeated under new names: 100 files of 1,200
  lines, and the long files, so `upgrade` makes `tf_upgrade_v2`'s renames, the `tf.compat.v1` module renames and
  the stage-1 edits on all of it. `upgrade --in-place` is timed on the 120,000-line file too.

Each command runs once, in a fresh process, timed by the wall clock and the child's CPU time; the ratio of the
120,000-line time to the 12,000-line one is 10 for a linear command. The exit status is 1 when a goal row takes
10 s or more (or hits `--timeout`).

`PYTHONPATH=. python benchmarks/check_upgrade_scaling.py [--inputs suite v1] [--goal-s 10] [--timeout 600]
[--out results.json]`
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import upgrade_speed, workload  # noqa: E402


def _timed(command: list[str], env: dict, timeout: float) -> dict:
    """Wall and CPU seconds of `command`; `timed_out` when it ran `timeout` seconds and was killed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {'wall_s': round(time.perf_counter() - start, 2), 'cpu_s': None, 'timed_out': True}
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):  # check exits 1 when it finds constructs.
        raise RuntimeError(f'{" ".join(command[:5])}... exited {result.returncode}: {result.stderr[-2000:]}')
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {'wall_s': round(wall, 2), 'cpu_s': round(cpu, 2), 'timed_out': False}


V1_PROGRAM = '''
import os
import sys
import time

import numpy as np
import tensorflow as tf

FLAGS_{n} = {{'batch_size': 16, 'steps': 100, 'model_dir': '/tmp/model_{n}'}}
LEARNING_RATE_{n} = 0.01


def input_fn_{n}(batch_size=FLAGS_{n}['batch_size']):
    """Synthetic features and labels, batched."""
    rng = np.random.RandomState({n})
    features = rng.normal(size=(256, 4)).astype(np.float32)
    labels = (features.sum(axis=1) > 0).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(({{'x': features}}, labels))
    return dataset.repeat().batch(batch_size)


def model_{n}(features, hidden=(8, 8)):
    net = features['x']
    for index, units in enumerate(hidden):
        net = tf.layers.dense(net, units, activation=tf.nn.relu, name='dense_%d' % index)
    logits = tf.layers.dense(net, 2, name='logits')
    return logits


def train_graph_{n}():
    global_step = tf.train.get_or_create_global_step()
    features, labels = input_fn_{n}().make_one_shot_iterator().get_next()
    logits = model_{n}(features)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    tf.summary.scalar('loss', loss)
    optimizer = tf.train.AdamOptimizer(LEARNING_RATE_{n})
    train_op = optimizer.minimize(loss, global_step=global_step)
    return loss, train_op


class TimeHook_{n}(tf.train.SessionRunHook):
    """Logs the time of every tenth step."""

    def begin(self):
        self._start = time.time()
        self._count = 0

    def before_run(self, run_context):
        self._count += 1
        return tf.train.SessionRunArgs(tf.train.get_global_step())

    def after_run(self, run_context, run_values):
        if self._count % 10 == 0:
            print('step', run_values.results, time.time() - self._start)


def run_session_{n}(model_dir):
    loss, train_op = train_graph_{n}()
    hooks = [
        tf.train.StopAtStepHook(last_step=FLAGS_{n}['steps']),
        tf.train.LoggingTensorHook({{'loss': loss}}, every_n_iter=10),
        TimeHook_{n}(),
    ]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=model_dir,
                                           hooks=hooks,
                                           save_checkpoint_steps=50) as sess:
        while not sess.should_stop():
            sess.run(train_op)


def model_fn_{n}(features, labels, mode, params):
    logits = model_{n}(features, params['hidden'])
    predictions = tf.argmax(logits, axis=1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={{'class': predictions}})
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={{'accuracy': accuracy}})
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator_{n}(model_dir):
    config = tf.estimator.RunConfig(model_dir=model_dir, save_summary_steps=10)
    estimator = tf.estimator.Estimator(model_fn_{n}, config=config, params={{'hidden': [8, 8]}})
    estimator.train(input_fn_{n}, steps=FLAGS_{n}['steps'])
    return estimator.evaluate(input_fn_{n}, steps=5)


def canned_{n}(model_dir):
    columns = [tf.feature_column.numeric_column('x', shape=(4,))]
    classifier = tf.estimator.DNNClassifier(hidden_units=[8], feature_columns=columns, model_dir=model_dir)
    classifier.train(input_fn_{n}, steps=10)
    return classifier


def summarize_{n}(results):
    """Plain Python: the results as lines."""
    lines = []
    for key in sorted(results):
        value = results[key]
        if isinstance(value, float):
            lines.append('%s: %.4f' % (key, value))
        else:
            lines.append('%s: %s' % (key, value))
    return '\\n'.join(lines)


def parse_args_{n}(argv):
    settings = dict(FLAGS_{n})
    for argument in argv[1:]:
        key, _, value = argument.partition('=')
        if key in settings:
            settings[key] = type(settings[key])(value)
    return settings


if __name__ == '__main__' and len(sys.argv) > 1 and sys.argv[1] == 'run_{n}':
    settings = parse_args_{n}(sys.argv)
    with tf.Graph().as_default():
        run_session_{n}(settings['model_dir'])
    print(summarize_{n}(estimator_{n}(settings['model_dir'])))
'''


def v1_program(lines: int, first: int = 0) -> str:
    """`V1_PROGRAM` repeated (its names numbered from `first`) up to `lines` lines, as one script."""
    parts, count, number = ['"""A TensorFlow 1.x program, repeated."""\n'], 1, first
    while count < lines:
        parts.append(V1_PROGRAM.format(n=number))
        count += parts[-1].count('\n')
        number += 1
    return ''.join(parts)


def _one_file(path: str, lines: int) -> None:
    """The suite's scripts, one after another (round-robin), up to `lines` lines, in one file at `path`."""
    texts = [open(source, encoding='utf-8').read() for source in upgrade_speed.SOURCES]
    written, index = 0, 0
    with open(path, 'w', encoding='utf-8') as file:
        while written < lines:
            text = texts[index % len(texts)]
            file.write(text if text.endswith('\n') else text + '\n')
            written += text.count('\n') + (not text.endswith('\n'))
            index += 1


def _plan(kind: str, scratch: str, command: list[str]) -> list[tuple[str, list[str], bool]]:
    """The timed commands of one input (`suite` or `v1`): (row, command, whether it is a goal row)."""
    base = os.path.join(scratch, kind)
    files_dir = os.path.join(base, 'files')
    os.makedirs(files_dir)
    for index in range(100):
        if kind == 'suite':
            source = upgrade_speed.SOURCES[index % len(upgrade_speed.SOURCES)]
            shutil.copyfile(source, os.path.join(files_dir, f'{index:03d}_{os.path.basename(source)}'))
        else:
            with open(os.path.join(files_dir, f'{index:03d}_train.py'), 'w', encoding='utf-8') as file:
                file.write(v1_program(1_200, first=index * 10))
    for lines in (12_000, 120_000):
        path = os.path.join(base, f'lines_{lines}.py')
        if kind == 'suite':
            _one_file(path, lines)
        else:
            with open(path, 'w', encoding='utf-8') as file:
                file.write(v1_program(lines))
    small, large = os.path.join(base, 'lines_12000.py'), os.path.join(base, 'lines_120000.py')
    in_place = os.path.join(base, 'in_place', 'lines_120000.py')
    os.makedirs(os.path.dirname(in_place))
    shutil.copyfile(large, in_place)
    out = lambda name: os.path.join(base, name)  # noqa: E731
    return [
        (f'{kind}: check, 100 files', [*command, 'check', files_dir], True),
        (f'{kind}: upgrade -o, 100 files', [*command, 'upgrade', files_dir, '-o', out('o1')], True),
        (f'{kind}: check, 12,000 lines', [*command, 'check', small], False),
        (f'{kind}: check, 120,000 lines', [*command, 'check', large], True),
        (f'{kind}: upgrade -o, 12,000 lines', [*command, 'upgrade', small, '-o', out('o2')], False),
        (f'{kind}: upgrade -o, 120,000 lines', [*command, 'upgrade', large, '-o', out('o3')], True),
        (f'{kind}: upgrade --in-place, 120,000 lines', [*command, 'upgrade', '--in-place', in_place], kind == 'v1'),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--inputs', nargs='+', choices=('suite', 'v1'), default=['suite', 'v1'])
    parser.add_argument('--goal-s', type=float, default=10.0, help='the goal, in wall seconds (default 10)')
    parser.add_argument('--timeout', type=float, default=600.0, help='seconds after which a command is killed')
    parser.add_argument('--out')
    args = parser.parse_args(argv)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONPATH=REPO)
    command = [sys.executable, '-m', 'compat_mts']
    rows = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix='check-upgrade-scaling-') as scratch:
        for kind in args.inputs:
            for name, argv_, goal in _plan(kind, scratch, command):
                rows[name] = dict(_timed(argv_, env, args.timeout), goal=goal)
                print(f'{name}: {rows[name]}', file=sys.stderr, flush=True)
    for kind in args.inputs:
        for command_name in ('check', 'upgrade -o'):
            small_row, large_row = (
                rows[f'{kind}: {command_name}, 12,000 lines'],
                rows[f'{kind}: {command_name}, 120,000 lines'],
            )
            rows[f'{kind}: {command_name}, 120,000 / 12,000 lines (10 = linear)'] = {
                'ratio': None if large_row['timed_out'] else round(large_row['wall_s'] / small_row['wall_s'], 1)
            }
    failed = [
        name for name, row in rows.items() if row.get('goal') and (row['timed_out'] or row['wall_s'] >= args.goal_s)
    ]

    def cell(row: dict, key: str) -> str:
        if 'ratio' in row:
            return '' if key != 'wall_s' else ('killed' if row['ratio'] is None else f'ratio {row["ratio"]}')
        if row['timed_out']:
            return f'> {args.timeout:.0f} (killed)' if key == 'wall_s' else ''
        return f'{row[key]:.2f}'

    table = '\n'.join(
        ['| command | wall s | CPU s | goal |', '|---|---:|---:|---|']
        + [
            f'| {name} | {cell(row, "wall_s")} | {cell(row, "cpu_s")} | '
            + ('' if not row.get('goal') else ('**missed**' if name in failed else f'< {args.goal_s:.0f} s'))
            + ' |'
            for name, row in rows.items()
        ]
    )
    heading = [
        f'1-minute load {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; goal: each goal row under '
        f'{args.goal_s:.0f} s of wall time'
    ]
    workload.publish({'rows': rows, 'failed': failed}, heading, table, args.out)
    if failed:
        print(f'goal missed: {", ".join(failed)}', file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
