// Validation labels by class name: torchvision's ImageFolder numbers each tree's class folders on
// their own, so a validation tree without one of the training classes shifts every later label and
// its accuracy is silently wrong. Here the validation set takes the training set's numbers by name.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// Whether a format names its labels (ImageFolder's class folders, shards' classes.txt); IDX's are numbers.
bool names_classes(DataFormat format);

// The names a dataset at `path` gives its labels, read without walking its images (an ImageFolder's
// class folders, a shards folder's classes.txt); nullopt where labels are only numbers (IDX).
std::optional<std::vector<std::string>> class_names_at(const DataSpec& spec, const std::string& path);

// `val` with each label renumbered to the training class of the same name (unchanged when the
// names already agree). A validation class the training set lacks is an Error naming it.
std::unique_ptr<Dataset> with_training_labels(std::unique_ptr<Dataset> val, const std::vector<std::string>& training_classes);

// Whether every class of `set` is called by its number ("0", "1", ...): IDX, synthetic data, a list
// of number labels.
bool numbered_classes(const Dataset& set);

// `set`, whose labels are numbers (IDX, a list of number labels: class_names() "0", "1", ...), with
// label i called names[i] (data.class_names) and as many classes as names. An Error when the set
// names its classes itself or has a label beyond the names.
std::unique_ptr<Dataset> with_class_names(std::unique_ptr<Dataset> set, const std::vector<std::string>& names);

}  // namespace cvtrain
