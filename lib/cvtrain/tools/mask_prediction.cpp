// predict_masks: image files fitted as evaluation fits them, through the loader's workers and the
// device feeder, the model's most probable class per pixel written as two PNGs per file.
#include "cvtrain/tools/mask_prediction.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "cvtrain/core/error.h"
#include "cvtrain/core/png_file.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_files.h"
#include "cvtrain/data/joint_transforms.h"
#include "cvtrain/data/label_mask.h"
#include "cvtrain/data/segmentation_batches.h"
#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/recipe/data_format.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/segmentation_task.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// One file a batch, fitted within augment.scale; targets int64 [1, 2]: the file's own height and
// width (0 x 0 for a file that could not be read, whose reason `error(index)` then holds).
class FittedImages : public BatchMaker {
 public:
  FittedImages(const ImageFilesDataset& files, JointAugment augment) : files_(files), augment_(std::move(augment)), errors_(files.size()) {}

  Batch make(const std::vector<int64_t>& order, int64_t first, int64_t /*count: 1*/) override {
    const auto index = static_cast<size_t>(order[static_cast<size_t>(first)]);
    Batch batch;
    batch.first_sample = static_cast<int64_t>(index);
    try {
      const Image image = decode_view(files_.read(index).encoded, files_.describe(index), ImageView::exact);
      const ImageSize fitted = evaluation_size({image.width, image.height}, augment_);
      batch.images = at::empty({1, fitted.height, fitted.width, 3}, at::kByte);
      write_fitted(image, fitted, batch.images.data_ptr<uint8_t>());
      batch.targets = at::tensor({static_cast<int64_t>(image.height), static_cast<int64_t>(image.width)}).view({1, 2});
    } catch (const Error& e) {
      errors_[index] = e.what();  // read by the consumer after the loader handed this batch over
      batch.images = at::zeros({1, 1, 1, 3}, at::kByte);
      batch.targets = at::zeros({1, 2}, at::kLong);
    }
    return batch;
  }
  const std::string& error(size_t index) const { return errors_[index]; }

 private:
  const ImageFilesDataset& files_;
  JointAugment augment_;
  std::vector<std::string> errors_;
};

// The colours of the data's layout (data.format, else told from data.train's path; packed pairs:
// the layout they were packed from), else VOC's.
std::vector<Colour> mask_palette(const Recipe& recipe) {
  std::optional<DataFormat> format;
  if (is_pairs_format(recipe.data.format) || recipe.data.format == DataFormat::kShards)
    format = recipe.data.format;
  else if (!recipe.data.train.empty())
    format = pairs_format_of_path(recipe.data.train);
  SegmentationLayout layout = SegmentationLayout::kList;
  try {
    if (format) layout = layout_at(*format, recipe.data.train);
  } catch (const Error&) {  // the training pairs are not on this machine (predict needs only the weights): VOC's colours
  }
  return drawing_palette(layout, recipe.model.num_classes);
}

// File stems as output names, a number added where two files share one ("photo", "photo_2").
std::vector<std::string> output_names(const ImageFilesDataset& files) {
  std::map<std::string, int> seen;
  std::vector<std::string> names;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string stem = fs::path(files.describe(i)).stem().string();
    const int n = ++seen[stem];
    names.push_back(n == 1 ? stem : fmt::format("{}_{}", stem, n));
  }
  return names;
}

// The most probable class of every pixel, written as ids and in colour; the pixels of each class.
void write_masks(const at::Tensor& logits, MaskPrediction& image, const std::string& base, const std::vector<Colour>& palette) {
  const at::Tensor ids = logits.argmax(1)[0].to(at::kCPU, at::kByte).contiguous();
  image.height = static_cast<int>(ids.size(0));
  image.width = static_cast<int>(ids.size(1));
  image.labels_png = base + ".png";
  image.colour_png = base + "_colour.png";
  write_png(image.labels_png, ids.data_ptr<uint8_t>(), image.width, image.height, 1);
  write_palette_png(image.colour_png, ids.data_ptr<uint8_t>(), image.width, image.height, palette);
  const at::Tensor counts = at::bincount(ids.to(at::kLong).flatten(), {}, logits.size(1)).contiguous();
  image.class_pixels.assign(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + counts.numel());
}

