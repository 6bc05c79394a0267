"""An official/r1/mnist-shaped Estimator program, as written for TensorFlow 1.x, on synthetic data: the input for
`compat-mts upgrade`.

As in tensorflow/models' `official/r1/mnist/mnist.py`: a `model_fn(features, labels, mode, params)` of
`tf.layers` (conv, pooling, dense) returning a `tf.estimator.EstimatorSpec` per `tf.estimator.ModeKeys`, an
`AdamOptimizer` minimizing the softmax cross-entropy with `tf.train.get_or_create_global_step()`, accuracy as an
eval metric, a `tf.estimator.Estimator` trained with `train(input_fn, steps=...)`, evaluated, and exported with
`export_savedmodel` and a raw serving input receiver.

`python mnist_estimator.py MODEL_DIR TRAIN_STEPS` (TensorFlow <= 2.15 with `tf.compat.v1`, or TensorFlow 1.x).
"""

import sys

import numpy as np
import tensorflow as tf

IMAGE_SIZE = 28
NUM_CLASSES = 10


def synthetic_mnist(size=256):
    """Ten fixed 28x28 patterns plus noise; the labels are the patterns."""
    rng = np.random.RandomState(0)
    patterns = rng.uniform(size=(NUM_CLASSES, IMAGE_SIZE, IMAGE_SIZE))
    labels = rng.randint(0, NUM_CLASSES, size=size)
    images = np.clip(patterns[labels] + 0.3 * rng.normal(size=(size, IMAGE_SIZE, IMAGE_SIZE)), 0.0, 1.0)
    return images.astype(np.float32), labels.astype(np.int32)


def create_model(inputs, training):
    """The model of official/r1/mnist, smaller: conv, pool, conv, pool, dense, logits."""
    net = tf.reshape(inputs, [-1, IMAGE_SIZE, IMAGE_SIZE, 1])
    net = tf.layers.conv2d(net, 8, 5, padding='same', activation=tf.nn.relu,
                           kernel_initializer=tf.glorot_uniform_initializer(seed=1))
    net = tf.layers.max_pooling2d(net, 2, 2, padding='same')
    net = tf.layers.conv2d(net, 16, 5, padding='same', activation=tf.nn.relu,
                           kernel_initializer=tf.glorot_uniform_initializer(seed=2))
    net = tf.layers.max_pooling2d(net, 2, 2, padding='same')
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 64, activation=tf.nn.relu, kernel_initializer=tf.glorot_uniform_initializer(seed=3))
    return tf.layers.dense(net, NUM_CLASSES, kernel_initializer=tf.glorot_uniform_initializer(seed=4))


def model_fn(features, labels, mode, params):
    """The model_fn argument for creating an Estimator."""
    image = features
    if isinstance(image, dict):
        image = features['image']
    logits = create_model(image, training=(mode == tf.estimator.ModeKeys.TRAIN))

    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {
            'classes': tf.argmax(logits, axis=1),
            'probabilities': tf.nn.softmax(logits),
        }
        return tf.estimator.EstimatorSpec(
            mode=tf.estimator.ModeKeys.PREDICT,
            predictions=predictions,
            export_outputs={'classify': tf.estimator.export.PredictOutput(predictions)})

    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=tf.argmax(logits, axis=1))
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.AdamOptimizer(learning_rate=params['learning_rate'])
        tf.identity(accuracy[1], name='train_accuracy')
        tf.summary.scalar('train_accuracy', accuracy[1])
        return tf.estimator.EstimatorSpec(
            mode=tf.estimator.ModeKeys.TRAIN,
            loss=loss,
            train_op=optimizer.minimize(loss, tf.train.get_or_create_global_step()))
    return tf.estimator.EstimatorSpec(
        mode=tf.estimator.ModeKeys.EVAL,
        loss=loss,
        eval_metric_ops={'accuracy': accuracy})


def main(model_dir, train_steps):
    images, labels = synthetic_mnist()

    def train_input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((images, labels))
        return dataset.repeat().batch(32)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices((images, labels)).batch(64)

    mnist_classifier = tf.estimator.Estimator(
        model_fn=model_fn,
        model_dir=model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=42, save_checkpoints_steps=10),
        params={'learning_rate': 1e-3})
    mnist_classifier.train(input_fn=train_input_fn, steps=train_steps)
    eval_results = mnist_classifier.evaluate(input_fn=eval_input_fn)
    print('Evaluation results:\n\t%s' % eval_results)

    image = tf.placeholder(tf.float32, [None, IMAGE_SIZE, IMAGE_SIZE])
    input_fn = tf.estimator.export.build_raw_serving_input_receiver_fn({'image': image})
    mnist_classifier.export_savedmodel(model_dir + '/export', input_fn, strip_default_attrs=True)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
