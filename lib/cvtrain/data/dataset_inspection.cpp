// Dataset summaries, image censuses and verification (see dataset_inspection.h).
#include "cvtrain/data/dataset_inspection.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/data/idx_dataset.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/image_list.h"
#include "cvtrain/data/jpeg_coding.h"
#include "cvtrain/data/perceptual_hash.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

// What reading one sample told: its failure, or its format, size and (JPEG) coding.
struct SampleFacts {
  std::string failure;  // "" when the sample is usable
  std::string format;
  uint64_t bytes = 0;
  std::optional<uint64_t> fingerprint;  // read with verify
  std::optional<uint64_t> look;         // decoded with verify: its perceptual hash
  std::optional<ImageSize> size;
  std::optional<JpegCoding> coding;
};

// Reads sample `index`; decodes it when asked, or when its header gives no size or names no
// format (so an empty or foreign file is named by the decoder's own error). An image above
// `max_image_pixels` is unusable before any decode allocates it, as in training.
SampleFacts examine(const Dataset& dataset, size_t index, bool decode, int64_t max_image_pixels) {
  SampleFacts facts;
  try {
    RawSample raw = dataset.read(index);
    if (decode) facts.fingerprint = content_fingerprint(raw);
    if (raw.has_pixels()) {
      if (decode) facts.look = perceptual_hash(raw.image);
      facts.format = "pixels";
      facts.size = ImageSize{raw.image.width, raw.image.height};
      return facts;
    }
    facts.bytes = raw.encoded.size();
    facts.format = image_format_name(raw.encoded);
    if (facts.format == "JPEG") facts.coding = jpeg_coding(raw.encoded);
    facts.size =
        facts.coding ? std::optional<ImageSize>(ImageSize{facts.coding->width, facts.coding->height}) : image_header_size(raw.encoded);
    if (facts.size) check_image_pixels(*facts.size, max_image_pixels, dataset.describe(index));
    if (decode || !facts.size || facts.format.empty()) {
      const Image image = decode_view(raw.encoded, dataset.describe(index), ImageView::exact);
      facts.size = ImageSize{image.width, image.height};
      if (decode) facts.look = perceptual_hash(image);
    }
    if (facts.format.empty()) facts.format = "other";
  } catch (const Error& e) {
    facts.failure = e.what();
  }
  return facts;
}

// Why nvJPEG's batched decode leaves a JPEG to the CPU, or "" when it takes it.
std::string cpu_only_reason(const JpegCoding& c) {
  if (c.progressive) return "progressive";
  if (c.arithmetic) return "arithmetic-coded";
  if (c.lossless) return "lossless";
  if (c.precision != 8) return fmt::format("{}-bit", c.precision);
  if (c.components == 4) return "CMYK";
  return gpu_decodable(c) ? "" : fmt::format("{} components", c.components);
}

void count(ImageCensus& census, const SampleFacts& facts) {
  ++census.looked_at;
  census.encoded_bytes += facts.bytes;
  if (facts.size) census.sizes.push_back(*facts.size);
  ++census.formats[facts.format];
  if (!facts.coding) return;
  if (facts.coding->components == 1) ++census.jpeg_kinds["gray"];
  if (facts.coding->orientation != 1) ++census.jpeg_kinds["EXIF-oriented"];
  const std::string reason = cpu_only_reason(*facts.coding);
  if (!reason.empty()) {
    ++census.jpeg_kinds[reason];
    return;
  }
  ++census.gpu_decodable;
  if (hardware_decodable_subsampling(*facts.coding)) ++census.hardware_subsampling;
}

// The samples to read: all of them, or `wanted` spread evenly so every part of the set (and so,
// in class order, most classes) is seen.
std::vector<size_t> samples_to_read(size_t total, bool all, size_t wanted) {
  const size_t n = all ? total : std::min(total, wanted);
  std::vector<size_t> picks(n);
  for (size_t i = 0; i < n; ++i) picks[i] = all ? i : i * total / n;
  return picks;
}

