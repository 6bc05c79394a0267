"""The built-in hooks, one family per module (re-exported from `compat_mts`)."""
