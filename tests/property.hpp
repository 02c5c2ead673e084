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

template <class Testable> rc::detail::TestResult run(const std::string& description, int samples, Testable&& testable) {
  rc::detail::TestParams params;
  params.seed = 20200430;
  params.maxSuccess = samples;
  rc::detail::TestMetadata metadata;
  metadata.id = metadata.description = description;
  return rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
}

template <class Testable> void check(const std::string& description, int samples, Testable&& testable) {
  const auto result = run(description, samples, std::forward<Testable>(testable));
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  INFO(message.str());
  CHECK(result.template is<rc::detail::SuccessResult>());
}

}  // namespace attnconv::property
