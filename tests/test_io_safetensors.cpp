// safetensors reading and writing, and every malformed-file error path.
#include <doctest/doctest.h>

#include <cstdint>     // std::uint16_t
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ofstream
#include <string>      // std::string

#include "darkbert/io/safetensors.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;

// Writes a file whose header is `header` (not padded) followed by `data_bytes` zero bytes.
fs::path write_raw(const fs::path& dir, const std::string& name, const std::string& header, std::size_t data_bytes,
                   std::uint64_t declared_len = ~0ull) {
  const auto path = dir / name;
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t len = declared_len == ~0ull ? header.size() : declared_len;
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header;
  out << std::string(data_bytes, '\0');
  return path;
}

std::string safetensors_error(const fs::path& path) {
  try {
    darkbert::SafetensorsFile file(path);
  } catch (const darkbert::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("write then read round-trips values, names, shapes and metadata") {
  const auto dir = darkbert::test::scratch_dir("safetensors_roundtrip");
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const double b[2] = {0.25, -7.5};
  std::map<std::string, darkbert::TensorBytes> tensors;
  tensors["a.weight"] = darkbert::tensor_bytes(a, {2, 3});
  tensors["b"] = darkbert::tensor_bytes(b, {2});
  darkbert::write_safetensors(dir / "x.safetensors", tensors);
  darkbert::SafetensorsFile file(dir / "x.safetensors");
  CHECK(file.tensors().size() == 2);
  CHECK(file.metadata().at("format") == "pt");
  CHECK(file.tensor("a.weight").shape == std::vector<std::int64_t>{2, 3});
  std::vector<double> got(6);
  file.read_as<double>("a.weight", got.data());  // F32 -> double
  CHECK(got == std::vector<double>{1, 2, 3, 4, 5, 6});
  std::vector<float> gotb(2);
  file.read_as<float>("b", gotb.data());  // F64 -> float
  CHECK(gotb[1] == -7.5f);
  CHECK_THROWS_WITH_AS(file.tensor("nope"), doctest::Contains("no tensor named 'nope'"), darkbert::error);
}

TEST_CASE("half and bfloat16 up-cast exactly") {
  using darkbert::detail::bfloat16_to_float;
  using darkbert::detail::half_to_float;
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(half_to_float(0xc000) == -2.0f);
  CHECK(half_to_float(0x7bff) == 65504.0f);               // largest normal
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(half_to_float(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(half_to_float(0x8000) == 0.0f);
  CHECK(std::signbit(half_to_float(0x8000)));
  CHECK(std::isinf(half_to_float(0x7c00)));
  CHECK(std::isnan(half_to_float(0x7e00)));
  CHECK(bfloat16_to_float(0x3f80) == 1.0f);
  CHECK(bfloat16_to_float(0xc0a0) == -5.0f);
}

TEST_CASE("every F16 and BF16 golden checkpoint matches its F32 up-cast rule element by element") {
  // The f16/bf16 model files store the same kind of values; reading them must give exactly the up-cast.
  for (const char* model : {"bert_model_f16", "bert_model_bf16"}) {
    darkbert::SafetensorsFile file(darkbert::test::golden_dir() / "models" / model / "model.safetensors");
    for (const auto& info : file.tensors()) {
      std::vector<float> values(static_cast<std::size_t>(info.numel()));
      file.read_as<float>(info.name, values.data());
      const unsigned char* raw = file.raw(info);
      for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, raw + 2 * i, 2);
        const float expected = info.dtype == darkbert::DType::F16 ? darkbert::detail::half_to_float(bits)
                                                                  : darkbert::detail::bfloat16_to_float(bits);
        REQUIRE(values[i] == expected);
      }
    }
  }
}

TEST_CASE("malformed files give errors that name the file and the problem") {
  const auto dir = darkbert::test::scratch_dir("safetensors_bad");
  const std::string good = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

  SUBCASE("missing file") { CHECK(safetensors_error(dir / "absent.safetensors").find("absent.safetensors: cannot open") != std::string::npos); }
  SUBCASE("truncated below the length field") {
    const auto p = dir / "tiny.safetensors";
    std::ofstream(p, std::ios::binary) << "abc";
    const auto e = safetensors_error(p);
    CHECK(e.find("tiny.safetensors") != std::string::npos);
    CHECK(e.find("truncated") != std::string::npos);
  }
  SUBCASE("header length beyond the file") {
    const auto e = safetensors_error(write_raw(dir, "long.safetensors", good, 8, 4096));
    CHECK(e.find("long.safetensors: header length 4096 runs beyond the end of the file") != std::string::npos);
  }
  SUBCASE("absurd header length") {
    CHECK(safetensors_error(write_raw(dir, "huge.safetensors", good, 8, 1ull << 40)).find("exceeds") != std::string::npos);
  }
  SUBCASE("malformed header JSON") {
    const auto e = safetensors_error(write_raw(dir, "json.safetensors", R"({"t": {"dtype": "F32",)", 8));
    CHECK(e.find("json.safetensors: malformed header JSON") != std::string::npos);
  }
  SUBCASE("data offsets beyond the data area (truncated data)") {
    const auto e = safetensors_error(write_raw(dir, "short.safetensors", good, 4));
    CHECK(e.find("tensor 't'") != std::string::npos);
    CHECK(e.find("run beyond the data area") != std::string::npos);
  }
  SUBCASE("reversed offsets") {
    const auto e = safetensors_error(write_raw(dir, "rev.safetensors", R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8));
    CHECK(e.find("are reversed") != std::string::npos);
  }
  SUBCASE("overlapping tensors") {
    const auto e = safetensors_error(write_raw(dir, "overlap.safetensors",
                                      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12));
    CHECK(e.find("overlap.safetensors") != std::string::npos);
    CHECK(e.find("overlapping data_offsets") != std::string::npos);
  }
  SUBCASE("unknown dtype") {
    const auto e = safetensors_error(write_raw(dir, "dtype.safetensors", R"({"t":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2));
    CHECK(e.find("tensor 't': unknown dtype \"F8_E4M3\"") != std::string::npos);
  }
  SUBCASE("byte span disagreeing with shape") {
    const auto e = safetensors_error(write_raw(dir, "span.safetensors", R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8));
    CHECK(e.find("span 8 bytes but F32 [3] needs 12") != std::string::npos);
  }
  SUBCASE("missing fields and wrong types") {
    CHECK(safetensors_error(write_raw(dir, "f1.safetensors", R"({"t":{"shape":[2],"data_offsets":[0,8]}})", 8)).find("\"dtype\"") != std::string::npos);
    CHECK(safetensors_error(write_raw(dir, "f2.safetensors", R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)).find("negative") != std::string::npos);
    CHECK(safetensors_error(write_raw(dir, "f3.safetensors", R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8)).find("data_offsets") != std::string::npos);
    CHECK(safetensors_error(write_raw(dir, "f4.safetensors", R"([1,2])", 8)).find("not an object") != std::string::npos);
  }
}