void read_samples(const Dataset& dataset, const InspectOptions& options, DatasetInspection& inspection) {
  const std::vector<size_t> picks = samples_to_read(dataset.size(), options.verify, options.census_samples);
  if (options.verify) inspection.prints.bytes.resize(dataset.size()), inspection.prints.looks.resize(dataset.size());
  const auto workers = static_cast<size_t>(std::max<int64_t>(1, options.workers));
  const size_t block = 256 * workers;
  for (size_t first = 0; first < picks.size(); first += block) {
    const size_t last = std::min(picks.size(), first + block);
    std::vector<SampleFacts> facts(last - first);
    for_each_strided(first, last, workers,
                     [&](size_t i) { facts[i - first] = examine(dataset, picks[i], options.verify, options.max_image_pixels); });
    for (size_t i = first; i < last; ++i) {
      SampleFacts& sample = facts[i - first];
      if (options.verify && sample.failure.empty())
        inspection.prints.bytes[picks[i]] = sample.fingerprint, inspection.prints.looks[picks[i]] = sample.look;
      if (sample.failure.empty())
        count(inspection.census, sample);
      else
        inspection.unreadable.push_back(std::move(sample.failure));
    }
    if (options.progress && options.verify) options.progress(last, picks.size());
  }
  inspection.census.every_sample = picks.size() == dataset.size();
}

std::string format_name(const Dataset& dataset) {
  if (dynamic_cast<const ShardDataset*>(&dataset)) return "shards";
  if (dynamic_cast<const ImageFolderDataset*>(&dataset)) return "ImageFolder";
  if (dynamic_cast<const IdxDataset*>(&dataset)) return "IDX";
  if (dynamic_cast<const ImageListDataset*>(&dataset)) return "image list";
  return "dataset";
}

std::string percent(size_t part, size_t whole) {
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(std::max<size_t>(whole, 1)));
}

// The value at fraction q of a sorted list (nearest rank).
template <class T>
T quantile(const std::vector<T>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

std::string first_line(const DatasetInspection& in) {
  std::string line = fmt::format("{}: {}, {} samples", in.path, in.format, in.samples);
  if (in.format == "shards") line = fmt::format("{}: {} samples in {} shard(s)", in.path, in.samples, in.shards);
  line += fmt::format(", {} classes", in.per_class.size());
  const ImageCensus& c = in.census;
  if (in.stored_bytes > 0) {
    line += fmt::format(", {:.1f} MB of images ({:.1f} kB per image)", static_cast<double>(in.stored_bytes) / 1e6,
                        static_cast<double>(in.stored_bytes) / 1e3 / static_cast<double>(std::max<size_t>(in.samples, 1)));
  } else if (c.encoded_bytes > 0) {
    const double per_image = static_cast<double>(c.encoded_bytes) / static_cast<double>(c.looked_at);
    line += fmt::format(", about {:.1f} MB of images ({:.1f} kB per image in the {} read)",
                        per_image * static_cast<double>(in.samples) / 1e6, per_image / 1e3, c.looked_at);
  }
  return line + "\n";
}

std::string class_lines(const DatasetInspection& in, bool all_classes) {
  constexpr size_t kListedAtEachEnd = 5;
  std::string out;
  if (all_classes || in.per_class.size() <= 4 * kListedAtEachEnd) {
    for (const auto& [name, samples] : in.per_class) out += fmt::format("  {:6}  {}\n", samples, name);
  } else {
    auto by_size = in.per_class;
    std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const auto list = [&](auto first, auto last) {
      std::string names;
      for (auto it = first; it != last; ++it) names += fmt::format("{}{} {}", names.empty() ? "" : ", ", it->first, it->second);
      return names;
    };
    out += fmt::format("  samples per class: {} to {}, median {}\n", by_size.front().second, by_size.back().second,
                       by_size[by_size.size() / 2].second);
    out += fmt::format("  smallest: {}\n", list(by_size.begin(), by_size.begin() + kListedAtEachEnd));
    out += fmt::format("  largest:  {}\n", list(by_size.end() - kListedAtEachEnd, by_size.end()));
    out += fmt::format("  (--all-classes lists all {})\n", by_size.size());
  }
  size_t smallest = SIZE_MAX, largest = 0;
  for (const auto& [name, samples] : in.per_class) {
    if (samples > 0) smallest = std::min(smallest, samples);
    largest = std::max(largest, samples);
  }
  if (const std::vector<std::string> empty = in.classes_without_samples(); !empty.empty())
    out += fmt::format("  {} class(es) without samples: {}{}\n", empty.size(), fmt::join(empty, ", "),
                       in.has_empty_class_folders() ? " (their folders hold no image file; training refuses them)" : "");
  if (smallest != SIZE_MAX && largest >= 2 * smallest)
    out += fmt::format("  imbalanced: the largest class has {:.1f}x the samples of the smallest\n",
                       static_cast<double>(largest) / static_cast<double>(smallest));
  return out;
}

std::string format_counts(const ImageCensus& c) {
  std::vector<std::pair<std::string, size_t>> formats(c.formats.begin(), c.formats.end());
  std::stable_sort(formats.begin(), formats.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, n] : formats) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, n);
    if (name != "JPEG" || c.jpeg_kinds.empty()) continue;
    std::vector<std::string> kinds;
    for (const auto& [kind, k] : c.jpeg_kinds) kinds.push_back(fmt::format("{} {}", k, kind));
    out += fmt::format(" ({})", fmt::join(kinds, ", "));
  }
  return out;
}

