#include "run/dump_case.hpp"

#include <algorithm>
#include <filesystem>

#include "report/report.hpp"
#include "run/atomic_file.hpp"

namespace attnconv {

namespace {

json tensor_entry(const ProofDef& proof, const Case& c, const NamedTensor& tensor) {
  json entry = {{"file", tensor.name + ".npy"}};
  std::visit(
      [&](const auto& data) {
        using T = typename std::decay_t<decltype(data)>::value_type;
        entry["dtype"] = sizeof(T) == 8 ? "float64" : "float32";
        entry["shape"] = std::vector<std::size_t>(data.shape().begin(), data.shape().end());
      },
      tensor.data);
  const auto declared = std::find_if(proof.dumps.begin(), proof.dumps.end(),
                                     [&](const TensorDump& d) { return d.name == tensor.name; });
  if (declared != proof.dumps.end()) entry["meaning"] = declared->meaning;
  entry["source"] = c.provenance.contains(tensor.name) ? c.provenance[tensor.name] : json("computed");
  return entry;
}

}  // namespace

json dump_case_document(const Case& c, const json& entry, const std::vector<NamedTensor>& tensors) {
  const ProofDef& proof = *find_proof(c.proof);
  json document = {{"tool", tool_info()}};
  document.update(entry);
  json files = json::object();
  for (const auto& tensor : tensors) files[tensor.name] = tensor_entry(proof, c, tensor);
  document["tensors"] = files;
  return document;
}

void write_dump_case(const std::string& dir, const Case& c, const json& entry, const std::vector<NamedTensor>& tensors) {
  const json document = dump_case_document(c, entry, tensors);
  write_file_atomic((std::filesystem::path(dir) / "case.json").string(),
                    document.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace attnconv
