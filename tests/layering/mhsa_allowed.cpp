// Compiled with the include roots of the mhsa layer alone: its own headers and
// those of the layer below it (tensor) are found.
#include "mhsa/engine.hpp"
#include "tensor/tensor.hpp"
