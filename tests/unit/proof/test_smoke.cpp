#include <catch2/catch.hpp>
#include "proof/proof.hpp"
TEST_CASE("theorem1 is registered", "[smoke]") { REQUIRE(attnconv::find_proof("cordonnier2020.theorem1")); }
