#include "runtime/nccl/nccl_comm.h"

#include <cstring>
#include <thread>

#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/nccl/nccl_api.h"

namespace tilejit::nccl {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::i8: return ncclInt8;
    default: fail("NCCL has no data type for {}", dtype_name(dtype));
  }
}

ncclRedOp_t nccl_op(Reduction op) {
  switch (op) {
    case Reduction::sum: return ncclSum;
    case Reduction::max: return ncclMax;
    case Reduction::min: return ncclMin;
    case Reduction::average: return ncclAvg;
  }
  fail("NCCL: unknown reduction {}", static_cast<int>(op));
}

// Every communicator tilejit makes: non-blocking, so a slow or missing peer is a poll that
// times out instead of a call that never returns.
ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

ncclUniqueId to_nccl_id(const UniqueId& id) {
  static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<UniqueId>);
  ncclUniqueId out;
  std::memcpy(&out, id.data(), sizeof(out));
  return out;
}

// Between polls: a yield at first (a collective that is nearly done), then naps.
void pause_between_polls(Clock::time_point started) {
  if (Clock::now() - started < std::chrono::milliseconds(1))
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

CUstream stream_handle(Stream& stream, const Device& device, const char* call) {
  if (&stream.device() != &device)
    fail("NCCL: {} on a stream of {}, but the communicator's device is {}", call, stream.device().info().name,
         device.info().name);
  return static_cast<CUstream>(stream.handle());
}

}  // namespace

std::string status() {
  try {
    const NcclApi& nccl = api();
    return fmt::format("NCCL {}.{}.{} ({})", nccl.version / 10000, nccl.version / 100 % 100, nccl.version % 100,
                       nccl.path);
  } catch (const Error& e) {
    return e.what();
  }
}

bool available() {
  try {
    api();
    return true;
  } catch (const Error&) {
    return false;
  }
}

UniqueId new_unique_id() {
  ncclUniqueId id;
  if (ncclResult_t r = api().ncclGetUniqueId(&id); r != ncclSuccess)
    throw Error(describe_failure(r, "ncclGetUniqueId", nullptr));
  UniqueId out;
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

NcclComm::NcclComm(Device& device, std::chrono::milliseconds timeout) : device_(&device), timeout_(timeout) {
  if (device.info().kind != DeviceKind::cuda) fail("NCCL communicators need a CUDA device, got {}", device.info().name);
  CUdevice cu_device;
  TJ_CU(cuDeviceGet, &cu_device, device.info().ordinal);
  TJ_CU(cuDevicePrimaryCtxRetain, &context_, cu_device);
}

NcclComm::~NcclComm() {
  {
    // Normally destroyed by now; one dropped on an error path is aborted, which never waits
    // for the other ranks as finalizing would.
    std::lock_guard lock(mutex_);
    abort_locked("dropped without being destroyed");
  }
  CUdevice cu_device;
  const cuda::DriverApi& driver = cuda::driver();
  if (driver.cuDeviceGet(&cu_device, device_->info().ordinal) == CUDA_SUCCESS)
    driver.cuDevicePrimaryCtxRelease(cu_device);
}

std::string NcclComm::describe() const {
  return fmt::format("NCCL rank {} of {} on cuda:{}", rank_, size_, device_->info().ordinal);
}

void NcclComm::make_current() const { TJ_CU(cuCtxSetCurrent, context_); }

ncclComm* NcclComm::live(const char* call) {
  if (!comm_) fail("{}: {} on a communicator that is {}", describe(), call, ended_);
  return comm_;
}

void NcclComm::abort_locked(const std::string& reason) {
  if (!comm_) return;
  ncclComm* comm = comm_;
  comm_ = nullptr;
  ended_ = "aborted (" + reason + ")";
  try {
    make_current();
  } catch (const Error& e) {
    log::warn("{}: aborting without its context: {}", describe(), e.what());
  }
  if (ncclResult_t r = api().ncclCommAbort(comm); r != ncclSuccess)
    log::warn("{}", describe_failure(r, "ncclCommAbort", nullptr));
}

int NcclComm::async_state() {
  ncclResult_t state = ncclInProgress;
  const ncclResult_t query = api().ncclCommGetAsyncError(comm_, &state);
  return query == ncclSuccess ? state : query;
}

void NcclComm::abort_and_fail(int result, const char* call) {
  const std::string failure = describe_failure(static_cast<ncclResult_t>(result), call, comm_);
  abort_locked(failure);
  fail("{} ({}); the communicator was aborted", failure, describe());
}

void NcclComm::finish(int result_code, const char* call, std::unique_lock<std::mutex>& lock) {
  auto result = static_cast<ncclResult_t>(result_code);
  // A call may return ncclSuccess while the work it started still runs: ncclCommSplit does
  // (NCCL 2.28), and only the communicator's state, set before the call returns, says so. So
  // success is confirmed by that state, as ncclInProgress is waited out.
  if (result == ncclSuccess) result = ncclInProgress;
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = started + timeout_;
  while (result == ncclInProgress) {
    if (!comm_) fail("{}: {} ended: the communicator was {}", describe(), call, ended_);
    result = static_cast<ncclResult_t>(async_state());
    if (result != ncclInProgress) break;
    if (Clock::now() >= deadline) {
      abort_locked(fmt::format("{} timed out", call));
      fail("NCCL: {} did not finish within {} ms ({}); the communicator was aborted", call, timeout_.count(),
           describe());
    }
    lock.unlock();  // lets abort() from another thread in
    pause_between_polls(started);
    lock.lock();
  }
  if (result != ncclSuccess) abort_and_fail(result, call);
}

void NcclComm::read_rank_and_size() {
  const NcclApi& nccl = api();
  if (ncclResult_t r = nccl.ncclCommUserRank(comm_, &rank_); r != ncclSuccess)
    throw Error(describe_failure(r, "ncclCommUserRank", comm_));
  if (ncclResult_t r = nccl.ncclCommCount(comm_, &size_); r != ncclSuccess)
    throw Error(describe_failure(r, "ncclCommCount", comm_));
}

std::unique_ptr<NcclComm> NcclComm::join(const UniqueId& id, int rank, int world_size, Device& device,
                                         std::chrono::milliseconds timeout) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    fail("NCCL: rank {} is not a rank of a communicator of {} ranks", rank, world_size);
  std::unique_ptr<NcclComm> comm(new NcclComm(device, timeout));
  comm->rank_ = rank;
  comm->size_ = world_size;
  std::unique_lock lock(comm->mutex_);
  comm->make_current();
  ncclConfig_t config = nonblocking_config();
  ncclResult_t r = api().ncclCommInitRankConfig(&comm->comm_, world_size, to_nccl_id(id), rank, &config);
  comm->finish(r, "ncclCommInitRankConfig", lock);
  comm->read_rank_and_size();
  return comm;
}

