//===- CheckpointSaved.cpp - Save region inputs by policy, restore them ---===//

#include "CheckpointSaved.h"
#include "LaunchStubDispatch.h"
#include "OffloadInternal.h"
#include "OffloadStubDispatch.h"

#include <c10/util/Exception.h>

namespace memopt::runtime {

void SavedInputs::snapshotWritten(at::TensorList inputs,
                                  const std::vector<bool> &written,
                                  const std::string &regionName) {
  entries_.assign(inputs.size(), Entry());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Entry &e = entries_[i];
    e.requiresGrad = inputs[i].requires_grad();
    if (!written[i])
      continue;
    TORCH_CHECK(!e.requiresGrad, "memopt::checkpoint(region '", regionName,
                "'): the graph writes in place to input ", i,
                ", which requires grad; only inputs that do not require grad "
                "(e.g. running statistics) may be updated inside a region");
    // Small in practice (running statistics, counters); a clone keeps the
    // pre-forward values for every recompute.
    e.how = Entry::How::Snapshot;
    e.snapshot = inputs[i].detach().clone();
    e.done = true;
  }
}

void SavedInputs::save(at::TensorList inputs,
                       const std::vector<SavePolicy> &policies,
                       const std::string &regionName) {
  TORCH_INTERNAL_ASSERT(entries_.size() == inputs.size());
  packWithStub(inputs, policies, regionName);
  offloadWithStub(inputs, policies, regionName);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Entry &e = entries_[i];
    if (e.done)
      continue;
    const at::Tensor &x = inputs[i];
    SavePolicy policy = policies.empty() ? SavePolicy() : policies[i];
    switch (policy.kind) {
    case SaveKind::Keep:
      break;
    case SaveKind::Compress: {
      try {
        e.packed = compressTensor(x.detach(), policy.compression, policy.check);
      } catch (const c10::Error &err) {
        TORCH_CHECK(false, "memopt::checkpoint(region '", regionName,
                    "'): cannot save input ", i, " as ", policy.str(), ": ",
                    err.what_without_backtrace());
      }
      e.how = Entry::How::Packed;
      if (!x.is_contiguous() && x.is_non_overlapping_and_dense())
        e.strides = x.strides().vec();
      continue;
    }
    case SaveKind::OffloadHost:
    case SaveKind::OffloadUnified: {
      if (x.is_cpu() &&
          (policy.kind == SaveKind::OffloadUnified || !offloadSimulation()))
        break; // already on the host: keep as is
      if (policy.kind == SaveKind::OffloadUnified)
        checkUnifiedMemorySupported(x.device());
      if (!group_) {
        group_ = std::make_shared<OffloadGroup>();
        group_->setTrigger(policy.prefetchAt);
      }
      TORCH_CHECK(group_->trigger() == policy.prefetchAt,
                  "memopt::checkpoint(region '", regionName,
                  "'): offloaded inputs name different prefetch triggers ('",
                  group_->trigger(), "' and '", policy.prefetchAt, "')");
      e.how = Entry::How::Offloaded;
      e.index = group_->add(x.detach(), policy.kind == SaveKind::OffloadHost
                                            ? OffloadTarget::Host
                                            : OffloadTarget::Unified);
      continue;
    }
    }
    e.how = Entry::How::Kept;
    e.index = kept_.size();
    kept_.push_back(x);
  }
  if (group_)
    group_->seal();
  scheduled_ = takeScheduledGroups(regionName, group_.get());
}

void SavedInputs::packWithStub(at::TensorList inputs,
                               const std::vector<SavePolicy> &policies,
                               const std::string &regionName) {
  std::vector<size_t> indices;
  std::vector<at::Tensor> tensors;
  std::vector<CompressionKind> kinds;
  for (size_t i = 0; i < inputs.size() && !policies.empty(); ++i) {
    if (entries_[i].done || policies[i].kind != SaveKind::Compress)
      continue;
    // One check flag per launch: mixed flags take the generic path.
    if (policies[i].check != policies[indices.empty() ? i : indices[0]].check)
      return;
    indices.push_back(i);
    tensors.push_back(inputs[i].detach());
    kinds.push_back(policies[i].compression);
  }
  stubSite_ = stubs::findRegionSite(regionName, tensors, kinds);
  if (!stubSite_)
    return;
  const bool check = policies[indices[0]].check;
  std::vector<int64_t> firstInvalid;
  std::vector<at::Tensor> payloads =
      stubs::pack(*stubSite_, tensors, check, firstInvalid);
  for (int64_t first : firstInvalid)
    if (first >= 0) {
      stubSite_ = nullptr;
      return; // the generic path below reports it in its own words
    }
  for (size_t k = 0; k < indices.size(); ++k) {
    Entry &e = entries_[indices[k]];
    e.packed = PackedTensor{payloads[k], kinds[k], tensors[k].sizes().vec(),
                            tensors[k].scalar_type(), tensors[k].device()};
    e.how = Entry::How::Packed;
    e.done = true;
  }
}

