// The gradient tensors of real models, as (name, float32 element count), in
// the order a framework's backward pass produces them (last layer first).
// Shared by the placement tests and the training-step replay benchmark.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace caravan::models {

struct Layer {
  std::string name;
  size_t elements;
};

// ResNet-50 (torchvision layout): 53 convolutions, 53 batch norms (gamma
// and beta each), the 2048x1000 classifier and its bias: 161 tensors,
// 25,557,032 parameters.
inline std::vector<Layer> resnet50() {
  std::vector<Layer> t;
  auto conv = [&](const std::string& n, size_t out, size_t in, size_t k) {
    t.push_back({n + ".weight", out * in * k * k});
  };
  auto bn = [&](const std::string& n, size_t c) {
    t.push_back({n + ".weight", c});
    t.push_back({n + ".bias", c});
  };
  conv("conv1", 64, 3, 7);
  bn("bn1", 64);
  const size_t blocks[] = {3, 4, 6, 3}, planes[] = {64, 128, 256, 512};
  size_t in = 64;
  for (int l = 0; l < 4; ++l) {
    size_t p = planes[l];
    for (size_t b = 0; b < blocks[l]; ++b) {
      std::string pre = "layer" + std::to_string(l + 1) + "." + std::to_string(b) + ".";
      conv(pre + "conv1", p, in, 1);
      bn(pre + "bn1", p);
      conv(pre + "conv2", p, p, 3);
      bn(pre + "bn2", p);
      conv(pre + "conv3", 4 * p, p, 1);
      bn(pre + "bn3", 4 * p);
      if (b == 0) {
        conv(pre + "downsample.0", 4 * p, in, 1);
        bn(pre + "downsample.1", 4 * p);
      }
      in = 4 * p;
    }
  }
  t.push_back({"fc.weight", 1000 * 2048});
  t.push_back({"fc.bias", 1000});
  std::reverse(t.begin(), t.end());
  return t;
}

// BERT-large (uncased, Hugging Face layout): embeddings (30522-word
// vocabulary, 512 positions, 2 token types, layer norm), 24 encoder layers
// of hidden size 1024 and feed-forward 4096, and the pooler: 391 tensors,
// 335,141,888 parameters.
inline std::vector<Layer> bert_large() {
  const size_t h = 1024, ff = 4096;
  std::vector<Layer> t;
  auto dense = [&](const std::string& n, size_t out, size_t in) {
    t.push_back({n + ".weight", out * in});
    t.push_back({n + ".bias", out});
  };
  auto norm = [&](const std::string& n) {
    t.push_back({n + ".weight", h});
    t.push_back({n + ".bias", h});
  };
  t.push_back({"embeddings.word_embeddings.weight", 30522 * h});
  t.push_back({"embeddings.position_embeddings.weight", 512 * h});
  t.push_back({"embeddings.token_type_embeddings.weight", 2 * h});
  norm("embeddings.LayerNorm");
  for (int l = 0; l < 24; ++l) {
    std::string pre = "encoder.layer." + std::to_string(l) + ".";
    dense(pre + "attention.self.query", h, h);
    dense(pre + "attention.self.key", h, h);
    dense(pre + "attention.self.value", h, h);
    dense(pre + "attention.output.dense", h, h);
    norm(pre + "attention.output.LayerNorm");
    dense(pre + "intermediate.dense", ff, h);
    dense(pre + "output.dense", h, ff);
    norm(pre + "output.LayerNorm");
  }
  dense("pooler.dense", h, h);
  std::reverse(t.begin(), t.end());
  return t;
}

inline size_t total_elements(const std::vector<Layer>& layers) {
  size_t n = 0;
  for (auto& l : layers) n += l.elements;
  return n;
}

}  // namespace caravan::models
