// The proof toolkit (src/proof/): a proof declared with make_proof parses its
// parameters once into a typed struct, the loader refuses a case whose parse
// throws before anything runs, and verify runs in the case's dtype.
#include <catch2/catch.hpp>
#include <typeinfo>

#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"

using namespace attnconv;

namespace {

struct ToyParams {
  int width = 0;
  ConvGeometry geometry;
  Dtype dtype = Dtype::float64;
};

ToyParams parse(const Case& c) {
  ToyParams p{.width = get_int(c.params, "width"), .geometry = case_geometry(c), .dtype = case_dtype(c)};
  if (p.width % 2) throw ParamError("width", "must be even, got " + std::to_string(p.width));
  return p;
}

template <class T> Outcome verify(const Case&, const ToyParams& p) {
  Outcome out;
  out.metrics = {{"max_abs", 0.0}, {"rel_l2", 0.0}, {"bytes", sizeof(T)}, {"stride", p.geometry.stride[0]}};
  return out;
}

const bool registered = register_proof(make_proof<ToyParams>({
    .id = "test.toolkit",
    .paper = "test",
    .statement = "a toy proof",
    .params = {{.name = "width", .kind = ParamKind::integer, .default_value = 2, .minimum = 0},
               kernel_param(), padding_param(), padding_mode_param(), stride_param(), dilation_param(),
               dtype_param()},
    .parse = parse,
    .verify = {verify<float>, verify<double>},
    .memory_estimate = [](const ToyParams& p) { return 1000.0 * p.width; },
}));

std::vector<Case> toy(const std::string& params) {
  return load_case_text(R"({"cases": [{"name": "toy", "proof": "test.toolkit", "params": )" + params + "}]}",
                        "toy.json");
}

}  // namespace

TEST_CASE("make_proof: parse runs at load time, verify in the case's dtype, hooks get the parsed struct",
          "[proof_toolkit]") {
  const ProofDef* proof = find_proof("test.toolkit");
  REQUIRE(proof);
  const std::vector<Case> f32 = toy(R"({"kernel": 3, "stride": [2, 1], "dtype": "float32", "width": 6})");
  CHECK(proof->verify(f32[0]).metrics["bytes"] == 4);
  CHECK(proof->verify(f32[0]).metrics["stride"] == 2);
  CHECK(proof->memory_estimate(f32[0]) == 6000.0);
  const std::vector<Case> f64 = toy(R"({"kernel": 3})");
  CHECK(proof->verify(f64[0]).metrics["bytes"] == 8);

  // A check across keys, or the proof's own, refuses the case when it is loaded.
  const auto refused = [](const std::string& params) {
    try {
      toy(params);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  CHECK(refused(R"({"kernel": 3, "width": 5})") == "toy.json: case 'toy': key 'params.width': must be even, got 5");
  CHECK(refused(R"({"kernel": 3, "padding": "same", "stride": 2})") ==
        "toy.json: case 'toy': key 'params.padding': \"same\" padding needs stride 1 (as in PyTorch)");
  CHECK(refused(R"({"kernel": 0})").find("key 'params.kernel'") != std::string::npos);
}

TEST_CASE("with_dtype is the one dispatch from a dtype to a C++ type", "[proof_toolkit]") {
  CHECK(with_dtype(Dtype::float32, [](auto tag) { return sizeof(tag); }) == 4);
  CHECK(with_dtype(dtype_from_string("float64"), [](auto tag) { return sizeof(tag); }) == 8);
  CHECK(dtype_bytes(Dtype::float32) == 4);
  CHECK_THROWS_AS(dtype_from_string("float16"), std::invalid_argument);
}
