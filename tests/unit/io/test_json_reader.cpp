// parse_case_json split at a long array (a report's cases, parsed in blocks on
// threads) against parse_case_json on the whole text: the same DOM, and for
// every refusal the same message, wherever in the text the problem is.
#include <catch2/catch.hpp>
#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "engine_threads.hpp"
#include "parallel/threads.hpp"

namespace {

using namespace attnconv;
using json = nlohmann::json;

constexpr std::size_t long_array = 9000;  // 9 blocks of at most 1024 items

// A report-like text: the items hold the characters the split follows
// (brackets, commas, quotes and backslashes inside strings), escapes, nested
// values and numbers at the edges of a double; item `odd` is `odd_item`.
constexpr std::size_t no_item = std::size_t(-1);

std::string report_text(std::size_t items, std::size_t odd = no_item, const std::string& odd_item = "") {
  std::string text = "{\"tool\": {\"name\": \"a]\\\"[,{\\\\\"}, \"cases\" :\n [";
  for (std::size_t k = 0; k < items; ++k) {
    if (k > 0) text += ",\n";
    text += k == odd ? odd_item
                     : "{\"name\": \"c" + std::to_string(k) + "\", \"s\": \"x,]}\\\"[{\\\\\", \"u\": \"\\u00e9\\n\"," +
                           " \"v\": [1e-300, -0.0, 1.7976931348623157e308, " + std::to_string(k) + ", [[], {}]]}";
  }
  return text + "], \"summary\": [1, 2, {\"z\": null}]}";
}

// Runs the blocks on the engine threads and counts them.
struct Blocks {
  std::atomic<std::size_t> calls{0}, count{0};
  ForEachBlock for_each() {
    return [this](std::size_t n, const std::function<void(std::size_t)>& work) {
      ++calls;
      count = n;
      parallel_for(n, [&](std::size_t b, std::size_t) { work(b); });
    };
  }
};

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a long array is parsed in blocks into the same DOM as the whole text", "[json_reader]") {
  const testing::EngineThreads scope(GENERATE(1, 2, 3));
  // Item 7 nested as deep as the reader allows: 62 arrays in the case array in the top-level object.
  const std::string text = report_text(long_array, 7, std::string(62, '[') + std::string(62, ']'));
  Blocks blocks;
  const json split = parse_case_json(text, "r.json", blocks.for_each());
  CHECK(blocks.calls == 1);
  CHECK(blocks.count == 9);
  REQUIRE(split["cases"].size() == long_array);
  CHECK(split == parse_case_json(text, "r.json"));
  CHECK(split == json::parse(text));
  CHECK(split["cases"][8999]["s"] == "x,]}\"[{\\");
  CHECK(split["tool"]["name"] == "a]\"[,{\\");
}

TEST_CASE("a short array, or a long one not in a top-level object, is parsed whole", "[json_reader]") {
  for (const std::string& text : {report_text(JsonSplit{}.min_items), "[" + report_text(long_array) + "]"}) {
    Blocks blocks;
    CHECK(parse_case_json(text, "r.json", blocks.for_each()) == json::parse(text));
    CHECK(blocks.calls == 0);
  }
}

TEST_CASE("a problem inside a long array is refused with the message of the whole text's parse", "[json_reader]") {
  const auto [odd, odd_item, words] = GENERATE(table<std::size_t, std::string, std::string>({
      {5000, "{\"name\": \"twice\", \"a\": 1, \"a\": 2}", "appears twice"},
      {8000, "{\"name\": \"bad\", \"v\": }", "malformed JSON"},
      {8999, "", "malformed JSON"},  // a trailing comma
      {1023, "{\"name\": \"big\", \"v\": 1e999}", "malformed JSON"},
      {3, std::string(63, '[') + std::string(63, ']'), "nested deeper than 64"},  // one level too deep
  }));
  const std::string text = report_text(long_array, odd, odd_item);
  const std::string whole = message([&] { parse_case_json(text, "r.json"); });
  CHECK_THAT(whole, Catch::Contains(words) && Catch::Contains("r.json"));
  Blocks blocks;
  CHECK(message([&] { parse_case_json(text, "r.json", blocks.for_each()); }) == whole);
  CHECK(blocks.calls == 1);  // the blocks were parsed, and one gave up
}

TEST_CASE("a problem outside the long array is refused with the whole text's message", "[json_reader]") {
  const std::string whole_text = report_text(long_array);
  for (const std::string& text : {whole_text + "x",                          // text after the document
                                  "{\"cases\": 1, " + whole_text.substr(1)}) {  // a key twice
    const std::string whole = message([&] { parse_case_json(text, "r.json"); });
    CHECK_THAT(whole, Catch::Contains("r.json"));
    Blocks blocks;
    CHECK(message([&] { parse_case_json(text, "r.json", blocks.for_each()); }) == whole);
  }
}
