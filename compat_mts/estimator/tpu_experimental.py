"""`compat_mts.estimator.tpu.experimental`: v1's `tf.compat.v1.estimator.tpu.experimental` (`EmbeddingConfigSpec`).

TF 2.15's `TPUEstimator` used an `EmbeddingConfigSpec` only on a TPU (`use_tpu=True`); with `use_tpu=False`, the
one way it runs here, the embedding columns of the `model_fn` are ordinary embedding lookups and the spec is
checked, then unused, as TF 2.15 did.
"""

from __future__ import annotations

import collections

_FIELDS = (
    'feature_columns',
    'tensor_core_feature_columns',
    'optimization_parameters',
    'clipping_limit',
    'pipeline_execution_with_tensor_core',
    'experimental_gradient_multiplier_fn',
    'feature_to_config_dict',
    'table_to_config_dict',
    'partition_strategy',
    'profile_data_directory',
)


class EmbeddingConfigSpec(collections.namedtuple('EmbeddingConfigSpec', _FIELDS)):
    """The TPU embeddings' specification of a `TPUEstimator`, v1's (TF 2.15's fields, defaults and checks).

    Args:
      feature_columns: the embedding columns of the model (`tf.compat.v1.tpu.experimental.embedding_column`
        or `tf.feature_column.embedding_column`); or None with `feature_to_config_dict` and
        `table_to_config_dict`.
      optimization_parameters: the embeddings' optimizer on a TPU (required with `feature_columns`; unused off
        the TPU).
      clipping_limit: the gradients' clipping limit on a TPU.
      pipeline_execution_with_tensor_core: a TPU setting.
      experimental_gradient_multiplier_fn: a TPU setting.
      feature_to_config_dict: the features' `FeatureConfig`s, with `table_to_config_dict`.
      table_to_config_dict: the tables' `TableConfig`s, with `feature_to_config_dict`.
      partition_strategy: 'div' or 'mod' (the tables' sharding; a `TPUEstimator` off the TPU refuses 'mod').
      profile_data_directory: a TPU setting.

    Raises:
      ValueError: not exactly one of `feature_columns` and the two dicts, an unknown `partition_strategy`
        (TF 2.15's messages), or `feature_columns` without `optimization_parameters`.
    """

    def __new__(
        cls,
        feature_columns=None,
        optimization_parameters=None,
        clipping_limit=None,
        pipeline_execution_with_tensor_core: bool = False,
        experimental_gradient_multiplier_fn=None,
        feature_to_config_dict: dict | None = None,
        table_to_config_dict: dict | None = None,
        partition_strategy: str = 'div',
        profile_data_directory: str | None = None,
    ):
        both_dicts = bool(feature_to_config_dict and table_to_config_dict)
        if (not feature_columns and not both_dicts) or (feature_columns and both_dicts):
            raise ValueError(
                'Exactly one of `feature_columns` and the pair `feature_to_config_dict` and `table_to_config_dict` '
                'must be be specified.'
            )
        if partition_strategy not in ('div', 'mod'):
            raise ValueError('Invalid partition_strategy {}. Must be one of "mod" or "div".'.format(partition_strategy))
        tensor_core_feature_columns = None
        if feature_columns:
            feature_columns = list(feature_columns)
            tensor_core_feature_columns = []
            if optimization_parameters is None:
                raise ValueError(
                    "`optimization_parameters` must be given with `feature_columns` (the embeddings' optimizer on "
                    'a TPU, e.g. AdagradParameters); got None.'
                )
        return super().__new__(
            cls,
            feature_columns=feature_columns,
            tensor_core_feature_columns=tensor_core_feature_columns,
            optimization_parameters=optimization_parameters,
            clipping_limit=clipping_limit,
            pipeline_execution_with_tensor_core=pipeline_execution_with_tensor_core,
            experimental_gradient_multiplier_fn=experimental_gradient_multiplier_fn,
            feature_to_config_dict=feature_to_config_dict,
            table_to_config_dict=table_to_config_dict,
            partition_strategy=partition_strategy,
            profile_data_directory=profile_data_directory,
        )


__all__ = ['EmbeddingConfigSpec']
