"""The sessions: v1's `MonitoredTrainingSession` and `MonitoredSession`, what they run through and what hooks see.

- `training_session`: `MonitoredTrainingSession`, its arguments, defaults and default hooks;
- `monitored_session`: `MonitoredSession`, `SingularMonitoredSession`, `StepContext`, recovery;
- `session_creators`: `ChiefSessionCreator`, `WorkerSessionCreator` and `RawSession`, the session hooks see;
- `scaffold`: the `Scaffold`;
- `steps`: K steps per run (`repeat_steps`);
- `session_run_hook`: the hook protocol's values (`SessionRunArgs`, ...) and the hooks' capabilities;
- `hook_driver`: the one driver of a list of hooks.

The public names are `compat_mts`'s own (`compat_mts.MonitoredTrainingSession`, ...).
"""
