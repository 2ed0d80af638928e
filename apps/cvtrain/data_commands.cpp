// `cvtrain data`: pack a dataset into shards, inspect a dataset, time the input pipeline, preview samples.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>

#include "command.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/dataset_inspection.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/pair_packing.h"
#include "cvtrain/data/pipeline_bench.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/data/segmentation_inspection.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/observe/progress.h"
#include "cvtrain/recipe/data_format.h"
#include "cvtrain/tools/sample_preview.h"

namespace cvtrain::cli {
namespace {

struct DataArgs {
  std::string source, destination, format = "auto", device = "cpu";
  PackOptions pack;
  PipelineBenchOptions bench;
  bool verify = false, json = false, all_classes = false;
  std::string against, root;
  int64_t inspect_samples = 1000;
  int64_t num_classes = 0, ignore_index = 255;  // segmentation pairs
  std::string reduce_zero_label = "auto";
};

void add_format_option(CLI::App& cmd, DataArgs& args) {
  cmd.add_option("--format", args.format,
                 "auto | idx | imagefolder | shards | list, or for segmentation pairs voc | ade20k | cityscapes (auto: from what\n"
                 "the path is; a list whose header names an image and a mask column holds pairs)")
      ->check(CLI::IsMember({"auto", "idx", "imagefolder", "shards", "list", "voc", "ade20k", "cityscapes"}))
      ->capture_default_str();
  cmd.add_option("--root", args.root, "An image list's relative paths start from this folder, as data.root (default: the list's own)");
}

// How segmentation pairs' masks are read: the data section's keys, for tools without a recipe.
void add_mask_options(CLI::App& cmd, DataArgs& args) {
  cmd.add_option("--num-classes", args.num_classes,
                 "Segmentation pairs: mask ids from 0 to N-1 are classes, others are reported (default: the layout's, VOC 21,\n"
                 "Cityscapes 19; else any id)")
      ->check(not_negative());
  cmd.add_option("--ignore-index", args.ignore_index, "Segmentation pairs: the id of unlabelled pixels, as data.ignore_index")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  cmd.add_option("--reduce-zero-label", args.reduce_zero_label,
                 "Segmentation pairs: id 0 ignored and every other one less, as data.reduce_zero_label (auto: ADE20K's)")
      ->check(CLI::IsMember({"auto", "true", "false"}))
      ->capture_default_str();
}

// `root`: an image list's data.root ("" for the list's folder); `empty`: whether an ImageFolder
// class without images is refused, as training refuses it, or kept to be shown (inspect).
std::unique_ptr<Dataset> open_for_tool(const std::string& path, const std::string& format, const std::string& root,
                                       EmptyClasses empty = EmptyClasses::kRefused) {
  DataSpec spec;
  spec.format = format == "auto" ? detect_format(path) : *enum_of<DataFormat>(format);
  spec.root = root;
  if (spec.format == DataFormat::kImageFolder) return std::make_unique<ImageFolderDataset>(path, 0, empty);
  return open_dataset(spec, path, 0);
}

// "packing: 120000 of 1281167 samples (9.4%), 2150/s, ETA 9m00s": redrawn in place on a terminal
// (five times a second at most), a log line every 30 s otherwise, so an hour's pack is never silent.
std::function<void(size_t, size_t)> sample_progress(const std::string& doing, const Stopwatch& clock) {
  const bool terminal = ProgressDisplay::stderr_is_terminal();
  auto last_shown = std::make_shared<double>(0.0);
  return [=](size_t done, size_t total) {
    const double now = clock.seconds();
    if (done < total && now - *last_shown < (terminal ? 0.2 : 30.0)) return;
    if (done == total && !terminal) return;  // the closing "wrote ..." line says it
    *last_shown = now;
    const double rate = static_cast<double>(done) / std::max(now, 1e-9);
    const std::string line = fmt::format("{}: {} of {} samples ({:.1f}%), {:.0f}/s, ETA {}", doing, done, total,
                                         100.0 * static_cast<double>(done) / static_cast<double>(std::max<size_t>(total, 1)), rate,
                                         format_duration(static_cast<double>(total - done) / std::max(rate, 1e-9)));
    if (!terminal) return log::info("{}", line);
    std::fprintf(stderr, "\r%s\x1b[K%s", line.c_str(), done == total ? "\n" : "");
  };
}

// The data.format `data inspect`, `pack` and `bench` read PATH in, if it holds segmentation pairs
// (a layout, or shards packed from pairs).
std::optional<DataFormat> pairs_format(const DataArgs& args) {
  for (DataFormat format : {DataFormat::kVoc, DataFormat::kAde20k, DataFormat::kCityscapes})
    if (args.format == name_of(format)) return format;
  if (args.format != "auto" && args.format != "shards") return std::nullopt;
  if (args.format == "shards" && !packed_pairs_layout(args.source)) return std::nullopt;
  if (!segmentation_layout_of(args.source)) return std::nullopt;
  return pairs_format_of_path(args.source);
}

// PATH's pairs, their masks read as --num-classes, --ignore-index and --reduce-zero-label say.
SegmentationDataset open_pairs(const DataArgs& args, DataFormat format) {
  const SegmentationLayout layout = layout_at(format, args.source);
  MaskCoding coding;
  coding.ignore_index = static_cast<int>(args.ignore_index);
  coding.reduce_zero_label = args.reduce_zero_label == "auto" ? layout == SegmentationLayout::kAde20k : args.reduce_zero_label == "true";
  coding.num_classes = args.num_classes > 0 ? args.num_classes : static_cast<int64_t>(layout_class_names(layout).size());
  return open_segmentation_pairs(format, args.source, coding, 0, args.root);
}

// Exit 1 when no pair was usable: an empty pack trains nothing.
int run_pair_pack(const DataArgs& args, DataFormat format) {
  const Stopwatch clock;
  PackOptions options = args.pack;
  options.progress = sample_progress("packing", clock);
  const SegmentationDataset pairs = open_pairs(args, format);
  log::info("packing {} image and mask pairs ({} layout) of {} into {} shard(s) in {}", pairs.size(), layout_name(pairs.layout()),
            args.source, options.shards, args.destination);
  const PackReport report = pack_segmentation_pairs(pairs, args.destination, options);
  log::info("wrote {} pairs ({} progressive transcoded to baseline, {} skipped as unusable), {:.1f} MB in {}", report.written,
            report.transcoded, report.skipped, static_cast<double>(report.bytes) / 1e6, format_duration(clock.seconds()));
  return report.written > 0 ? 0 : kExitRuntimeError;
}

int run_data_pack(const DataArgs& args) {
  if (const auto format = pairs_format(args)) return run_pair_pack(args, *format);
  Stopwatch clock;
  PackOptions options = args.pack;
  options.progress = sample_progress("packing", clock);
  const auto source = open_for_tool(args.source, args.format, args.root);
  prepare_pack_folder(args.destination);
  log::info("packing {} samples of {} into {} shard(s) in {}", source->size(), args.source, args.pack.shards, args.destination);
  const PackReport report = pack_shards(*source, source->class_names(), args.destination, options);
  log::info("wrote {} samples ({} re-encoded, {} progressive transcoded to baseline, {} skipped as unusable), {:.1f} MB in {}",
            report.written, report.reencoded, report.transcoded, report.skipped, static_cast<double>(report.bytes) / 1e6,
            format_duration(clock.seconds()));
  return 0;
}

Command add_pack_command(CLI::App& data) {
  auto args = std::make_shared<DataArgs>();
  auto* cmd = data.add_subcommand(
      "pack",
      "Write SRC (an ImageFolder tree, image list, IDX file or shards) as packed shards in DST, samples in SRC's order;\n"
      "JPEGs that need no resize are copied byte for byte (progressive ones transcoded to baseline without\n"
      "loss), everything else becomes JPEG. Segmentation pairs (a VOC split file, an ADE20K or Cityscapes split\n"
      "folder, an image,mask list) are packed with their masks, images and masks byte for byte; a pair whose\n"
      "mask is unreadable, of another size than its image or holds an id beyond --num-classes is skipped");
  cmd->add_option("src", args->source, "Source dataset")->required();
  cmd->add_option("dst", args->destination, "Output folder (created; only earlier shards in it are replaced)")->required();
  cmd->add_option("--shards", args->pack.shards, "Number of shard files")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--resize", args->pack.resize, "Shrink the shorter side to this many pixels (0: keep)")
      ->check(CLI::Range(0, 65536))->capture_default_str();
  cmd->add_option("--quality", args->pack.quality, "JPEG quality of re-encoded images")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--workers", args->pack.workers, "Decode/encode threads")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--max-image-pixels", args->pack.max_image_pixels,
                  "Skip larger images as unusable, on their header's size, as data.max_image_pixels does (0: no limit)")
      ->check(not_negative())
      ->capture_default_str();
  cmd->add_flag("--keep-progressive", args->pack.keep_progressive,
                "Store progressive JPEGs byte for byte too, rather than transcoded to baseline without loss (the same pixels; decoded\n"
                "faster on the CPU, and on the GPU by nvJPEG)");
  add_format_option(*cmd, *args);
  add_mask_options(*cmd, *args);
  return {cmd, [args] { return run_data_pack(*args); }};
}

// `data inspect PATH --against OTHER` (the validation set): OTHER's samples that are samples of
// PATH, byte for byte or re-encoded or resized; scored as unseen, they are seen.
struct AgainstFinding {
  size_t samples = 0;  // OTHER's
  CopyFinding copies, look_alikes;
};

AgainstFinding copies_in(const std::string& other_path, const Dataset& dataset, const DatasetInspection& inspection, const DataArgs& args) {
  const auto other = open_for_tool(other_path, "auto", args.root);
  const Stopwatch clock;
  const SamplePrints prints = fingerprint_all(*other, args.pack.workers, true, sample_progress("reading " + other_path, clock));
  return {other->size(), copies_between(inspection.prints.bytes, dataset, prints.bytes, *other),
          look_alikes_between(inspection.prints, dataset, prints, *other, args.pack.workers)};
}

std::string other_classes(const CopyFinding& finding) {
  return finding.other_class > 0 ? fmt::format("; {} of them under another class", finding.other_class) : "";
}

void print_copies_in(const std::string& other_path, const AgainstFinding& found) {
  if (found.copies.copies == 0)
    std::printf("against %s: none of its %zu samples holds the same bytes as a sample here\n", other_path.c_str(), found.samples);
  else
    std::printf("against %s: %zu of its %zu samples hold the same bytes as samples here (scored as unseen, they are seen)%s:\n%s",
                other_path.c_str(), found.copies.copies, found.samples, other_classes(found.copies).c_str(),
                example_lines(found.copies).c_str());
  if (found.look_alikes.copies == 0)
    std::printf("against %s: none of its samples looks like a sample here without holding its bytes\n", other_path.c_str());
  else
    std::printf(
        "against %s: %zu of its samples look like samples here without holding their bytes (re-encoded or resized "
        "copies: seen too)%s:\n%s",
        other_path.c_str(), found.look_alikes.copies, other_classes(found.look_alikes).c_str(), example_lines(found.look_alikes).c_str());
}

int inspect_pairs(const DataArgs& args, DataFormat format) {
  const SegmentationDataset dataset = open_pairs(args, format);
  SegmentationInspectOptions options;
  options.verify = args.verify;
  options.samples = static_cast<size_t>(args.inspect_samples);
  options.workers = args.pack.workers;
  const Stopwatch clock;
  options.progress = sample_progress("reading", clock);
  const SegmentationInspection inspection = inspect_segmentation(dataset, args.source, options);
  std::fputs((args.json ? inspection.json() : inspection.summary(args.all_classes)).c_str(), stdout);
  return inspection.usable() ? 0 : kExitRuntimeError;
}

Command add_inspect_command(CLI::App& data) {
  auto args = std::make_shared<DataArgs>();
  auto* cmd =
      data.add_subcommand("inspect",
                          "Summarise a dataset (shards folder, ImageFolder tree, image list or IDX file): samples per class, image\n"
                          "formats, sizes and codings, how many nvJPEG decodes; --verify reads and decodes every sample. For\n"
                          "segmentation pairs (VOC, ADE20K, Cityscapes, an image,mask list): pixels per class, masks of another\n"
                          "size than their image, ids that are no class");
  cmd->add_option("path", args->source,
                  "Shards folder, ImageFolder tree, image list (.csv, .tsv, .txt) or IDX file; for pairs a VOC split file\n"
                  "(ImageSets/Segmentation/train.txt), a split folder of ADE20K (images/training) or Cityscapes (leftImg8bit/train),\n"
                  "or an image,mask list")
      ->required();
  cmd->add_flag(
      "--verify", args->verify,
      "Read and decode every sample (shards: and check its bytes against the CRC-32C the pack stored); exit 1 if any is unusable;\n"
      "list copies (the same bytes) and look-alikes (the same picture re-encoded or resized)");
  cmd->add_option("--workers", args->pack.workers, "Threads that read and decode")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--samples", args->inspect_samples, "Without --verify: samples read for formats and sizes, spread over the set")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  cmd->add_option("--max-image-pixels", args->pack.max_image_pixels,
                  "Count larger images as unusable, on their header's size, as data.max_image_pixels does (0: no limit)")
      ->check(not_negative())
      ->capture_default_str();
  cmd->add_option("--against", args->against,
                  "Another dataset (the validation set): its samples that hold the same bytes as samples of PATH, or look like\n"
                  "them (re-encoded or resized), are listed; implies --verify; exit 1 if any");
  cmd->add_flag("--all-classes", args->all_classes, "List every class's sample count (else the 5 smallest and largest beyond 20 classes)");
  cmd->add_flag("--json", args->json,
                "Print one JSON object instead: every class, the formats and JPEG codings, the side quantiles, what nvJPEG\n"
                "takes, the unreadable samples, the copies and look-alikes (with --verify) and --against's findings; the exit\n"
                "code as without");
  add_mask_options(*cmd, *args);
  add_format_option(*cmd, *args);
  return {cmd, [args] {
            if (const auto format = pairs_format(*args)) return inspect_pairs(*args, *format);
            const auto dataset = open_for_tool(args->source, args->format, args->root, EmptyClasses::kKept);
            InspectOptions options;
            options.verify = args->verify || !args->against.empty();
            options.workers = args->pack.workers;
            options.census_samples = static_cast<size_t>(args->inspect_samples);
            options.max_image_pixels = args->pack.max_image_pixels;
            const Stopwatch clock;
            options.progress = sample_progress("verifying", clock);
            const DatasetInspection inspection = inspect_dataset(*dataset, args->source, options);
            if (!args->json) std::fputs(inspection.summary(args->all_classes).c_str(), stdout);
            AgainstFinding found;
            if (!args->against.empty()) found = copies_in(args->against, *dataset, inspection, *args);
            if (args->json)
              std::fputs(
                  inspection.json(args->against.empty() ? "" : against_json(args->against, found.samples, found.copies, found.look_alikes))
                      .c_str(),
                  stdout);
            else if (!args->against.empty())
              print_copies_in(args->against, found);
            const bool usable = inspection.unreadable.empty() && !inspection.has_empty_class_folders();
            return usable && found.copies.copies == 0 && found.look_alikes.copies == 0 ? 0 : kExitRuntimeError;
          }};
}

