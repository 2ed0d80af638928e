// predict_images: the files as a dataset through the evaluation loader and feeder (so a file is
// seen exactly as `cvtrain eval` sees a validation image), the model's top classes per file, and
// the two formats they are written in.
#include "cvtrain/tools/prediction.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/class_alignment.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/image_files.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/tools/export.h"
#include "cvtrain/train/checkpoint.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/run_builder.h"

namespace cvtrain {
namespace {

// What the model takes in: model.in_channels, else what its training data held (IDX is gray).
int64_t model_channels(const Recipe& recipe) {
  if (recipe.model.in_channels > 0) return recipe.model.in_channels;
  return recipe.data.format == DataFormat::kIdx ? 1 : 3;
}

std::vector<std::string> numbers_from(size_t first, int64_t count, std::vector<std::string> names = {}) {
  for (auto i = static_cast<int64_t>(first); i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

// One name per line in label order, as timm's --class-map, a checkpoint's classes.txt and an
// exported file's metadata hold them; blank lines at the end are no classes.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    names.push_back(line);
    start = end + 1;
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  return names;
}

// A names file given for this model: one name per output.
std::vector<std::string> names_in_text(const std::string& text, const std::string& source, int64_t classes) {
  std::vector<std::string> names = lines_of(text);
  if (static_cast<int64_t>(names.size()) != classes)
    throw Error(
        fmt::format("{}: {} class name(s), one per line, but the model has model.num_classes {} outputs", source, names.size(), classes));
  return names;
}

// The names a run trained with: its data's classes, which may be fewer than the head's outputs (a
// recipe's num_classes left larger); the outputs no class trained are numbered.
std::vector<std::string> trained_names(const std::string& text, const std::string& source, int64_t classes) {
  std::vector<std::string> names = lines_of(text);
  if (static_cast<int64_t>(names.size()) > classes)
    throw Error(fmt::format("{}: {} class name(s), but the model has model.num_classes {} outputs", source, names.size(), classes));
  const size_t named = names.size();
  return numbers_from(named, classes, std::move(names));
}

std::vector<std::string> names_in_file(const std::string& path, int64_t classes) {
  const std::optional<std::string> text = read_text_file(path);
  if (!text) throw Error(fmt::format("{}: cannot read the class names", path));
  return names_in_text(*text, path, classes);
}

// The names kept with the weights: a checkpoint's classes.txt (training writes it), or the metadata
// of a file `cvtrain export` wrote. `from` says which.
std::optional<std::string> names_kept_with(const std::string& weights_file, bool in_checkpoint, std::string& from) {
  if (weights_file.empty()) return std::nullopt;
  if (in_checkpoint) {
    from = (std::filesystem::path(weights_file).parent_path() / kClassNamesFile).string();
    return std::filesystem::exists(from) ? read_text_file(from) : std::nullopt;
  }
  from = weights_file;
  try {
    const std::map<std::string, std::string> metadata = read_safetensors_metadata(weights_file);
    const auto names = metadata.find(kClassNamesMetadata);
    if (names != metadata.end()) return names->second;
  } catch (const NotSafetensors&) {
    // Not a safetensors file: loading the weights says so.
  }
  return std::nullopt;
}

// Per class, how likely: the softmax a cross-entropy model was trained for, or for train.loss bce
// each class's own sigmoid (its outputs were trained as independent yes/no answers).
at::Tensor class_probabilities(const at::Tensor& logits, LossKind loss) {
  const at::Tensor full = logits.to(at::kFloat);
  return loss == LossKind::kBce ? full.sigmoid() : full.softmax(1);
}

// The top `k` of every row of a batch, stored at the row's file (its label is the file's index).
// A row that stands in for an unreadable file, or repeats one already stored, is passed over.
void keep_top(const at::Tensor& probabilities, const at::Tensor& files, int64_t k, const BadSamples& bad,
              std::vector<ImagePrediction>& images) {
  const auto [values, labels] = probabilities.topk(k, 1);
  const at::Tensor v = values.to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor l = labels.to(at::kCPU).contiguous();
  const at::Tensor f = files.to(at::kCPU).contiguous();
  for (int64_t row = 0; row < f.size(0); ++row) {
    const auto file = static_cast<size_t>(f.data_ptr<int64_t>()[row]);
    ImagePrediction& image = images[file];
    if (!image.labels.empty() || bad.contains(file)) continue;
    image.labels.assign(l.data_ptr<int64_t>() + row * k, l.data_ptr<int64_t>() + (row + 1) * k);
    image.probabilities.assign(v.data_ptr<double>() + row * k, v.data_ptr<double>() + (row + 1) * k);
  }
}

// Every file through the loader and the model, its top `k` kept in `images`; what cannot be read is
// left to `bad`.
void predict_batches(InferenceParts& run, const Recipe& recipe, const Dataset& files, const LoaderOptions& options, int64_t k,
                     BadSamples& bad, std::vector<ImagePrediction>& images) {
  std::vector<int64_t> order(files.size());
  std::iota(order.begin(), order.end(), 0);
  torch::NoGradGuard no_grad;
  run.model->eval();
  try {
    BatchLoader loader(files, order, options);
    DeviceFeeder feeder(loader, run.feed);
    while (auto batch = feeder.next()) {
      at::Tensor logits;
      {
        AutocastScope autocast(run.plan.precision, run.device.type());
        logits = run.model->forward(batch->images);
      }
      keep_top(class_probabilities(logits, recipe.train.loss), batch->targets, k, bad, images);
    }
  } catch (const Error&) {
    if (bad.count() != files.size()) throw;  // the loader gives up only when no file at all is readable
  }
}

const std::string& name_of_label(const std::vector<std::string>& names, int64_t label) { return names[static_cast<size_t>(label)]; }

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

int64_t PredictionReport::unreadable() const {
  return std::count_if(images.begin(), images.end(), [](const ImagePrediction& image) { return !image.error.empty(); });
}

std::vector<std::string> prediction_class_names(const Recipe& recipe, const std::string& classes_file, const std::string& weights_file,
                                                bool in_checkpoint, std::string& from) {
  const int64_t classes = recipe.model.num_classes;
  if (!classes_file.empty()) {
    from = classes_file;
    return names_in_file(classes_file, classes);
  }
  // The names the run trained with come before the saved recipe's data.class_names: a run made
  // from the quickstart on a folder of photos keeps the quickstart's names in its recipe, left aside.
  if (const std::optional<std::string> kept = names_kept_with(weights_file, in_checkpoint, from))
    return trained_names(*kept, from, classes);
  if (!recipe.data.class_names.empty()) {
    from = "data.class_names";
    return numbers_from(recipe.data.class_names.size(), classes, recipe.data.class_names);
  }
  if (!recipe.data.train.empty() && names_classes(recipe.data.format)) {
    try {
      if (auto names = class_names_at(recipe.data, recipe.data.train)) {
        from = fmt::format("data.train ({})", recipe.data.train);
        return numbers_from(names->size(), classes, *names);
      }
    } catch (const Error&) {
      // The training data is not on this machine: the labels stay numbers.
    }
  }
  from = "none known, so labels are numbers (--classes FILE names them, one per line)";
  return numbers_from(0, classes);
}

PredictionReport predict_images(const Recipe& recipe, const PredictRequest& request) {
  if (recipe.task == TaskKind::kSegmentation)
    throw Error(
        "predict_images labels images with classes; a segmentation model's masks come from predict_masks (tools/mask_prediction.h)");
  PredictionReport report;
  const ImageFilesDataset files(image_files_of(request.inputs), static_cast<int>(model_channels(recipe)));
  std::tie(report.weights_file, report.checkpoint_step) = choose_weights(recipe, request.weights);
  report.class_names =
      prediction_class_names(recipe, request.classes_file, report.weights_file, report.checkpoint_step >= 0, report.class_names_from);
  Recipe without_pretrained = recipe;  // the chosen weights are loaded below, strictly
  without_pretrained.model.pretrained.clear();
  InferenceParts run = build_inference_parts(without_pretrained, files.channels());
  load_for_evaluation(*run.model, report.weights_file, recipe, true);

  for (size_t i = 0; i < files.size(); ++i) report.images.push_back(ImagePrediction{files.describe(i), {}, {}, {}});
  BadSamples bad("cvtrain predict", files.size(), /*max_fraction=*/1.0);  // every file is answered for, readable or not
  LoaderOptions options = run.loader;
  options.batch_size = batch_of(recipe, request.weights);
  options.transform.augment = nullptr;  // the evaluation view
  options.bad_samples = &bad;
  Stopwatch clock;
  predict_batches(run, recipe, files, options, std::min(request.top_k, recipe.model.num_classes), bad, report.images);
  report.seconds = clock.seconds();
  for (size_t i = 0; i < files.size(); ++i) report.images[i].error = bad.reason(i);
  return report;
}

std::string predictions_csv(const PredictionReport& report, int64_t top_k) {
  const int64_t k = std::min<int64_t>(top_k, static_cast<int64_t>(report.class_names.size()));
  std::string csv = "path";
  for (int64_t i = 1; i <= k; ++i) csv += fmt::format(",class_{0},label_{0},probability_{0}", i);
  csv += ",error\n";
  for (const ImagePrediction& image : report.images) {
    csv += csv_field(image.file);
    for (int64_t i = 0; i < k; ++i) {
      if (image.labels.empty()) {
        csv += ",,,";
        continue;
      }
      const int64_t label = image.labels[static_cast<size_t>(i)];
      csv += fmt::format(",{},{},{:.6g}", csv_field(name_of_label(report.class_names, label)), label,
                         image.probabilities[static_cast<size_t>(i)]);
    }
    csv += "," + csv_field(image.error) + "\n";
  }
  return csv;
}

std::string predictions_jsonl(const PredictionReport& report) {
  std::string lines;
  for (const ImagePrediction& image : report.images) {
    if (!image.error.empty()) {
      lines += fmt::format("{{\"path\": {}, \"error\": {}}}\n", json_string(image.file), json_string(image.error));
      continue;
    }
    std::vector<std::string> top;
    for (size_t i = 0; i < image.labels.size(); ++i)
      top.push_back(fmt::format("{{\"class\": {}, \"label\": {}, \"probability\": {:.6g}}}",
                                json_string(name_of_label(report.class_names, image.labels[i])), image.labels[i], image.probabilities[i]));
    lines += fmt::format("{{\"path\": {}, \"top\": [{}]}}\n", json_string(image.file), join(top, ", "));
  }
  return lines;
}

std::string prediction_line(const ImagePrediction& image, const std::vector<std::string>& class_names) {
  if (!image.error.empty()) {
    const std::string named = image.file + ": ";  // the reason names the file already, mostly
    const bool leads = image.error.rfind(named, 0) == 0;
    return fmt::format("{}: unreadable ({})", image.file, leads ? image.error.substr(named.size()) : image.error);
  }
  std::vector<std::string> top;
  for (size_t i = 0; i < image.labels.size(); ++i)
    top.push_back(fmt::format("{} {:.3f}", name_of_label(class_names, image.labels[i]), image.probabilities[i]));
  return fmt::format("{}: {}", image.file, join(top, ", "));
}

}  // namespace cvtrain
