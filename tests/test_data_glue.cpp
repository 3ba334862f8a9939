// GLUE readers: every TSV in ../shared/data/glue read with the exact row and label counts of its README,
// the official layouts of the absent tasks (MNLI, QQP, official RTE) on hand-made files, the dev split for
// tasks without train, and errors for broken files.
#include <doctest/doctest.h>

#include <algorithm>   // std::sort, std::includes
#include <filesystem>  // std::filesystem
#include <map>         // std::map
#include <set>         // std::set
#include <string>      // std::string

#include "darkbert/data/glue.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::GlueTask;
using darkbert::test::message_of;
using darkbert::test::write_file;

namespace {

struct Expected {
  GlueTask task;
  std::size_t rows;
  std::map<int, std::size_t> labels;  // label index -> count (empty for STS-B)
};

// ../shared/data/README.md, "glue/" table and "Label counts".
const std::map<std::string, Expected>& expected_glue_files() {
  static const std::map<std::string, Expected> e = {
      {"MRPC/train.tsv", {GlueTask::mrpc, 3668, {{1, 2474}, {0, 1194}}}},
      {"MRPC/dev.tsv", {GlueTask::mrpc, 408, {{1, 279}, {0, 129}}}},
      {"STS-B/train.tsv", {GlueTask::stsb, 5749, {}}},
      {"STS-B/dev.tsv", {GlueTask::stsb, 1500, {}}},
      {"SST-2/train.tsv", {GlueTask::sst2, 67349, {{1, 37569}, {0, 29780}}}},
      {"SST-2/dev.tsv", {GlueTask::sst2, 872, {{1, 444}, {0, 428}}}},
      {"QNLI/dev.tsv", {GlueTask::qnli, 5463, {{1, 2761}, {0, 2702}}}},  // not_entailment / entailment
      {"RTE-hf/train.tsv", {GlueTask::rte, 2490, {{0, 1249}, {1, 1241}}}},
      {"RTE-hf/dev.tsv", {GlueTask::rte, 277, {{0, 146}, {1, 131}}}},
  };
  return e;
}

darkbert::DataRoot shared_root() { return darkbert::DataRoot::single(darkbert::test::data_dir(), "/nonexistent-cache"); }

}  // namespace

TEST_CASE("every TSV in ../shared/data/glue: exact row and label counts") {
  const auto glue = darkbert::test::data_dir() / "glue";
  std::set<std::string> seen;
  for (const auto& entry : fs::recursive_directory_iterator(glue)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".tsv") continue;
    const auto rel = fs::relative(entry.path(), glue).generic_string();
    if (rel == "MRPC/dev_ids.tsv") continue;  // no header, checked below
    seen.insert(rel);
    const auto it = expected_glue_files().find(rel);
    INFO(rel);
    REQUIRE_MESSAGE(it != expected_glue_files().end(), "a GLUE file with no expected count: add it to this test");
    const auto data = darkbert::read_glue_file(it->second.task, entry.path());
    CHECK(data.examples.size() == it->second.rows);
    CHECK(data.skipped == 0);
    if (it->second.task == GlueTask::stsb) {
      for (const auto& ex : data.examples) {
        CHECK(ex.label == -1);
        CHECK(ex.score >= 0.0);
        CHECK(ex.score <= 5.0);
      }
    } else {
      std::map<int, std::size_t> counts;
      for (const auto& ex : data.examples) ++counts[ex.label];
      CHECK(counts == it->second.labels);
    }
    for (const auto& ex : data.examples) {
      CHECK_FALSE(ex.text_a.empty());
      CHECK(ex.text_b.empty() == !darkbert::glue_task_info(it->second.task).pair);
    }
  }
  CHECK(seen.size() == expected_glue_files().size());
  const auto ids = darkbert::read_mrpc_dev_ids(glue / "MRPC" / "dev_ids.tsv");
  CHECK(ids.size() == 408);
  // dev_ids.tsv lists exactly the pairs of dev.tsv.
  const auto dev = darkbert::read_glue_file(GlueTask::mrpc, glue / "MRPC" / "dev.tsv");
  std::set<std::string> dev_pairs, listed;
  for (const auto& ex : dev.examples) dev_pairs.insert(ex.id);
  for (const auto& [a, b] : ids) listed.insert(a + "-" + b);
  CHECK(dev_pairs == listed);
}

