"""An `input_fn` built on queue runners is refused at once, naming it and the guide, by `train`, `evaluate`, `predict`.

tensorflow/estimator's tests (`*_input_fn_from_parse_example`) feed the Estimators from a `FIFOQueue` and its
`QueueRunner`, and v1 programs from `tf.compat.v1.train.batch`; TF 2.15's session started their threads.
compat_mts starts none (migration_guide/queue_runners.md), so each call must fail before its first step with a
`ValueError` naming the `input_fn` and its queues, never wait on the empty queue: the calls run in a child
process with a timeout (`tests/estimator_programs/queue_runner_inputs.py`).
"""

from __future__ import annotations

import os

import pytest

from tests import support

PROGRAM = os.path.join(support.TESTS_DIR, 'estimator_programs', 'queue_runner_inputs.py')
_QUEUES = {'parsed_queue_input_fn': 'fifo_queue', 'batch_input_fn': 'batch/fifo_queue'}


@pytest.mark.slow
def test_train_evaluate_and_predict_refuse_a_queue_runner_input_fn_at_once_naming_it_and_the_guide(tmp_path):
    result = support.run_python(PROGRAM, str(tmp_path), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    results = support.last_json_line(result.stdout)
    assert sorted(results) == sorted(f'{fn}/{call}' for fn in _QUEUES for call in ('train', 'evaluate', 'predict'))
    for scenario, (error, message, written) in results.items():
        input_fn = scenario.split('/')[0]
        assert error == 'ValueError', (scenario, error, message)
        assert message.startswith(f'The input_fn {input_fn} builds queue runners (queues: {_QUEUES[input_fn]}),')
        assert 'migration_guide/queue_runners.md' in message and 'tf.data.Dataset' in message
        assert written == [], scenario  # Refused before the session: nothing trained, nothing saved.