std::string bench_view(const PipelineBenchOptions& o, bool pairs) {
  if (pairs)
    return fmt::format("image and mask: RandomResize (2048, 512) x 0.5-2 + RandomCrop {} cat_max_ratio 0.75{} + PhotoMetricDistortion",
                       o.image_size, o.hflip ? " + flip" : "");
  if (o.evaluation) return "evaluation view";
  std::string view = o.interpolation == "bilinear" ? "RandomResizedCrop + flip" : "RandomResizedCrop (" + o.interpolation + ") + flip";
  if (!o.auto_augment.empty()) view += " + " + o.auto_augment;
  if (o.random_erasing > 0) view += fmt::format(" + random erasing {} (normalised)", o.random_erasing);
  return view;
}

void print_bench(const DataArgs& args, const PipelineBenchResult& r, bool pairs) {
  if (args.json) {
    std::printf("{\"images_per_s\": %.2f, \"images\": %lld, \"seconds\": %.3f, \"workers\": %lld, \"cores_busy\": %.2f, "
                "\"bad_samples\": %lld, \"decoder\": \"%s\", \"gpu_decoded\": %lld, \"gpu_regions\": %s}\n",
                r.images_per_s, static_cast<long long>(r.images), r.seconds, static_cast<long long>(args.bench.workers), r.cores_busy,
                static_cast<long long>(r.bad_samples), args.bench.decoder.c_str(), static_cast<long long>(r.gpu_decoded),
                r.gpu_regions ? "true" : "false");
    return;
  }
  const double per_worker = r.images_per_s / static_cast<double>(std::max<int64_t>(1, args.bench.workers));
  std::printf(
      "%s: %lld images (%s) in %.2f s = %.1f images/s with %lld worker(s) (%.1f per worker, %.1f host cores busy), to %s, "
      "%lld unusable\n",
      args.source.c_str(), static_cast<long long>(r.images), bench_view(args.bench, pairs).c_str(), r.seconds, r.images_per_s,
      static_cast<long long>(args.bench.workers), per_worker, r.cores_busy, args.device.c_str(), static_cast<long long>(r.bad_samples));
  if (args.bench.decoder == "nvjpeg")
    std::printf("  decoded by nvJPEG (%s backend, %s): %lld of %lld images; the rest by the workers\n", r.gpu_backend.c_str(),
                r.gpu_regions ? "only each crop's region" : "whole images", static_cast<long long>(r.gpu_decoded),
                static_cast<long long>(r.images));
}

