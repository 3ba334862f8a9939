// Loads a golden checkpoint through the installed headers, runs one case and compares with the expected
// last hidden state. Usage: consumer GOLDEN_DIR
#include <darkbert/darkbert.hpp>

#include <cmath>     // std::abs
#include <iostream>  // std::cout

#include <xtensor/xnpy.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer GOLDEN_DIR\n";
    return 2;
  }
  const std::filesystem::path golden = argv[1];
  const auto cases = darkbert::CaseFile::read(golden / "cases" / "bert_model.json");
  const auto model = darkbert::Transformer<float>::load(cases.model_dir);
  const auto& c = cases.cases.front();
  const auto out = model.forward(c.batch);
  const auto expected = xt::load_npy<double>(c.outputs.at("last_hidden_state").string());
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    worst = std::max(worst, std::abs(out.last_hidden_state.data()[i] - expected.data()[i]) / (1 + std::abs(expected.data()[i])));
  std::cout << "darkbert " << darkbert::version << ": " << c.name << " last_hidden_state max rel diff " << worst << "\n";
  return worst <= 1e-4 ? 0 : 1;
}