TEST_CASE("quirks: MRPC BOM and literal quotes, SST-2 trailing space, STS-B columns, RTE-hf CSV quoting") {
  const auto root = shared_root();
  const auto mrpc = darkbert::load_glue(root, GlueTask::mrpc, "dev");
  CHECK(mrpc.examples[0].id == "1355540-1355592");
  CHECK(mrpc.examples[0].label == 1);
  CHECK(mrpc.examples[0].text_a == "He said the foodservice pie business doesn't fit the company's long-term growth strategy.");
  CHECK(mrpc.examples[0].text_b == "\"The foodservice pie business does not fit our long-term growth strategy.");
  CHECK(mrpc.examples[0].line == 2);

  const auto sst = darkbert::load_glue(root, GlueTask::sst2, "dev");
  CHECK(sst.examples[0].text_a == "it 's a charming and often affecting journey . ");
  CHECK(sst.examples[0].text_b.empty());

  const auto sts = darkbert::load_glue(root, GlueTask::stsb, "dev");
  CHECK(sts.examples[0].text_a == "A man with a hard hat is dancing.");
  CHECK(sts.examples[0].score == 5.0);
  CHECK(sts.examples[1].score == 4.75);

  const auto rte = darkbert::load_glue(root, GlueTask::rte, "dev");
  CHECK(rte.layout == "hf");
  CHECK(rte.file.parent_path().filename() == "RTE-hf");
  const auto& q = rte.examples[3];  // file line 5: a CSV-quoted sentence1
  CHECK(q.line == 5);
  CHECK(q.text_a.rfind("The Amish community in Pennsylvania", 0) == 0);
  CHECK(q.text_a.find(" \"If someone snaps and wants to do something stupid, there's no distance") != std::string::npos);
  CHECK(q.label == 1);  // 1 = not_entailment
  CHECK(q.id == "3");
  // README: 454 train / 48 dev rows hold quotes; after unquoting none keeps the CSV wrapping.
  for (auto [split, n] : {std::pair{"train", 454}, std::pair{"dev", 48}}) {
    const auto d = darkbert::load_glue(root, GlueTask::rte, split);
    std::size_t with_quote = 0;
    for (const auto& ex : d.examples) {
      with_quote += (ex.text_a + ex.text_b).find('"') != std::string::npos;
      CHECK(ex.text_a.find("\"\"") == std::string::npos);
    }
    CHECK(with_quote == static_cast<std::size_t>(n));
  }
  const auto qnli = darkbert::load_glue(root, GlueTask::qnli, "dev");
  std::size_t qnli_quotes = 0;
  for (const auto& ex : qnli.examples) qnli_quotes += (ex.text_a + ex.text_b).find('"') != std::string::npos;
  CHECK(qnli_quotes == 606);  // README: literal quotes in 606 lines
  CHECK(qnli.examples[0].text_a == "What came into force after the new constitution was herald?");
  CHECK(qnli.examples[0].label == 0);  // entailment
}

TEST_CASE("task info: labels, metrics, splits, names") {
  using darkbert::GlueMetric;
  CHECK(darkbert::glue_task_info(GlueTask::mrpc).metrics == std::vector<GlueMetric>{GlueMetric::accuracy, GlueMetric::f1});
  CHECK(darkbert::glue_task_info(GlueTask::qqp).metrics == std::vector<GlueMetric>{GlueMetric::accuracy, GlueMetric::f1});
  CHECK(darkbert::glue_task_info(GlueTask::stsb).metrics ==
        std::vector<GlueMetric>{GlueMetric::pearson, GlueMetric::spearman});
  for (auto t : {GlueTask::sst2, GlueTask::rte, GlueTask::qnli, GlueTask::mnli})
    CHECK(darkbert::glue_task_info(t).metrics == std::vector<GlueMetric>{GlueMetric::accuracy});
  CHECK(darkbert::glue_task_info(GlueTask::mnli).labels.size() == 3);
  CHECK(darkbert::glue_task_info(GlueTask::stsb).regression);
  CHECK_FALSE(darkbert::glue_task_info(GlueTask::sst2).pair);
  CHECK(darkbert::parse_glue_task("sts-b") == GlueTask::stsb);
  CHECK(darkbert::parse_glue_task("SST2") == GlueTask::sst2);
  CHECK(darkbert::parse_glue_task("mnli") == GlueTask::mnli);
  CHECK(darkbert::to_string(GlueMetric::spearman) == "spearman");
  CHECK(message_of([] { darkbert::parse_glue_task("cola"); }).find("unknown GLUE task 'cola'") != std::string::npos);
  CHECK(message_of([] { darkbert::load_glue(shared_root(), GlueTask::mnli, "dev"); }).find("dev_matched") !=
        std::string::npos);
}

