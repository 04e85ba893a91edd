#pragma once
// Terminal renderings of scalescope's result records.

#include <string>

#include "doctor/doctor.h"
#include "train/job.h"

namespace scalescope::report {

/// `scalescope train`'s output: configuration, per-phase breakdown of a step (data wait, forward, backward,
/// exposed communication, optimizer), step-time statistics, throughput, all-reduce bandwidth, per-rank
/// figures when world size > 1. Times in ms, bandwidth in GB/s (1e9 bytes/s).
std::string render_train_result(const train::TrainResult& result);

/// `scalescope doctor`'s output: one row per world size (step time, tokens/s, speedup, efficiency, comm
/// ratio, all-reduce and exposed-communication ms, overlap), the verdict in one line, and the notes.
std::string render_doctor_report(const doctor::DoctorReport& report);

}  // namespace scalescope::report
