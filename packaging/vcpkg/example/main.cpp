// Loads a golden checkpoint through the installed headers, runs one case and compares with the expected
// last hidden state; prints the kernel path the process chose (compiled with default flags, it should
// still be avx512 on an AVX-512 CPU). Usage: consumer GOLDEN_DIR
#include <darkbert/darkbert.hpp>

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
  const double worst = darkbert::max_relative_error(out.last_hidden_state, expected);
  std::cout << "darkbert " << darkbert::version << " (kernel: " << darkbert::kernel_path_name(darkbert::kernel_path())
            << "): " << c.name << " last_hidden_state max rel diff " << worst << "\n";
  return worst <= 1e-4 ? 0 : 1;
}
