"""The heads in a custom model_fn, called eagerly and in a v1 graph, and the Estimators taking one, on fixed
weights: one side's results as JSON.

`python heads_runner.py tf215|compat MODEL_ROOT` runs every case with `tf.estimator` (TF 2.15) or
`compat_mts.estimator` and prints `RESULTS:` and a JSON dict: per case, the evaluation metrics after 3 training
steps, the predictions of the first example, and (custom model_fn cases) the export signatures (method name,
input and output keys). The weights start from constants (the linear and baseline models start at zeros), so
the two sides compare number for number.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

X = np.array([[0.2, -1.0], [1.5, 0.3], [-0.7, 0.8], [0.1, 0.1], [2.0, -0.4], [-1.2, -0.9]], np.float32)
WEIGHT = np.array([[1.0], [2.0], [0.5], [1.0], [3.0], [1.0]], np.float32)
W = np.array([[0.3, -0.2, 0.5, 0.1, -0.4], [-0.6, 0.25, 0.05, 0.3, 0.2]], np.float32)
LABELS = {
    'binary': np.array([[1], [0], [1], [0], [1], [1]], np.int64),
    'multi_class': np.array([[2], [0], [1], [1], [0], [2]], np.int64),
    'multi_label': np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]], np.int64),
    'regression': np.array([[0.5], [-1.0], [2.0], [0.0], [1.5], [0.3]], np.float32),
    'poisson': np.array([[1.0], [0.0], [3.0], [2.0], [0.0], [1.0]], np.float32),
    'logistic': np.array([[0.9], [0.1], [0.5], [0.3], [1.0], [0.0]], np.float32),
}


def heads(est):
    """Each case's head."""
    return {
        'binary': est.BinaryClassHead(weight_column='wt', thresholds=[0.4]),
        'multi_class': est.MultiClassHead(3, name='mc'),
        'multi_label': est.MultiLabelHead(2, thresholds=[0.5], classes_for_class_based_metrics=[1]),
        'regression': est.RegressionHead(loss_reduction='sum'),
        'poisson': est.PoissonRegressionHead(),
        'logistic': est.LogisticRegressionHead(),
        'multi_head': est.MultiHead(
            [est.BinaryClassHead(name='a'), est.RegressionHead(name='b')], head_weights=[1.0, 0.5]
        ),
    }


def labels_of(case):
    if case == 'multi_head':
        return {'a': LABELS['binary'], 'b': LABELS['regression']}
    return LABELS[case]


def input_fn_of(case):
    def input_fn():
        features = {'x': X, 'wt': WEIGHT}
        return tf.data.Dataset.from_tensor_slices((features, labels_of(case))).batch(3)

    return input_fn


def model_fn_of(head, regularize):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable('w', initializer=tf.constant(W[:, : head.logits_dimension]))
        logits = tf.matmul(features['x'], w)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        return head.create_estimator_spec(
            features=features,
            mode=mode,
            logits=logits,
            labels=labels,
            train_op_fn=lambda loss: optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step()),
            regularization_losses=[0.01 * tf.reduce_sum(w * w)] if regularize else None,
        )

    return model_fn


def plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def receiver_of(est):
    def receiver_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
        return est.export.ServingInputReceiver({'x': x}, {'x': x})

    return receiver_fn


def signatures(export_dir):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ['serve'], export_dir)
    return {
        name: [signature.method_name, sorted(signature.inputs), sorted(signature.outputs)]
        for name, signature in meta_graph.signature_def.items()
    }


def run_estimator(estimator, case):
    estimator.train(input_fn_of(case), steps=3)
    metrics = {key: plain(value) for key, value in estimator.evaluate(input_fn_of(case)).items()}
    first = next(estimator.predict(input_fn_of(case)))
    return {'metrics': metrics, 'predictions': {str(key): plain(value) for key, value in first.items()}}


EAGER_LOGITS = np.array(
    [[[0.4, -1.2, 0.3], [1.1, 0.2, -0.5]], [[-0.8, 0.6, 2.0], [0.05, -0.3, 0.9]]], np.float32
)  # [2, 2, 3]: two batch dimensions.
EAGER_WEIGHTS = np.array([[1.0, 2.0], [0.5, 3.0]], np.float32)  # one rank short of the logits.
EAGER_LABELS = {
    'binary': np.array([[[1], [0]], [[1], [1]]], np.int64),
    'multi_class': np.array([[[2], [0]], [[1], [2]]], np.int64),
    'multi_label': np.array([[[1, 0], [0, 1]], [[1, 1], [0, 0]]], np.int64),
    'regression': np.array([[[0.5], [-1.0]], [[2.0], [0.3]]], np.float32),
    'poisson': np.array([[[1.0], [0.0]], [[3.0], [2.0]]], np.float32),
}


