"""A training program for the fault tests: trains the test regression until a step, checkpointing often.

Usage: train_until.py DIRECTORY LAST_STEP
Prints `restored <step> <w as JSON>` once the session exists, then `step <n>` after each run.
"""

import json
import sys
import time

import compat_mts as mts
from tests.models import Regression


def main(directory: str, last_step: int) -> None:
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=model.scaffold(),
        save_checkpoint_steps=2,
        save_summaries_steps=1,
        hooks=[mts.StopAtStepHook(last_step=last_step)],
    ) as session:
        print('restored', int(session.run(model.global_step)), json.dumps(session.run(model.w).tolist()), flush=True)
        while not session.should_stop():
            session.run(model.step)
            print('step', int(model.global_step.numpy()), flush=True)
            time.sleep(0.003)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
