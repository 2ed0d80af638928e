// The Kineto session behind a trace window, or the CUDA profiler window for nsys (see trace_window.h).
#include "cvtrain/train/trace_window.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <zlib.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/observe/cuda_ranges.h"
#include "cvtrain/recipe/recipe.h"

// Declared in torch/csrc/profiler/kineto_shim.h, which includes Kineto's own headers that the
// LibTorch wheel does not ship; libtorch_cpu exports it (trace metadata, as torch.profiler's
// _add_metadata_json).
namespace torch::autograd::profiler {
TORCH_API void addMetadataJson(const std::string& key, const std::string& value);
}

namespace cvtrain {
namespace {

namespace profiler = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// The saved JSON gzipped into `path` through a temporary name; the plain file removed.
void gzip_into(const std::string& json_path, const std::string& path) {
  std::ifstream in(json_path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  const std::string text = contents.str(), temporary = path + ".tmp";
  gzFile out = gzopen(temporary.c_str(), "wb6");
  if (!out) throw IoError(fmt::format("{}: cannot open for writing", temporary));
  const bool written = gzwrite(out, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size());
  if (gzclose(out) != Z_OK || !written) throw IoError(fmt::format("{}: cannot write the trace", temporary));
  std::filesystem::rename(temporary, path);
  std::filesystem::remove(json_path);
}

}  // namespace

struct TraceWindow::Recorder {
  int64_t first = 0, last = 0;
  int rank = 0, world_size = 1;
  std::string backend, folder;
  std::set<impl::ActivityType> activities;
  bool running = false, done = false;
  std::optional<at::RecordFunction> step_range;
  std::string step_name;  // outlives the range, which may keep a view of it

  void start() {
    impl::ExperimentalConfig experimental;
    experimental.profile_all_threads = true;  // the decode workers too, not only the training thread
    const impl::ProfilerConfig config(impl::ProfilerState::KINETO, false, false, false, false, false, experimental);
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
    running = true;
  }

  void finish() {
    if (!running) return;
    step_range.reset();
    profiler::addMetadataJson("distributedInfo",
                              fmt::format(R"({{"backend": "{}", "rank": {}, "world_size": {}}})", backend, rank, world_size));
    const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
    running = false;
    done = true;
    std::filesystem::create_directories(folder);
    const std::string path = fmt::format("{}/rank-{}.pt.trace.json.gz", folder, rank), json = path + ".json";
    result->save(json);
    gzip_into(json, path);
    log::info("trace of steps {} to {} (rank {}): {}", first, last, rank, path);
  }
};

TraceWindow::TraceWindow(const ProfileSpec& spec, int rank, int world_size, const std::string& backend, const std::string& output,
                         bool on_gpu) {
  const bool chosen = std::find(spec.ranks.begin(), spec.ranks.end(), static_cast<double>(rank)) != spec.ranks.end();
  if (spec.steps.size() != 2 || !chosen) return;
  if (spec.tool == ProfileTool::kNsys) {
    if (!on_gpu) {
      log::warn("profile.tool: nsys marks its window with cudaProfilerStart/Stop, which needs a CUDA device; this rank runs on "
                "the CPU, so no window is marked (profile.tool: kineto traces CPU runs)");
      return;
    }
    capture_first_ = static_cast<int64_t>(spec.steps[0]);
    capture_last_ = static_cast<int64_t>(spec.steps[1]);
    return;
  }
  recorder_ = std::make_unique<Recorder>();
  recorder_->first = static_cast<int64_t>(spec.steps[0]);
  recorder_->last = static_cast<int64_t>(spec.steps[1]);
  recorder_->rank = rank;
  recorder_->world_size = world_size;
  recorder_->backend = backend;
  recorder_->folder = output + "/traces";
  recorder_->activities = {impl::ActivityType::CPU};
  if (on_gpu) recorder_->activities.insert(impl::ActivityType::CUDA);
}

TraceWindow::~TraceWindow() {
  if (capturing_) cuda_profiler_stop();
  if (!recorder_) return;
  try {
    recorder_->finish();
  } catch (const std::exception& e) {
    log::warn("the trace could not be written: {}", e.what());
  }
}

TraceWindow::TraceWindow(TraceWindow&&) noexcept = default;
TraceWindow& TraceWindow::operator=(TraceWindow&&) noexcept = default;

void TraceWindow::begin_step(int64_t step) {
  if (capture_first_ > 0 && step == capture_first_) {
    capturing_ = cuda_profiler_start();
    if (capturing_)
      log::info("CUDA profiler capture on for steps {} to {}: `nsys profile --capture-range=cudaProfilerApi` records them",
                capture_first_, capture_last_);
    else
      log::warn("cudaProfilerStart failed: steps {} to {} are not marked for nsys", capture_first_, capture_last_);
  }
  if (!recorder_ || recorder_->done) return;
  if (step == recorder_->first) recorder_->start();
  if (!recorder_->running) return;
  recorder_->step_name = fmt::format("ProfilerStep#{}", step);  // as torch.profiler names a step
  recorder_->step_range.emplace(at::RecordScope::USER_SCOPE);
  recorder_->step_range->before(recorder_->step_name);
}

void TraceWindow::end_step(int64_t step) {
  if (capturing_ && step >= capture_last_) {
    cuda_profiler_stop();
    capturing_ = false;
  }
  if (!recorder_ || !recorder_->running) return;
  recorder_->step_range.reset();
  if (step >= recorder_->last) recorder_->finish();
}

bool TraceWindow::recording() const { return recorder_ && recorder_->running; }

}  // namespace cvtrain