int run_data_bench(DataArgs args) {
  if (const auto format = pairs_format(args)) {
    if (args.device != "cpu" || args.bench.decoder != "cpu" || args.bench.evaluation || !args.bench.auto_augment.empty())
      throw Error(
          "data bench of segmentation pairs times mmseg's training pipeline on the CPU; --device, --decoder, --eval and "
          "--auto-augment are for classification images");
    print_bench(args, bench_pair_pipeline(open_pairs(args, *format), args.bench), true);
    return 0;
  }
  const auto dataset = open_for_tool(args.source, args.format, args.root);
  if (args.device == "cuda" && visible_cuda_devices() == 0) throw Error("--device cuda: no CUDA device is visible");
  args.bench.device = c10::Device(args.device == "cuda" ? c10::kCUDA : c10::kCPU);
  print_bench(args, bench_pipeline(*dataset, args.bench), false);
  return 0;
}

Command add_bench_command(CLI::App& data) {
  auto args = std::make_shared<DataArgs>();
  auto* cmd = data.add_subcommand("bench",
                                  "Time the training input pipeline alone (decode, RandomResizedCrop, flip, batching[, copy to GPU]); of\n"
                                  "segmentation pairs, mmseg's training pipeline (RandomResize, RandomCrop of --image-size, flip,\n"
                                  "PhotoMetricDistortion, padding) on image and mask");
  cmd->add_option("path", args->source, "Dataset")->required();
  cmd->add_option("--workers", args->bench.workers, "Decode threads")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--batch", args->bench.batch_size, "Batch size")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--image-size", args->bench.image_size, "Output side")->check(CLI::Range(8, 4096))->capture_default_str();
  cmd->add_option("--batches", args->bench.batches, "Timed batches (after one warm-up batch)")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--device", args->device, "cpu | cuda (cuda: also copy and normalise on the GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_flag("--eval", args->bench.evaluation,
                "Time the evaluation view (torchvision's Resize + CenterCrop, pixel for pixel) instead of RandomResizedCrop + flip");
  cmd->add_option("--interpolation", args->bench.interpolation,
                  "The resize, as augment.interpolation: bilinear | bicubic | random (bilinear or bicubic per sample); with\n"
                  "--eval as data.eval_interpolation (bilinear | bicubic)")
      ->check(CLI::IsMember({"bilinear", "bicubic", "random"}))
      ->capture_default_str();
  cmd->add_option("--auto-augment", args->bench.auto_augment,
                  "After crop and flip, this augment.auto_augment policy (e.g. rand-m9-mstd0.5-inc1; its geometric ops resample\n"
                  "with --interpolation's filter, as timm's transforms)");
  cmd->add_option("--random-erasing", args->bench.random_erasing,
                  "augment.random_erasing.prob (pixel mode), planned in the workers and filled after normalising; also\n"
                  "times the normalisation on the CPU, as timm's loader returns normalised, erased tensors")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--decoder", args->bench.decoder,
                  "cpu | nvjpeg (nvjpeg, with --device cuda: as data.decoder nvjpeg trains, the workers only read and plan\n"
                  "files and nvJPEG decodes them in batches on the GPU, crop and flip rendered there; files it does not\n"
                  "take are decoded by the workers)")
      ->check(CLI::IsMember({"cpu", "nvjpeg"}))->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object");
  add_format_option(*cmd, *args);
  return {cmd, [args] { return run_data_bench(*args); }};
}

