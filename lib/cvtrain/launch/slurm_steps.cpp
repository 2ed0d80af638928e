// Slurm allocations and job steps (see slurm_steps.h): environment parsing and step arithmetic.
#include "cvtrain/launch/slurm_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

// Step ids that are not srun steps: the batch script, the external step, salloc's interactive step.
bool outside_any_step(const std::optional<std::string>& step) {
  return !step || *step == "batch" || *step == "extern" || *step == "interactive" || *step == "4294967294" ||
         *step == "4294967295" || *step == "4294967290";
}

int64_t whole_number(const std::string& name, const std::string& text) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw Error(fmt::format("environment: {}='{}' is not a non-negative integer", name, text));
}

// "36(x2),18" -> 36, 36, 18.
std::vector<int> cpus_per_node(const std::string& text) {
  std::vector<int> nodes;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t paren = item.find("(x");
    const int cpus = static_cast<int>(whole_number("SLURM_JOB_CPUS_PER_NODE", item.substr(0, paren)));
    int64_t repeat = 1;
    if (paren != std::string::npos) {
      if (item.back() != ')') throw Error(fmt::format("environment: SLURM_JOB_CPUS_PER_NODE='{}' is not like 36(x2),18", text));
      repeat = whole_number("SLURM_JOB_CPUS_PER_NODE", item.substr(paren + 2, item.size() - paren - 3));
    }
    nodes.insert(nodes.end(), static_cast<size_t>(repeat), cpus);
  }
  if (nodes.empty()) throw Error("environment: SLURM_JOB_CPUS_PER_NODE is empty");
  return nodes;
}

