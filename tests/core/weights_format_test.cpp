// Weights files told apart by their first bytes: safetensors passes; torch.save's zip and pickle,
// HDF5, a file too short or with a header longer than itself are named, and a recipe's
// model.pretrained is checked so at load time (cvtrain check), not when the job has its GPUs.
#include <catch2/catch.hpp>

#include <string>

#include "cvtrain/core/error.h"
#include "cvtrain/core/weights_format.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

// A safetensors file holding one empty tensor's header (length u64 little-endian, JSON, no data).
std::string safetensors_bytes() {
  const std::string header = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  return bytes + header;
}

}  // namespace

TEST_CASE("a weights file that is no safetensors file is named by its first bytes", "[core]") {
  TempDir dir;
  CHECK_FALSE(safetensors_file_problem(dir.write("good.safetensors", safetensors_bytes())).has_value());
  const std::string zip = dir.write("r18.pth", std::string("PK\x03\x04", 4) + std::string(200, 'x'));
  CHECK_THAT(safetensors_file_problem(zip).value_or(""),
             Catch::StartsWith(zip + ": not a safetensors file (it is a zip archive: torch.save's .pt/.pth") &&
                 Catch::Contains("safetensors.torch.save_file"));
  CHECK_THAT(safetensors_file_problem(dir.write("old.pth", std::string("\x80\x02", 2) + std::string(50, 'x'))).value_or(""),
             Catch::Contains("a Python pickle"));
  CHECK_THAT(safetensors_file_problem(dir.write("w.h5", std::string("\x89HDF\r\n\x1a\n", 8) + "x")).value_or(""),
             Catch::Contains("an HDF5 file"));
  CHECK_THAT(safetensors_file_problem(dir.write("tiny", "abc")).value_or(""), Catch::Contains("3 bytes, too short"));
  std::string too_long = safetensors_bytes();
  too_long[1] = 1;  // a header length of 256 + its own in a file of 60-odd bytes
  CHECK_THAT(safetensors_file_problem(dir.write("cut.safetensors", too_long)).value_or(""), Catch::Contains("does not fit the"));
  CHECK_FALSE(safetensors_file_problem(dir.file("missing.safetensors")).has_value());  // the path check says that one
}

TEST_CASE("model.pretrained given torch.save's file is a recipe error at load, naming the format", "[core][recipe]") {
  TempDir dir;
  const std::string zip = dir.write("r18.pth", std::string("PK\x03\x04", 4) + std::string(200, 'x'));
  const std::string recipe = dir.write("r.yaml", "data: {format: synthetic}\nmodel: {pretrained: " + zip + "}\ntrain: {global_batch: 8}\n");
  LoadOptions options;
  CHECK_THROWS_WITH(load_recipe(recipe, options),
                    Catch::Contains(recipe + ":2: model.pretrained: " + zip + ": not a safetensors file (it is a zip archive"));
  options.overrides = {"model.pretrained=" + dir.write("good.safetensors", safetensors_bytes())};
  CHECK_NOTHROW(load_recipe(recipe, options));
}
