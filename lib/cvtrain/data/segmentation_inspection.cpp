// Reading a spread of a segmentation set's pairs (or every one) on worker threads, and the report.
#include "cvtrain/data/segmentation_inspection.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

constexpr size_t kProblemExamples = 5;  // problems listed in the summary, per kind

struct PairFindings {
  std::array<uint64_t, 256> pixels{};
  std::string size_mismatch, unknown_ids, unreadable;
};

ImageSize stored_size(const std::vector<uint8_t>& bytes, const std::string& name) {
  if (const auto size = jpeg_size(bytes, name)) return *size;
  if (const auto size = image_header_size(bytes)) return *size;
  const Image decoded = decode_view(bytes, name, ImageView::exact);  // a format whose header is not read here (TIFF), or no image: its error
  return {decoded.width, decoded.height};
}

// One pair: its mask's ids counted, its size against the image's header, ids beyond the classes.
PairFindings inspect_pair(const SegmentationDataset& dataset, size_t index, int64_t num_classes) {
  PairFindings found;
  MaskCoding unchecked = dataset.coding();
  unchecked.num_classes = 0;  // every id is counted here, the ones that are no class reported
  try {
    const std::vector<uint8_t> image = dataset.read_image(index).encoded;
    const ImageSize size = stored_size(image, dataset.image_name(index));
    const LabelMask mask = decode_mask(dataset.read_mask_bytes(index), dataset.mask_name(index), unchecked);
    found.pixels = id_counts(mask);
    if (mask.width != size.width || mask.height != size.height)
      found.size_mismatch = fmt::format("{}: {}x{}, its image {} {}x{}", dataset.mask_name(index), mask.width, mask.height,
                                        dataset.image_name(index), size.width, size.height);
    std::vector<std::string> ids;
    for (int id = static_cast<int>(num_classes); id < 256; ++id)
      if (id != unchecked.ignore_index && found.pixels[id] > 0) ids.push_back(fmt::format("{} ({} pixels)", id, found.pixels[id]));
    if (!ids.empty()) found.unknown_ids = fmt::format("{}: id {}", dataset.mask_name(index), join(ids, ", id "));
  } catch (const Error& e) {
    found.unreadable = e.what();
  }
  return found;
}

std::vector<size_t> spread(size_t pairs, size_t samples, bool every) {
  const size_t n = every ? pairs : std::min(pairs, samples);
  std::vector<size_t> at(n);
  for (size_t i = 0; i < n; ++i) at[i] = i * pairs / n;
  return at;
}

std::string examples(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < std::min(lines.size(), kProblemExamples); ++i) out += "    " + lines[i] + "\n";
  if (lines.size() > kProblemExamples) out += fmt::format("    ... and {} more\n", lines.size() - kProblemExamples);
  return out;
}

std::string json_list(const std::vector<std::string>& lines) {
  std::vector<std::string> quoted;
  for (const auto& line : lines) quoted.push_back(json_string(line));
  return "[" + join(quoted, ", ") + "]";
}

}  // namespace

SegmentationInspection inspect_segmentation(const SegmentationDataset& dataset, const std::string& path,
                                            const SegmentationInspectOptions& options) {
  SegmentationInspection out;
  out.path = path;
  out.layout = layout_name(dataset.layout());
  out.packed = dataset.is_packed();
  out.pairs = dataset.size();
  out.ignore_index = dataset.coding().ignore_index;
  const std::vector<size_t> indices = spread(dataset.size(), options.samples, options.verify);
  out.looked_at = indices.size();
  std::vector<PairFindings> found(indices.size());
  std::atomic<size_t> done{0};
  std::mutex progress;
  const int64_t classes = dataset.coding().num_classes > 0 ? dataset.coding().num_classes : 256;
  for_each_strided(0, indices.size(), static_cast<size_t>(std::max<int64_t>(1, options.workers)), [&](size_t i) {
    found[i] = inspect_pair(dataset, indices[i], classes);
    const size_t now = ++done;
    if (options.progress) {
      const std::lock_guard<std::mutex> lock(progress);
      options.progress(now, indices.size());
    }
  });
  for (const PairFindings& f : found) {
    for (size_t id = 0; id < 256; ++id) out.pixels[id] += f.pixels[id], out.masks_with[id] += f.pixels[id] > 0;
    if (!f.size_mismatch.empty()) out.size_mismatches.push_back(f.size_mismatch);
    if (!f.unknown_ids.empty()) out.unknown_ids.push_back(f.unknown_ids);
    if (!f.unreadable.empty()) out.unreadable.push_back(f.unreadable);
  }
  out.num_classes = dataset.coding().num_classes;
  if (out.num_classes <= 0)
    for (int id = 255; id >= 0 && out.num_classes == 0; --id)
      if (id != out.ignore_index && out.pixels[id] > 0) out.num_classes = id + 1;
  out.class_names = dataset.class_names();
  if (static_cast<int64_t>(out.class_names.size()) != out.num_classes) out.class_names.clear();  // another class list in the layout
  for (int64_t id = static_cast<int64_t>(out.class_names.size()); id < out.num_classes; ++id) out.class_names.push_back(std::to_string(id));
  out.class_names.resize(static_cast<size_t>(out.num_classes));
  return out;
}