TEST_CASE("official layouts of MNLI, QQP and RTE on hand-made files") {
  const auto dir = darkbert::test::scratch_dir("data_glue_layouts");
  const std::string mnli_header =
      "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
      "sentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n";
  write_file(dir / "glue" / "MNLI" / "dev_matched.tsv",
        mnli_header + "0\t63735\t63735n\tslate\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tThe new rights are nice enough\t"
                      "Everyone really likes the newest benefits \tneutral\tentailment\tneutral\tneutral\tneutral\tneutral\n"
                      "1\t91383\t91383c\tgovernment\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tThis \"site\" includes a list\t"
                      "The site doesn't have a list\tcontradiction\tcontradiction\tcontradiction\tcontradiction\t"
                      "contradiction\tcontradiction\n");
  write_file(dir / "glue" / "MNLI" / "dev_mismatched.tsv",
        mnli_header + "0\t75290\t75290c\tletters\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tYour contribution helped\t"
                      "Your contributions were of no help\tcontradiction\tcontradiction\tcontradiction\tcontradiction\t"
                      "contradiction\tcontradiction\n");
  write_file(dir / "glue" / "MNLI" / "train.tsv",
        "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
        "sentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label\n"
        "0\t31193\t31193n\tgovernment\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tConceptually cream skimming\tProduct and "
        "geography\tneutral\tneutral\n");
  // The original MultiNLI .txt layout (gold_label first) with a no-consensus row.
  write_file(dir / "multinli.txt",
        "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\t"
        "sentence2\tpromptID\tpairID\tgenre\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\n"
        "entailment\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tA\tB\t1\t1e\tfiction\tentailment\t\t\t\t\n"
        "-\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tC\tD\t2\t2n\tfiction\tneutral\tentailment\tcontradiction\tneutral\tentailment\n");
  write_file(dir / "glue" / "QQP" / "dev.tsv",
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        "201359\t303345\t303346\tWhy are African-Americans so beautiful?\tWhy are hispanics so beautiful?\t0\n"
        "263843\t69383\t380476\tI want to pursue PhD in Computer Science about \"social network\"?\tIs it worth it?\t1\n");
  write_file(dir / "glue" / "RTE" / "dev.tsv",
        "index\tsentence1\tsentence2\tlabel\n0\tDana Reeve died.\tChristopher Reeve had an accident.\tnot_entailment\n"
        "1\tYet, we \"now\" are discovering.\tBacteria is winning.\tentailment\n");

  const auto root = darkbert::DataRoot::single(dir, dir / "cache");
  const auto m = darkbert::load_glue(root, GlueTask::mnli, "dev_matched");
  REQUIRE(m.examples.size() == 2);
  CHECK(m.examples[0].id == "63735n");
  CHECK(m.examples[0].text_a == "The new rights are nice enough");
  CHECK(m.examples[0].text_b == "Everyone really likes the newest benefits ");
  CHECK(m.examples[0].label == 2);  // neutral
  CHECK(m.examples[1].text_a == "This \"site\" includes a list");
  CHECK(m.examples[1].label == 0);  // contradiction
  CHECK(darkbert::load_glue(root, GlueTask::mnli, "dev_mismatched").examples.size() == 1);
  CHECK(darkbert::load_glue(root, GlueTask::mnli, "train").examples[0].label == 2);

  const auto orig = darkbert::read_glue_file(GlueTask::mnli, dir / "multinli.txt");
  REQUIRE(orig.examples.size() == 1);
  CHECK(orig.skipped == 1);
  CHECK(orig.examples[0].label == 1);
  CHECK(orig.examples[0].id == "1e");

  const auto qqp = darkbert::load_glue(root, GlueTask::qqp, "dev");
  REQUIRE(qqp.examples.size() == 2);
  CHECK(qqp.examples[1].text_a == "I want to pursue PhD in Computer Science about \"social network\"?");
  CHECK(qqp.examples[1].label == 1);
  CHECK(qqp.examples[0].id == "201359");

  const auto rte = darkbert::load_glue(root, GlueTask::rte, "dev");
  CHECK(rte.layout == "glue");  // glue/RTE is preferred over glue/RTE-hf
  CHECK(rte.examples[0].label == 1);
  CHECK(rte.examples[1].text_a == "Yet, we \"now\" are discovering.");

  // MNLI: train present, so fine-tuning uses it and evaluation the chosen dev file.
  const auto ft = darkbert::load_glue_finetune(root, GlueTask::mnli, {.mnli_eval = "dev_mismatched"});
  CHECK(ft.train.examples.size() == 1);
  CHECK(ft.eval.file.filename() == "dev_mismatched.tsv");
}