void SavedInputs::offloadWithStub(at::TensorList inputs,
                                  const std::vector<SavePolicy> &policies,
                                  const std::string &regionName) {
  std::vector<size_t> indices;
  std::vector<at::Tensor> tensors;
  std::string trigger;
  for (size_t i = 0; i < inputs.size() && !policies.empty(); ++i) {
    if (entries_[i].done || policies[i].kind != SaveKind::OffloadHost)
      continue;
    const at::Tensor &x = inputs[i];
    // What the generic path keeps as it is stays with it.
    if (offloadKeepsInPlace(x, OffloadTarget::Host))
      return;
    if (!indices.empty() && policies[i].prefetchAt != trigger)
      return; // the generic path reports it
    trigger = policies[i].prefetchAt;
    indices.push_back(i);
    tensors.push_back(x.detach());
  }
  const memopt_stub_offload_site *site = stubs::findOffloadSite(
      regionName, trigger.empty() ? regionName : trigger, tensors);
  if (!site)
    return;
  auto group = std::make_shared<OffloadGroup>();
  group->setTrigger(trigger);
  std::optional<std::vector<size_t>> slots = group->addSite(*site, tensors);
  if (!slots)
    return; // no room for the block: tensor by tensor, as the pool allows
  group_ = std::move(group);
  for (size_t k = 0; k < indices.size(); ++k) {
    Entry &e = entries_[indices[k]];
    e.how = Entry::How::Offloaded;
    e.index = (*slots)[k];
    e.done = true;
  }
}

void SavedInputs::prefetch() {
  // All copies queue on one side stream: this region's own inputs first
  // (needed now), then those of earlier regions scheduled to come back
  // now, nearest first (needed next). memopt-schedule-prefetch models
  // this order.
  if (group_)
    group_->prefetch();
  for (const auto &weak : scheduled_)
    if (auto group = weak.lock(); group && group->prefetch())
      offloadCounters().prefetchedAhead++;
  if (group_)
    prefetchForBackward(group_);
}

std::vector<at::Tensor>
SavedInputs::restore(const std::vector<at::Tensor> &kept) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(entries_.size());
  auto packedOf = [](const Entry &e) -> const PackedTensor & {
    TORCH_CHECK(e.packed.has_value(),
                "memopt::checkpoint: a compressed input is gone (backward "
                "through a region twice needs retain_graph=True)");
    return *e.packed;
  };
  // The stub site that packed them unpacks every packed input with one
  // launch; the generic kernels unpack one at a time, below.
  std::vector<at::Tensor> unpacked;
  if (stubSite_) {
    std::vector<PackedTensor> packed;
    for (const Entry &e : entries_)
      if (e.how == Entry::How::Packed)
        packed.push_back(packedOf(e));
    unpacked = stubs::unpack(*stubSite_, packed);
  }
  size_t nextUnpacked = 0;
  for (Entry &e : entries_) {
    at::Tensor t;
    switch (e.how) {
    case Entry::How::Kept:
      t = kept.at(e.index).detach();
      break;
    case Entry::How::Snapshot:
      // A fresh copy each time: the recompute writes into it.
      t = e.snapshot.clone();
      break;
    case Entry::How::Packed:
      t = stubSite_ ? std::move(unpacked.at(nextUnpacked++))
                    : decompressTensor(packedOf(e));
      if (!e.strides.empty()) {
        at::Tensor strided =
            at::empty_strided(t.sizes(), e.strides, t.options());
        strided.copy_(t);
        t = strided;
      }
      break;
    case Entry::How::Offloaded:
      TORCH_CHECK(group_,
                  "memopt::checkpoint: an offloaded input is gone "
                  "(backward through a region twice needs retain_graph=True)");
      t = group_->take(e.index).detach();
      break;
    }
    if (e.requiresGrad)
      t.requires_grad_(true);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

at::Tensor SavedInputs::original(size_t i,
                                 const std::vector<at::Tensor> &kept) const {
  const Entry &e = entries_.at(i);
  return e.how == Entry::How::Kept ? kept.at(e.index) : at::Tensor();
}

void SavedInputs::release() {
  for (Entry &e : entries_) {
    e.snapshot = at::Tensor();
    e.packed.reset();
  }
  if (group_) {
    group_->release();
    group_.reset();
  }
}

} // namespace memopt::runtime
