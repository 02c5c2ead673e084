#pragma once
// The inline stylesheet and script of the HTML page (report/html_report.hpp).
// The script only sorts the table by a column, filters it by text and
// status, and opens a case's details from its row (mouse or Enter/Space);
// without it every case and its details are still in the page.
namespace attnconv {

extern const char* const html_style;
extern const char* const html_script;

}  // namespace attnconv
