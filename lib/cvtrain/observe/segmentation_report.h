// The run report's parts for a segmentation run (task: segmentation): the mIoU tile, the validation
// mIoU, pixel accuracy and mean class accuracy over the epochs, and each class's IoU from eval.json.
#pragma once

#include <string>

#include "cvtrain/observe/run_history.h"

namespace cvtrain {

// Whether the run's epochs were scored by mIoU (its metrics.jsonl has `miou`).
bool scored_by_miou(const RunHistory& run);
// The key-figure tile: the last mIoU, and the best with its checkpoint where best.json kept it.
std::string miou_tile(const RunHistory& run);
// The epochs' validation mIoU, pixel accuracy and mean class accuracy.
std::string miou_chart(const RunHistory& run);
// eval.json's IoU of every class, lowest first, as bars; "" for another task's eval.json.
std::string class_iou_section(const JsonValue& eval);

}  // namespace cvtrain
