// The recipe's datasets opened as a run opens them (see run_data.h): every mismatch with the model,
// the batch or the training classes a recipe error naming the key's origin.
#include "cvtrain/train/run_data.h"

#include <fmt/format.h>

#include <optional>
#include <tuple>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/data/class_alignment.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/data/synthetic.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

// `read` reads data under `key`: what is wrong with that data becomes a recipe error naming the
// key's origin (`prefix` before the message); storage that fails under it (IoError) stays a runtime error.
template <class Read>
auto blaming_key(const Recipe& recipe, const char* key, const std::string& prefix, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const RecipeError&) {
    throw;
  } catch (const IoError&) {
    throw;
  } catch (const Error& e) {
    throw RecipeError({fmt::format("{}: {}{}", recipe.where(key), prefix, e.what())});
  }
}

// task: segmentation's pairs, their masks read as the data section says (label_mask.h).
std::unique_ptr<Dataset> open_pairs(const Recipe& recipe, const std::string& path, int64_t limit) {
  MaskCoding coding;
  coding.num_classes = recipe.model.num_classes;
  coding.ignore_index = static_cast<int>(recipe.data.ignore_index);
  coding.reduce_zero_label = recipe.data.reduce_zero_label;
  auto pairs = std::make_unique<SegmentationDataset>(open_segmentation_pairs(recipe.data.format, path, coding, limit, recipe.data.root));
  if (!recipe.data.class_names.empty()) {
    if (static_cast<int64_t>(recipe.data.class_names.size()) != recipe.model.num_classes)
      throw RecipeError({fmt::format("{}: {} names for model.num_classes {} classes", recipe.where("data.class_names"),
                                     recipe.data.class_names.size(), recipe.model.num_classes)});
    pairs->set_class_names(recipe.data.class_names);
  }
  return pairs;
}

std::unique_ptr<Dataset> open_recipe_dataset(const Recipe& recipe, const char* key, const std::string& path, int64_t limit) {
  if (recipe.task == TaskKind::kSegmentation) return blaming_key(recipe, key, "", [&] { return open_pairs(recipe, path, limit); });
  return blaming_key(recipe, key, "", [&] { return open_dataset(recipe.data, path, limit); });
}

// The overrides that give data.mean and data.std one value per channel: Fashion-MNIST's for gray
// images, ImageNet's (torchvision's) for colour ones.
std::string normalisation_overrides(int64_t channels) {
  if (channels == 1) return "data.mean=[0.286] data.std=[0.353] (Fashion-MNIST's)";
  if (channels == 3) return "data.mean=[0.485,0.456,0.406] data.std=[0.229,0.224,0.225] (ImageNet's)";
  return fmt::format("{} values in each of data.mean and data.std", channels);
}

// One dataset against the model section: every mismatch is a recipe error naming the key's origin,
// raised before the run folder is touched. `key` and `path` name the dataset (data.train, data.val).
void check_dataset_fits(const Dataset& dataset, const std::string& path, const Recipe& recipe) {
  const DataSpec& data = recipe.data;
  const ModelSpec& model = recipe.model;
  if (data.format != DataFormat::kSynthetic && data.mean.size() != static_cast<size_t>(dataset.channels()))
    throw RecipeError({fmt::format("{}, data.std: {} value(s) each, but {} has {} channel(s); give one per channel: {}",
                                   recipe.where("data.mean"), data.mean.size(), path, dataset.channels(),
                                   normalisation_overrides(dataset.channels()))});
  if (dataset.num_classes() > model.num_classes)
    throw RecipeError({fmt::format("{}: {} but {} has {} classes (model.num_classes={} on the command line)", recipe.where("model.num_classes"),
                                   model.num_classes, path, dataset.num_classes(), dataset.num_classes())});
  if (model.in_channels != 0 && model.in_channels != dataset.channels())
    throw RecipeError({fmt::format("{}: {} but the data has {} channel(s) (model.in_channels=0 takes it from the data)",
                                   recipe.where("model.in_channels"), model.in_channels, dataset.channels())});
}

// More outputs than the training data has classes: allowed (a head kept for a larger label set),
// but most often model.num_classes left at its default or copied from another recipe.
std::optional<std::string> unused_outputs(const Dataset& train, const Recipe& recipe) {
  const int64_t classes = train.num_classes(), outputs = recipe.model.num_classes;
  if (recipe.data.format == DataFormat::kSynthetic || classes >= outputs) return std::nullopt;
  return fmt::format(
      "{}: {} outputs, but {} has {} classes: {} outputs are never a target (and top-5 counts them); set model.num_classes: {} "
      "unless the head is meant for more",
      recipe.where("model.num_classes"), outputs, recipe.data.train, classes, outputs - classes, classes);
}

