"""Deterministic data shared by the v1 programs and their compat_mts twins: the same batches on both sides."""

import numpy as np

TRUE_WEIGHTS = np.array([[1.5], [-2.0], [0.5], [0.25]], np.float32)
FEATURES = 4


def regression_batch(step: int, batch_size: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """The batch of training step `step`: a resumed run sees exactly the batches a straight run would."""
    rng = np.random.default_rng(1000 + step)
    features = rng.normal(size=(batch_size, FEATURES)).astype(np.float32)
    noise = rng.normal(scale=0.1, size=(batch_size, 1)).astype(np.float32)
    return features, features @ TRUE_WEIGHTS + noise


def regression_dataset(size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """A fixed regression data set, for the `tf.compat.v1.data` input pipeline."""
    rng = np.random.default_rng(7)
    features = rng.normal(size=(size, FEATURES)).astype(np.float32)
    return features, np.tanh(features @ TRUE_WEIGHTS).astype(np.float32)


def classification_batch(step: int, batch_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """A batch of two Gaussian blobs (labels 0 and 1) for training step `step`."""
    rng = np.random.default_rng(5000 + step)
    labels = rng.integers(0, 2, size=batch_size)
    features = rng.normal(size=(batch_size, 2)).astype(np.float32) + np.where(labels[:, None] == 1, 1.0, -1.0)
    return features.astype(np.float32), labels.astype(np.int64)
