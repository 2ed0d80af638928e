// Renumbering a validation set's labels to the training set's classes, by name (class_alignment.h).
#include "cvtrain/data/class_alignment.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

// The samples of another dataset, each label looked up in `training_label`.
class RelabeledDataset : public Dataset {
 public:
  RelabeledDataset(std::unique_ptr<Dataset> inner, std::vector<int64_t> training_label, std::vector<std::string> classes)
      : inner_(std::move(inner)), training_label_(std::move(training_label)), classes_(std::move(classes)) {}
  size_t size() const override { return inner_->size(); }
  int64_t label(size_t index) const override { return training_label_[static_cast<size_t>(inner_->label(index))]; }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  int channels() const override { return inner_->channels(); }
  RawSample read(size_t index) const override { return inner_->read(index); }
  std::string describe(size_t index) const override { return inner_->describe(index); }
  std::vector<std::string> class_names() const override { return classes_; }

 private:
  std::unique_ptr<Dataset> inner_;
  std::vector<int64_t> training_label_;
  std::vector<std::string> classes_;
};

}  // namespace

bool names_classes(DataFormat format) { return format == DataFormat::kImageFolder || format == DataFormat::kShards; }

std::optional<std::vector<std::string>> class_names_at(const DataSpec& spec, const std::string& path) {
  if (spec.format == DataFormat::kImageFolder) return image_folder_classes(path);
  if (spec.format == DataFormat::kShards) return shard_classes(path);
  return std::nullopt;
}

std::unique_ptr<Dataset> with_training_labels(std::unique_ptr<Dataset> val, const std::vector<std::string>& training_classes) {
  const std::vector<std::string> val_classes = val->class_names();
  if (val_classes == training_classes) return val;
  std::map<std::string, int64_t> training_label;
  for (size_t i = 0; i < training_classes.size(); ++i) training_label.emplace(training_classes[i], static_cast<int64_t>(i));
  std::vector<int64_t> renumbered;
  std::vector<std::string> unknown;
  for (const std::string& name : val_classes) {
    const auto it = training_label.find(name);
    if (it == training_label.end()) unknown.push_back("'" + name + "'");
    renumbered.push_back(it == training_label.end() ? -1 : it->second);
  }
  if (!unknown.empty())
    throw Error(fmt::format("{} class(es) that the training set does not have: {}{} (a validation class is scored as the training "
                            "class of the same name)",
                            unknown.size(), join({unknown.begin(), unknown.begin() + std::min<size_t>(unknown.size(), 8)}, ", "),
                            unknown.size() > 8 ? ", ..." : ""));
  return std::make_unique<RelabeledDataset>(std::move(val), std::move(renumbered), training_classes);
}

}  // namespace cvtrain