std::vector<std::unique_ptr<NcclComm>> NcclComm::create_local(const std::vector<Device*>& devices,
                                                              std::chrono::milliseconds timeout) {
  const int n = static_cast<int>(devices.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      if (devices[i] == devices[j])
        fail("NCCL: ranks {} and {} are both on {}; NCCL places one rank per GPU", j, i, devices[i]->info().name);
  const UniqueId id = new_unique_id();
  std::vector<std::unique_ptr<NcclComm>> comms;
  for (int i = 0; i < n; ++i) {
    comms.emplace_back(new NcclComm(*devices[i], timeout));
    comms.back()->rank_ = i;
    comms.back()->size_ = n;
  }
  try {
    // One thread creates every rank, so the ranks' inits go in one NCCL group.
    const NcclApi& nccl = api();
    ncclConfig_t config = nonblocking_config();
    if (ncclResult_t r = nccl.ncclGroupStart(); r != ncclSuccess)
      throw Error(describe_failure(r, "ncclGroupStart", nullptr));
    ncclResult_t first_error = ncclSuccess;
    for (int i = 0; i < n && first_error == ncclSuccess; ++i) {
      comms[i]->make_current();
      ncclResult_t r = nccl.ncclCommInitRankConfig(&comms[i]->comm_, n, to_nccl_id(id), i, &config);
      if (r != ncclSuccess && r != ncclInProgress) first_error = r;
    }
    ncclResult_t end = nccl.ncclGroupEnd();
    if (first_error != ncclSuccess) throw Error(describe_failure(first_error, "ncclCommInitRankConfig", nullptr));
    if (end != ncclSuccess && end != ncclInProgress) throw Error(describe_failure(end, "ncclGroupEnd", nullptr));
    for (auto& comm : comms) {
      std::unique_lock lock(comm->mutex_);
      comm->finish(ncclInProgress, "ncclCommInitRankConfig", lock);
      comm->read_rank_and_size();
    }
  } catch (const Error& e) {
    // Half-made communicators are aborted, not finalized: finalizing waits for the missing ranks.
    for (auto& comm : comms) comm->abort(fmt::format("the communicator's creation failed: {}", e.what()));
    throw;
  }
  return comms;
}

std::unique_ptr<NcclComm> NcclComm::split(int color, int key) {
  std::unique_ptr<NcclComm> child(new NcclComm(*device_, timeout_));
  {
    std::unique_lock lock(mutex_);
    ncclComm* parent = live("ncclCommSplit");
    make_current();
    ncclConfig_t config = nonblocking_config();
    // NCCL writes the new communicator into child->comm_ only when the split's job, which the
    // parent's poll waits for, has finished: until then the handle reads null. The call itself
    // returns ncclSuccess while that job still runs (see finish).
    ncclResult_t r = api().ncclCommSplit(parent, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child->comm_, &config);
    try {
      finish(r, "ncclCommSplit", lock);
    } catch (const Error&) {
      // Aborted while the job may still run and write the handle: the child stays allocated
      // for it (and whatever communicator it gets is never used).
      if (r == ncclSuccess || r == ncclInProgress) static_cast<void>(child.release());
      throw;
    }
  }
  if (!child->comm_) return nullptr;
  std::unique_lock lock(child->mutex_);
  child->finish(ncclInProgress, "ncclCommSplit", lock);
  child->read_rank_and_size();
  return child;
}

void NcclComm::reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, Reduction op,
                              Stream& stream) {
  CUstream s = stream_handle(stream, *device_, "ncclReduceScatter");
  std::unique_lock lock(mutex_);
  ncclComm* comm = live("ncclReduceScatter");
  make_current();
  finish(api().ncclReduceScatter(send, recv, recv_count, nccl_type(dtype), nccl_op(op), comm, s), "ncclReduceScatter",
         lock);
}

