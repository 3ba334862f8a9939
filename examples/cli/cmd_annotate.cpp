// darkbert annotate --input FILE.conllu --output FILE.conllu [--model PATH] [--score]
// darkbert annotate --text --input FILE.txt --output FILE.conllu          (one sentence per line)
// darkbert annotate --train TRAIN.conllu --save-model PATH [--input ... --output ...]
//
// Predicts UPOS and subject/object relations (include/darkbert/data/annotator.hpp). For CoNLL-U input the
// words, ids, comments, multi-word tokens and every other column are kept; UPOS becomes the prediction and
// DEPREL becomes nsubj / nsubj:pass / obj for predicted subjects and objects and "_" for every other word,
// so the output can be scored against the input with standard CoNLL-U tools (UPOS accuracy) or --score.
// With --text, each non-empty line is word-tokenized (word_tokenizer.hpp) and written as a CoNLL-U
// sentence (# text, FORM, UPOS, DEPREL, SpaceAfter=No; other columns "_").
//
// Model: --model PATH loads a saved annotator; --train FILE trains one (default options) and --save-model
// keeps it; otherwise the default annotator is used: <cache>/models/annotator-en_ewt-v1.txt, trained on
// ud/en_ewt-ud-train.conllu from the data root on first use (about half a minute) and cached.
//
// --score compares the predictions with the input's own UPOS/DEPREL (gold) and prints JSON to stdout:
// UPOS accuracy, subject / object / pooled precision, recall, F1 with the gold word segmentation, and the
// same on raw text (each sentence's "# text" re-tokenized, words aligned by byte span).
//
//   darkbert annotate --input ud/en_ewt-ud-dev.conllu --output dev.pred.conllu --score

#include <CLI/CLI.hpp>

#include <chrono>      // std::chrono::steady_clock
#include <cstdio>      // std::fprintf
#include <filesystem>  // std::filesystem::path, create_directories
#include <fstream>     // std::ifstream
#include <iostream>    // std::cout, std::cerr
#include <memory>      // std::make_shared
#include <optional>    // std::optional
#include <string>      // std::string, std::getline
#include <vector>      // std::vector

#include <nlohmann/json.hpp>  // the --score report

#include "commands.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/data/annotator.hpp"
#include "darkbert/data/conllu.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/word_tokenizer.hpp"
#include "darkbert/tokenizer/unicode.hpp"  // UTF-8 check of --text lines

namespace darkbert::cli {

struct AnnotateOptions {
  std::string input, output, model, train, save_model;
  bool text = false;
  bool score = false;
};

namespace detail {

inline nlohmann::ordered_json prf_json(const PrfCounts& c) {
  return {{"precision", c.precision()}, {"recall", c.recall()}, {"f1", c.f1()},
          {"tp", c.tp}, {"fp", c.fp}, {"fn", c.fn}};
}

inline nlohmann::ordered_json scores_json(const AnnotatorScores& s) {
  nlohmann::ordered_json j;
  j["sentences"] = s.sentences;
  j["gold_words"] = s.gold_words;
  j["predicted_words"] = s.predicted_words;
  j["matched_words"] = s.matched_words;
  j["upos"] = prf_json(s.upos);
  j["upos_accuracy"] = s.upos_accuracy();
  j["subject"] = prf_json(s.subject);
  j["object"] = prf_json(s.object);
  j["subject_object"] = prf_json(s.subject_object());
  return j;
}

// One CoNLL-U sentence per line of raw text.
inline std::vector<ConlluSentence> sentences_from_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  require(static_cast<bool>(in), file, ": cannot open for reading");
  std::vector<ConlluSentence> out;
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // CoNLL-U is UTF-8; a line that is not would be copied into # text and FORM as it is.
    std::vector<Word> words;
    try {
      unicode::decode_utf8(line);
      words = tokenize_words(line);  // refuses a line of more than max_sentence_words words
    } catch (const error& e) {
      fail(file, ":", line_no, ": ", e.what());
    }
    if (words.empty()) continue;
    ConlluSentence s;
    s.line = line_no;
    s.sent_id = std::to_string(line_no);
    s.text = line;
    s.comments = {"# sent_id = " + s.sent_id, "# text = " + line};
    for (std::size_t i = 0; i < words.size(); ++i) {
      ConlluWord w;
      w.id = static_cast<int>(i) + 1;
      w.form = words[i].form;
      for (std::string* column : {&w.lemma, &w.upos, &w.xpos, &w.feats, &w.deprel, &w.deps}) column->assign(1, '_');
      const bool glued = i + 1 < words.size() && words[i + 1].span.begin == words[i].span.end;
      w.misc = glued ? "SpaceAfter=No" : "_";
      s.words.push_back(std::move(w));
    }
    out.push_back(std::move(s));
  }
  require(!in.bad(), file, ": read error");
  return out;
}

}  // namespace detail

