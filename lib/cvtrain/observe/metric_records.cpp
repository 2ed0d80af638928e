// Field order and wording of metrics.jsonl and of the epoch log line (docs/performance.md, "What a run writes").
#include "cvtrain/observe/metric_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace cvtrain {

double mean_or_nan(double sum, int64_t count) {
  return count > 0 ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

MetricRecord TrainRecord::to_record() const {
  MetricRecord record{{"kind", std::string("train")},
                      {"epoch", epoch},
                      {"step", step},
                      {"loss", loss},
                      {"lr", lr},
                      {"images_per_s", images_per_s},
                      {"data_wait", data_wait},
                      {"comm_wait", comm_wait},
                      {"step_s", step_s},
                      {"train_tflops", train_tflops}};
  if (loss_scale) record.emplace_back("loss_scale", *loss_scale);
  if (mfu) record.emplace_back("mfu", *mfu);
  append_breakdown(breakdown, record);
  if (ranks)
    record.insert(record.end(), {{"rank_own_s_min", ranks->own.min},
                                 {"rank_own_s_median", ranks->own.median},
                                 {"rank_own_s_max", ranks->own.max},
                                 {"slowest_rank", static_cast<int64_t>(ranks->slowest)},
                                 {"slowest_rank_score", ranks->slowest_score}});
  return record;
}

void append_breakdown(const PhaseTotals& breakdown, MetricRecord& record) {
  if (breakdown.steps() == 0) return;
  record.emplace_back("breakdown_steps", breakdown.steps());
  for (size_t i = 0; i < kPhaseCount; ++i) {
    record.emplace_back(std::string(kPhaseNames[i]) + "_frac", breakdown.fraction(static_cast<Phase>(i)));
    record.emplace_back(std::string(kPhaseNames[i]) + "_s", breakdown.mean_s(static_cast<Phase>(i)));
  }
}

double MemoryReport::peak_mb() const {
  return peak_mb_per_rank.empty() ? 0.0 : *std::max_element(peak_mb_per_rank.begin(), peak_mb_per_rank.end());
}

void MemoryReport::append_to(MetricRecord& record) const {
  record.insert(record.end(), {{"param_mb", param_mb},
                               {"optimizer_state_mb", optimizer_state_mb},
                               {"peak_memory_mb", peak_mb()},
                               {"peak_memory_mb_per_rank", fmt::format("{:.1f}", fmt::join(peak_mb_per_rank, " "))}});
}

std::string MemoryReport::describe() const {
  return fmt::format(", per rank: parameters {:.1f} MB, optimizer state {:.1f} MB, peak {} {:.0f} MB above start", param_mb,
                     optimizer_state_mb, device_allocator ? "allocated" : "RSS", peak_mb());
}

double EvalFigures::main() const { return scores.empty() ? std::numeric_limits<double>::quiet_NaN() : scores.front().second; }

std::string scores_text(const std::vector<std::pair<std::string, double>>& scores) {
  static const std::map<std::string, std::string> spelled{
      {"top1", "top-1"}, {"top5", "top-5"}, {"miou", "mIoU"}, {"pixel_acc", "pixel accuracy"}, {"macc", "mean class accuracy"}};
  std::string line;
  for (const auto& [name, value] : scores) {
    const auto it = spelled.find(name);
    line += fmt::format("{}{} {:.4f}", line.empty() ? "" : " ", it == spelled.end() ? name : it->second, value);
  }
  return line;
}

std::string EvalFigures::text() const { return fmt::format("val loss {:.4f} {}", loss, scores_text(scores)); }

MetricRecord EpochRecord::to_record() const {
  MetricRecord record{{"kind", std::string("epoch")},
                      {"epoch", epoch},
                      {"step", step},
                      {"train_loss", train_loss},
                      {"epoch_s", epoch_s},
                      {"images_per_s", images_per_s},
                      {"data_wait", data_wait},
                      {"bad_samples", bad_samples},
                      {"skipped_steps", skipped_steps}};
  memory.append_to(record);
  append_breakdown(breakdown, record);
  if (eval) {
    record.emplace_back("val_loss", eval->loss);
    for (const auto& [name, value] : eval->scores) record.emplace_back(name, value);
    record.emplace_back("eval_s", eval->seconds);
  }
  if (eval_ema) {
    record.emplace_back("val_loss_ema", eval_ema->loss);
    for (const auto& [name, value] : eval_ema->scores) record.emplace_back(name + "_ema", value);
  }
  return record;
}

std::string EpochRecord::log_line() const {
  std::string line = fmt::format("epoch {} train loss {:.4f}, {:.0f} img/s", epoch, train_loss, images_per_s);
  line += memory.describe();
  if (eval) line += ", " + eval->text();
  if (eval_ema) line += " (weight average: " + eval_ema->text() + ")";
  if (breakdown.steps() > 0) line += "; step time: " + breakdown.describe();
  return line;
}

}  // namespace cvtrain