// "8", "h100:8", "gpu:h100:8" -> 8.
int gpu_count(const std::string& name, const std::string& text) {
  const size_t colon = text.rfind(':');
  return static_cast<int>(whole_number(name, colon == std::string::npos ? text : text.substr(colon + 1)));
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

std::optional<SlurmAllocation> slurm_allocation(const EnvLookup& env) {
  const auto job = env("SLURM_JOB_ID");
  if (!job || !outside_any_step(env("SLURM_STEP_ID"))) return std::nullopt;
  SlurmAllocation a;
  a.job_id = *job;
  if (const auto cpus = env("SLURM_JOB_CPUS_PER_NODE")) {
    a.cpus_per_node = cpus_per_node(*cpus);
  } else {
    const auto on_node = env("SLURM_CPUS_ON_NODE");
    const int64_t nodes = env("SLURM_JOB_NUM_NODES") ? whole_number("SLURM_JOB_NUM_NODES", *env("SLURM_JOB_NUM_NODES")) : 1;
    a.cpus_per_node.assign(static_cast<size_t>(nodes), on_node ? static_cast<int>(whole_number("SLURM_CPUS_ON_NODE", *on_node)) : 1);
  }
  if (const auto gpus = env("SLURM_GPUS_PER_NODE")) a.gpus_per_node = gpu_count("SLURM_GPUS_PER_NODE", *gpus);
  else if (const auto on_node = env("SLURM_GPUS_ON_NODE")) a.gpus_per_node = gpu_count("SLURM_GPUS_ON_NODE", *on_node);
  if (const auto mem = env("SLURM_MEM_PER_NODE")) a.mem_per_node_mb = whole_number("SLURM_MEM_PER_NODE", *mem);
  if (const auto mem = env("SLURM_MEM_PER_CPU")) a.mem_per_cpu_mb = whole_number("SLURM_MEM_PER_CPU", *mem);
  return a;
}

StepPlan plan_steps(const SlurmAllocation& a, int ranks, bool on_gpus, int wanted) {
  const int nodes = static_cast<int>(a.cpus_per_node.size());
  const int node_cpus = *std::min_element(a.cpus_per_node.begin(), a.cpus_per_node.end());
  StepPlan plan;
  StepShape& s = plan.shape;
  s.tasks = ranks;
  if (on_gpus) {
    if (a.gpus_per_node < 1) throw Error(fmt::format("Slurm job {} has no GPUs (SLURM_GPUS_PER_NODE); ask sbatch for --gpus-per-node", a.job_id));
    if (ranks > a.gpus_per_node && ranks % a.gpus_per_node != 0)
      throw Error(fmt::format("a trial of {} GPUs neither fits on one node of {} GPUs nor fills whole nodes; give gpus_per_trial a "
                              "divisor or a multiple of {}", ranks, a.gpus_per_node, a.gpus_per_node));
    s.nodes = ranks <= a.gpus_per_node ? 1 : ranks / a.gpus_per_node;
    s.gpus_per_node = std::min(ranks, a.gpus_per_node);
    s.cpus_per_task = std::max(1, node_cpus / a.gpus_per_node);  // each GPU's share of its node's CPUs
    const int capacity = ranks <= a.gpus_per_node ? nodes * (a.gpus_per_node / ranks) : nodes / s.nodes;
    if (capacity < 1)
      throw Error(fmt::format("a trial of {} GPUs needs {} node(s) of {} GPUs; Slurm job {} has {}", ranks, s.nodes, a.gpus_per_node,
                              a.job_id, nodes));
    plan.concurrent = std::min(wanted, capacity);
  } else {
    const int total = std::accumulate(a.cpus_per_node.begin(), a.cpus_per_node.end(), 0);
    if (total < ranks)
      throw Error(fmt::format("a trial of {} rank(s) needs at least {} CPUs; Slurm job {} has {}", ranks, ranks, a.job_id, total));
    // The CPUs shared out among the wanted trials' ranks, none split across nodes.
    s.cpus_per_task = std::clamp(total / (std::max(1, wanted) * ranks), 1, node_cpus);
    int task_slots = 0;
    for (const int cpus : a.cpus_per_node) task_slots += cpus / s.cpus_per_task;
    plan.concurrent = std::max(1, std::min(wanted, task_slots / ranks));
    s.nodes = ceil_div(ranks, std::max(1, node_cpus / s.cpus_per_task));
  }
  const int cpus_per_node_of_step = ceil_div(s.tasks, s.nodes) * s.cpus_per_task;
  if (a.mem_per_cpu_mb > 0) s.mem_per_cpu_mb = a.mem_per_cpu_mb;
  else if (a.mem_per_node_mb > 0) s.mem_mb = std::max<int64_t>(1, a.mem_per_node_mb * cpus_per_node_of_step / node_cpus);
  return plan;
}

std::vector<std::string> srun_arguments(const StepShape& s, const std::string& name) {
  // --exact: the step gets only what it asks for, so steps side by side share nothing; Slurm queues a
  // step that does not fit yet instead of oversubscribing. --kill-on-bad-exit: a dying rank ends its
  // trial's step rather than leaving the others waiting. --input=none: srun reads no terminal.
  std::vector<std::string> args{"srun",
                                "--exact",
                                "--kill-on-bad-exit=1",
                                "--input=none",
                                "--job-name=" + name,
                                fmt::format("--nodes={}", s.nodes),
                                fmt::format("--ntasks={}", s.tasks),
                                fmt::format("--cpus-per-task={}", s.cpus_per_task)};
  if (s.gpus_per_node > 0) args.push_back(fmt::format("--gpus-per-node={}", s.gpus_per_node));
  if (s.mem_per_cpu_mb > 0) args.push_back(fmt::format("--mem-per-cpu={}M", s.mem_per_cpu_mb));
  if (s.mem_mb > 0) args.push_back(fmt::format("--mem={}M", s.mem_mb));
  return args;
}

std::string describe_step(const StepShape& s) {
  return fmt::format("srun -N{} -n{} -c{}{}", s.nodes, s.tasks, s.cpus_per_task,
                     s.gpus_per_node > 0 ? fmt::format(" --gpus-per-node={}", s.gpus_per_node) : "");
}

}  // namespace cvtrain