def eager_heads(est):
    """The heads called eagerly, on logits of two batch dimensions, weighted (by a numeric column's normalizer)."""
    doubled = tf.feature_column.numeric_column('wt', normalizer_fn=lambda weights: weights * 2.0)
    return {
        'binary': est.BinaryClassHead(weight_column='wt', thresholds=[0.4]),
        'multi_class': est.MultiClassHead(3, weight_column=doubled, name='mc'),
        'multi_label': est.MultiLabelHead(2, weight_column='wt', classes_for_class_based_metrics=[1]),
        'regression': est.RegressionHead(weight_column=doubled),
        'poisson': est.PoissonRegressionHead(weight_column='wt', loss_reduction='sum'),
        'multi_head': est.MultiHead([est.BinaryClassHead(name='a'), est.RegressionHead(name='b')]),
    }


def eager_results(est):
    """Each head's loss, updated metrics and predictions, computed eagerly, and its message for mismatched labels."""
    features = {'wt': EAGER_WEIGHTS}
    results = {}
    for case, head in eager_heads(est).items():
        if case == 'multi_head':
            logits = {'a': EAGER_LOGITS[..., :1], 'b': EAGER_LOGITS[..., 1:2]}
            labels = {'a': EAGER_LABELS['binary'], 'b': EAGER_LABELS['regression']}
        else:
            logits = EAGER_LOGITS[..., : head.logits_dimension]
            labels = EAGER_LABELS[case]
        metrics = head.update_metrics(head.metrics(), features, logits, labels)
        predictions = head.predictions(logits)
        results[case] = {
            'loss': float(head.loss(labels, logits, features)),
            'metrics': {key: float(metric.result()) for key, metric in metrics.items()},
            'predictions': {str(key): plain(value.numpy()) for key, value in predictions.items()},
        }
        if case != 'multi_head':
            try:
                head.loss(labels[:1], logits, features)
            except ValueError as error:
                results[case]['error'] = str(error)
    return results


def graph_results(est):
    """A head's EVAL spec built in a v1 graph of the program's own, initialized by its scaffold's ops and run by a
    `tf.compat.v1.Session`: the loss and metrics after one batch, and what the scaffold gave."""
    with tf.Graph().as_default():
        head = est.BinaryClassHead(weight_column='wt')
        features = {'wt': EAGER_WEIGHTS}
        spec = head.create_estimator_spec(features, est.ModeKeys.EVAL, EAGER_LOGITS[..., :1], EAGER_LABELS['binary'])
        spec.scaffold.finalize()
        with tf.compat.v1.Session() as session:
            session.run(spec.scaffold.init_op)
            session.run(spec.scaffold.local_init_op)
            loss, _ = session.run((spec.loss, {key: op for key, (_, op) in spec.eval_metric_ops.items()}))
            metrics = session.run({key: value for key, (value, _) in spec.eval_metric_ops.items()})
            ready = session.run(spec.scaffold.ready_op)
        return {
            'loss': float(loss),
            'metrics': {key: float(value) for key, value in metrics.items()},
            'not_ready': plain(ready),
            'saver': type(spec.scaffold.saver).__name__,
        }


def main(side, root):
    est = tf.estimator if side == 'tf215' else __import__('compat_mts.estimator', fromlist=['estimator'])
    results = {'eager': eager_results(est), 'graph': graph_results(est)}
    columns = [tf.feature_column.numeric_column('x', shape=(2,))]
    head_based = {
        'LinearEstimator/multi_label': lambda head: est.LinearEstimator(head, columns),
        'DNNLinearCombinedEstimator/poisson': lambda head: est.DNNLinearCombinedEstimator(
            head, linear_feature_columns=columns
        ),
        'DNNEstimator/multi_head': lambda head: est.DNNEstimator(
            head, [3], columns, warm_start_from=os.path.join(root, 'dnn_start')
        ),
    }
    for name, make in head_based.items():
        case = name.split('/')[1]
        results[name] = run_estimator(make(heads(est)[case]), case)
    for case, head in heads(est).items():
        model_dir = os.path.join(root, side, case)
        estimator = est.Estimator(model_fn_of(head, case == 'binary'), model_dir=model_dir)
        results[case] = run_estimator(estimator, case)
        export_dir = estimator.export_saved_model(os.path.join(model_dir, 'export'), receiver_of(est))
        results[case]['signatures'] = signatures(export_dir)
    print('RESULTS:' + json.dumps(results))


def write_dnn_start(root):
    """A checkpoint of the DNN's variables (3 hidden units, 2 logits) at fixed values, to warm-start from."""
    path = os.path.join(root, 'dnn_start')
    os.makedirs(path, exist_ok=True)
    values = {
        'dnn/hiddenlayer_0/kernel': np.array([[0.4, -0.3, 0.2], [0.1, 0.5, -0.6]], np.float32),
        'dnn/hiddenlayer_0/bias': np.array([0.05, -0.05, 0.1], np.float32),
        'dnn/logits/kernel': np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]], np.float32),
        'dnn/logits/bias': np.array([0.0, 0.1], np.float32),
    }
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in values.items()]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(session, os.path.join(path, 'model.ckpt'))


if __name__ == '__main__':
    write_dnn_start(sys.argv[2])
    main(sys.argv[1], sys.argv[2])