inline void run_annotate(const AnnotateOptions& o) {
  require(!o.input.empty() || !o.train.empty(), "annotate: give --input (and --output), or --train to train a model");
  require(o.input.empty() || !o.output.empty(), "annotate: --input needs --output");
  require(o.save_model.empty() || !o.train.empty(), "annotate: --save-model needs --train");
  require(o.model.empty() || o.train.empty(), "annotate: give either --model or --train, not both");
  require(!(o.score && o.text), "annotate: --score needs gold CoNLL-U input, not --text");

  // Read the input first, so a bad file fails before any training.
  std::vector<ConlluSentence> input;
  if (!o.input.empty()) input = o.text ? detail::sentences_from_text(o.input) : read_conllu(o.input);
  if (o.score)
    for (const auto& s : input)
      for (const auto& w : s.words)
        require(w.upos != "_" && !w.upos.empty(), o.input, ":", s.line, ": --score needs gold UPOS, but word ",
                w.id, " of the sentence starting here has none");

  const auto start = std::chrono::steady_clock::now();
  Annotator annotator;
  if (!o.model.empty()) {
    annotator = Annotator::load(std::filesystem::path(o.model));
  } else if (!o.train.empty()) {
    annotator = Annotator::train(read_conllu(o.train), {}, std::filesystem::path(o.train).filename().string(),
                                 &std::cerr);
    if (!o.save_model.empty()) {
      annotator.save(std::filesystem::path(o.save_model));
      std::fprintf(stderr, "annotate: saved the model to %s\n", o.save_model.c_str());
    }
  } else {
    annotator = default_annotator(DataRoot::from_environment(), &std::cerr);
  }
  const auto loaded = std::chrono::steady_clock::now();
  if (input.empty() && o.input.empty()) return;

  std::vector<ConlluSentence> predicted;
  predicted.reserve(input.size());
  for (const auto& s : input) predicted.push_back(annotator.annotate_conllu(s));
  const std::filesystem::path out_path(o.output);
  if (out_path.has_parent_path()) std::filesystem::create_directories(out_path.parent_path());
  write_conllu(out_path, predicted);
  const auto done = std::chrono::steady_clock::now();
  std::size_t words = 0;
  for (const auto& s : predicted) words += s.words.size();
  auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::fprintf(stderr, "annotate: %zu sentences (%zu words) -> %s; model %.2f s, annotation %.2f s\n",
               predicted.size(), words, o.output.c_str(), seconds(start, loaded), seconds(loaded, done));

  if (o.score) {
    nlohmann::ordered_json report;
    report["input"] = o.input;
    report["model"] = annotator.provenance();
    report["gold_segmentation"] = detail::scores_json(evaluate_annotator(annotator, input));
    bool has_text = true;
    for (const auto& s : input) has_text = has_text && !s.text.empty();
    if (has_text) report["raw_text"] = detail::scores_json(evaluate_annotator_raw(annotator, input, o.input));
    std::cout << report.dump(2) << "\n";  // flushed, and checked, by main
  }
}

void add_annotate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("annotate", "Predict UPOS and subjects/objects (nsubj, nsubj:pass, obj)");
  cmd->footer("Example: darkbert annotate --input ../shared/data/ud/en_ewt-ud-dev.conllu --output dev.pred.conllu --score");
  auto o = std::make_shared<AnnotateOptions>();
  cmd->add_option("--input", o->input, "CoNLL-U input (or raw text with --text)");
  cmd->add_option("--output", o->output, "CoNLL-U output with predicted UPOS and DEPREL");
  cmd->add_option("--model", o->model, "A saved annotator (default: the cached one, trained on first use)");
  cmd->add_option("--train", o->train, "Train a new annotator on this CoNLL-U file instead");
  cmd->add_option("--save-model", o->save_model, "With --train: save the trained annotator here");
  cmd->add_flag("--text", o->text, "Input is raw text, one sentence per line");
  cmd->add_flag("--score", o->score, "Score against the input's gold UPOS/DEPREL; JSON report on stdout");
  cmd->callback([o] { run_annotate(*o); });
}

}  // namespace darkbert::cli
