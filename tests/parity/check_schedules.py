#!/usr/bin/env python3
"""cvtrain's schedule.warmup_lr, warmup_prefix, step_on_epochs and cooldown_epochs against timm's schedulers
(timm.scheduler.create_scheduler_v2, cosine and constant, as timm's train.py drives them: per epoch
with step(epoch), per update with step_update(updates)); the learning rate of every step compared.

    check_schedules.py --probe build/tests/schedule_probe
"""
import subprocess
import sys

import torch
from timm.scheduler import create_scheduler_v2

from outcome import finish, probe_path

TOLERANCE = 1e-12  # relative: the same formulas, a rounding apart where the operations are ordered differently
STEPS_PER_EPOCH = 7
EPOCHS = 10
# name, base lr, warmup epochs, warmup lr, min lr, warmup prefix, step on epochs[, cool-down epochs]
CASES = [
    ("cosine", 0.1, 2, 1e-6, 1e-5, False, True, 3),  # DeiT's main.py: --cooldown-epochs (10 there)
    ("cosine", 0.1, 2, 1e-6, 1e-5, False, False, 3),
    ("cosine", 0.1, 2, 1e-6, 1e-5, True, False, 2),
    ("cosine", 0.1, 2, 1e-6, 1e-5, True, True, 2),
    ("cosine", 0.1, 2, 1e-5, 1e-6, False, True),   # timm's train.py defaults (DeiT)
    ("cosine", 0.1, 2, 1e-5, 1e-6, False, False),  # --sched-on-updates
    ("cosine", 0.1, 2, 1e-5, 1e-6, True, False),   # --warmup-prefix
    ("cosine", 0.1, 2, 1e-5, 1e-6, True, True),
    ("cosine", 5e-4, 3, 0.0, 0.0, False, False),
    ("cosine", 0.1, 0, 1e-5, 0.0, False, True),    # no warmup
    ("constant", 0.1, 2, 1e-4, 0.0, False, True),
    ("constant", 0.1, 2, 1e-4, 0.0, False, False),
]


def timm_rates(name, base_lr, warmup, warmup_lr, min_lr, prefix, on_epochs, cooldown=0):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
    # timm's num_epochs leaves out the warmup when it is a prefix, and the cool-down (it trains
    # num_epochs + cooldown_epochs); cvtrain's train.epochs is the whole run.
    scheduler, timm_epochs = create_scheduler_v2(optimizer, sched=name, num_epochs=EPOCHS - (warmup if prefix else 0) - cooldown,
                                                 warmup_epochs=warmup, warmup_lr=warmup_lr, min_lr=min_lr, warmup_prefix=prefix,
                                                 cooldown_epochs=cooldown, step_on_epochs=on_epochs, updates_per_epoch=STEPS_PER_EPOCH)
    assert timm_epochs == EPOCHS, f"timm would train {timm_epochs} epochs, not {EPOCHS}"
    rates = []
    for epoch in range(EPOCHS):
        scheduler.step(epoch)
        for update in range(STEPS_PER_EPOCH):
            scheduler.step_update(epoch * STEPS_PER_EPOCH + update)
            rates.append(optimizer.param_groups[0]["lr"])
    return rates


def cvtrain_rates(probe, name, base_lr, warmup, warmup_lr, min_lr, prefix, on_epochs, cooldown=0):
    out = subprocess.run([probe, name, repr(base_lr), str(STEPS_PER_EPOCH), str(EPOCHS * STEPS_PER_EPOCH), str(warmup), repr(warmup_lr),
                          repr(min_lr), str(int(prefix)), str(int(on_epochs)), str(cooldown)], check=True, capture_output=True,
                         text=True).stdout
    return [float(line) for line in out.split()]


def main():
    probe = probe_path(__doc__)
    failures = []
    for case in CASES:
        ours, theirs = cvtrain_rates(probe, *case), timm_rates(*case)
        worst = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ours, theirs))
        first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if abs(a - b) > TOLERANCE * max(abs(b), 1e-30)), None)
        print(f"{case}: {len(ours)} steps, largest relative difference {worst:.1e}")
        if len(ours) != len(theirs) or first is not None:
            where = f"step {first}: cvtrain {ours[first]!r}, timm {theirs[first]!r}" if first is not None else "lengths differ"
            failures.append(f"{case}: {where}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
