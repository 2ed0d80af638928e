// Checkpoint folders: write (temporary name, fsync, rename, COMPLETE marker), prune, find, load.
#include "cvtrain/train/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/version.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_schema.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kComplete = "COMPLETE";
constexpr const char* kPrefix = "step-";

// Data and metadata on disk before the rename that publishes them.
void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open to sync ({})", path, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw Error(fmt::format("{}: fsync failed ({})", path, std::strerror(err)));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) throw Error(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
}

std::vector<c10::Device> generator_devices() {
  std::vector<c10::Device> devices{c10::Device(c10::kCPU)};
  const auto count = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < count; ++i) devices.emplace_back(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
  return devices;
}

NamedTensors rng_states() {
  NamedTensors states;
  for (const c10::Device& device : generator_devices()) {
    at::Generator generator = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    states.emplace_back(device.str(), generator.get_state());
  }
  return states;
}

void restore_rng_states(const NamedTensors& states, const std::string& file) {
  for (const auto& [name, state] : states) {
    const c10::Device device(name);
    if (device.is_cuda() && device.index() >= static_cast<int>(torch::cuda::device_count())) {
      log::warn("{}: no {} here; its random state is not restored", file, name);
      continue;
    }
    at::Generator generator = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
  }
}

std::string state_text(const TrainPosition& p, const Recipe& recipe, const std::string& device) {
  return fmt::format(
             "step {}\nepoch {}\nbatches_done {}\nskipped_steps {}\nloss_scale {:.17g}\nscale_growth_tracker {}\n"
             "global_batch {}\nnext_lr {:.17g}\nseed {}\ncvtrain {}\nlibtorch {}\ncuda_runtime {}\nnccl {}\n",
             p.step, p.epoch, p.batches_done, p.skipped_steps, p.loss_scale, p.scale_growth_tracker, recipe.train.global_batch, p.next_lr,
             recipe.train.seed, kVersion, TORCH_VERSION, cuda_runtime_version(), nccl_version()) +
         (device.empty() ? "" : fmt::format("device {}\n", device));
}

int64_t step_of(const fs::path& folder) {
  const std::string name = folder.filename().string();
  if (name.rfind(kPrefix, 0) != 0 || name.find('.') != std::string::npos) return -1;
  try {
    return std::stoll(name.substr(std::strlen(kPrefix)));
  } catch (const std::exception&) {
    return -1;
  }
}

void write_checkpoint_files(const std::string& dir, const TrainPosition& position, const NamedTensors& model, const NamedTensors& optimizer,
                            const NamedTensors& ema, const Recipe& recipe, const std::string& device,
                            const std::vector<std::string>& class_names) {
  write_safetensors(dir + "/model.safetensors", model,
                    {{"format", "pt"}, {"arch", recipe.model.arch}, {"step", std::to_string(position.step)}});
  write_safetensors(dir + "/optimizer.safetensors", optimizer, {{"optimizer", name_of(recipe.optim.name)}});
  write_safetensors(dir + "/rng.safetensors", rng_states());
  write_text(dir + "/state.txt", state_text(position, recipe, device));
  write_text(dir + "/recipe.yaml", recipe_to_yaml(recipe));
  if (!class_names.empty()) {
    write_text(dir + "/" + kClassNamesFile, join(class_names, "\n") + "\n");
    fsync_path(dir + "/" + kClassNamesFile);
  }
  if (!ema.empty()) {
    write_safetensors(dir + "/" + kEmaFile, ema, {{"format", "pt"}, {"arch", recipe.model.arch}, {"step", std::to_string(position.step)}});
    fsync_path(dir + "/" + kEmaFile);
  }
  for (const char* name : {"model.safetensors", "optimizer.safetensors", "rng.safetensors", "state.txt", "recipe.yaml"})
    fsync_path(dir + "/" + name);
  fsync_path(dir);
}

}  // namespace

Checkpointer::Checkpointer(std::string run_dir, int64_t keep) : root_((fs::path(run_dir) / "checkpoints").string()), keep_(keep) {}