double share(const MaskPrediction& image, size_t k) {
  const double pixels = static_cast<double>(image.width) * image.height;
  return pixels > 0 ? static_cast<double>(image.class_pixels[k]) / pixels : 0.0;
}

}  // namespace

int64_t MaskPredictionReport::unreadable() const {
  return std::count_if(images.begin(), images.end(), [](const MaskPrediction& image) { return !image.error.empty(); });
}

MaskPredictionReport predict_masks(const Recipe& recipe, const PredictRequest& request, const std::string& folder) {
  MaskPredictionReport report;
  const ImageFilesDataset files(image_files_of(request.inputs), 3);
  std::tie(report.weights_file, report.checkpoint_step) = choose_weights(recipe, request.weights);
  report.class_names =
      prediction_class_names(recipe, request.classes_file, report.weights_file, report.checkpoint_step >= 0, report.class_names_from);
  Recipe without_pretrained = recipe;  // the chosen weights are loaded below, strictly
  without_pretrained.model.pretrained.clear();
  InferenceParts run = build_inference_parts(without_pretrained, 3);
  load_for_evaluation(*run.model, report.weights_file, recipe, true);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(fmt::format("{}: cannot create the folder for the masks ({})", folder, ec.message()));

  const std::vector<Colour> palette = mask_palette(recipe);
  const std::vector<std::string> names = output_names(files);
  const SegmentationInference inference(recipe);
  auto maker = std::make_shared<FittedImages>(files, joint_augment(recipe));
  std::vector<int64_t> order(files.size());
  std::iota(order.begin(), order.end(), 0);
  LoaderOptions options = run.loader;
  options.batch_size = 1;  // images of their own sizes
  options.drop_last = false;
  torch::NoGradGuard no_grad;
  run.model->eval();
  Stopwatch clock;
  BatchLoader loader(maker, order, options);
  DeviceFeeder feeder(loader, run.feed);
  while (auto batch = feeder.next()) {
    const auto index = static_cast<size_t>(batch->first_sample);
    MaskPrediction image{files.describe(index), {}, {}, 0, 0, {}, maker->error(index)};
    if (image.error.empty()) {
      const at::Tensor size = batch->targets.to(at::kCPU);
      const at::Tensor logits =
          inference.logits(*run.model, batch->images, run.plan.precision, {size[0][0].item<int64_t>(), size[0][1].item<int64_t>()});
      write_masks(logits, image, (fs::path(folder) / names[index]).string(), palette);
    }
    report.images.push_back(std::move(image));
  }
  report.seconds = clock.seconds();
  return report;
}

std::string mask_predictions_csv(const MaskPredictionReport& report) {
  std::string csv = "path,labels,colour,width,height";
  for (const std::string& name : report.class_names) csv += "," + csv_field(name);
  csv += ",error\n";
  for (const MaskPrediction& image : report.images) {
    csv += fmt::format("{},{},{},{},{}", csv_field(image.file), csv_field(image.labels_png), csv_field(image.colour_png),
                       image.error.empty() ? std::to_string(image.width) : "", image.error.empty() ? std::to_string(image.height) : "");
    for (size_t k = 0; k < report.class_names.size(); ++k)
      csv += image.class_pixels.empty() ? "," : fmt::format(",{:.6g}", share(image, k));
    csv += "," + csv_field(image.error) + "\n";
  }
  return csv;
}

std::string mask_prediction_line(const MaskPrediction& image, const std::vector<std::string>& class_names) {
  if (!image.error.empty()) return fmt::format("{}: unreadable ({})", image.file, image.error);
  constexpr size_t kShown = 4;
  std::vector<size_t> classes(image.class_pixels.size());
  std::iota(classes.begin(), classes.end(), 0);
  std::stable_sort(classes.begin(), classes.end(), [&](size_t a, size_t b) { return image.class_pixels[a] > image.class_pixels[b]; });
  std::vector<std::string> shares;
  for (size_t i = 0; i < classes.size() && i < kShown && image.class_pixels[classes[i]] > 0; ++i)
    shares.push_back(fmt::format("{} {:.1f} %", class_names[classes[i]], 100.0 * share(image, classes[i])));
  return fmt::format("{}: {}; {}", image.file, image.labels_png, join(shares, ", "));
}

}  // namespace cvtrain
