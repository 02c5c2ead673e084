// Compiled with the include roots of the proof layer alone: its own headers and
// those of the layers below it (io, ops, tensor) are found.
#include "io/npz.hpp"
#include "proof/case_tensors.hpp"
#include "proof/proof_spec.hpp"
#include "ops/padding.hpp"
