"""K steps per `session.run` on a tiny model (the issue's bar: K=100 >= 3x the steps/s of K=1, and within
1.3x of one `tf.function` running the same K steps in a `tf.while_loop`).

Three variants, interleaved round by round so that they share the machine's load:
1. `session, K=1`: `MonitoredSession` (StopAtStepHook + StepCounterHook) running a one-step `tf.function`;
2. `session, K=100`: the same session running `compat_mts.repeat_steps(step, 100)`;
3. `bare loop`: a `tf.function` running the same 100 steps in a `tf.while_loop`, no session (the limit).
Reported: each variant's best round (wall clock; contention only ever adds time) and its median round on
the process's CPU time (which waiting for a busy CPU does not inflate).

Run: `PYTHONPATH=. python benchmarks/steps_per_run.py`
"""

import statistics
import time

import numpy as np
import tensorflow as tf

import compat_mts as mts

K = 100
ROUNDS = 40

global_step = mts.get_or_create_global_step()
weights = tf.Variable(np.zeros([3, 1], np.float32))
features = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
targets = tf.constant([[1.0], [2.0], [3.0], [4.0]])


def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(features @ weights - targets))
    weights.assign_sub(0.01 * tape.gradient(loss, weights))
    global_step.assign_add(1)
    return {'loss': loss}


@tf.function
def bare_loop():
    tf.while_loop(lambda i: i < K, lambda i: (step(), i + 1)[1], [tf.constant(0)])


one_step = tf.function(step)
k_steps = mts.repeat_steps(step, K)
session = mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=10**12), mts.StepCounterHook(every_n_steps=10**6)])
variants = {  # name: (callable, steps per call, calls per round)
    'session, K=1': (lambda: session.run(one_step), 1, 100),
    'session, K=100 (repeat_steps)': (lambda: session.run(k_steps), K, 5),
    'bare tf.function while_loop (100 steps)': (bare_loop, K, 5),
}
wall = {name: [] for name in variants}
cpu = {name: [] for name in variants}
for fn, _, _ in variants.values():
    fn()
for _ in range(ROUNDS):
    for name, (fn, steps, calls) in variants.items():
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        wall[name].append(steps * calls / (time.perf_counter() - start_wall))
        cpu[name].append(steps * calls / max(time.process_time() - start_cpu, 1e-9))
session.close()
best = {name: max(rates) for name, rates in wall.items()}
median_cpu = {name: statistics.median(rates) for name, rates in cpu.items()}
print(f'{"variant":42s} {"best wall steps/s":>18s} {"median CPU steps/s":>19s}')
for name in variants:
    print(f'{name:42s} {best[name]:18.0f} {median_cpu[name]:19.0f}')
k1, k100, bare = variants
print(f'K=100 / K=1:   wall {best[k100] / best[k1]:.1f}x, CPU {median_cpu[k100] / median_cpu[k1]:.1f}x')
print(f'bare / K=100:  wall {best[bare] / best[k100]:.2f}x, CPU {median_cpu[bare] / median_cpu[k100]:.2f}x')
