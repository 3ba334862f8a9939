// Fuzz target: a GLUE TSV file read as each of the seven tasks (the layout is picked from its header),
// and as a plain TSV with and without quoting.
#include "darkbert/data/glue.hpp"
#include "darkbert/data/tsv.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("glue");
  const auto path = dir / "dev.tsv";
  fuzz::put(path, {reinterpret_cast<const char*>(data), size});
  for (GlueTask task : all_glue_tasks) {
    try {
      const auto d = read_glue_file(task, path);
      const auto labels = static_cast<int>(glue_task_info(task).labels.size());
      for (const auto& e : d.examples)
        fuzz::check(e.label >= -1 && e.label < labels && e.score >= 0 && e.score <= 5, "labels and scores in range");
    } catch (const error&) {
    }
  }
  for (Quoting q : {Quoting::none, Quoting::csv}) {
    try {
      const auto t = read_tsv(path, {.quoting = q});
      for (const auto& row : t.rows) fuzz::check(row.fields.size() == t.header.size(), "rows have the header's width");
    } catch (const error&) {
    }
  }
}
