#pragma once
// check_tensor_source within a memory budget: what the loader uses, with
// --max-memory, for an .npz entry (proof/tensor_source.hpp).
#include <cstdint>

#include "proof/tensor_source.hpp"

namespace attnconv {

// check_tensor_source, refusing unread an .npz entry that takes more than
// `max_bytes` to read (inflated, with its deflated data); `limit_name` (e.g.
// "--max-memory 100 MiB") says whose limit it is. `read_bytes`: what reading
// the entry takes (0 for an .npy file, read in blocks).
SourceCheck check_tensor_source_within(const std::string& case_file, const TensorSource& source, const std::string& descr,
                                       const std::optional<std::vector<std::size_t>>& shape, std::uint64_t max_bytes,
                                       const std::string& limit_name, std::uint64_t& read_bytes);

}  // namespace attnconv
