// A test program for tests/parity/check_eval_transform.py and check_train_crop.py: writes the views
// of every sample of an ImageFolder as the input pipeline makes them, one after another as raw HWC
// bytes, and prints the crop plans the training view draws.
//   transform_probe eval FOLDER IMAGE_SIZE OUTPUT FILTER            the evaluation view (bilinear | bicubic)
//   transform_probe train FOLDER IMAGE_SIZE OUTPUT SCALE_LO SCALE_HI RATIO_LO RATIO_HI INTERPOLATION
//                                                                   random_resized_crop; a line "x y w h filter" per sample
//   transform_probe plans WIDTH HEIGHT IMAGE_SIZE COUNT SCALE_LO SCALE_HI RATIO_LO RATIO_HI INTERPOLATION
//                                                                   COUNT plans for one source size, a line each
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cvtrain/core/error.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

AugmentInterpolation interpolation_named(const std::string& name) {
  const auto interpolation = enum_of<AugmentInterpolation>(name);
  if (!interpolation) throw Error("no interpolation " + name);
  return *interpolation;
}

AugmentSpec crop_augment(char** bounds) {
  AugmentSpec augment;
  augment.random_resized_crop = {std::stod(bounds[0]), std::stod(bounds[1])};
  augment.random_resized_crop_ratio = {std::stod(bounds[2]), std::stod(bounds[3])};
  augment.interpolation = interpolation_named(bounds[4]);
  return augment;
}

// The size plan_sample saw: the JPEG's header, another format's header or its decode.
ImageSize source_size(const Dataset& dataset, size_t index) {
  const RawSample raw = dataset.read(index);
  if (const auto jpeg = jpeg_size(raw.encoded, dataset.describe(index))) return *jpeg;
  if (const auto header = image_header_size(raw.encoded)) return *header;
  const Image image = decode_view(raw.encoded, dataset.describe(index), ImageView::exact);
  return ImageSize{image.width, image.height};
}

void print_plan(const CropPlan& plan) {
  std::cout << plan.x << " " << plan.y << " " << plan.width << " " << plan.height << " "
            << (plan.filter == ResizeFilter::kBicubic ? "bicubic" : "bilinear") << "\n";
}

// Every sample of FOLDER through the pipeline (decode included) into OUTPUT.
int write_views(const std::string& folder, const SampleTransform& transform, const std::string& output) {
  DataSpec spec;
  spec.format = DataFormat::kImageFolder;
  const auto dataset = open_dataset(spec, folder, 0);
  std::ofstream out(output, std::ios::binary);
  for (size_t i = 0; i < dataset->size(); ++i) {
    const Image image = prepare_sample(*dataset, i, transform);
    out.write(reinterpret_cast<const char*>(image.pixels.data()), static_cast<std::streamsize>(image.pixels.size()));
    if (transform.augment) print_plan(plan_sample(source_size(*dataset, i), transform, i));
  }
  std::cerr << dataset->size() << " samples\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "eval" && argc == 6) {
      SampleTransform evaluation{nullptr, std::stoll(argv[3])};
      evaluation.eval_filter = resize_filter(interpolation_named(argv[5]));
      return write_views(argv[2], evaluation, argv[4]);
    }
    if (mode == "train" && argc == 10) {
      const AugmentSpec augment = crop_augment(argv + 5);
      return write_views(argv[2], SampleTransform{&augment, std::stoll(argv[3]), 11, 0}, argv[4]);
    }
    if (mode == "plans" && argc == 11) {
      const AugmentSpec augment = crop_augment(argv + 6);
      const SampleTransform transform{&augment, std::stoll(argv[4]), 11, 0};
      const ImageSize source{std::stoi(argv[2]), std::stoi(argv[3])};
      for (size_t i = 0, n = std::stoul(argv[5]); i < n; ++i) print_plan(plan_sample(source, transform, i));
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "transform_probe: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: transform_probe eval FOLDER IMAGE_SIZE OUTPUT FILTER\n"
               "       transform_probe train FOLDER IMAGE_SIZE OUTPUT SCALE_LO SCALE_HI RATIO_LO RATIO_HI INTERPOLATION\n"
               "       transform_probe plans WIDTH HEIGHT IMAGE_SIZE COUNT SCALE_LO SCALE_HI RATIO_LO RATIO_HI INTERPOLATION\n";
  return 2;
}
