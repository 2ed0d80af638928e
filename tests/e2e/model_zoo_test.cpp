// The model zoo end to end: every shipped recipe passes `cvtrain check`, and `cvtrain export`
// writes weights that torchvision and timm load as their docs say and that compute what cvtrain
// computes (checked by tests/parity/check_parity.py on the venv's Python).
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "cvtrain/models/safetensors.h"
#include "image_files.h"
#include "run_shell.h"

using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {

using cvtrain::testing::Run;
const std::string kSource = CVTRAIN_SOURCE_DIR;

// One optimizer step of `arch` on 2-class JPEGs at 32 pixels; the run folder is dir/<arch>.
std::string train_one_step(const TempDir& dir, const std::string& arch) {
  return "$CVTRAIN --recipe " + dir.file("recipe.yaml") + " model.arch=" + arch + " output=" + dir.file(arch) + " || exit 1\n";
}

void write_recipe(const TempDir& dir) {
  cvtrain::testing::write_red_blue_folder(dir, "images", 4);
  dir.write("recipe.yaml", "model: {num_classes: 2, image_size: 32}\n"
                           "data: {format: imagefolder, train: " + dir.file("images") + ", workers: 1}\n"
                           "train: {max_steps: 1, global_batch: 4}\n"
                           "optim: {name: adamw, lr: 0.001}\n");
}

}  // namespace

TEST_CASE("every shipped recipe passes cvtrain check", "[e2e]") {
  TempDir dir;
  std::string script;
  for (const auto& entry : std::filesystem::directory_iterator(kSource + "/recipes")) {
    const std::string name = entry.path().filename().string();
    if (name[0] == '_' || entry.path().extension() != ".yaml") continue;  // bases, not recipes
    script += "$CVTRAIN check --no-paths --recipe " + entry.path().string() + " > /dev/null || echo \"FAILED " + name + "\"\n";
  }
  // Without --no-paths the data folders must exist, and the error names the key and the file.
  script += "$CVTRAIN check --recipe " + kSource + "/recipes/vit_b16.yaml; echo \"with paths exited $?\"\n";
  const Run run = shell(script, dir);
  INFO(run.output);
  CHECK_THAT(run.output, !Catch::Contains("FAILED"));
  CHECK_THAT(run.output, Catch::Contains("_imagenet.yaml:10: data.train: '/data/imagenet/train' does not exist") &&
                             Catch::Contains("with paths exited 2"));
}

TEST_CASE("exported weights load into torchvision and timm unchanged and compute the same logits", "[e2e][venv]") {
  const std::string python = cvtrain::testing::kTestPython;
  REQUIRE_FALSE(python.empty());  // registered only where the venv is (tests/CMakeLists.txt)
  TempDir dir;
  write_recipe(dir);
  // On 64-pixel images: what loads and computes alike at 64 computes alike at any size.
  const std::string check =
      python + " " + kSource + "/tests/parity/check_parity.py --probe " + CVTRAIN_MODEL_PROBE + " --num-classes 2 --image-size 64";
  const Run run = shell("set -e\n" + train_one_step(dir, "resnet50") + train_one_step(dir, "convnext_tiny") +
                            // A run folder exports its newest checkpoint; a checkpoint folder itself.
                            "$CVTRAIN export " + dir.file("resnet50") + " --out " + dir.file("resnet50.safetensors") + "\n" +
                            "$CVTRAIN export " + dir.file("convnext_tiny/checkpoints/step-00000001") + " --out " +
                            dir.file("convnext.safetensors") + "\n" + check + " --arch resnet50 --exported " +
                            dir.file("resnet50.safetensors") + "\n" + check + " --arch convnext_tiny --exported " +
                            dir.file("convnext.safetensors") + "\n" + "$CVTRAIN export " + dir.file("resnet50") + " --dtype bf16 --out " +
                            dir.file("resnet50_bf16.safetensors") + "\n",
                        dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("torchvision.models.resnet50(num_classes=2)") &&
                             Catch::Contains("timm.create_model('convnext_tiny', pretrained=True, num_classes=2"));
  CHECK_THAT(run.output, Catch::Contains("resnet50 (exported) gradients") && Catch::Contains("convnext_tiny (exported) gradients"));
  for (const auto& [name, tensor] : cvtrain::read_safetensors(dir.file("resnet50_bf16.safetensors"))) {
    INFO(name);
    CHECK(tensor.scalar_type() == (name.find("num_batches_tracked") != std::string::npos ? at::kLong : at::kBFloat16));
  }
}

TEST_CASE("export names what is missing: no run, no checkpoint, an incomplete checkpoint, a file not named .safetensors", "[e2e]") {
  TempDir dir;
  const Run run = shell("$CVTRAIN export " + dir.file("nothing") + " --out " + dir.file("a.safetensors") + "; echo \"exit $?\"\n" +
                            "mkdir -p " + dir.file("run/checkpoints/step-00000004") + "\n" + "touch " +
                            dir.file("run/checkpoints/step-00000004/model.safetensors") + "\n" + "$CVTRAIN export " + dir.file("run") +
                            " --out " + dir.file("b.safetensors") + "; echo \"exit $?\"\n" + "$CVTRAIN export " +
                            dir.file("run/checkpoints/step-00000004") + " --out " + dir.file("c.safetensors") + "; echo \"exit $?\"\n" +
                            "$CVTRAIN export " + dir.file("run") + " --out " + dir.file("d.pt") + "; echo \"exit $?\"\n",
                        dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains(dir.file("nothing") + ": neither a checkpoint folder"));
  CHECK_THAT(run.output, Catch::Contains(dir.file("run") + ": no complete checkpoint under"));
  CHECK_THAT(run.output, Catch::Contains("step-00000004: checkpoint has no COMPLETE marker"));
  // A .pt name would promise torch.load a file it cannot read.
  CHECK_THAT(run.output, Catch::Contains("name it .safetensors, got " + dir.file("d.pt")) && Catch::Contains("exit 2"));
  CHECK(run.output.find("exit 0") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("a.safetensors")));
}
