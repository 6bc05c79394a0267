"""Keras adapters: SessionRunHooks inside `model.fit` (`HooksCallback`), Keras callbacks inside a session
loop (`CallbackHook`).

They work with the Keras that `tf.keras` is: Keras 3 by default, tf-keras under `TF_USE_LEGACY_KERAS=1`.
"""

from compat_mts.keras.callback_hook import CallbackHook
from compat_mts.keras.hooks_callback import HooksCallback

__all__ = ['CallbackHook', 'HooksCallback']
