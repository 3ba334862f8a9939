// Fuzz target: a golden cases file (darkbert-golden-cases/1 JSON) read into CaseFile; every accepted
// batch must pass its own size checks or be refused by Batch::validate with a darkbert::error.
#include "darkbert/model/case_file.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("cases");
  std::filesystem::create_directories(dir / "cases");
  const auto path = dir / "cases" / "model.json";
  fuzz::put(path, {reinterpret_cast<const char*>(data), size});
  const auto file = CaseFile::read(path);
  for (const auto& c : file.cases) {
    fuzz::check(c.batch.input_ids.size() == static_cast<std::size_t>(c.batch.batch_size * c.batch.length),
                "input_ids hold B x L values");
    try {
      c.batch.validate();
    } catch (const error&) {
    }
    (void)c.policies<float>();
  }
}
