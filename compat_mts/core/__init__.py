"""What every session stands on: the fetch and feed model, the global step, the argument checks and the
process-wide tables.

- `fetch`: what `session.run(fetches, feed_dict)` does, eagerly;
- `global_step`: the registered global step, graph mode and the v1 step read;
- `validation`: the argument checks, with v1's messages;
- `program`: the process-wide tables and `compat_mts.reset()`;
- `progress`: the progress line of the commands that take a while.
"""
