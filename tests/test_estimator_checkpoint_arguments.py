"""A checkpoint of another program is refused naming the argument it was given as, beginning as TF 2.15's error.

`evaluate`, `predict` and `export_saved_model` given it as `checkpoint_path` name `checkpoint_path`; an export that
restores the `warm_start_from` checkpoint names `warm_start_from`; a checkpoint of `model_dir` (found there, or its
latest passed as `checkpoint_path`, as `train_and_evaluate` and the exporters do) names `model_dir`. Where TF 2.15
raised (a checkpoint lacking a variable), the message begins with its sentences; a variable of another shape, which
TF 2.15 restored without a word, is refused too (`tests/estimator_programs/checkpoint_arguments.py`).
"""

from __future__ import annotations

import re

import pytest

import compat_mts
import compat_mts.estimator as estimator
from tests import tf215
from tests.estimator_programs import checkpoint_arguments

_ADVICE = {
    'evaluate': "Give Estimator.evaluate a checkpoint_path of the program's own",
    'predict': "Give Estimator.predict a checkpoint_path of the program's own",
    'export': "Give Estimator.export_saved_model a checkpoint_path of the program's own",
    'warm_start_export': "Give the Estimator a warm_start_from of the program's own",
    'model_dir_evaluate': "Give the Estimator an empty model_dir or the program's own",
    'model_dir_checkpoint_path': "Give the Estimator an empty model_dir or the program's own",
}


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    directory = tmp_path_factory.mktemp('checkpoint_arguments')
    return tf215.results_beside(
        checkpoint_arguments.__file__,
        lambda: checkpoint_arguments.main(estimator, str(directory / 'ours')),
        str(directory / 'theirs'),
    )


def _first_sentences(message: str, count: int = 2) -> str:
    return ' '.join(re.split(r'(?<=\.)\s+', message.strip())[:count])


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['missing', 'shape'])
@pytest.mark.parametrize('call', sorted(_ADVICE))
def test_the_error_names_the_argument_the_checkpoint_was_given_as_and_begins_as_tf215s(results, kind, call):
    ours, theirs = results
    error, message = ours[f'{kind}/{call}']
    if error == 'CheckpointMismatchError':
        assert _ADVICE[call] in message
        assert message.count('model_dir') == ('model_dir' in _ADVICE[call])
        assert ('checkpoint_path' in message) == ('checkpoint_path' in _ADVICE[call])
    else:  # The export's own check of what the restore left unmatched: TF 2.15's, naming no argument.
        assert (kind, call) in {('missing', 'export'), ('missing', 'warm_start_export')}
    their = theirs[f'{kind}/{call}']
    if their is None:  # TF 2.15 restored the [2] checkpoint into the [3] variable without a word.
        assert kind == 'shape'
        return
    assert _first_sentences(message) == _first_sentences(their[1])


@pytest.mark.slow
def test_a_warm_start_from_a_directory_missing_a_variable_names_the_directory_as_tf215s_error(results):
    ours, theirs = results
    assert ours['missing/warm_start_train_from_directory'] == theirs['missing/warm_start_train_from_directory']
    assert ours['missing/warm_start_train_from_directory'][1].startswith('Tensor v is not found in <root>/a checkpoint')


@pytest.mark.slow
def test_where_tf215_raised_a_not_found_error_except_not_found_error_catches_the_mismatch_too(results):
    ours, theirs = results
    assert 'missing/evaluate' in theirs['not_found'] and 'missing/model_dir_evaluate' in theirs['not_found']
    assert set(theirs['not_found']) <= set(ours['not_found'])
    assert all(ours[scenario][0] in ('CheckpointMismatchError', 'NotFoundError') for scenario in ours['not_found'])


def test_the_error_names_the_argument_given_by_its_own_class():
    error = compat_mts.CheckpointMismatchError('It does not fit.', partial=True)
    named = error.naming('Estimator.predict', 'checkpoint_path', directory=False)
    assert isinstance(named, compat_mts.CheckpointMismatchError) and named.problem == error.problem
    assert str(named).startswith("It does not fit. Give Estimator.predict a checkpoint_path of the program's own, or,")
    assert str(error).startswith("It does not fit. Give the session an empty checkpoint_dir or the program's own, or,")
