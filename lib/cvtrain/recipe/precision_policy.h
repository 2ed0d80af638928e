// What a recipe's `precision` means for every part that computes, answered in one place: autocast
// and to which type, loss scaling, TF32 and the dtype of the model's inputs. The step, the
// evaluator, the micro-batch probe and the run builder ask it; none compares names.
#pragma once

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

enum class AutocastType { kNone, kBFloat16, kFloat16 };

struct PrecisionPolicy {
  Precision precision = Precision::kFp32;

  AutocastType autocast() const {
    return precision == Precision::kBf16 ? AutocastType::kBFloat16 : precision == Precision::kFp16 ? AutocastType::kFloat16 : AutocastType::kNone;
  }
  // fp16's narrow exponent needs dynamic loss scaling; bf16 has fp32's.
  bool loss_scaling() const { return precision == Precision::kFp16; }
  // TF32 matmuls and convolutions (CUDA); strict fp32 math otherwise.
  bool tf32() const { return precision == Precision::kTf32; }
  // bf16 inputs halve a batch's device memory; autocast would cast them at the first layer anyway.
  bool bf16_inputs() const { return precision == Precision::kBf16; }
  std::string name() const { return name_of(precision); }
};

}  // namespace cvtrain
