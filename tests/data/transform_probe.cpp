// A test program for tests/parity/check_eval_transform.py: writes the evaluation view of every
// sample of an ImageFolder, as the input pipeline makes it, one after another as raw HWC bytes.
//   transform_probe FOLDER IMAGE_SIZE OUTPUT
#include <fstream>
#include <iostream>
#include <string>

#include "cvtrain/core/error.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/recipe/recipe.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: transform_probe FOLDER IMAGE_SIZE OUTPUT\n";
    return 2;
  }
  try {
    cvtrain::DataSpec spec;
    spec.format = cvtrain::DataFormat::kImageFolder;
    const auto dataset = cvtrain::open_dataset(spec, argv[1], 0);
    const cvtrain::SampleTransform evaluation{nullptr, std::stoll(argv[2])};
    std::ofstream out(argv[3], std::ios::binary);
    for (size_t i = 0; i < dataset->size(); ++i) {
      const cvtrain::Image image = cvtrain::prepare_sample(*dataset, i, evaluation);
      out.write(reinterpret_cast<const char*>(image.pixels.data()), static_cast<std::streamsize>(image.pixels.size()));
    }
    std::cout << dataset->size() << " samples\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "transform_probe: " << e.what() << "\n";
    return 1;
  }
}
