// libscalescope-nccl-profiler.so: NCCL's profiler plugin interface v5 (abi_v5.h) over nccl_plugin::Recorder.
// NCCL loads it when NCCL_PROFILER_PLUGIN names its path (`scalescope profile` sets that); each communicator gets a
// Recorder writing $SCALESCOPE_NCCL_PROFILE_DIR (else $SCALESCOPE_JOB_DIR, else the working directory)
// /nccl-profile.<host>.<pid>.<comm>.r<rank>.jsonl. It never fails the job: when its file cannot be created it says
// so in NCCL's log and asks NCCL for no events.

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "profile/nccl_plugin/abi_v5.h"
#include "profile/nccl_plugin/recorder.h"

namespace {

using namespace scalescope;
using nccl_plugin::OpRecord;
using nccl_plugin::Recorder;

// Recorders not finalised by NCCL (a job that exits without destroying its communicators) are flushed when the
// library is unloaded or the process exits normally. The registry itself is never destroyed: a communicator
// finalised from another static destructor, after the flush below, still finds it.
struct Registry {
  std::mutex mutex;
  std::set<Recorder*> live;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}
struct FlushAtExit {
  ~FlushAtExit() {
    auto& reg = registry();
    std::lock_guard lock(reg.mutex);
    for (Recorder* r : reg.live) r->flush_all();
  }
} flush_at_exit;

// NCCL's logger, kept to say once per communicator that its file could not be written (a full disk).
struct Context {
  Recorder* recorder;
  nccl_abi::Logger log;
  bool warned = false;
};

// A channel event's handle is its operation's record with the low bit set; an operation's handle is the record.
void* kernel_handle(OpRecord* r) { return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(r) | 1u); }
bool is_kernel_handle(void* h) { return (reinterpret_cast<std::uintptr_t>(h) & 1u) != 0; }
OpRecord* record_of(void* h) { return reinterpret_cast<OpRecord*>(reinterpret_cast<std::uintptr_t>(h) & ~std::uintptr_t{1}); }

std::string output_dir() {
  for (const char* name : {"SCALESCOPE_NCCL_PROFILE_DIR", "SCALESCOPE_JOB_DIR"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return ".";
}

nccl_abi::Result plugin_init(void** context, std::uint64_t comm_id, int* mask, const char* comm_name, int nnodes,
                             int nranks, int rank, nccl_abi::Logger log) {
  // NCCL passes one process-wide mask to every communicator's init: it is set on success only, so a communicator
  // whose file cannot be created turns off nothing for the others.
  *context = nullptr;
  nccl_plugin::CommInfo info;
  info.comm_id = comm_id;
  info.comm_name = comm_name ? comm_name : "";
  info.nnodes = nnodes;
  info.nranks = nranks;
  info.rank = rank;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.pid = static_cast<long>(getpid());
  const std::string path = output_dir() + "/" + nccl_plugin::profile_file_name(info);
  auto* rec = new (std::nothrow) Recorder(info, path);
  if (!rec || !rec->ok()) {
    if (log) log(2, 1, __FILE__, __LINE__, "scalescope profiler plugin: %s; recording nothing for this communicator",
                 rec ? rec->error().c_str() : "out of memory");
    delete rec;
    return nccl_abi::kSuccess;
  }
  {
    auto& reg = registry();
    std::lock_guard lock(reg.mutex);
    reg.live.insert(rec);
  }
  if (log) log(3, 1, __FILE__, __LINE__, "scalescope profiler plugin: rank %d of %d recording to %s", rank, nranks, path.c_str());
  *context = new Context{rec, log};
  *mask = static_cast<int>(nccl_abi::kColl | nccl_abi::kP2p | nccl_abi::kKernelCh);
  return nccl_abi::kSuccess;
}

nccl_abi::Result plugin_start(void* context, void** handle, nccl_abi::EventDescrV5* d) {
  *handle = nullptr;
  auto* ctx = static_cast<Context*>(context);
  if (!ctx || !d) return nccl_abi::kSuccess;
  Recorder* rec = ctx->recorder;
  if (!ctx->warned && !rec->ok()) {  // its file stopped taking writes (a full disk): said once, the job goes on
    ctx->warned = true;
    if (ctx->log) ctx->log(2, 1, __FILE__, __LINE__, "scalescope profiler plugin: %s; later records are lost", rec->error().c_str());
  }
  if (d->type == nccl_abi::kColl) {
    nccl_plugin::OpStart op;
    op.seq = d->coll.seqNumber;
    op.func = d->coll.func;
    op.datatype = d->coll.datatype;
    op.count = d->coll.count;
    op.root_or_peer = d->coll.root;
    op.channels = d->coll.nChannels;
    op.algo = d->coll.algo;
    op.proto = d->coll.proto;
    *handle = rec->start_op(op);
  } else if (d->type == nccl_abi::kP2p) {
    nccl_plugin::OpStart op;
    op.p2p = true;
    op.func = d->p2p.func;
    op.datatype = d->p2p.datatype;
    op.count = d->p2p.count;
    op.root_or_peer = d->p2p.peer;
    op.channels = d->p2p.nChannels;
    *handle = rec->start_op(op);
  } else if (d->type == nccl_abi::kKernelCh && d->parentObj && !is_kernel_handle(d->parentObj)) {
    auto* op = static_cast<OpRecord*>(d->parentObj);
    Recorder::kernel_start(op, d->kernelCh.pTimer);
    *handle = kernel_handle(op);
  }
  return nccl_abi::kSuccess;
}

nccl_abi::Result plugin_stop(void* handle) {
  if (handle && !is_kernel_handle(handle)) Recorder::stop_op(static_cast<OpRecord*>(handle));
  return nccl_abi::kSuccess;
}

nccl_abi::Result plugin_record(void* handle, nccl_abi::EventState state, nccl_abi::EventStateArgsV5* args) {
  if (handle && is_kernel_handle(handle) && state == nccl_abi::kKernelChStop && args)
    Recorder::kernel_stop(record_of(handle), args->kernelCh.pTimer);
  return nccl_abi::kSuccess;
}

nccl_abi::Result plugin_finalize(void* context) {
  auto* ctx = static_cast<Context*>(context);
  if (!ctx) return nccl_abi::kSuccess;
  {
    auto& reg = registry();
    std::lock_guard lock(reg.mutex);
    reg.live.erase(ctx->recorder);
  }
  delete ctx->recorder;  // flushes
  delete ctx;
  return nccl_abi::kSuccess;
}

}  // namespace

extern "C" {
// The symbol NCCL looks up (dlsym "ncclProfiler_v5").
__attribute__((visibility("default"))) scalescope::nccl_abi::ProfilerV5 ncclProfiler_v5 = {
    "scalescope", plugin_init, plugin_start, plugin_stop, plugin_record, plugin_finalize};
}
