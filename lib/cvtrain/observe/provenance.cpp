// provenance.json's contents (see provenance.h).
#include "cvtrain/observe/provenance.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cvtrain/core/text.h"
#include "cvtrain/core/version.h"

namespace cvtrain {

namespace {

// /proc/self/cmdline: arguments separated by NUL; those with spaces quoted for reading.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string arg;
  for (const char c : raw) {
    if (c != '\0') {
      arg += c;
      continue;
    }
    args.push_back(arg.find(' ') == std::string::npos ? arg : "'" + arg + "'");
    arg.clear();
  }
  return join(args, " ");
}

}  // namespace

Provenance this_process_provenance() {
  Provenance p;
  p.started_at = utc_now();
  p.command = command_line();
  std::error_code ec;
  p.working_directory = std::filesystem::current_path(ec).string();
  p.cvtrain_version = kVersion;
  return p;
}

std::string provenance_json(const Provenance& p) {
  std::vector<std::string> ranks;
  for (const std::string& r : p.ranks) ranks.push_back(json_string(r));
  std::vector<std::string> plan;
  for (const auto& [name, value] : p.plan) plan.push_back(fmt::format("    {}: {}", json_string(name), json_string(value)));
  return fmt::format(
      "{{\n  \"started_at\": {},\n  \"command\": {},\n  \"working_directory\": {},\n  \"cvtrain\": {},\n  \"libtorch\": {},\n"
      "  \"cuda_runtime\": {},\n  \"nccl\": {},\n  \"device\": {},\n  \"world_size\": {},\n  \"ranks\": [{}],\n"
      "  \"cores\": {},\n  \"data_workers\": {},\n  \"plan\": {{\n{}\n  }}\n}}\n",
      json_string(p.started_at), json_string(p.command), json_string(p.working_directory), json_string(p.cvtrain_version),
      json_string(p.libtorch_version), json_string(p.cuda_runtime), json_string(p.nccl_version), json_string(p.device), p.world_size,
      join(ranks, ", "), p.cores, p.data_workers, join(plan, ",\n"));
}

}  // namespace cvtrain
