// Conan test_package: includes the packaged headers, runs a forward pass of a small random BERT (BLAS,
// OpenMP and the dispatched kernel linked and working) and writes one attention map as a PNG
// (darkbert::viz, cairo). Prints "darkbert <version> (kernel: ...): ok" on success.
#include <darkbert/darkbert.hpp>
#include <darkbert/viz/heatmap.hpp>

#include <cmath>       // std::abs
#include <filesystem>  // std::filesystem::temp_directory_path, file_size
#include <iostream>    // std::cout, std::cerr

int main() {
  const auto config = darkbert::ModelConfig::bert_shape(2, 64, 4, 128, 100, 32);
  const auto model = darkbert::Transformer<float>::random(config, darkbert::TaskHeads{}, 7);
  darkbert::Batch batch;
  batch.batch_size = 1;
  batch.length = 20;
  for (int i = 0; i < 20; ++i) batch.input_ids.push_back(1 + i);
  const auto out = model.forward(batch);

  // Every attention row is a distribution over the keys.
  double worst = 0;
  for (int i = 0; i < 20; ++i) {
    double sum = 0;
    for (int j = 0; j < 20; ++j) sum += out.attentions(1, 0, 3, i, j);
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  if (!(worst < 1e-5)) {
    std::cerr << "attention rows do not sum to 1 (worst " << worst << ")\n";
    return 1;
  }

  const auto png = std::filesystem::temp_directory_path() / "darkbert_test_package.png";
  darkbert::write_heatmap(png, 20, 20, &out.attentions(1, 0, 3, 0, 0));
  if (std::filesystem::file_size(png) == 0) {
    std::cerr << png << " is empty\n";
    return 1;
  }
  std::filesystem::remove(png);
  std::cout << "darkbert " << darkbert::version << " (kernel: " << darkbert::kernel_path_name(darkbert::kernel_path())
            << "): ok\n";
  return 0;
}
