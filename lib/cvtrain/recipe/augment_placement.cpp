// The placement table (see augment_placement.h). A key added to the augment section without a row
// here fails recipe/augment_placement_test.cpp, so data.decoder nvjpeg cannot skip it unnoticed.
#include "cvtrain/recipe/augment_placement.h"

namespace cvtrain {

const std::vector<AugmentPlacement>& augment_placements() {
  using P = AugmentPlace;
  static const std::vector<AugmentPlacement> table = {
      {"augment.hflip", P::kCropPlan, [](const AugmentSpec& a) { return a.hflip.p > 0; }},
      {"augment.vflip", P::kCropPlan, [](const AugmentSpec& a) { return a.vflip.p > 0; }},
      {"augment.random_crop_padding", P::kCpuPixels, [](const AugmentSpec& a) { return a.random_crop_padding > 0; }},
      {"augment.random_resized_crop", P::kCropPlan, [](const AugmentSpec& a) { return !a.random_resized_crop.empty(); }},
      {"augment.random_resized_crop_ratio", P::kCropPlan, nullptr},
      {"augment.interpolation", P::kCropPlan, nullptr},
      {"augment.label_smoothing", P::kTargets, [](const AugmentSpec& a) { return a.label_smoothing > 0; }},
      {"augment.mixup", P::kDeviceBatch, [](const AugmentSpec& a) { return a.mixup > 0; }},
      {"augment.cutmix", P::kDeviceBatch, [](const AugmentSpec& a) { return a.cutmix > 0; }},
      {"augment.mix_prob", P::kDeviceBatch, nullptr},
      {"augment.switch_prob", P::kDeviceBatch, nullptr},
      {"augment.auto_augment", P::kCpuPixels, [](const AugmentSpec& a) { return a.auto_augment.kind != AugmentPolicy::Kind::kNone; }},
      {"augment.aa_interpolation", P::kCpuPixels, nullptr},
      {"augment.color_jitter", P::kCpuPixels, [](const AugmentSpec& a) { return a.color_jitter > 0; }},
      // The boxes are drawn per sample by the workers, the fill is painted on the device batch.
      {"augment.random_erasing.prob", P::kDeviceBatch, [](const AugmentSpec& a) { return a.random_erasing.prob > 0; }},
      {"augment.random_erasing.mode", P::kDeviceBatch, nullptr},
      {"augment.random_erasing.count", P::kDeviceBatch, nullptr},
      {"augment.random_erasing.min_area", P::kDeviceBatch, nullptr},
      {"augment.random_erasing.max_area", P::kDeviceBatch, nullptr},
      {"augment.random_erasing.min_aspect", P::kDeviceBatch, nullptr},
      {"augment.repeats", P::kSampleOrder, [](const AugmentSpec& a) { return a.repeats > 1; }},
      // task: segmentation's joint transforms (data/joint_transforms.h), on the CPU's pixels of image
      // and mask together; no device decoder serves segmentation (Task::decodes_on_device), so none
      // of them turns the decoder down for classification.
      {"augment.crop_size", P::kCpuPixels, nullptr},
      {"augment.scale", P::kCpuPixels, nullptr},
      {"augment.ratio_range", P::kCpuPixels, nullptr},
      {"augment.cat_max_ratio", P::kCpuPixels, nullptr},
      {"augment.photometric", P::kCpuPixels, nullptr},
  };
  return table;
}

const char* augment_needing_cpu_pixels(const AugmentSpec& augment) {
  for (const AugmentPlacement& row : augment_placements())
    if (row.place == AugmentPlace::kCpuPixels && row.active && row.active(augment)) return row.key;
  return nullptr;
}

}  // namespace cvtrain
