// cached_file_digest (src/proof/tensor_source.hpp): once per file, the same
// digest whichever thread asks first, a digest under way waited for; and
// DigestsAhead, which makes them ahead on a thread of its own and leaves a
// problem to the caller.
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "proof/tensor_source.hpp"

using namespace attnconv;
using attnconv::testing::ScratchDir;
using attnconv::testing::write_text;

TEST_CASE("file digests: made ahead or on demand, from any thread, they are file_digest's", "[file_digests]") {
  const ScratchDir dir("file_digests");
  std::vector<std::string> files;
  for (int k = 0; k < 6; ++k) {
    files.push_back((dir.path / ("f" + std::to_string(k) + ".bin")).string());
    write_text(files.back(), std::string(std::size_t(300000 + k), char('a' + k)));
  }
  const std::string missing = (dir.path / "missing.npz").string();
  {
    const DigestsAhead ahead({files[0], missing, files[1], files[2]});  // a problem does not stop it
    std::vector<FileDigest> got(files.size());
    std::vector<std::thread> askers;
    for (std::size_t k = 0; k < files.size(); ++k) askers.emplace_back([&, k] { got[k] = cached_file_digest(files[k]); });
    for (auto& t : askers) t.join();
    for (std::size_t k = 0; k < files.size(); ++k) {
      const FileDigest want = file_digest(files[k]);
      CHECK(got[k].sha256 == want.sha256);
      CHECK(got[k].bytes == 300000 + k);
    }
    CHECK_THROWS_WITH(cached_file_digest(missing), Catch::Contains("cannot read") && Catch::Contains("missing.npz"));
  }
  CHECK(file_digest(files[0]).sha256 != file_digest(files[1]).sha256);
}
