#!/usr/bin/env bash
# Tries scripts/slurm/cvtrain.sbatch and sweep.sbatch under real Slurm on this one machine: installs Debian's slurmd,
# slurmctld and munge, configures two one-CPU nodes (vm1, vm2) served by two slurmd daemons on this
# host, and submits a 2-node job, one whose rank 1 crashes at step 3, a zero1 one (it must stay
# zero1: the batch script turns only `single` into ddp), and one preempted mid-run
# (SIGUSR1) that requeues itself and resumes; then a 4-trial sweep as one batch job, and a sweep
# preempted the same way that requeues and resumes its trials. Changes /etc/slurm,
# /etc/munge and /etc/hosts (vm1 and vm2 resolve to 127.0.0.1): for a throwaway machine only.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh > /dev/null

dpkg -s slurmd slurmctld slurm-client munge > /dev/null 2>&1 ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmd slurmctld slurm-client munge > /dev/null
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd-vm1 /var/spool/slurmd-vm2 /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$(hostname -s)
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmUser=root
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmdSpoolDir=/var/spool/slurmd-%n
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
JobAcctGatherType=jobacct_gather/none
NodeName=vm1 NodeHostname=$(hostname -s) Port=17001 CPUs=1 State=UNKNOWN
NodeName=vm2 NodeHostname=$(hostname -s) Port=17002 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=vm1,vm2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
grep -q " vm1 vm2" /etc/hosts || echo "127.0.0.1 vm1 vm2" >> /etc/hosts
[ -f /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2> /dev/null; chmod 400 /etc/munge/munge.key; }
chown munge:munge /etc/munge/munge.key /run/munge
pgrep -x munged > /dev/null || su -s /bin/sh munge -c munged
pkill -x slurmd || true; pkill -x slurmctld || true; sleep 1
slurmctld; sleep 2; slurmd -N vm1; slurmd -N vm2; sleep 3
sinfo

OUT=$(mktemp -d)
submit() {  # name, then extra sbatch-side environment as VAR=value words
  local name=$1; shift
  env "$@" sbatch --wait --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --gpus-per-node=0 --time=10 -o "$OUT/$name.out" \
    scripts/slurm/cvtrain.sbatch recipes/quickstart.yaml model.arch=mlp data.max_samples=2000 data.val= \
    train.epochs=1 train.global_batch=64 output="$OUT/$name" ${SBATCH_EXTRA:-} > /dev/null && echo "$name: job succeeded" || echo "$name: job failed"
  grep -E "training|done|error" "$OUT/$name.out" | sed 's/^/  /'
}
submit two_nodes
submit crashing_rank CVTRAIN_FAULT_RANK=1 CVTRAIN_FAULT_STEP=3
# The recipe's strategy stays as it is under sbatch (only single becomes ddp): zero1 trains zero1.
SBATCH_EXTRA="strategy=zero1" submit sharded

# Preemption: SIGUSR1 to every rank mid-run (what --signal=USR1@180 does near the time limit); the
# ranks save and exit 75, the script requeues, the requeued job resumes and finishes.
job=$(sbatch --parsable --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --gpus-per-node=0 --time=10 -o "$OUT/preempted.out" \
  scripts/slurm/cvtrain.sbatch recipes/quickstart.yaml model.arch=mlp data.max_samples=6400 data.val= train.epochs=2 \
  train.global_batch=64 train.log_every=10 output="$OUT/preempted")
for _ in $(seq 300); do grep -q "step 30/" "$OUT/preempted.out" 2> /dev/null && break; sleep 0.2; done
scancel --signal=USR1 "$job"
for _ in $(seq 600); do scontrol show job "$job" | grep -q "JobState=COMPLETED" && break; sleep 1; done
scontrol show job "$job" | grep -o "JobState=[A-Z]*\|Restarts=[0-9]*" | sed 's/^/  /'
grep -E "stopped on request|requeueing|resuming from|done:" "$OUT/preempted.out" | sed 's/^/  /'


# A sweep as one batch job: 4 grid trials, each a job step (srun --exact) inside a 2-node allocation of
# one CPU per node, so 2 run at once although the space asks for 4; then the sweep's report.
cat > "$OUT/space.yaml" <<YAML
space: {optim.lr: {grid: [0.02, 0.05, 0.1, 0.2]}}
sampler: grid
trials: 0
parallel: 4
YAML
sed 's/, 0.2\]/]/; s/parallel: 4/parallel: 2/' "$OUT/space.yaml" > "$OUT/space3.yaml"  # for the preempted sweep below
sbatch --wait --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --gpus-per-node=0 --time=10 -o "$OUT/sweep.out" \
  scripts/slurm/sweep.sbatch recipes/quickstart.yaml --space "$OUT/space.yaml" --out "$OUT/sweep" model.arch=mlp \
  data.max_samples=1000 data.max_val_samples=500 train.epochs=1 train.global_batch=64 > /dev/null &&
  echo "sweep: job succeeded" || echo "sweep: job failed"
grep -E "holds|started|done|failed|best" "$OUT/sweep.out" | sed 's/^/  /'
python3 - "$OUT/sweep/sweep.jsonl" <<'PY'
import json, sys
running = most = steps = 0
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event["event"] == "start":
        running += 1
        steps += event.get("launcher", "").startswith("srun")
    elif event["event"] == "end":
        running -= 1
    most = max(most, running)
print(f"  sweep.jsonl: {steps} trials started as srun steps, at most {most} at once")
PY
build/apps/cvtrain report "$OUT/sweep" 2>&1 | sed 's/^/  /'

# The sweep preempted: SIGUSR1 to the batch script (what --signal=B:USR1@180 does) reaches the sweep and
# its running trials, which save and stop; the script requeues the job, and the requeued sweep resumes
# the two interrupted trials from their checkpoints and then runs the third.
job=$(sbatch --parsable --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --gpus-per-node=0 --time=10 -o "$OUT/sweep_preempted.out" \
  scripts/slurm/sweep.sbatch recipes/quickstart.yaml --space "$OUT/space3.yaml" --out "$OUT/sweep_preempted" model.arch=mlp \
  data.max_samples=6400 data.max_val_samples=500 train.epochs=2 train.global_batch=64 train.log_every=10)
for _ in $(seq 300); do grep -q "step 30/" "$OUT/sweep_preempted/trial-0000.log" 2> /dev/null && break; sleep 0.2; done
scancel --batch --signal=USR1 "$job"
for _ in $(seq 600); do scontrol show job "$job" | grep -q "JobState=COMPLETED" && break; sleep 1; done
scontrol show job "$job" | grep -o "JobState=[A-Z]*\|Restarts=[0-9]*" | sed 's/^/  /'
grep -E "stopped:|requeueing|done:|trial\(s\) done" "$OUT/sweep_preempted.out" | sed 's/^/  /'
grep -c "resuming from" "$OUT"/sweep_preempted/trial-000?.log | sed 's/^/  /'
