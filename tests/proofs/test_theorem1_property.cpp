// Property tests of Theorem 1 in full generality (RapidCheck inside Catch2):
// random K1 x K2 kernels (1..6), stride and dilation (1..3), every padding form
// and mode, channels 1..6, images at least the receptive field, both quadratic
// encodings. Each sample runs through the proof exactly as a case file would.
// On a failure RapidCheck shrinks to the smallest failing configuration and
// prints it (the generated values and the case JSON). Fixed seed: reproducible.
#include "cases/case_loader.hpp"
#include "proof/proof.hpp"
#include "property.hpp"

namespace {

using attnconv::json;

// A random case of cordonnier2020.theorem1 that satisfies the theorem's hypotheses.
json random_case(double alpha, const std::string& dtype = "float64") {
  const int k1 = *rc::gen::inRange(1, 7), k2 = *rc::gen::inRange(1, 7);
  const int s1 = *rc::gen::inRange(1, 4), s2 = *rc::gen::inRange(1, 4);
  const int d1 = *rc::gen::inRange(1, 4), d2 = *rc::gen::inRange(1, 4);
  const std::string mode = *rc::gen::element<std::string>("zeros", "reflect", "replicate", "circular");
  const int h = d1 * (k1 - 1) + 1 + *rc::gen::inRange(0, 4), w = d2 * (k2 - 1) + 1 + *rc::gen::inRange(0, 4);
  // Padding forms: int, [ph, pw], four sides, "same" (stride 1 only), "valid".
  const int form = *rc::gen::inRange(0, 5);
  // reflect needs pad < side, circular pad <= side.
  const auto side_pad = [&](int extent) {
    const int limit = mode == "reflect" ? extent - 1 : mode == "circular" ? extent : 3;
    return *rc::gen::inRange(0, std::min(3, limit) + 1);
  };
  json padding;
  json stride = {s1, s2};
  switch (form) {
    case 0: padding = side_pad(std::min(h, w)); break;
    case 1: padding = {side_pad(h), side_pad(w)}; break;
    case 2: padding = {side_pad(h), side_pad(h), side_pad(w), side_pad(w)}; break;
    case 3: padding = "same", stride = {1, 1}; break;
    default: padding = "valid"; break;
  }
  const int c_in = *rc::gen::inRange(1, 7), c_out = *rc::gen::inRange(1, 7);
  const std::string encoding = *rc::gen::element<std::string>("quadratic", "quadratic_general");
  return {{"name", "property"},
          {"proof", "cordonnier2020.theorem1"},
          {"params",
           {{"image", {h, w}}, {"kernel", {k1, k2}}, {"in_channels", c_in}, {"out_channels", c_out},
            {"heads", k1 * k2}, {"head_dim", c_out}, {"padding", padding}, {"padding_mode", mode},
            {"stride", stride}, {"dilation", {d1, d2}}, {"alpha", alpha}, {"encoding", encoding},
            {"dtype", dtype}, {"seed", *rc::gen::inRange(0, 1000)}}}};
}

json run(const json& object) {
  const auto cases = attnconv::expand_case(object, "property", 0);
  RC_LOG() << "case: " << object.dump() << "\n";
  return attnconv::find_proof(cases.at(0).proof)->verify(cases.at(0)).metrics;
}

using attnconv::property::check;

}  // namespace

TEST_CASE("at alpha = 60 the MHSA equals the convolution to 1e-10 relative", "[theorem1_property]") {
  check("theorem1 alpha 60 float64", 60, [] {
    const json metrics = run(random_case(60.0));
    RC_LOG() << "rel_l2 = " << metrics["rel_l2"] << ", max_abs = " << metrics["max_abs"] << "\n";
    RC_ASSERT(metrics["rel_l2"].get<double>() <= 1e-10);
  });
}

TEST_CASE("the finite-alpha bound holds for alpha in [0.5, 64], float64 and float32", "[theorem1_property]") {
  check("theorem1 bound", 60, [] {
    const double alpha = 0.5 + 63.5 * (*rc::gen::inRange(0, 1001)) / 1000.0;
    const std::string dtype = *rc::gen::element<std::string>("float64", "float32");
    const json metrics = run(random_case(alpha, dtype));
    RC_LOG() << "alpha = " << alpha << ", max_abs = " << metrics["max_abs"] << ", bound = " << metrics["bound"] << "\n";
    RC_ASSERT(metrics["max_abs"].get<double>() <= metrics["bound"].get<double>());
  });
}
