// A test program for tests/parity/check_auto_augment.py: runs cvtrain's augmentation ops on raw
// images, and prints the ops a policy draws, so both can be set against timm's.
//   augment_probe ops CASES OUTPUT       CASES: lines "RAW WIDTH HEIGHT CHANNELS OP ARGUMENT RESAMPLE [black]";
//                                        the results are written one after another to OUTPUT
//   augment_probe draws POLICY COUNT     one line per sample: "Op:argument" for each op applied
//   augment_probe erase PROB MODE COUNT SIZE SAMPLES   one line per sample: its boxes "top,left,h,w"
//   augment_probe jitter STRENGTH COUNT  one line per sample: "Op:factor" in the order applied
//   augment_probe mix MIXUP CUTMIX PROB SWITCH HEIGHT WIDTH BATCHES
//                                        one line per batch: "none", "mixup LAMBDA" or
//                                        "cutmix TOP BOTTOM LEFT RIGHT LAMBDA"
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cvtrain/core/rng.h"
#include "cvtrain/data/auto_augment.h"
#include "cvtrain/data/erasing_plan.h"
#include "cvtrain/data/mix_plan.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Resample resample_named(const std::string& name) {
  if (name == "bicubic") return Resample::kBicubic;
  if (name == "nearest") return Resample::kNearest;
  return Resample::kBilinear;
}

int run_ops(const std::string& cases_path, const std::string& out_path) {
  std::ifstream cases(cases_path);
  std::ofstream out(out_path, std::ios::binary);
  std::string line;
  int count = 0;
  while (std::getline(cases, line)) {
    std::istringstream fields(line);
    std::string raw, op_name, resample, fill_name;
    int width = 0, height = 0, channels = 0;
    double argument = 0;
    if (!(fields >> raw >> width >> height >> channels >> op_name >> argument >> resample)) continue;
    fields >> fill_name;  // optional: "black" (torchvision's default), else timm's mean colour
    std::vector<uint8_t> pixels = read_file(raw);
    const auto op = augment_op_named(op_name);
    if (!op) throw std::runtime_error("no op " + op_name);
    const DrawnOp drawn{*op, argument, resample_named(resample)};
    const std::vector<uint8_t> fill = fill_name == "black" ? std::vector<uint8_t>(3, 0) : augment_fill({0.485, 0.456, 0.406});
    apply_augment_op(PixelView{pixels.data(), width, height, channels}, drawn, fill.data());
    out.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
    ++count;
  }
  std::cout << count << " cases\n";
  return 0;
}

int run_draws(const std::string& policy_text, int count) {
  const AugmentPolicy policy = parse_augment_policy(policy_text);
  for (int i = 0; i < count; ++i) {
    std::ostringstream line;
    for (const DrawnOp& op : draw_augment_ops(policy, sample_key(1, 0, static_cast<uint64_t>(i)), AugmentInterpolation::kRandom))
      line << augment_op_name(op.op) << ":" << std::setprecision(17) << op.argument << " ";
    std::cout << line.str() << "\n";
  }
  return 0;
}

int run_jitter(double strength, int count) {
  for (int i = 0; i < count; ++i) {
    for (const DrawnOp& op : draw_color_jitter(strength, sample_key(3, 0, static_cast<uint64_t>(i))))
      std::cout << augment_op_name(op.op) << ":" << op.argument << " ";
    std::cout << "\n";
  }
  return 0;
}

int run_erase(double prob, const std::string& mode, int count, int size, int samples) {
  RandomErasingSpec spec;
  spec.prob = prob;
  spec.mode = *enum_of<EraseMode>(mode);
  spec.count = count;
  for (int i = 0; i < samples; ++i) {
    for (const EraseBox& box : plan_erasing(spec, size, size, sample_key(2, 0, static_cast<uint64_t>(i))))
      std::cout << box.top << "," << box.left << "," << box.height << "," << box.width << " ";
    std::cout << "\n";
  }
  return 0;
}

int run_mix(char** args) {
  AugmentSpec spec;
  spec.mixup = std::stod(args[0]);
  spec.cutmix = std::stod(args[1]);
  spec.mix_prob = std::stod(args[2]);
  spec.switch_prob = std::stod(args[3]);
  const int64_t height = std::stoll(args[4]), width = std::stoll(args[5]);
  const int batches = std::stoi(args[6]);
  for (int i = 0; i < batches; ++i) {
    const MixPlan plan = plan_mix(spec, mix_key(4, 0, static_cast<int64_t>(i) * 64), height, width);
    if (plan.kind == MixKind::kNone) std::cout << "none\n";
    if (plan.kind == MixKind::kMixup) std::cout << "mixup " << std::setprecision(17) << plan.lambda << "\n";
    if (plan.kind == MixKind::kCutMix)
      std::cout << "cutmix " << plan.top << " " << plan.bottom << " " << plan.left << " " << plan.right << " " << std::setprecision(17)
                << plan.lambda << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "ops" && argc == 4) return run_ops(argv[2], argv[3]);
    if (mode == "draws" && argc == 4) return run_draws(argv[2], std::stoi(argv[3]));
    if (mode == "jitter" && argc == 4) return run_jitter(std::stod(argv[2]), std::stoi(argv[3]));
    if (mode == "erase" && argc == 7) return run_erase(std::stod(argv[2]), argv[3], std::stoi(argv[4]), std::stoi(argv[5]), std::stoi(argv[6]));
    if (mode == "mix" && argc == 9) return run_mix(argv + 2);
    std::cerr
        << "usage: augment_probe ops CASES OUTPUT | draws POLICY COUNT | jitter STRENGTH COUNT | erase PROB MODE COUNT SIZE SAMPLES | "
           "mix MIXUP CUTMIX PROB SWITCH HEIGHT WIDTH BATCHES\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "augment_probe: " << e.what() << "\n";
    return 1;
  }
}
