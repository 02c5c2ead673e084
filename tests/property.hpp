#pragma once
// RapidCheck properties inside Catch2: `testable` runs on `samples` random
// samples from a fixed seed (reproducible); on a failure RapidCheck shrinks to
// the smallest failing sample and the Catch2 check prints it with its RC_LOG lines.
#include <rapidcheck.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <utility>

namespace attnconv::property {

// Hears nothing: for a property a test expects to fail, which RapidCheck's own
// listener would otherwise list at exit as a failure to reproduce.
struct Unheard final : rc::detail::TestListener {
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// `expect_failure`: the test asserts that the property fails (its result is
// still returned whole); RapidCheck's exit message stays for real failures.
template <class Testable>
rc::detail::TestResult run(const std::string& description, int samples, Testable&& testable, bool expect_failure = false) {
  rc::detail::TestParams params;
  params.seed = 20200430;
  params.maxSuccess = samples;
  rc::detail::TestMetadata metadata;
  metadata.id = metadata.description = description;
  if (!expect_failure) return rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  Unheard unheard;
  return rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params, unheard);
}

template <class Testable> void check(const std::string& description, int samples, Testable&& testable) {
  const auto result = run(description, samples, std::forward<Testable>(testable));
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  INFO(message.str());
  CHECK(result.template is<rc::detail::SuccessResult>());
}

}  // namespace attnconv::property
