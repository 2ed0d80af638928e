// Renumbering a validation set's labels to the training set's classes, by name (class_alignment.h).
#include "cvtrain/data/class_alignment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/image_list.h"
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

// A name with what a folder name's spelling varies in taken out: ASCII letters lower-cased, spaces and
// punctuation dropped, and every accented letter dropped however it is written, as one code point
// (NFC's 'é', Linux's usual form) or as a letter followed by combining marks (NFD's 'e' + U+0301, as
// macOS writes file names). Non-Latin letters are dropped too: two such names compare only by the rest.
std::string loose_spelling(const std::string& name) {
  std::string loose;
  bool last_kept_a_letter = false;
  for (size_t i = 0; i < name.size();) {
    const auto byte = static_cast<unsigned char>(name[i]);
    const auto next = i + 1 < name.size() ? static_cast<unsigned char>(name[i + 1]) : 0;
    const bool combining_mark = byte == 0xCC || (byte == 0xCD && next <= 0xAF);  // U+0300..U+036F
    if (combining_mark) {
      if (last_kept_a_letter) loose.pop_back();  // the base letter the marks accent
      last_kept_a_letter = false;
      i += 2;
    } else if (byte >= 0x80) {  // one whole non-ASCII code point
      last_kept_a_letter = false;
      i += byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    } else {
      last_kept_a_letter = std::isalnum(byte) != 0;
      if (last_kept_a_letter) loose.push_back(static_cast<char>(std::tolower(byte)));
      ++i;
    }
  }
  return loose;
}

// The one training class spelled like `name` but for case, punctuation or Unicode normal form, if any.
std::optional<std::string> near_miss(const std::string& name, const std::vector<std::string>& training_classes) {
  const std::string loose = loose_spelling(name);
  if (loose.empty()) return std::nullopt;
  std::optional<std::string> match;
  for (const std::string& candidate : training_classes) {
    if (loose_spelling(candidate) != loose) continue;
    if (match) return std::nullopt;  // two candidates: no guess
    match = candidate;
  }
  return match;
}

// "2 class(es) that the training set does not have: 'Café' (training has 'café'), 'eel' (...)", the
// first 8 named, with why a near miss is no match.
std::string unknown_classes_message(const std::vector<std::string>& unknown, const std::vector<std::string>& training_classes) {
  std::vector<std::string> named;
  bool near_missed = false;
  for (size_t i = 0; i < std::min<size_t>(unknown.size(), 8); ++i) {
    const auto match = near_miss(unknown[i], training_classes);
    near_missed = near_missed || match.has_value();
    named.push_back(match ? fmt::format("'{}' (training has '{}')", unknown[i], *match) : "'" + unknown[i] + "'");
  }
  return fmt::format(
      "{} class(es) that the training set does not have: {}{} (a validation class is scored as the training class of "
      "the same name){}",
      unknown.size(), join(named, ", "), unknown.size() > named.size() ? ", ..." : "",
      near_missed ? "; names that differ in case, spaces, punctuation or how an accent is encoded (Unicode NFC or "
                    "NFD: macOS writes file names NFD) are different classes; rename the folders to match"
                  : "");
}

}  // namespace

bool names_classes(DataFormat format) {
  return format == DataFormat::kImageFolder || format == DataFormat::kShards || format == DataFormat::kList;
}

std::optional<std::vector<std::string>> class_names_at(const DataSpec& spec, const std::string& path) {
  if (spec.format == DataFormat::kImageFolder) return image_folder_classes(path);
  if (spec.format == DataFormat::kShards) return shard_classes(path);
  if (spec.format == DataFormat::kList) return read_image_list(path, spec.root).classes;
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
    if (it == training_label.end()) unknown.push_back(name);
    renumbered.push_back(it == training_label.end() ? -1 : it->second);
  }
  if (!unknown.empty()) throw Error(unknown_classes_message(unknown, training_classes));
  return std::make_unique<RelabeledDataset>(std::move(val), std::move(renumbered), training_classes);
}

bool numbered_classes(const Dataset& set) {
  const std::vector<std::string> own = set.class_names();
  for (size_t i = 0; i < own.size(); ++i)
    if (own[i] != std::to_string(i)) return false;
  return true;
}

std::unique_ptr<Dataset> with_class_names(std::unique_ptr<Dataset> set, const std::vector<std::string>& names) {
  const std::vector<std::string> own = set->class_names();
  if (!numbered_classes(*set))
    throw Error(
        fmt::format("names its classes itself ('{}', ...); data.class_names is for labels that are numbers (IDX, lists of "
                    "number labels): leave it out",
                    own.front()));
  if (own.size() > names.size())
    throw Error(fmt::format("has labels up to {}, but data.class_names gives {} name(s): one per class, in label order (or "
                            "data.class_names=[] on the command line, to number them)",
                            own.size() - 1, names.size()));
  std::vector<int64_t> same(own.size());
  for (size_t i = 0; i < same.size(); ++i) same[i] = static_cast<int64_t>(i);
  return std::make_unique<RelabeledDataset>(std::move(set), std::move(same), names);
}

}  // namespace cvtrain
