// Compiled with the include roots of the local layer alone: the construction
// (a sibling layer it does not link) is not found, so such an include fails the build.
#include "construction/finite_alpha.hpp"