TEST_CASE("absent tasks: a clean error naming the task, the places looked and the download") {
  const auto root = shared_root();
  for (const auto& [absent, absent_split] : {std::pair{GlueTask::qqp, "dev"}, std::pair{GlueTask::mnli, "dev_matched"}}) {
    const GlueTask task = absent;
    const char* split = absent_split;
    const auto msg = message_of([&] { darkbert::load_glue(root, task, split); });
    const auto& info = darkbert::glue_task_info(task);
    CHECK(msg.find("GLUE " + std::string(info.name)) != std::string::npos);
    CHECK(msg.find("not part of ../shared/data") != std::string::npos);
    CHECK(msg.find(darkbert::test::data_dir().string()) != std::string::npos);
    CHECK(msg.find(std::string(info.url)) != std::string::npos);
    CHECK(msg.find("download.sh") != std::string::npos);
    // The fine-tuning loader says the same instead of inventing data.
    CHECK(message_of([&] { darkbert::load_glue_finetune(root, task); }).find("not part of") != std::string::npos);
  }
}

TEST_CASE("QNLI (dev only): documented seeded split into fine-tuning and evaluation parts, with caps") {
  const auto root = shared_root();
  const auto a = darkbert::load_glue_finetune(root, GlueTask::qnli);
  const auto b = darkbert::load_glue_finetune(root, GlueTask::qnli);
  CHECK(a.train.examples.size() == 5463 - 1093);  // ceil(0.2 * 5463) = 1093 evaluation rows
  CHECK(a.eval.examples.size() == 1093);
  std::set<std::size_t> train_lines, eval_lines;
  for (const auto& ex : a.train.examples) train_lines.insert(ex.line);
  for (const auto& ex : a.eval.examples) eval_lines.insert(ex.line);
  CHECK(train_lines.size() == a.train.examples.size());
  for (auto l : eval_lines) CHECK(train_lines.count(l) == 0);
  CHECK(train_lines.size() + eval_lines.size() == 5463);
  // File order within each part, same split for the same seed.
  CHECK(std::is_sorted(a.train.examples.begin(), a.train.examples.end(),
                       [](const auto& x, const auto& y) { return x.line < y.line; }));
  for (std::size_t i = 0; i < a.eval.examples.size(); ++i) CHECK(a.eval.examples[i].line == b.eval.examples[i].line);
  CHECK(a.provenance.find("no train split") != std::string::npos);
  CHECK(a.provenance.find("20190820") != std::string::npos);
  // Another seed gives another split.
  const auto c = darkbert::load_glue_finetune(root, GlueTask::qnli, {.seed = 7});
  std::size_t same = 0;
  for (const auto& ex : c.eval.examples) same += eval_lines.count(ex.line);
  CHECK(same < c.eval.examples.size() / 2);
  // The replication's caps: first 3000 / 500 of each part.
  const auto capped = darkbert::load_glue_finetune(root, GlueTask::qnli, {.max_train = 3000, .max_eval = 500});
  CHECK(capped.train.examples.size() == 3000);
  CHECK(capped.eval.examples.size() == 500);
  CHECK(capped.eval.examples[499].line == a.eval.examples[499].line);
  // A task with train.tsv uses it as is.
  const auto sst = darkbert::load_glue_finetune(root, GlueTask::sst2, {.max_train = 3000, .max_eval = 500});
  CHECK(sst.train.file.filename() == "train.tsv");
  CHECK(sst.train.examples.size() == 3000);
  CHECK(sst.eval.examples.size() == 500);
  CHECK(sst.train.examples.front().line == 2);
  CHECK(message_of([&] { darkbert::load_glue_finetune(root, GlueTask::qnli, {.eval_fraction = 1.0}); })
            .find("eval_fraction") != std::string::npos);
}

