// Host clocks and CUDA events behind the step breakdown (see step_timer.h).
#include "cvtrain/train/step_timer.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <utility>

namespace cvtrain {

struct StepTimer::Clocks {
  virtual ~Clocks() = default;
  virtual void begin_step() = 0;
  virtual void mark(Phase phase) = 0;
  virtual void end_step() = 0;
  virtual void break_sequence() = 0;
  virtual std::vector<PhaseSeconds> take_finished() = 0;
  virtual LaunchChecks launch_checks() const { return {}; }
};

namespace {

struct NoClocks : StepTimer::Clocks {
  void begin_step() override {}
  void mark(Phase) override {}
  void end_step() override {}
  void break_sequence() override {}
  std::vector<PhaseSeconds> take_finished() override { return {}; }
};

class HostClocks : public StepTimer::Clocks {
 public:
  void begin_step() override {
    const Clock::time_point now = Clock::now();
    current_ = PhaseSeconds{};
    if (previous_end_) current_[Phase::kOther] = seconds(*previous_end_, now);
    last_ = now;
    open_ = true;
  }
  void mark(Phase phase) override {
    if (!open_) return;
    const Clock::time_point now = Clock::now();
    current_[phase] += seconds(last_, now);
    last_ = now;
  }
  void end_step() override {
    if (!open_) return;
    finished_.push_back(current_);
    previous_end_ = last_;
    open_ = false;
  }
  void break_sequence() override { previous_end_.reset(); }
  std::vector<PhaseSeconds> take_finished() override { return std::exchange(finished_, {}); }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
  bool open_ = false;
  Clock::time_point last_;
  std::optional<Clock::time_point> previous_end_;
  PhaseSeconds current_;
  std::vector<PhaseSeconds> finished_;
};

// Events on the compute stream: a step's start, one per mark, and the previous step's last one
// (for `other`). A step is read once its last event has completed; events are created as
// needed (cudaEventCreate costs about a microsecond) and freed with the step.
class DeviceEvents : public StepTimer::Clocks {
 public:
  explicit DeviceEvents(const c10::Device& device) : device_(device), guard_(device.type()) {}

  void begin_step() override { open_ = Step{previous_end_, record(), {}}; }
  void mark(Phase phase) override {
    if (!open_) return;
    EventPtr event = record();
    // Queried just after recording: complete only if the GPU has nothing queued before it.
    if (phase == Phase::kForward || phase == Phase::kBackward || phase == Phase::kOptimizer) {
      ++checks_.phases;
      if (event->query()) ++checks_.drained;
    }
    open_->marks.emplace_back(phase, std::move(event));
  }
  LaunchChecks launch_checks() const override { return checks_; }
  void end_step() override {
    if (!open_) return;
    previous_end_ = last_event(*open_);
    queued_.push_back(std::move(*open_));
    open_.reset();
    if (queued_.size() > kMaxQueued) queued_.pop_front();  // the GPU this far behind: drop the oldest rather than grow
  }
  void break_sequence() override { previous_end_.reset(); }
  std::vector<PhaseSeconds> take_finished() override {
    std::vector<PhaseSeconds> out;
    while (!queued_.empty() && last_event(queued_.front())->query()) {
      out.push_back(times_of(queued_.front()));
      queued_.pop_front();
    }
    return out;
  }

 private:
  static constexpr size_t kMaxQueued = 64;
  using EventPtr = std::shared_ptr<c10::Event>;  // a step's last event is the next step's previous end
  struct Step {
    EventPtr previous_end;  // null for the first step of a sequence
    EventPtr start;
    std::vector<std::pair<Phase, EventPtr>> marks;
  };

  EventPtr record() {
    auto event = std::make_shared<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT);  // BACKEND_DEFAULT times
    event->record(guard_.getStream(device_));
    return event;
  }
  static const EventPtr& last_event(const Step& step) { return step.marks.empty() ? step.start : step.marks.back().second; }
  static PhaseSeconds times_of(const Step& step) {
    PhaseSeconds t;
    if (step.previous_end) t[Phase::kOther] = step.previous_end->elapsedTime(*step.start) / 1e3;  // milliseconds
    const c10::Event* previous = step.start.get();
    for (const auto& [phase, event] : step.marks) {
      t[phase] += previous->elapsedTime(*event) / 1e3;
      previous = event.get();
    }
    return t;
  }

  c10::Device device_;
  c10::impl::VirtualGuardImpl guard_;
  EventPtr previous_end_;
  std::optional<Step> open_;
  std::deque<Step> queued_;
  LaunchChecks checks_;
};

}  // namespace

StepTimer::StepTimer(const c10::Device& device, bool enabled) {
  if (!enabled)
    clocks_ = std::make_unique<NoClocks>();
  else if (device.is_cuda())
    clocks_ = std::make_unique<DeviceEvents>(device);
  else
    clocks_ = std::make_unique<HostClocks>();
}

StepTimer::~StepTimer() = default;
StepTimer::StepTimer(StepTimer&&) noexcept = default;
StepTimer& StepTimer::operator=(StepTimer&&) noexcept = default;

void StepTimer::begin_step() { clocks_->begin_step(); }
void StepTimer::mark(Phase phase) { clocks_->mark(phase); }
void StepTimer::end_step() { clocks_->end_step(); }
void StepTimer::break_sequence() { clocks_->break_sequence(); }
std::vector<PhaseSeconds> StepTimer::take_finished() { return clocks_->take_finished(); }
LaunchChecks StepTimer::launch_checks() const { return clocks_->launch_checks(); }

}  // namespace cvtrain
