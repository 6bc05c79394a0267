"""The checkpoint directory: the one `CheckpointDirectory` a session or Estimator validates and hands down
(`directory`), its state file, its checkpoints and their damage, the v1 names of a checkpoint file
(`checkpoints`), and the lock that keeps two writers out of one directory (`directory_lock`)."""