// The validation set scored against the training set's class numbers, matched by name
// (data/class_alignment.h); a validation class the training set lacks is a recipe error.
std::unique_ptr<Dataset> scored_as_trained(std::unique_ptr<Dataset> val, const std::optional<std::vector<std::string>>& training_classes,
                                           const Recipe& recipe) {
  if (!training_classes) return val;  // labels that are only numbers
  const int64_t own_classes = val->num_classes();
  val = blaming_key(recipe, "data.val", recipe.data.val + " has ", [&] { return with_training_labels(std::move(val), *training_classes); });
  if (own_classes != val->num_classes())
    log::info("data.val: {} of the {} training classes; its labels follow data.train's class names", own_classes, val->num_classes());
  return val;
}

// data.class_names for numbered labels, applied once validation labels follow training's. Data that
// names its classes itself (class folders, a list of named labels) or has none to name (synthetic)
// wins over names a recipe gave its numbered labels (the quickstart's Fashion-MNIST names, with
// data.train= another folder), with a note.
void name_numbered_classes(RunData& run_data, const Recipe& recipe) {
  const std::vector<std::string>& names = recipe.data.class_names;
  if (names.empty()) return;
  const bool synthetic = recipe.data.format == DataFormat::kSynthetic;
  if (synthetic || !numbered_classes(*(run_data.train ? run_data.train : run_data.val))) {
    run_data.notes.push_back(fmt::format("{}: left aside: {}", recipe.where("data.class_names"),
                                         synthetic ? "synthetic data has numbered classes"
                                                   : fmt::format("{} names its classes itself", run_data.train ? recipe.data.train
                                                                                                               : recipe.data.val)));
    return;
  }
  for (auto [set, key, path] :
       {std::tuple{&run_data.train, "data.train", recipe.data.train}, std::tuple{&run_data.val, "data.val", recipe.data.val}})
    if (*set)
      *set = blaming_key(recipe, "data.class_names", std::string(key) + " " + path + " ",
                         [&] { return with_class_names(std::move(*set), names); });
}

}  // namespace

RunData open_run_data(const Recipe& recipe) {
  const DataSpec& data = recipe.data;
  const ModelSpec& model = recipe.model;
  RunData run_data;
  if (data.format == DataFormat::kSynthetic) {
    const int channels = model.in_channels > 0 ? static_cast<int>(model.in_channels) : 3;
    run_data.train = make_synthetic_dataset(data.max_samples > 0 ? data.max_samples : kSyntheticSamples, channels, model.num_classes);
  } else {
    run_data.train = open_recipe_dataset(recipe, "data.train", data.train, data.max_samples);
  }
  run_data.train_bad = std::make_unique<BadSamples>("data.train", run_data.train->size(), data.max_bad_fraction);
  const bool pairs = recipe.task == TaskKind::kSegmentation;  // masks hold class ids: nothing to match by name
  if (!data.val.empty()) {
    const auto training_classes = names_classes(data.format) && !pairs ? std::optional(run_data.train->class_names()) : std::nullopt;
    run_data.val = scored_as_trained(open_recipe_dataset(recipe, "data.val", data.val, data.max_val_samples), training_classes, recipe);
    run_data.val_bad = std::make_unique<BadSamples>("data.val", run_data.val->size(), data.max_bad_fraction);
  }
  if (!pairs) name_numbered_classes(run_data, recipe);
  if (names_classes(data.format) || !data.class_names.empty() || pairs) run_data.named_classes = run_data.train->class_names();
  check_dataset_fits(*run_data.train, data.train, recipe);
  if (run_data.val) check_dataset_fits(*run_data.val, data.val, recipe);
  if (static_cast<int64_t>(run_data.train->size()) < recipe.train.global_batch)
    throw RecipeError({fmt::format("{}: {} is more than the {} training samples", recipe.where("train.global_batch"),
                                   recipe.train.global_batch, run_data.train->size())});
  run_data.channels = run_data.train->channels();
  return run_data;
}

std::vector<std::string> data_warnings(const RunData& data, const Recipe& recipe) {
  std::vector<std::string> warnings;
  if (auto unused = unused_outputs(*data.train, recipe)) warnings.push_back(std::move(*unused));
  return warnings;
}

RunData open_eval_data(const Recipe& recipe) {
  const DataSpec& data = recipe.data;
  if (data.format == DataFormat::kSynthetic || data.val.empty())
    throw RecipeError({fmt::format("{}: evaluation needs a validation set (data.val: a dataset of data.format {})",
                                   recipe.where("data.val"), name_of(data.format))});
  RunData run_data;
  // The model was trained on data.train's classes: their names, without reading its images.
  const bool pairs = recipe.task == TaskKind::kSegmentation;
  const auto training_classes =
      data.train.empty() || pairs ? std::nullopt : blaming_key(recipe, "data.train", "", [&] { return class_names_at(data, data.train); });
  run_data.val = scored_as_trained(open_recipe_dataset(recipe, "data.val", data.val, data.max_val_samples), training_classes, recipe);
  run_data.val_bad = std::make_unique<BadSamples>("data.val", run_data.val->size(), data.max_bad_fraction);
  if (!pairs) name_numbered_classes(run_data, recipe);
  check_dataset_fits(*run_data.val, data.val, recipe);
  run_data.channels = run_data.val->channels();
  return run_data;
}

}  // namespace cvtrain
