// Compiled with the include roots of the proof layer alone: the runner (a layer
// above it) is not found, so a proof cannot depend on how cases are run.
#include "run/runner.hpp"
