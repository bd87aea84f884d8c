//===- CheckpointSaved.h - A region's inputs, saved by policy ----*- C++
//-*-===//
//
// Private to the runtime. Forward saves each region input by its policy;
// backward gets them back as detached tensors that require grad where the
// originals did. Inputs the graph writes in place are snapshotted before the
// forward instead, whatever their policy, so every recompute starts from the
// values the forward saw and the real tensors are updated exactly once.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_CHECKPOINTSAVED_H
#define MEMOPT_LIB_RUNTIME_CHECKPOINTSAVED_H

#include "memopt/Runtime/Checkpoint.h"
#include "memopt/Runtime/LaunchStubs.h"
#include "memopt/Runtime/Offload.h"

#include <optional>

#include <memory>
#include <string>
#include <vector>

namespace memopt::runtime {

class SavedInputs {
public:
  /// Snapshots the inputs flagged in `written` (call before the forward
  /// runs). Throws if such an input requires grad.
  void snapshotWritten(at::TensorList inputs, const std::vector<bool> &written,
                       const std::string &regionName);
  /// Saves every other input by its policy. Offload copies start at once.
  void save(at::TensorList inputs, const std::vector<SavePolicy> &policies,
            const std::string &regionName);
  /// Inputs saved as they are; they go to AutogradContext::save_for_backward
  /// (which checks they are not modified before backward) and come back in
  /// the same order through restore()'s `kept`.
  std::vector<at::Tensor> takeKeptTensors() { return std::move(kept_); }

  /// Starts bringing offloaded inputs back as the region's backward starts:
  /// those of earlier regions whose compiled trigger it is, its own, and
  /// (groups without a trigger) the prefetch depth.
  void prefetch();
  /// The inputs again: detached, requiring grad where the originals did.
  std::vector<at::Tensor> restore(const std::vector<at::Tensor> &kept);
  /// The caller's tensor for input `i` if it was saved as it is (from
  /// `kept`, as for restore), else an undefined tensor.
  at::Tensor original(size_t i, const std::vector<at::Tensor> &kept) const;
  /// Frees compressed payloads, snapshots and offloaded copies.
  void release();

private:
  /// Packs the compressed inputs with one launch of a registered stub site
  /// of this region, when one matches them (LaunchStubDispatch.h); marks
  /// them done. Otherwise leaves them to the generic path.
  void packWithStub(at::TensorList inputs,
                    const std::vector<SavePolicy> &policies,
                    const std::string &regionName);
  /// Offloads the inputs going to host memory with one call of a registered
  /// offload site of this region (OffloadStubDispatch.h), when one matches
  /// them and the pool has room for its block; marks them done. Otherwise
  /// leaves them to the generic path.
  void offloadWithStub(at::TensorList inputs,
                       const std::vector<SavePolicy> &policies,
                       const std::string &regionName);

  struct Entry {
    enum class How { Kept, Snapshot, Packed, Offloaded } how = How::Kept;
    size_t index = 0;    // Kept: into `kept`; Offloaded: group slot
    at::Tensor snapshot; // Snapshot
    std::optional<PackedTensor> packed;
    std::vector<int64_t> strides; // Packed: layout to restore, if not default
    bool requiresGrad = false;
    bool done = false; // handled by snapshotWritten
  };
  std::vector<Entry> entries_;
  std::vector<at::Tensor> kept_;
  std::shared_ptr<OffloadGroup> group_;
  /// Groups of earlier regions of the same forward whose compiled trigger is
  /// this region: prefetched as this region's backward starts.
  std::vector<std::weak_ptr<OffloadGroup>> scheduled_;
  /// The launch stub that packed every Packed entry, or null.
  const memopt_stub_site *stubSite_ = nullptr;
};

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_CHECKPOINTSAVED_H
