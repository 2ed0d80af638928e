// SegFormer (Xie et al. 2021): the Mix Transformer encoder MiT-B0..B2 and the all-MLP decoder, in the
// parameter names of the published Hugging Face checkpoints (nvidia/mit-b0, nvidia/segformer-b0-
// finetuned-ade-512-512: `segformer.encoder.block.1.0.attention.self.sr.weight`,
// `decode_head.linear_c.2.proj.weight`), which transformers 4 writes and transformers 5 renames on
// load. A block works on [B, H, W, C] so it is a function of one tensor (recomputation, FSDP); the
// logits come out at the input's size (bilinear, align_corners false, as the references' loss).
#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <array>
#include <cmath>

#include "cvtrain/models/architectures.h"
#include "cvtrain/models/batch_norm.h"
#include "cvtrain/models/layers.h"
#include "cvtrain/models/recompute.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
// Named, so that its blocks keep apart from other architectures' where sources are compiled together
// (CVTRAIN_UNITY_BUILD).
namespace segformer_model {
namespace {

namespace nn = torch::nn;

constexpr int64_t kStages = 4;
constexpr int64_t kMlpRatio = 4;
constexpr double kDecoderDropout = 0.1;  // transformers' classifier_dropout_prob

struct MitSize {
  std::array<int64_t, kStages> widths, depths;
  int64_t decoder_width;
};
constexpr std::array<int64_t, kStages> kHeads{1, 2, 5, 8};
constexpr std::array<int64_t, kStages> kReduction{8, 4, 2, 1};  // keys and values are pooled by this stride
constexpr std::array<int64_t, kStages> kPatch{7, 3, 3, 3}, kStride{4, 2, 2, 2};

nn::LayerNorm layer_norm(int64_t width) { return nn::LayerNorm(nn::LayerNormOptions({width})); }  // eps 1e-5, as theirs

at::Tensor to_channels_first(const at::Tensor& x) { return x.permute({0, 3, 1, 2}); }  // [B,H,W,C] -> [B,C,H,W]
at::Tensor to_channels_last(const at::Tensor& x) { return x.permute({0, 2, 3, 1}); }

// Efficient self-attention: queries from every token, keys and values from the map pooled by a
// strided convolution (`sr`) and normalised.
class SelfAttentionImpl : public nn::Module {
 public:
  SelfAttentionImpl(int64_t width, int64_t heads, int64_t reduction)
      : heads_(heads),
        query(register_module("query", nn::Linear(width, width))),
        key(register_module("key", nn::Linear(width, width))),
        value(register_module("value", nn::Linear(width, width))) {
    if (reduction > 1) {
      sr = register_module("sr", nn::Conv2d(nn::Conv2dOptions(width, width, reduction).stride(reduction)));
      norm = register_module("layer_norm", layer_norm(width));
    }
  }

  at::Tensor forward(const at::Tensor& x) {  // [B,H,W,C] -> [B,H*W,C]
    const int64_t b = x.size(0), c = x.size(3);
    const at::Tensor tokens = x.reshape({b, -1, c});
    at::Tensor pooled = tokens;
    if (sr) pooled = norm(to_channels_last(sr(to_channels_first(x))).reshape({b, -1, c}));
    const auto heads = [&](const at::Tensor& t) { return t.reshape({b, t.size(1), heads_, c / heads_}).transpose(1, 2); };
    const at::Tensor out = at::scaled_dot_product_attention(heads(query(tokens)), heads(key(pooled)), heads(value(pooled)));
    return out.transpose(1, 2).reshape({b, -1, c});
  }

 private:
  int64_t heads_;