Checkpointer Checkpointer::in_folder(std::string folder, int64_t keep) { return Checkpointer(std::move(folder), keep, InFolder{}); }

void Checkpointer::remove_all_but(const std::string& kept) const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec))
    if (step_of(entry.path()) >= 0 && entry.path().string() != kept) fs::remove_all(entry.path(), ec);
}

std::string Checkpointer::folder_of(int64_t step) const { return (fs::path(root_) / fmt::format("{}{:08d}", kPrefix, step)).string(); }

void Checkpointer::check_writable() const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec || !fs::is_directory(root_))
    throw Error(fmt::format("checkpoints '{}': cannot create the folder ({})", root_, ec ? ec.message() : "a file is in the way"));
  const std::string probe = root_ + "/.write-test";
  write_text(probe, "ok\n");
  fs::remove(probe, ec);
}

std::string Checkpointer::save(const TrainPosition& position, const NamedTensors& model, const NamedTensors& optimizer,
                               const Recipe& recipe, const NamedTensors& ema, const std::string& device,
                               const std::vector<std::string>& class_names) const {
  const std::string final_dir = folder_of(position.step);
  const std::string temporary = final_dir + ".tmp", replaced = final_dir + ".old";
  std::error_code ec;
  try {
    check_writable();
    fs::remove_all(temporary);
    fs::remove_all(replaced);
    fs::create_directories(temporary);
    write_checkpoint_files(temporary, position, model, optimizer, ema, recipe, device, class_names);
    // A folder of the same step (an earlier run's, or a write that never finished) steps aside
    // only now, and goes once the new one is in place.
    if (fs::exists(final_dir)) fs::rename(final_dir, replaced);
    fs::rename(temporary, final_dir);
    fsync_path(root_);
    fs::remove_all(replaced);
    write_text(final_dir + "/" + kComplete, "complete\n");
    fsync_path(final_dir + "/" + kComplete);
    fsync_path(final_dir);
  } catch (const std::exception& e) {
    fs::remove_all(temporary, ec);
    throw Error(fmt::format("checkpoint at step {} could not be written: {}; earlier checkpoints in {} are intact", position.step,
                            e.what(), root_));
  }
  // Only now that the new one is complete may old ones go.
  const std::vector<std::string> complete = complete_checkpoints();
  for (size_t i = 0; i + static_cast<size_t>(keep_) < complete.size(); ++i) fs::remove_all(complete[i], ec);
  return final_dir;
}

std::vector<std::string> Checkpointer::complete_checkpoints() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const int64_t step = step_of(entry.path());
    if (step >= 0 && fs::exists(entry.path() / kComplete)) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::optional<std::string> Checkpointer::latest() const {
  std::vector<std::pair<int64_t, fs::path>> candidates;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec))
    if (const int64_t step = step_of(entry.path()); step >= 0) candidates.emplace_back(step, entry.path());
  std::sort(candidates.rbegin(), candidates.rend());
  std::string newest_failure;  // of a complete checkpoint that did not read back
  for (const auto& [step, folder] : candidates) {
    if (!fs::exists(folder / kComplete)) {
      log::warn("skipping checkpoint {}: incomplete (no {} marker; its write was interrupted)", folder.string(), kComplete);
      continue;
    }
    try {
      read_position(folder.string());
      read_safetensors((folder / "model.safetensors").string());
      read_safetensors((folder / "rng.safetensors").string());
      read_safetensors((folder / "optimizer.safetensors").string());
      if (fs::exists(folder / kEmaFile)) read_safetensors((folder / kEmaFile).string());
      return folder.string();
    } catch (const std::exception& e) {
      log::warn("skipping checkpoint {}: unreadable ({})", folder.string(), e.what());
      if (newest_failure.empty()) newest_failure = fmt::format("{}: {}", folder.string(), e.what());
    }
  }
  // Complete checkpoints that all fail to read are damage, not a run that never saved: starting
  // over would train from scratch and in time replace them.
  if (!newest_failure.empty())
    throw Error(
        fmt::format("{}: no complete checkpoint reads back (the newest, {}); restore or remove them, or train from "
                    "scratch on purpose with checkpoint.resume=none",
                    root_, newest_failure));
  return std::nullopt;
}