// Each image's shorter and longer side and their ratio, sorted.
struct SideLists {
  std::vector<int> shorter, longer;
  std::vector<double> aspect;
};

SideLists side_lists(const std::vector<ImageSize>& sizes) {
  SideLists sides;
  for (const ImageSize& s : sizes) {
    sides.shorter.push_back(std::min(s.width, s.height));
    sides.longer.push_back(std::max(s.width, s.height));
    sides.aspect.push_back(static_cast<double>(sides.longer.back()) / std::max(1, sides.shorter.back()));
  }
  std::sort(sides.shorter.begin(), sides.shorter.end());
  std::sort(sides.longer.begin(), sides.longer.end());
  std::sort(sides.aspect.begin(), sides.aspect.end());
  return sides;
}

std::string size_lines(const std::vector<ImageSize>& sizes) {
  if (sizes.empty()) return "";
  const auto same_as_first = [&](const ImageSize& s) { return s.width == sizes.front().width && s.height == sizes.front().height; };
  if (std::all_of(sizes.begin(), sizes.end(), same_as_first))
    return fmt::format("  size: {} x {} px, every one\n", sizes.front().width, sizes.front().height);
  const SideLists s = side_lists(sizes);
  std::string out = fmt::format("  shorter side: min {}, 10% {}, median {}, 90% {}, max {} px\n", s.shorter.front(),
                                quantile(s.shorter, 0.1), quantile(s.shorter, 0.5), quantile(s.shorter, 0.9), s.shorter.back());
  out += fmt::format("  longer side:  min {}, 10% {}, median {}, 90% {}, max {} px\n", s.longer.front(), quantile(s.longer, 0.1),
                     quantile(s.longer, 0.5), quantile(s.longer, 0.9), s.longer.back());
  return out + fmt::format("  longer / shorter: median {:.2f}, 90% {:.2f}, max {:.2f}\n", quantile(s.aspect, 0.5), quantile(s.aspect, 0.9),
                           s.aspect.back());
}

