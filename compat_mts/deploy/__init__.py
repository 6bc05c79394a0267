"""Where a session runs: the one `Deployment` a session runs through (`deployment`), multi-worker clusters,
`master` and `ConfigProto` (`distribute`, public as `compat_mts.distribute`), ps/worker clusters
(`parameter_server`) and SIGTERM on preemptible machines (`preemption`).

The public module is `distribute`; the others are the session's.
"""

__all__ = ['distribute']