 public:
  nn::Linear query, key, value;
  nn::Conv2d sr{nullptr};
  nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(SelfAttention);

class AttentionImpl : public nn::Module {
 public:
  AttentionImpl(int64_t width, int64_t heads, int64_t reduction)
      : self(register_module("self", SelfAttention(width, heads, reduction))),
        output(register_module("output", std::make_shared<nn::Module>())) {
    dense = output->register_module("dense", nn::Linear(width, width));
  }
  at::Tensor forward(const at::Tensor& x) { return dense(self(x)); }
  SelfAttention self;
  std::shared_ptr<nn::Module> output;
  nn::Linear dense{nullptr};
};
TORCH_MODULE(Attention);

// Mix-FFN: a 3x3 depthwise convolution between the two linear layers stands in for position embeddings.
class MixFfnImpl : public nn::Module {
 public:
  explicit MixFfnImpl(int64_t width)
      : dense1(register_module("dense1", nn::Linear(width, kMlpRatio * width))),
        holder(register_module("dwconv", std::make_shared<nn::Module>())),
        dense2(register_module("dense2", nn::Linear(kMlpRatio * width, width))) {
    const int64_t hidden = kMlpRatio * width;
    dwconv = holder->register_module("dwconv", nn::Conv2d(nn::Conv2dOptions(hidden, hidden, 3).padding(1).groups(hidden)));
  }
  at::Tensor forward(const at::Tensor& x) {  // [B,H,W,C] -> [B,H,W,C]
    return dense2(at::gelu(to_channels_last(dwconv(to_channels_first(dense1(x))))));
  }
  nn::Linear dense1;
  std::shared_ptr<nn::Module> holder;
  nn::Conv2d dwconv{nullptr};
  nn::Linear dense2;
};
TORCH_MODULE(MixFfn);

class BlockImpl : public nn::Module, public RecomputableBlock {
 public:
  BlockImpl(int64_t width, int64_t heads, int64_t reduction, double drop_path)
      : drop_path_(drop_path),
        norm1(register_module("layer_norm_1", layer_norm(width))),
        attention(register_module("attention", Attention(width, heads, reduction))),
        norm2(register_module("layer_norm_2", layer_norm(width))),
        mlp(register_module("mlp", MixFfn(width))) {}
  at::Tensor forward_block(const at::Tensor& x) override {  // [B,H,W,C]
    const at::Tensor y = x + drop_path(attention(norm1(x)).reshape(x.sizes()), drop_path_, is_training());
    return y + drop_path(mlp(norm2(y)), drop_path_, is_training());
  }

 private:
  double drop_path_;

 public:
  nn::LayerNorm norm1;
  Attention attention;
  nn::LayerNorm norm2;
  MixFfn mlp;
};
TORCH_MODULE(Block);

// Overlapping patches: a strided convolution wider than its stride, then LayerNorm.
class PatchEmbedImpl : public nn::Module {
 public:
  PatchEmbedImpl(int64_t in, int64_t width, int64_t patch, int64_t stride)
      : proj(register_module("proj", nn::Conv2d(nn::Conv2dOptions(in, width, patch).stride(stride).padding(patch / 2)))),
        norm(register_module("layer_norm", layer_norm(width))) {}
  at::Tensor forward(const at::Tensor& images) { return norm(to_channels_last(proj(images))); }  // [B,H,W,C]
  nn::Conv2d proj;
  nn::LayerNorm norm;
};
TORCH_MODULE(PatchEmbed);

class SegFormer : public Classifier {
 public:
  SegFormer(const MitSize& size, const ModelSpec& spec, int64_t in_channels) {
    grad_checkpointing_ = spec.grad_checkpointing;
    auto segformer = register_module("segformer", std::make_shared<nn::Module>());
    auto encoder = segformer->register_module("encoder", std::make_shared<nn::Module>());
    patch_embeddings_ = encoder->register_module("patch_embeddings", nn::ModuleList());
    auto stage_blocks = encoder->register_module("block", nn::ModuleList());
    stage_norms_ = encoder->register_module("layer_norm", nn::ModuleList());
    int64_t total_depth = 0;
    for (int64_t depth : size.depths) total_depth += depth;
    const std::vector<double> rates = drop_path_rates(spec.drop_path, total_depth);
    size_t block_index = 0;
    for (int64_t s = 0; s < kStages; ++s) {
      const int64_t width = size.widths[s];
      patch_embeddings_->push_back(PatchEmbed(s == 0 ? in_channels : size.widths[s - 1], width, kPatch[s], kStride[s]));
      nn::ModuleList blocks;
      for (int64_t j = 0; j < size.depths[s]; ++j) {
        Block block(width, kHeads[s], kReduction[s], rates[block_index++]);
        blocks->push_back(block);
        add_block(*block, *block);
      }
      stage_blocks->push_back(blocks);
      stage_norms_->push_back(layer_norm(width));
      last_block_of_stage_.push_back(block_index - 1);
    }
    build_decoder(size, spec.num_classes);
    initialise();
  }

  std::string encoder_prefix() const override { return "segformer."; }