std::string census_lines(const DatasetInspection& in) {
  const ImageCensus& c = in.census;
  if (c.looked_at == 0) return "";
  const size_t read = c.looked_at + in.unreadable.size();
  std::string out = c.every_sample ? fmt::format("images (all {} read):\n", read)
                                   : fmt::format("images ({} read, spread over the set; --verify reads all):\n", read);
  out += fmt::format("  formats: {}\n", format_counts(c));
  out += size_lines(c.sizes);
  if (const auto oriented = c.jpeg_kinds.find("EXIF-oriented"); oriented != c.jpeg_kinds.end())
    out += fmt::format(
        "  {} JPEGs ({}) carry an EXIF orientation (a phone's photo stored sideways or mirrored): they train as stored, as "
        "Pillow and torchvision's loader read them; turn the files upright first (e.g. `exiftran -ai`) if they should not\n",
        oriented->second, percent(oriented->second, c.looked_at));
  if (c.formats.count("pixels") == c.formats.size()) return out;  // stored as pixels: no decoder to choose
  if (const auto progressive = c.jpeg_kinds.find("progressive"); progressive != c.jpeg_kinds.end())
    out += fmt::format(
        "  {} progressive JPEGs ({}): decoded whole, about 2.5x slower than baseline ones (docs/benchmarks.md, \"Progressive JPEGs\"); "
        "`cvtrain data pack` (without --keep-progressive) stores them as baseline, with the same pixels\n",
        progressive->second, percent(progressive->second, c.looked_at));
  if (c.gpu_decodable == 0)
    return out + fmt::format("  data.decoder: nvjpeg would decode none of them on the GPU (it takes baseline JPEGs): all {} on the CPU\n",
                             c.looked_at);
  const std::string engine = c.hardware_subsampling == c.gpu_decodable ? "all" : fmt::format("{}", c.hardware_subsampling);
  if (c.gpu_decodable == c.looked_at)
    return out + fmt::format(
                     "  data.decoder: nvjpeg would decode all {} on the GPU, {} in subsamplings its hardware engine takes "
                     "(A100, H100, H200)\n",
                     c.gpu_decodable, engine);
  return out + fmt::format(
                   "  data.decoder: nvjpeg would decode {} ({}) on the GPU, {} in subsamplings its hardware engine takes "
                   "(A100, H100, H200); the other {} on the CPU\n",
                   c.gpu_decodable, percent(c.gpu_decodable, c.looked_at), engine, c.looked_at - c.gpu_decodable);
}

std::string copy_lines(const DatasetInspection& in) {
  if (!in.verified) return "";
  const CopyFinding& c = in.copies;
  if (c.copies == 0) return "copies: none (no two samples hold the same bytes)\n";
  std::string out = fmt::format("copies: {} sample(s) hold the same bytes as an earlier one, which weighs that image more", c.copies);
  if (c.other_class > 0) out += fmt::format("; {} of them under another class (label noise, or one image in two classes)", c.other_class);
  return out + ":\n" + example_lines(c);
}

std::string look_alike_lines(const DatasetInspection& in) {
  if (!in.verified) return "";
  const CopyFinding& c = in.look_alikes;
  if (c.copies == 0) return "look-alikes: none (no sample is another one re-encoded or resized)\n";
  std::string out = fmt::format(
      "look-alikes: {} sample(s) look like an earlier one without holding its bytes (re-encoded or resized: perceptual "
      "hashes within {} of 64 bits, pictures correlating at least {})",
      c.copies, kLookAlikeBits, kSamePictureCorrelation);
  if (c.other_class > 0) out += fmt::format("; {} of them under another class", c.other_class);
  return out + ":\n" + example_lines(c);
}

std::string unreadable_lines(const DatasetInspection& in) {
  constexpr size_t kListed = 100;
  std::string out;
  for (size_t i = 0; i < std::min(kListed, in.unreadable.size()); ++i) out += fmt::format("unreadable: {}\n", in.unreadable[i]);
  if (in.unreadable.size() > kListed) out += fmt::format("unreadable: ... and {} more\n", in.unreadable.size() - kListed);
  if (in.verified) return out + fmt::format("verified: {} of {} samples decode\n", in.samples - in.unreadable.size(), in.samples);
  if (!in.unreadable.empty())
    out += fmt::format("{} of the {} samples read are unreadable; --verify reads and decodes every sample\n", in.unreadable.size(),
                       in.census.looked_at + in.unreadable.size());
  return out;
}

// {"min": .., "p10": .., "median": .., "p90": .., "max": ..} of a sorted list.
template <class T>
std::string quantiles_json(const std::vector<T>& sorted) {
  return fmt::format("{{\"min\": {}, \"p10\": {}, \"median\": {}, \"p90\": {}, \"max\": {}}}", sorted.front(), quantile(sorted, 0.1),
                     quantile(sorted, 0.5), quantile(sorted, 0.9), sorted.back());
}

std::string counts_json(const std::map<std::string, size_t>& counts) {
  std::vector<std::string> members;
  for (const auto& [name, n] : counts) members.push_back(fmt::format("{}: {}", json_string(name), n));
  return "{" + join(members, ", ") + "}";
}

