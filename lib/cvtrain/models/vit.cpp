// Vision Transformers with patch 16 in timm's layout and parameter names (cls_token, pos_embed,
// patch_embed.proj, blocks.N.{norm1,attn.qkv,attn.proj,norm2,mlp.fc1,mlp.fc2}, norm, head) and
// timm's initialisation, attention through at::scaled_dot_product_attention (fused kernels on GPU).
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "cvtrain/core/error.h"
#include "cvtrain/models/architectures.h"
#include "cvtrain/models/recompute.h"
#include "cvtrain/models/layers.h"
#include "cvtrain/models/mlp.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
// Named, so that its blocks keep apart from other architectures' where sources are compiled together
// (CVTRAIN_UNITY_BUILD).
namespace vit_model {
namespace {

namespace nn = torch::nn;

constexpr int64_t kPatch = 16;

struct VitSize {
  int64_t width, depth, heads;
};

nn::LayerNorm layer_norm(int64_t width) { return nn::LayerNorm(nn::LayerNormOptions({width}).eps(1e-6)); }

class AttentionImpl : public nn::Module {
 public:
  AttentionImpl(int64_t width, int64_t heads)
      : heads_(heads), qkv(register_module("qkv", nn::Linear(width, 3 * width))), proj(register_module("proj", nn::Linear(width, width))) {}
  at::Tensor forward(const at::Tensor& x) {
    const int64_t b = x.size(0), n = x.size(1), c = x.size(2);
    const at::Tensor parts = qkv(x).reshape({b, n, 3, heads_, c / heads_}).permute({2, 0, 3, 1, 4});
    const at::Tensor out = at::scaled_dot_product_attention(parts[0], parts[1], parts[2]);
    return proj(out.transpose(1, 2).reshape({b, n, c}));
  }

 private:
  int64_t heads_;

 public:
  nn::Linear qkv, proj;
};
TORCH_MODULE(Attention);

class BlockImpl : public nn::Module, public RecomputableBlock {
 public:
  BlockImpl(int64_t width, int64_t heads, double drop_path)
      : drop_path_(drop_path),
        norm1(register_module("norm1", layer_norm(width))),
        attn(register_module("attn", Attention(width, heads))),
        norm2(register_module("norm2", layer_norm(width))),
        mlp(register_module("mlp", Mlp(width))) {}
  at::Tensor forward_block(const at::Tensor& x) override {
    at::Tensor y = x + drop_path(attn(norm1(x)), drop_path_, is_training());
    return y + drop_path(mlp(norm2(y)), drop_path_, is_training());
  }

 private:
  double drop_path_;

 public:
  nn::LayerNorm norm1;
  Attention attn;
  nn::LayerNorm norm2;
  Mlp mlp;
};
TORCH_MODULE(Block);

class PatchEmbedImpl : public nn::Module {
 public:
  PatchEmbedImpl(int64_t in_channels, int64_t width)
      : proj(register_module("proj", nn::Conv2d(nn::Conv2dOptions(in_channels, width, kPatch).stride(kPatch)))) {}
  at::Tensor forward(const at::Tensor& images) { return proj(images).flatten(2).transpose(1, 2); }  // [B, patches, width]
  nn::Conv2d proj;
};
TORCH_MODULE(PatchEmbed);

class VisionTransformer : public Classifier {
 public:
  VisionTransformer(const VitSize& size, const ModelSpec& spec, int64_t in_channels) {
    grad_checkpointing_ = spec.grad_checkpointing;
    const int64_t patches = (spec.image_size / kPatch) * (spec.image_size / kPatch);
    patch_embed_ = register_module("patch_embed", PatchEmbed(in_channels, size.width));
    cls_token_ = register_parameter("cls_token", at::zeros({1, 1, size.width}));
    pos_embed_ = register_parameter("pos_embed", at::zeros({1, patches + 1, size.width}));
    blocks_ = register_module("blocks", nn::ModuleList());
    for (const double rate : drop_path_rates(spec.drop_path, size.depth)) {
      Block block(size.width, size.heads, rate);
      blocks_->push_back(block);
      add_block(*block, *block);
    }
    norm_ = register_module("norm", layer_norm(size.width));
    head_ = register_module("head", nn::Linear(size.width, spec.num_classes));
    initialise();
  }

  at::Tensor forward(const at::Tensor& images) override {
    at::Tensor x = patch_embed_(images);
    x = at::cat({cls_token_.expand({x.size(0), -1, -1}), x}, 1) + pos_embed_;
    for (size_t i = 0; i < blocks_->size(); ++i) x = run_block(i, x);
    return head_(norm_(x).select(1, 0));
  }

 private:
  // timm's init_weights_vit_timm: truncated normal (std 0.02) for linear weights and the position
  // embedding, zero biases, a near-zero class token.
  void initialise() {
    torch::NoGradGuard no_grad;
    trunc_normal_(pos_embed_, 0.0, 0.02, -2.0, 2.0);
    nn::init::normal_(cls_token_, 0.0, 1e-6);
    apply([](nn::Module& module) {
      if (auto* linear = module.as<nn::LinearImpl>()) {
        trunc_normal_(linear->weight, 0.0, 0.02, -2.0, 2.0);
        if (linear->bias.defined()) nn::init::zeros_(linear->bias);
      }
    });
  }

  PatchEmbed patch_embed_{nullptr};
  at::Tensor cls_token_, pos_embed_;
  nn::ModuleList blocks_{nullptr};
  nn::LayerNorm norm_{nullptr};
  nn::Linear head_{nullptr};
};

VitSize vit_size(const std::string& variant) {
  if (variant == "tiny") return {192, 12, 3};
  if (variant == "small") return {384, 12, 6};
  if (variant == "base") return {768, 12, 12};
  return {1024, 24, 16};  // large
}

}  // namespace
}  // namespace vit_model

// model.image_size is a multiple of kPatch: model_problems (models/arch_traits.cpp) checks recipes.
std::shared_ptr<Classifier> make_vit(const std::string& variant, const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<vit_model::VisionTransformer>(vit_model::vit_size(variant), spec, in_channels);
}

}  // namespace cvtrain