namespace {

// state.txt's "key value" lines.
std::map<std::string, std::string> state_values(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  std::map<std::string, std::string> values;
  for (std::string line; std::getline(in, line);) {  // "key value", the value to the line's end ("device NVIDIA H200")
    const size_t space = line.find(' ');
    if (space != std::string::npos && space > 0 && space + 1 < line.size()) values[line.substr(0, space)] = line.substr(space + 1);
  }
  return values;
}

}  // namespace

std::vector<std::string> build_changes_since(const std::string& folder, const std::string& device) {
  const std::map<std::string, std::string> saved = state_values(folder + "/state.txt");
  const std::vector<std::array<std::string, 3>> builds{{"cvtrain", "cvtrain", kVersion},
                                                       {"libtorch", "LibTorch", TORCH_VERSION},
                                                       {"cuda_runtime", "CUDA runtime", cuda_runtime_version()},
                                                       {"nccl", "NCCL", nccl_version()},
                                                       {"device", "device", device}};
  std::vector<std::string> changes;
  for (const auto& [key, name, now] : builds) {
    const auto it = saved.find(key);
    if (it != saved.end() && it->second != now) changes.push_back(fmt::format("{} {} -> {}", name, it->second, now));
  }
  return changes;
}

TrainPosition read_position(const std::string& folder) {
  const std::string path = folder + "/state.txt";
  const std::map<std::string, std::string> values = state_values(path);
  const auto number = [&](const char* key) {
    const auto it = values.find(key);
    if (it == values.end()) throw Error(fmt::format("{}: no '{}' line", path, key));
    try {
      return std::stod(it->second);
    } catch (const std::exception&) {
      throw Error(fmt::format("{}: '{}' is not a number: {}", path, key, it->second));
    }
  };
  const auto whole = [&](const char* key) { return static_cast<int64_t>(number(key)); };
  return TrainPosition{whole("step"),
                       whole("epoch"),
                       whole("batches_done"),
                       whole("skipped_steps"),
                       number("loss_scale"),
                       whole("scale_growth_tracker"),
                       values.count("global_batch") ? whole("global_batch") : 0,
                       values.count("next_lr") ? number("next_lr") : -1};
}

CheckpointContents load_checkpoint(const std::string& folder) {
  CheckpointContents contents;
  contents.position = read_position(folder);
  contents.model_file = folder + "/model.safetensors";
  contents.model = read_safetensors(contents.model_file);
  contents.optimizer = read_safetensors(folder + "/optimizer.safetensors");
  restore_rng_states(read_safetensors(folder + "/rng.safetensors"), folder + "/rng.safetensors");
  if (fs::exists(folder + "/" + kEmaFile)) contents.ema = read_safetensors(folder + "/" + kEmaFile);
  return contents;
}

std::string checkpoint_folder_of(const std::string& source) {
  if (fs::exists(fs::path(source) / "COMPLETE")) return source;
  if (fs::is_directory(fs::path(source) / "checkpoints")) {
    if (auto latest = Checkpointer(source, 1).latest()) return *latest;
    throw Error(fmt::format("{}: no complete checkpoint under {}/checkpoints", source, source));
  }
  if (auto latest = Checkpointer::in_folder(source, 1).latest()) return *latest;  // a folder of step-N checkpoints: OUTPUT/best
  if (fs::exists(fs::path(source) / "model.safetensors"))
    throw Error(fmt::format("{}: checkpoint has no COMPLETE marker (its write was interrupted); use a complete one", source));
  throw Error(fmt::format("{}: neither a checkpoint folder (checkpoints/step-N) nor a run folder with checkpoints/", source));
}

void save_model_file(torch::nn::Module& model, const std::string& path) {
  const std::string temporary = path + ".tmp";
  torch::serialize::OutputArchive archive;
  model.save(archive);
  archive.save_to(temporary);
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) throw Error(fmt::format("{}: cannot rename into place ({})", path, ec.message()));
}

}  // namespace cvtrain
