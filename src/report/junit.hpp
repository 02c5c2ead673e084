#pragma once
// JUnit XML from a report, for GitLab, Jenkins and GitHub test reporters: one
// <testsuite> per proof, one <testcase> per case (classname = proof id); a
// failed case gets <failure message=...>, an errored one <error message=...>.
#include <string>

#include <nlohmann/json.hpp>

namespace attnconv {

std::string junit_xml(const nlohmann::json& report);

// XML 1.0 text/attribute escaping: & < > " ' as entities, and what XML 1.0
// cannot hold (control characters other than tab, newline and carriage
// return, U+FFFE, U+FFFF, and bytes that are not well-formed UTF-8) replaced
// by U+FFFD, so the document is well-formed for any input.
std::string xml_escape(const std::string& text);

}  // namespace attnconv
