// The proof toolkit (src/proof/): a proof declared with make_proof parses its
// parameters once into a typed struct, the loader refuses a case whose parse
// throws before anything runs, and verify runs in the case's dtype.
#include <catch2/catch.hpp>
#include <algorithm>
#include <typeinfo>

#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"

using namespace attnconv;

namespace {

enum class Flavour { plain, fancy };
std::string to_string(Flavour f) { return f == Flavour::plain ? "plain" : "fancy"; }

struct ToyParams {
  int width = 0;
  std::size_t count = 0;
  Flavour flavour = Flavour::plain;
  AutoPair window;
  ConvGeometry geometry;
  Dtype dtype = Dtype::float64;
};

int checks_run = 0;  // how often the toy proof's check ran: once per loaded case

void check(ToyParams& p, const Case& c, const Request& request) {
  ++checks_run;
  if (p.width % 2) throw ParamError("width", "must be even, got " + std::to_string(p.width));
  if (request.expect == Expect::fail && p.flavour == Flavour::plain)
    throw ParamError("flavour", "plain cannot fail");
  (void)c;
}

template <class T> Outcome verify(const Case&, const ToyParams& p, const Request& request) {
  Outcome out;
  out.set(metric::max_abs, 0.0);
  out.set(metric::rel_l2, 0.0);
  out.metrics["bytes"] = sizeof(T);
  out.metrics["stride"] = p.geometry.stride[0];
  out.metrics["count"] = p.count;
  out.metrics["flavour"] = to_string(p.flavour);
  out.metrics["window"] = p.window.size ? json((*p.window.size)[0]) : json("auto");
  out.metrics["tolerance_given"] = !request.tolerance.empty();
  return out;
}

using P = ToyParams;
const bool registered = register_proof(make_proof<P>({
    .id = "test.toolkit",
    .paper = "test",
    .statement = "a toy proof",
    .params = fields<P>(field(&P::width, {.name = "width", .default_value = 2, .minimum = 0}),
                        field(&P::count, size_param("count", "a size")),
                        field(&P::flavour, {.name = "flavour", .default_value = Flavour::plain,
                                            .named = by_name({Flavour::plain, Flavour::fancy})}),
                        field(&P::window, {.name = "window", .default_value = AutoPair{}, .minimum = 1}),
                        group<P>({field(&P::geometry, &ConvGeometry::stride,
                                        {.name = "stride", .default_value = std::array<int, 2>{1, 1}, .minimum = 1})}),
                        field(&P::dtype, dtype_param())),
    .retired = {{"engine", "dense"}},
    .tensors = {"input"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(),
    .memory_estimate = [](const Case&, const ToyParams& p) { return 1000.0 * p.width; },
}));

std::vector<Case> toy(const std::string& params, const std::string& more = "") {
  return load_case_text(R"({"cases": [{"name": "toy", "proof": "test.toolkit", "params": )" + params + more + "}]}",
                        "toy.json");
}

std::string refused(const std::string& params, const std::string& more = "") {
  try {
    toy(params, more);
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return "loaded";
}

}  // namespace

TEST_CASE("make_proof: each parameter declared once, read typed; check runs once at load time; verify in the dtype",
          "[proof_toolkit]") {
  const ProofDef* proof = find_proof("test.toolkit");
  REQUIRE(proof);
  // The declarations give the loader its specs: kinds from the member types, defaults, choices.
  const auto spec = [&](const std::string& name) {
    return *std::find_if(proof->params.begin(), proof->params.end(), [&](const ParamSpec& s) { return s.name == name; });
  };
  CHECK(spec("width").kind == ParamKind::integer);
  CHECK(spec("width").default_value == 2);
  CHECK(spec("count").default_value.is_null());  // required
  CHECK(spec("flavour").kind == ParamKind::string);
  CHECK(spec("flavour").choices == std::vector<std::string>{"plain", "fancy"});
  CHECK(spec("flavour").default_value == "plain");
  CHECK(spec("window").kind == ParamKind::int_pair_or_auto);
  CHECK(spec("window").default_value == "auto");
  CHECK(spec("stride").default_value == 1);
  CHECK(spec("dtype").choices == std::vector<std::string>{"float32", "float64"});

  checks_run = 0;
  const std::vector<Case> f32 =
      toy(R"({"count": 3, "stride": [2, 1], "dtype": "float32", "width": 6, "flavour": "fancy", "window": 5})");
  CHECK(checks_run == 1);
  const json m = proof->verify(f32[0]).metrics;
  CHECK(m["bytes"] == 4);
  CHECK(m["stride"] == 2);
  CHECK(m["count"] == 3);
  CHECK(m["flavour"] == "fancy");
  CHECK(m["window"] == 5);
  CHECK(m["tolerance_given"] == false);
  CHECK(proof->memory_estimate(f32[0]) == 6000.0);
  (void)proof->verify(f32[0]);
  CHECK(checks_run == 1);  // the hooks read the prepared parameters; nothing parses again

  const std::vector<Case> f64 = toy(R"({"count": 1})", R"(, "tolerance": {"max_abs": 1})");
  const json m64 = proof->verify(f64[0]).metrics;
  CHECK(m64["bytes"] == 8);
  CHECK(m64["window"] == "auto");
  CHECK(m64["tolerance_given"] == true);  // the request reaches verify

  // A case built by hand and not prepared is a programming error, not a silent reparse.
  Case raw = f64[0];
  raw.prepared.reset();
  CHECK_THROWS_AS(proof->verify(raw), std::logic_error);
}

TEST_CASE("make_proof: the loader refuses what a field or check refuses, naming the key", "[proof_toolkit]") {
  CHECK(refused(R"({"count": 1, "width": 5})") == "toy.json: case 'toy': key 'params.width': must be even, got 5");
  CHECK(refused(R"({"count": 1})", R"(, "expect": "fail")") ==
        "toy.json: case 'toy': key 'params.flavour': plain cannot fail");  // the request reaches check
  CHECK(refused(R"({"count": 0})").find("key 'params.count'") != std::string::npos);
  CHECK(refused(R"({})").find("key 'params.count': missing") != std::string::npos);
  CHECK(refused(R"({"count": 1, "flavour": "odd"})").find("must be one of \"plain\", \"fancy\"") != std::string::npos);
  CHECK(refused(R"({"count": 1})", R"(, "weights": {"imput": "x.npy"})").find("did you mean 'input'") != std::string::npos);
  // A retired parameter: its one former value is read without it; any other is refused, saying so.
  CHECK(toy(R"({"count": 1, "engine": "dense"})").at(0).params.contains("engine") == false);
  CHECK(refused(R"({"count": 1, "engine": "sparse"})").find("no longer a parameter (it could only be \"dense\")") !=
        std::string::npos);
}

TEST_CASE("with_dtype is the one dispatch from a dtype to a C++ type", "[proof_toolkit]") {
  CHECK(with_dtype(Dtype::float32, [](auto tag) { return sizeof(tag); }) == 4);
  CHECK(with_dtype(dtype_from_string("float64"), [](auto tag) { return sizeof(tag); }) == 8);
  CHECK(dtype_bytes(Dtype::float32) == 4);
  CHECK_THROWS_AS(dtype_from_string("float16"), std::invalid_argument);
}