void NcclComm::all_gather(const void* send, void* recv, size_t send_count, DType dtype, Stream& stream) {
  CUstream s = stream_handle(stream, *device_, "ncclAllGather");
  std::unique_lock lock(mutex_);
  ncclComm* comm = live("ncclAllGather");
  make_current();
  // Gathering only moves bytes, so any dtype goes as bytes (NCCL has no fp8, e8m0 or bool type).
  const size_t bytes = send_count * static_cast<size_t>(dtype_storage_bytes(dtype));
  finish(api().ncclAllGather(send, recv, bytes, ncclUint8, comm, s), "ncclAllGather", lock);
}

void NcclComm::all_reduce(const void* send, void* recv, size_t count, DType dtype, Reduction op, Stream& stream) {
  CUstream s = stream_handle(stream, *device_, "ncclAllReduce");
  std::unique_lock lock(mutex_);
  ncclComm* comm = live("ncclAllReduce");
  make_current();
  finish(api().ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), comm, s), "ncclAllReduce", lock);
}

void NcclComm::check_async_error() {
  std::unique_lock lock(mutex_);
  live("ncclCommGetAsyncError");
  if (int result = async_state(); result != ncclInProgress) finish(result, "ncclCommGetAsyncError", lock);
}

void NcclComm::synchronize(Stream& stream, const std::function<void()>& check_others) {
  CUstream s = stream_handle(stream, *device_, "synchronize");
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = started + timeout_;
  for (;;) {
    make_current();
    CUresult r = cuda::driver().cuStreamQuery(s);
    check_async_error();
    check_others();
    if (r == CUDA_SUCCESS) return;
    if (r != CUDA_ERROR_NOT_READY) cuda::fail_call(r, "cuStreamQuery", describe());
    if (Clock::now() >= deadline) {
      abort(fmt::format("the stream's work did not finish within {} ms", timeout_.count()));
      fail("{}: the work on the stream did not finish within {} ms; the communicator was aborted", describe(),
           timeout_.count());
    }
    pause_between_polls(started);
  }
}

void NcclComm::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  abort_locked(reason);
}

void NcclComm::begin_destroy() {
  std::lock_guard lock(mutex_);
  if (!comm_ || finalizing_) return;
  make_current();
  const ncclResult_t r = api().ncclCommFinalize(comm_);
  finalizing_ = true;
  if (r != ncclSuccess && r != ncclInProgress) abort_and_fail(r, "ncclCommFinalize");
}

bool NcclComm::destroy_finished() {
  std::lock_guard lock(mutex_);
  if (!comm_) return true;
  TJ_CHECK(finalizing_);
  make_current();
  const auto result = static_cast<ncclResult_t>(async_state());
  if (result == ncclInProgress) return false;
  if (result != ncclSuccess) abort_and_fail(result, "ncclCommFinalize");
  ncclComm* comm = comm_;
  comm_ = nullptr;
  ended_ = "destroyed";
  if (ncclResult_t r = api().ncclCommDestroy(comm); r != ncclSuccess)
    throw Error(describe_failure(r, "ncclCommDestroy", nullptr));
  return true;
}

}  // namespace tilejit::nccl