struct PreviewArgs {
  RecipeArgs recipe;
  PreviewOptions options;
};

// The grid is always a PNG: a name that promises another format would mislabel the file.
Command add_preview_command(CLI::App& data) {
  auto args = std::make_shared<PreviewArgs>();
  auto* cmd = data.add_subcommand("preview",
                                  "Write a PNG grid of the first training samples of an epoch exactly as the step receives them (crop,\n"
                                  "flip, augment.auto_augment, random erasing, Mixup/CutMix), denormalised, with their labels. With task:\n"
                                  "segmentation, each crop of the joint transforms beside its mask laid over it in the dataset's colours\n"
                                  "(data.ignore_index dimmed), captioned with the two classes covering most of it");
  add_recipe_args(*cmd, args->recipe, true);
  cmd->add_option("--out,-o", args->options.out, "The PNG file")
      ->check(file_named(".png", "the preview is a PNG image"))
      ->capture_default_str();
  cmd->add_option("--count", args->options.count, "Samples, in the epoch's order (mixed as one micro-batch)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--epoch", args->options.epoch, "Which epoch's samples and draws")->check(not_negative())->capture_default_str();
  return {cmd, [args] {
            const PreviewOptions& options = args->options;
            const PreviewResult result = write_sample_preview(load(args->recipe), options);
            log::info("{} training samples of epoch {} as the step receives them: {} ({}x{})", result.samples, options.epoch,
                      options.out, result.width, result.height);
            return 0;
          }};
}

}  // namespace

std::vector<Command> add_data_commands(CLI::App& app) {
  auto* data =
      app.add_subcommand("data", "Dataset tools: pack into shards, inspect a dataset, benchmark the input pipeline, preview samples");
  data->require_subcommand(1);
  return {add_pack_command(*data), add_preview_command(*data), add_inspect_command(*data), add_bench_command(*data)};
}

}  // namespace cvtrain::cli