TEST_CASE("max_rows keeps the first rows in file order") {
  const auto d = darkbert::load_glue(shared_root(), GlueTask::sst2, "train", {.max_rows = 10});
  REQUIRE(d.examples.size() == 10);
  CHECK(d.examples[9].line == 11);
}

TEST_CASE("broken GLUE files: errors name the file and line") {
  const auto dir = darkbert::test::scratch_dir("data_glue_broken");
  auto msg = message_of([&] {
    darkbert::read_glue_file(GlueTask::sst2, write_file(dir / "fields.tsv", "sentence\tlabel\ngood movie \t1\nbad\t0\textra\n"));
  });
  CHECK(msg.find("fields.tsv:3:") != std::string::npos);
  CHECK(msg.find("expected 2") != std::string::npos);

  msg = message_of([&] {
    darkbert::read_glue_file(GlueTask::qnli, write_file(dir / "label.tsv", "index\tquestion\tsentence\tlabel\n0\tq\ts\tentails\n"));
  });
  CHECK(msg.find("label.tsv:2: label 'entails' is not a QNLI label") != std::string::npos);

  msg = message_of([&] {
    darkbert::read_glue_file(GlueTask::rte, write_file(dir / "index.tsv", "sentence1\tsentence2\tlabel\tidx\na\tb\t2\t0\n"));
  });
  CHECK(msg.find("index.tsv:2: label '2' is not a RTE label index") != std::string::npos);

  const std::string sts_header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n";
  msg = message_of([&] {
    darkbert::read_glue_file(GlueTask::stsb, write_file(dir / "score.tsv", sts_header + "0\tg\tf\ty\to\ts\ts\ta\tb\t5.5\n"));
  });
  CHECK(msg.find("score.tsv:2: score 5.5 is outside [0, 5]") != std::string::npos);
  msg = message_of([&] {
    darkbert::read_glue_file(GlueTask::stsb, write_file(dir / "nan.tsv", sts_header + "0\tg\tf\ty\to\ts\ts\ta\tb\tabc\n"));
  });
  CHECK(msg.find("nan.tsv:2: score 'abc' is not a number") != std::string::npos);

  msg = message_of([&] { darkbert::read_glue_file(GlueTask::mrpc, write_file(dir / "header.tsv", "a\tb\n1\t2\n")); });
  CHECK(msg.find("header.tsv:1: header of no known GLUE MRPC layout") != std::string::npos);

  msg = message_of([&] {
    darkbert::read_glue_file(GlueTask::rte,
                             write_file(dir / "quote.tsv", "sentence1\tsentence2\tlabel\tidx\n\"open quote\tb\t0\t0\n"));
  });
  CHECK(msg.find("quote.tsv:2:") != std::string::npos);

  msg = message_of([&] { darkbert::read_mrpc_dev_ids(write_file(dir / "ids.tsv", "1\t2\n3\n")); });
  CHECK(msg.find("ids.tsv:2: expected 2 tab-separated ids") != std::string::npos);
}
