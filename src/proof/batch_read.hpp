#pragma once
// A batch input read once. While a BatchRead lives on a thread, load_case_tensor
// there reads each data tensor of a batch case (input, reference_output) whole
// once, checks its SHA-256 against the case's provenance once, and gives every
// sample its slice of those bytes. run_verify opens one around a batch's samples;
// without one, each load reads (and hashes) its file.
#include <memory>

namespace attnconv {

struct BatchTensors;  // proof/npy.cpp

class BatchRead {
 public:
  BatchRead();
  ~BatchRead();
  BatchRead(const BatchRead&) = delete;
  BatchRead& operator=(const BatchRead&) = delete;

  // The open one of this thread, or null.
  static BatchTensors* current();

 private:
  std::unique_ptr<BatchTensors> tensors_;
  BatchTensors* previous_;
};

// While a WidenedFloat32 lives on a thread, load_case_tensor<double> there reads
// float32 files and widens them exactly: the float64 twin of a float32 case
// (run/case_run.cpp) reads the same files the case was checked with.
class WidenedFloat32 {
 public:
  WidenedFloat32();
  ~WidenedFloat32();
  WidenedFloat32(const WidenedFloat32&) = delete;
  WidenedFloat32& operator=(const WidenedFloat32&) = delete;

  static bool active();

 private:
  bool previous_;
};

}  // namespace attnconv
