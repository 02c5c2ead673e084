// Compiled with the include roots of the local layer alone: its own headers and
// those of the layer below it (tensor) are found.
#include "local/neighborhood_attention.hpp"
#include "local/window_attention.hpp"
#include "tensor/tensor.hpp"