std::string strings_json(const std::vector<std::string>& texts) {
  std::vector<std::string> quoted;
  for (const std::string& t : texts) quoted.push_back(json_string(t));
  return "[" + join(quoted, ", ") + "]";
}

std::string census_json(const ImageCensus& c) {
  std::string out = fmt::format(
      "{{\"looked_at\": {}, \"every_sample\": {}, \"encoded_bytes\": {}, \"formats\": {}, \"jpeg_kinds\": {}, "
      "\"gpu_decodable\": {}, \"hardware_subsampling\": {}",
      c.looked_at, c.every_sample ? "true" : "false", c.encoded_bytes, counts_json(c.formats), counts_json(c.jpeg_kinds), c.gpu_decodable,
      c.hardware_subsampling);
  if (!c.sizes.empty()) {
    const SideLists s = side_lists(c.sizes);
    out += fmt::format(", \"shorter_side\": {}, \"longer_side\": {}, \"aspect\": {}", quantiles_json(s.shorter), quantiles_json(s.longer),
                       quantiles_json(s.aspect));
  }
  return out + "}";
}

std::string copies_json(const CopyFinding& c) {
  return fmt::format("{{\"copies\": {}, \"other_class\": {}, \"other_class_examples\": {}, \"same_class_examples\": {}}}", c.copies,
                     c.other_class, strings_json(c.other_class_examples), strings_json(c.same_class_examples));
}

}  // namespace

std::vector<std::string> DatasetInspection::classes_without_samples() const {
  std::vector<std::string> empty;
  for (const auto& [name, samples] : per_class)
    if (samples == 0) empty.push_back(name);
  return empty;
}

std::string DatasetInspection::json(const std::string& against) const {
  std::vector<std::string> classes;
  for (const auto& [name, n] : per_class) classes.push_back(fmt::format("{{\"class\": {}, \"samples\": {}}}", json_string(name), n));
  return fmt::format(
             "{{\"path\": {}, \"format\": {}, \"samples\": {}, \"shards\": {}, \"stored_bytes\": {}, \"classes\": [{}], "
             "\"census\": {}, \"verified\": {}, \"unreadable\": {}",
             json_string(path), json_string(format), samples, shards, stored_bytes, join(classes, ", "), census_json(census),
             verified ? "true" : "false", strings_json(unreadable)) +
         (verified ? ", \"copies\": " + copies_json(copies) + ", \"look_alikes\": " + copies_json(look_alikes) : "") +
         (against.empty() ? "" : ", " + against) + "}\n";
}

std::string against_json(const std::string& other_path, size_t other_samples, const CopyFinding& leak, const CopyFinding& look_alikes) {
  return fmt::format("\"against\": {{\"path\": {}, \"samples\": {}, \"found\": {}, \"look_alikes\": {}}}", json_string(other_path),
                     other_samples, copies_json(leak), copies_json(look_alikes));
}

DatasetInspection inspect_dataset(const Dataset& dataset, const std::string& path, const InspectOptions& options) {
  DatasetInspection inspection;
  inspection.path = path;
  inspection.format = format_name(dataset);
  inspection.samples = dataset.size();
  for (const auto& name : dataset.class_names()) inspection.per_class.emplace_back(name, 0);
  for (size_t i = 0; i < dataset.size(); ++i) ++inspection.per_class[static_cast<size_t>(dataset.label(i))].second;
  if (const auto* shards = dynamic_cast<const ShardDataset*>(&dataset)) {
    inspection.shards = shards->shard_files().size();
    inspection.stored_bytes = shards->encoded_bytes();
  }
  inspection.verified = options.verify;
  read_samples(dataset, options, inspection);
  if (options.verify) {
    inspection.copies = copies_within(inspection.prints.bytes, dataset);
    inspection.look_alikes = look_alikes_within(inspection.prints, dataset, options.workers);
  }
  if (inspection.census.every_sample && inspection.unreadable.empty() && inspection.stored_bytes == 0)
    inspection.stored_bytes = inspection.census.encoded_bytes;
  return inspection;
}

std::string DatasetInspection::summary(bool all_classes) const {
  return first_line(*this) + class_lines(*this, all_classes) + census_lines(*this) + copy_lines(*this) + look_alike_lines(*this) +
         unreadable_lines(*this);
}

}  // namespace cvtrain
