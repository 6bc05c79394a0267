"""An Estimator's `train`, `evaluate` and `predict` on `input_fn`s built on queue runners, as the peer's tests were.

`parsed_queue_input_fn` is tensorflow/estimator's `*_input_fn_from_parse_example` input: `parse_example` of
serialized examples (under `limit_epochs` for evaluation and prediction), re-queued by a `FIFOQueue` with a
`QueueRunner`; `batch_input_fn` is `tf.compat.v1.train.batch`'s. Each call's error is printed as JSON
(`{input_fn/call: [class, message, checkpoint files in model_dir]}`), once every call has returned: a call that
waited on its queue would keep the process from printing (the test's timeout).
"""

import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

import compat_mts.estimator as estimator
from tests.estimator_programs.results import error_of

_DATA = np.linspace(0.0, 2.0, 20, dtype=np.float32).reshape(10, 2)
_SPEC = {'x': tf.io.FixedLenFeature([2], tf.float32), 'y': tf.io.FixedLenFeature([1], tf.int64)}
_SERIALIZED = [
    tf.train.Example(
        features=tf.train.Features(
            feature={
                'x': tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                'y': tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
            }
        )
    ).SerializeToString()
    for x in _DATA
]


def _queued(feature_map):
    keys = sorted(feature_map)
    queue = tf.queue.FIFOQueue(capacity=100, dtypes=[feature_map[key].dtype for key in keys])
    tf.compat.v1.train.queue_runner.add_queue_runner(
        tf.compat.v1.train.queue_runner.QueueRunner(queue, [queue.enqueue([feature_map[key] for key in keys])])
    )
    return dict(zip(keys, queue.dequeue()))


def parsed_queue_input_fn(mode):
    serialized = _SERIALIZED if mode == 'train' else tf.compat.v1.train.limit_epochs(_SERIALIZED, num_epochs=1)
    features = _queued(tf.compat.v1.io.parse_example(serialized, _SPEC))
    labels = features.pop('y')
    return features if mode == 'infer' else (features, labels)


def batch_input_fn(mode):
    x, y = tf.compat.v1.train.batch([_DATA, np.ones([10, 1], np.int64)], batch_size=4, enqueue_many=True)
    return {'x': x} if mode == 'infer' else ({'x': x}, y)


def main(root):
    results = {}
    for input_fn in (parsed_queue_input_fn, batch_input_fn):
        model_dir = os.path.join(root, input_fn.__name__)
        model = estimator.LinearClassifier([tf.feature_column.numeric_column('x', shape=(2,))], model_dir=model_dir)
        calls = {
            'train': lambda: model.train(input_fn, steps=2),
            'evaluate': lambda: model.evaluate(input_fn, steps=2),
            'predict': lambda: next(model.predict(input_fn)),
        }
        for call, run in calls.items():
            error = error_of(run) or [None, None]
            written = (
                sorted(name for name in os.listdir(model_dir) if name.startswith('model.ckpt'))
                if os.path.isdir(model_dir)
                else []
            )
            results[f'{input_fn.__name__}/{call}'] = [*error, written]
    return results


if __name__ == '__main__':
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())))
