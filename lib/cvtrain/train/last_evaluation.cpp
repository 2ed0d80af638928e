// LastEvaluation (see last_evaluation.h): the report `cvtrain eval` makes, from training's own pass.
#include "cvtrain/train/last_evaluation.h"

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/observe/class_accuracy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/eval_report.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_directory.h"

namespace cvtrain {

void LastEvaluation::keep(const EvalResult& eval, double seconds) {
  last_ = eval;
  seconds_ = seconds;
}

void LastEvaluation::report(const TrainingRun& run, const Recipe& recipe, const RankInfo& rank, int64_t step,
                            const std::string& checkpoint) const {
  if (!last_ || !run.data.val) return;
  const int64_t unusable = unusable_over_ranks(*run.data.val_bad, *run.comm, run.device);
  if (rank.rank != 0) return;
  EvalReport report;
  report.result = *last_;
  report.weights_file = checkpoint;
  report.checkpoint_step = step;
  report.unusable = unusable;
  report.batch = run.loader.batch_size;
  report.world_size = run.comm->world_size();
  report.seconds = seconds_;
  report.classes = class_accuracy(last_->per_class, run.data.val->class_names());
  report.by = "training";
  report.kept_whole = images_kept_whole(*run.data.val, recipe.model.image_size);
  const std::string file = run.folder->file("eval.json");
  write_file_atomically(file, eval_report_json(report, recipe));
  log::info("last evaluation (by class in {}): {}", file, eval_report_line(report, recipe));
}

}  // namespace cvtrain