  at::Tensor forward(const at::Tensor& images) override {
    std::vector<at::Tensor> features;  // each stage's normalised map, [B,H,W,C]
    at::Tensor x = images;
    size_t block = 0;
    for (int64_t s = 0; s < kStages; ++s) {
      x = patch_embeddings_[s]->as<PatchEmbedImpl>()->forward(x);
      for (; block <= last_block_of_stage_[s]; ++block) x = run_block(block, x);
      features.push_back(stage_norms_[s]->as<nn::LayerNormImpl>()->forward(x));
      x = to_channels_first(features.back()).contiguous();
    }
    return decode(features, {images.size(2), images.size(3)});
  }

 private:
  // The all-MLP decoder: each stage's map projected to one width, brought to stage 1's size,
  // concatenated deepest first, fused by a 1x1 convolution with BatchNorm and ReLU, classified.
  void build_decoder(const MitSize& size, int64_t classes) {
    auto head = register_module("decode_head", std::make_shared<nn::Module>());
    linear_c_ = head->register_module("linear_c", nn::ModuleList());
    for (int64_t width : size.widths) {
      auto projection = std::make_shared<nn::Module>();
      projection->register_module("proj", nn::Linear(width, size.decoder_width));
      linear_c_->push_back(projection);
    }
    const int64_t d = size.decoder_width;
    linear_fuse_ = head->register_module("linear_fuse", nn::Conv2d(nn::Conv2dOptions(kStages * d, d, 1).bias(false)));
    batch_norm_ = head->register_module("batch_norm", SyncableBatchNorm2d(d));
    dropout_ = head->register_module("dropout", nn::Dropout(kDecoderDropout));
    classifier_ = head->register_module("classifier", nn::Conv2d(nn::Conv2dOptions(d, classes, 1)));
  }

  at::Tensor decode(const std::vector<at::Tensor>& features, at::IntArrayRef input_size) {
    const std::vector<int64_t> quarter{features[0].size(1), features[0].size(2)};
    std::vector<at::Tensor> maps;
    for (int64_t s = kStages - 1; s >= 0; --s) {
      auto* projection = linear_c_[s]->named_children()["proj"]->as<nn::LinearImpl>();
      at::Tensor map = to_channels_first(projection->forward(features[s]));
      if (s > 0) map = at::upsample_bilinear2d(map, quarter, /*align_corners=*/false);
      maps.push_back(map);
    }
    at::Tensor x = at::relu(batch_norm_->forward(linear_fuse_(at::cat(maps, 1).contiguous())));
    return at::upsample_bilinear2d(classifier_(dropout_(x)), input_size, /*align_corners=*/false);
  }

  // mmseg's MiT initialisation: truncated normal (std 0.02) for linear weights, He's fan-out normal
  // for convolutions, zero biases, unit LayerNorms (the LayerNorms' own defaults).
  void initialise() {
    torch::NoGradGuard no_grad;
    apply([](nn::Module& module) {
      if (auto* linear = module.as<nn::LinearImpl>()) {
        trunc_normal_(linear->weight, 0.0, 0.02, -2.0, 2.0);
        if (linear->bias.defined()) nn::init::zeros_(linear->bias);
      } else if (auto* conv = module.as<nn::Conv2dImpl>()) {
        const auto& o = conv->options;
        const double fan_out = static_cast<double>(o.kernel_size()->at(0) * o.kernel_size()->at(1) * o.out_channels() / o.groups());
        nn::init::normal_(conv->weight, 0.0, std::sqrt(2.0 / fan_out));
        if (conv->bias.defined()) nn::init::zeros_(conv->bias);
      }
    });
  }

  nn::ModuleList patch_embeddings_{nullptr}, stage_norms_{nullptr}, linear_c_{nullptr};
  std::vector<size_t> last_block_of_stage_;
  nn::Conv2d linear_fuse_{nullptr}, classifier_{nullptr};
  SyncableBatchNorm2d batch_norm_{nullptr};
  nn::Dropout dropout_{nullptr};
};

MitSize mit_size(const std::string& variant) {
  if (variant == "b0") return {{32, 64, 160, 256}, {2, 2, 2, 2}, 256};
  if (variant == "b1") return {{64, 128, 320, 512}, {2, 2, 2, 2}, 256};
  return {{64, 128, 320, 512}, {3, 4, 6, 3}, 768};  // b2
}

}  // namespace
}  // namespace segformer_model

std::shared_ptr<Classifier> make_segformer(const std::string& variant, const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<segformer_model::SegFormer>(segformer_model::mit_size(variant), spec, in_channels);
}

}  // namespace cvtrain
