#include "comm/mpi_communicator.h"

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <future>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::comm {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) throw core::Error(fmt::format("MPI call {} failed: {}", call, mpi_error_text(code)),
                                             "see the MPI messages above; a peer rank may have died");
}

const char* env(const char* name) { return std::getenv(name); }

}  // namespace

constexpr std::array<const char*, 4> kMpiLauncherVariables = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                                               "MPI_LOCALNRANKS"};

bool started_by_mpi_launcher() {
  for (const char* name : kMpiLauncherVariables)
    if (env(name)) return true;
  return false;
}

std::string rank_count_remedy(const std::string& flag) {
  std::string remedy = "start as many ranks as " + flag + " (mpirun -np N / srun -n N)";
  std::string set;
  for (const char* name : kMpiLauncherVariables)
    if (const char* v = env(name)) set += (set.empty() ? "" : ", ") + std::string(name) + "=" + v;
  if (!set.empty())
    remedy += "; this process took itself for an MPI rank because " + set +
              " is set: if mpirun or srun did not start it, unset that (a shell inside srun keeps it) and run again";
  return remedy;
}

RankInfo mpi_world_rank_info() {
  RankInfo info;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &info.rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &info.world_size), "MPI_Comm_size");
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  MPI_Comm_rank(node, &info.local_rank);
  MPI_Comm_free(&node);
  return info;
}

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string text(version, static_cast<std::size_t>(len));
  if (auto cut = text.find_first_of("\n,"); cut != std::string::npos) text.resize(cut);
  return text;
}

MpiCommunicator::MpiCommunicator() {
  std::promise<void> ready;
  auto started = ready.get_future();
  thread_ = std::thread([this, &ready] {
    try {
      int provided = 0;
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      if (rc != MPI_SUCCESS) throw core::Error("MPI_Init_thread failed: " + mpi_error_text(rc));
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      info_ = mpi_world_rank_info();
      library_version_ = mpi_library_version();
      ready.set_value();
    } catch (...) {
      ready.set_exception(std::current_exception());
      return;
    }
    run();
    MPI_Finalize();
  });
  try {
    started.get();
  } catch (const std::exception& e) {
    thread_.join();
    throw core::Error(std::string("cannot initialise MPI: ") + e.what(),
                      "run CPU ranks through scalescope (it starts mpirun itself) or under mpirun/srun; check "
                      "that Open MPI is installed (scripts/setup.sh)");
  }
}

MpiCommunicator::~MpiCommunicator() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MpiCommunicator::run() {
  for (;;) {
    std::function<void()> task;
    bool failed;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ set and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
      failed = !failure_.empty();
    }
    std::string error;
    if (!failed) {  // after a failure the remaining collectives are skipped, not run half-way
      try {
        task();
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (!error.empty() && failure_.empty()) failure_ = error;
      ++completed_;
    }
    cv_.notify_all();
  }
}

void MpiCommunicator::rethrow_if_failed() {
  if (!failure_.empty()) throw core::Error("MPI collective failed: " + failure_, "a peer rank may have died; see its messages");
}

void MpiCommunicator::submit(std::function<void()> task, bool wait) {
  std::size_t ticket;
  {
    std::lock_guard lock(mutex_);
    rethrow_if_failed();
    queue_.push_back(std::move(task));
    ticket = ++submitted_;
  }
  cv_.notify_all();
  if (!wait) return;
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return completed_ >= ticket; });
  rethrow_if_failed();
}

void MpiCommunicator::start_all_reduce(float* data, std::size_t count, ReduceOp op) {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw core::Error(fmt::format("all-reduce of {} elements exceeds MPI's int count", count), "use smaller buckets");
  const int world = info_.world_size;
  submit_timed(count * sizeof(float), CollectiveKind::all_reduce, [data, count, op, world] {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    if (op == ReduceOp::average && world > 1) {
      const float scale = 1.0f / static_cast<float>(world);
      for (std::size_t i = 0; i < count; ++i) data[i] *= scale;
    }
  });
}

void MpiCommunicator::start_all_gather(const void* send, void* received, std::size_t bytes_per_rank) {
  if (bytes_per_rank > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw core::Error(fmt::format("all-gather of {} bytes per rank exceeds MPI's int count", bytes_per_rank),
                      "use fewer rows per rank");
  submit_timed(bytes_per_rank, CollectiveKind::all_gather, [send, received, bytes_per_rank] {
    const int n = static_cast<int>(bytes_per_rank);
    check_mpi(MPI_Allgather(send, n, MPI_BYTE, received, n, MPI_BYTE, MPI_COMM_WORLD), "MPI_Allgather");
  });
}

void MpiCommunicator::submit_timed(std::size_t bytes, CollectiveKind kind, std::function<void()> collective) {
  submit(
      [this, bytes, kind, collective = std::move(collective)] {
        const auto t0 = std::chrono::steady_clock::now();
        collective();
        const auto t1 = std::chrono::steady_clock::now();
        std::lock_guard lock(mutex_);
        timings_.push_back({bytes, std::chrono::duration<double>(t1 - t0).count(), kind});
      },
      false);
}

void MpiCommunicator::join() { join_until(0); }

void MpiCommunicator::join_until(std::size_t pending) {
  std::unique_lock lock(mutex_);
  // Tickets count every submitted task (broadcasts too), in order; the last `pending` are all-reduces or all-gathers.
  const std::size_t ticket = submitted_ > pending ? submitted_ - pending : 0;
  cv_.wait(lock, [&] { return completed_ >= ticket; });
  rethrow_if_failed();
}

std::vector<CollectiveTiming> MpiCommunicator::take_timings() {
  join();
  std::lock_guard lock(mutex_);
  return std::exchange(timings_, {});
}

void MpiCommunicator::broadcast(float* data, std::size_t count, int root) {
  submit(
      [=] {
        std::size_t done = 0;
        while (done < count) {  // MPI counts are int: send in chunks of at most 1 Gi elements
          int n = static_cast<int>(std::min<std::size_t>(count - done, 1u << 30));
          check_mpi(MPI_Bcast(data + done, n, MPI_FLOAT, root, MPI_COMM_WORLD), "MPI_Bcast");
          done += static_cast<std::size_t>(n);
        }
      },
      true);
}

std::vector<double> MpiCommunicator::all_gather_host(const std::vector<double>& values) {
  std::vector<double> out(values.size() * static_cast<std::size_t>(info_.world_size));
  submit(
      [&] {
        check_mpi(MPI_Allgather(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, out.data(),
                                static_cast<int>(values.size()), MPI_DOUBLE, MPI_COMM_WORLD),
                  "MPI_Allgather");
      },
      true);
  return out;
}

void MpiCommunicator::barrier() {
  submit([] { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }, true);
}

}  // namespace scalescope::comm
