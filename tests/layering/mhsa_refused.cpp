// Compiled with the include roots of the mhsa layer alone: a header of the
// harness, a layer above it, is not found, so such an include fails the build.
#include "proof/proof.hpp"