std::string SegmentationInspection::summary(bool all_classes) const {
  uint64_t labelled = 0, all = 0;
  for (int id = 0; id < 256; ++id) all += pixels[id], labelled += id == ignore_index ? 0 : pixels[id];
  std::string out = fmt::format("{} ({} layout{}): {} image and mask pairs; {} read{}\n", path, layout, packed ? ", packed" : "", pairs,
                                looked_at, looked_at == pairs ? " (every pair)" : ", spread over the set (--verify reads every pair)");
  out += fmt::format("{} classes, {} of the pixels labelled ({:.1f}% are data.ignore_index {})\n", num_classes, labelled,
                     all ? 100.0 * static_cast<double>(all - labelled) / static_cast<double>(all) : 0.0, ignore_index);
  std::vector<int> order(static_cast<size_t>(num_classes));
  for (int id = 0; id < num_classes; ++id) order[static_cast<size_t>(id)] = id;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pixels[a] > pixels[b]; });
  const size_t width = std::max<size_t>(
      5, std::max_element(class_names.begin(), class_names.end(), [](auto& a, auto& b) { return a.size() < b.size(); })->size());
  out += fmt::format("  {:>3}  {:<{}}  {:>7}  {:>6}\n", "id", "class", width, "pixels", "masks");
  const size_t shown = all_classes || order.size() <= 20 ? order.size() : 10;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == shown / 2 && shown < order.size()) {
      out += fmt::format("  ... {} classes between (--all-classes lists them)\n", order.size() - shown);
      i = order.size() - shown / 2;
    }
    const int id = order[i];
    out += fmt::format("  {:>3}  {:<{}}  {:>6.2f}%  {:>6}{}\n", id, class_names[static_cast<size_t>(id)], width,
                       labelled ? 100.0 * static_cast<double>(pixels[id]) / static_cast<double>(labelled) : 0.0, masks_with[id],
                       pixels[id] == 0 ? "  (never seen)" : "");
  }
  if (!size_mismatches.empty())
    out += fmt::format("{} mask(s) of another size than their image:\n{}", size_mismatches.size(), examples(size_mismatches));
  if (!unknown_ids.empty())
    out += fmt::format("{} mask(s) with ids that are no class (0 to {}, or {}):\n{}", unknown_ids.size(), num_classes - 1, ignore_index,
                       examples(unknown_ids));
  if (!unreadable.empty()) out += fmt::format("{} pair(s) that cannot be read:\n{}", unreadable.size(), examples(unreadable));
  if (usable()) out += "every pair read is usable\n";
  return out;
}

std::string SegmentationInspection::json() const {
  std::vector<std::string> classes;
  for (int64_t id = 0; id < num_classes; ++id)
    classes.push_back(fmt::format("{{\"id\": {}, \"name\": {}, \"pixels\": {}, \"masks\": {}}}", id,
                                  json_string(class_names[static_cast<size_t>(id)]), pixels[id], masks_with[id]));
  return fmt::format(
      "{{\"path\": {}, \"layout\": \"{}\", \"packed\": {}, \"task\": \"segmentation\", \"pairs\": {}, \"looked_at\": {}, \"num_classes\": "
      "{}, "
      "\"ignore_index\": {}, \"ignored_pixels\": {}, \"classes\": [{}], \"size_mismatches\": {}, \"unknown_ids\": {}, \"unreadable\": "
      "{}}}\n",
      json_string(path), layout, packed ? "true" : "false", pairs, looked_at, num_classes, ignore_index,
      pixels[static_cast<size_t>(ignore_index) & 255], join(classes, ", "), json_list(size_mismatches), json_list(unknown_ids),
      json_list(unreadable));
}

}  // namespace cvtrain
