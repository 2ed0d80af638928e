// The log lines that say what a run is (model, data, ranks, batch, precision, strategy) and where
// a resumed run goes on from, so the loop (train/trainer.cpp) holds the loop alone.
#pragma once

#include <cstdint>
#include <string>

namespace cvtrain {

struct Recipe;
struct RankInfo;
struct TrainingRun;
struct TrainPosition;

// "training resnet18 (... GFLOPs per image forward) on DATA (... samples, ... classes) on ...".
std::string run_start_line(const TrainingRun& run, const Recipe& recipe, const RankInfo& rank);
// Where a run resumed from `folder` at `position` goes on, or that nothing is left to train (and
// how to train more).
std::string resume_line(const std::string& folder, const TrainPosition& position, int64_t total_steps, int64_t steps_per_epoch);

}  // namespace cvtrain
