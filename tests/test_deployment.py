"""The deployment a session runs through (ARCHITECTURE.md, "The deployment seam"), in one process.

The multi-worker and parameter-server deployments are exercised by the cluster tests (`test_distribute_cluster.py`,
`test_parameter_server_cluster.py`) and a `grpc://` master by `test_distribute.py`; here: which deployment a
session in this process gets, that its hooks and creator read that one, and that outside a session they get the
one a session made then would get.
"""

from __future__ import annotations

import compat_mts as mts
from compat_mts.deploy import deployment
from compat_mts.deploy import distribute
from tests.models import Regression


class DeploymentRecorder(mts.SessionRunHook):
    """Records the deployment in effect at each of the hook's calls that a session makes with one in effect."""

    def __init__(self):
        self.seen = {}

    def begin(self):
        self.seen['begin'] = deployment.of_session()

    def after_create_session(self, session, coord):
        self.seen['after_create_session'] = deployment.of_session()

    def end(self, session):
        self.seen['end'] = deployment.of_session()


class RecordingCreator(mts.SessionCreator):
    """A creator of the program's own around the chief's: records the deployment its `create_session` sees."""

    def __init__(self, **kwargs):
        self.chief = mts.ChiefSessionCreator(**kwargs)
        self.seen = []

    def create_session(self):
        self.seen.append(deployment.current())
        return self.chief.create_session()


def test_a_session_in_one_process_runs_locally_and_gives_its_hooks_and_creator_that_deployment(tmp_path):
    model = Regression()
    hook = DeploymentRecorder()
    creator = RecordingCreator(scaffold=model.scaffold(), checkpoint_dir=str(tmp_path))
    assert deployment.of_session() is None
    with mts.MonitoredSession(session_creator=creator, hooks=[hook]) as session:
        assert session._deployment is deployment.LOCAL
        assert deployment.of_session() is None  # Only while the session creates, calls its hooks or closes.
        session.run(model.step)
    assert hook.seen == {'begin': deployment.LOCAL, 'after_create_session': deployment.LOCAL, 'end': deployment.LOCAL}
    assert creator.seen == [deployment.LOCAL]
    assert deployment.of_session() is None


def test_monitored_training_session_makes_its_session_with_the_deployment_it_chose_for_the_chief():
    model = Regression()
    hook = DeploymentRecorder()
    with mts.MonitoredTrainingSession(scaffold=model.scaffold(), hooks=[hook], is_chief=False) as session:
        session.run(model.step)
    assert hook.seen['begin'] is deployment.LOCAL
    assert hook.seen['end'] is deployment.LOCAL


def test_a_re_created_session_gives_its_creator_the_same_deployment(tmp_path):
    model = Regression()
    creator = RecordingCreator(scaffold=model.scaffold())
    session = mts.MonitoredSession(session_creator=creator)
    session._close_inner()  # What a preemption error does before the next run re-creates the session.
    session.run(model.step)
    session.close()
    assert creator.seen == [deployment.LOCAL, deployment.LOCAL]


def test_outside_a_session_the_deployment_is_the_one_a_session_made_now_would_run_through():
    assert deployment.of_session() is None
    assert deployment.current() is deployment.choose() is deployment.LOCAL
    assert distribute.current_cluster() is None


def test_a_grpc_masters_device_turns_the_local_deployment_into_a_remote_master_and_nothing_else():
    assert deployment.LOCAL.connected(None) is deployment.LOCAL
    remote = deployment.LOCAL.connected(distribute.REMOTE_DEVICE)
    assert isinstance(remote, deployment.RemoteMaster)
    assert remote.device == distribute.REMOTE_DEVICE
    assert remote.recovers and remote.is_chief and not remote.agrees
    assert remote.connected(None) is remote


def test_a_deployment_put_in_effect_is_current_in_the_block_and_only_there():
    remote = deployment.RemoteMaster(distribute.REMOTE_DEVICE)
    with remote.in_effect():
        assert deployment.current() is remote
        with deployment.LOCAL.in_effect():
            assert deployment.current() is deployment.LOCAL
        assert deployment.current() is remote
        assert remote.guard(deployment.current) is remote
    assert deployment.of_session() is None
