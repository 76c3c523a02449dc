// Recorder (record/recorder.h): the bounded queue and the writer thread.
#include "schedext/record/recorder.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include "schedext/policy/recorded_state.h"
#include "schedext/record/record_file.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::record {
namespace {

void AppendCounter(std::string& out, std::string_view name, std::string_view help,
                   std::string_view labels_and_values) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" counter\n");
  out.append(labels_and_values);
}

std::string Line(std::string_view name, std::string_view labels, uint64_t value) {
  return std::string(name) + std::string(labels) + " " + std::to_string(value) + "\n";
}

}  // namespace

StatusOr<std::unique_ptr<Recorder>> Recorder::Start(RecorderOptions options) {
  const std::string& dir = options.config.dir;
  if (dir.empty()) {
    return InvalidArgumentError("server.record.dir: empty");
  }
  if (::mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) {
    return UnavailableError("server.record.dir " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return UnavailableError("server.record.dir " + dir + ": not a directory");
  }
  if (!options.now) {
    options.now = [] { return std::chrono::system_clock::now(); };
  }
  std::unique_ptr<Recorder> recorder(new Recorder(std::move(options)));
  recorder->thread_ = std::thread([r = recorder.get()] { r->Run(); });
  return recorder;
}

Recorder::Recorder(RecorderOptions options) : options_(std::move(options)) {
  for (const auto& accounting : options_.accountings) {
    codecs_.push_back(accounting != nullptr ? policy::AsNodeStateCodec(*accounting) : nullptr);
  }
}

Recorder::~Recorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool Recorder::Sample(std::string_view verb, size_t body_bytes) {
  bool wanted = false;
  for (const std::string& v : options_.config.verbs) {
    wanted = wanted || v == verb;
  }
  if (!wanted) {
    return false;
  }
  // Over n requests exactly floor(n × rate) are taken, evenly spread.
  const double rate = options_.config.sample_rate;
  const uint64_t n = seen_.fetch_add(1, std::memory_order_relaxed);
  if (std::floor(static_cast<double>(n + 1) * rate) <= std::floor(static_cast<double>(n) * rate)) {
    return false;
  }
  // The record holds both bodies as JSON strings, never shorter than the
  // bodies: refuse here, before the request thread copies them.
  if (body_bytes > options_.config.max_bytes) {
    dropped_too_large_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (pending_.load(std::memory_order_relaxed) >= options_.queue_entries ||
      pending_bytes_.load(std::memory_order_relaxed) + body_bytes > options_.queue_bytes) {
    dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void Recorder::Enqueue(Exchange exchange) {
  const size_t bytes = exchange.request.size() + exchange.reply.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= options_.queue_entries || queue_bytes_ + bytes > options_.queue_bytes) {
      dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queue_bytes_ += bytes;
    queue_.push_back(std::move(exchange));
    pending_.store(queue_.size(), std::memory_order_relaxed);
    pending_bytes_.store(queue_bytes_, std::memory_order_relaxed);
  }
  wake_.notify_one();
}

RecorderStats Recorder::stats() const {
  RecorderStats s;
  s.recorded = recorded_.load(std::memory_order_relaxed);
  s.dropped_queue_full = dropped_queue_full_.load(std::memory_order_relaxed);
  s.dropped_too_large = dropped_too_large_.load(std::memory_order_relaxed);
  s.dropped_write_error = dropped_write_error_.load(std::memory_order_relaxed);
  s.files_deleted = files_deleted_.load(std::memory_order_relaxed);
  s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  return s;
}

void Recorder::AppendMetrics(std::string& out) const {
  const RecorderStats s = stats();
  AppendCounter(out, "schedext_record_requests_total", "Requests written to server.record.dir.",
                Line("schedext_record_requests_total", "", s.recorded));
  AppendCounter(
      out, "schedext_record_dropped_total",
      "Sampled requests not recorded: queue_full (the writer fell behind), too_large "
      "(above server.record.maxBytes), write_error.",
      Line("schedext_record_dropped_total", "{reason=\"queue_full\"}", s.dropped_queue_full) +
          Line("schedext_record_dropped_total", "{reason=\"too_large\"}", s.dropped_too_large) +
          Line("schedext_record_dropped_total", "{reason=\"write_error\"}", s.dropped_write_error));
  AppendCounter(out, "schedext_record_bytes_total", "Bytes written to recording files.",
                Line("schedext_record_bytes_total", "", s.bytes_written));
  AppendCounter(out, "schedext_record_files_deleted_total",
                "Oldest recording files deleted to stay within server.record.maxFiles.",
                Line("schedext_record_files_deleted_total", "", s.files_deleted));
}

void Recorder::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  drained_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

void Recorder::Run() {
  for (;;) {
    Exchange exchange;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping, and everything is written
      }
      exchange = std::move(queue_.front());
      queue_.pop_front();
      queue_bytes_ -= exchange.request.size() + exchange.reply.size();
      pending_.store(queue_.size(), std::memory_order_relaxed);
      pending_bytes_.store(queue_bytes_, std::memory_order_relaxed);
      writing_ = true;
    }
    if (options_.before_write) {
      options_.before_write();
    }
    Write(exchange);
    exchange = Exchange{};  // the snapshot goes here, off the request threads
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
    }
    drained_.notify_all();
  }
}

void Recorder::Write(const Exchange& exchange) {
  // Full-mode usage is per request node, and the policies' states are
  // limited to the request's nodes: the names come from the request.
  std::vector<std::string_view> names;
  wire::RequestBuffer body;
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  wire::PreemptionArgsView preemption;
  if (!exchange.usage.empty() || !exchange.policy_states.empty()) {
    body = wire::RequestBuffer::CopyOf(exchange.request);
    if (exchange.verb == "preempt") {
      if (decoder.DecodePreemptionArgs(body, preemption).ok()) {
        for (const wire::VictimsView& candidate : preemption.candidates()) {
          names.push_back(candidate.node);
        }
      }
    } else if (decoder.DecodeExtenderArgs(body, args).ok()) {
      names = args.node_names;
    }
  }
  const std::string line = EncodeRecord(exchange, names, options_.now(), codecs_);
  if (line.size() > options_.config.max_bytes) {
    dropped_too_large_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (fd_ >= 0 && file_bytes_ + line.size() > options_.config.max_bytes) {
    ::close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0) {
    if (Status s = OpenNextFile(); !s.ok()) {
      dropped_write_error_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("record: {}", s.message());
      return;
    }
  }
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      dropped_write_error_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("record: writing {}: {}", options_.config.dir, std::strerror(errno));
      // A partial line would break the file for readers: start a new one.
      ::close(fd_);
      fd_ = -1;
      return;
    }
    written += static_cast<size_t>(n);
  }
  file_bytes_ += line.size();
  bytes_written_.fetch_add(line.size(), std::memory_order_relaxed);
  recorded_.fetch_add(1, std::memory_order_relaxed);
}

Status Recorder::OpenNextFile() {
  const auto now = options_.now();
  const time_t seconds = std::chrono::system_clock::to_time_t(now);
  tm parts{};
  gmtime_r(&seconds, &parts);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &parts);
  char name[96];
  std::snprintf(name, sizeof(name), "%.*s%s-%06llu%.*s", static_cast<int>(kRecordFilePrefix.size()),
                kRecordFilePrefix.data(), stamp, static_cast<unsigned long long>(sequence_++),
                static_cast<int>(kRecordFileSuffix.size()), kRecordFileSuffix.data());
  const std::string path = options_.config.dir + "/" + name;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd_ < 0) {
    return UnavailableError("open " + path + ": " + std::strerror(errno));
  }
  file_bytes_ = 0;
  // Keep at most maxFiles recording files, this one included: the oldest go.
  auto files = ListRecordFiles(options_.config.dir);
  if (files.ok()) {
    const size_t keep = static_cast<size_t>(options_.config.max_files);
    for (size_t i = 0; i + keep < files->size(); ++i) {
      if ((*files)[i] != path && ::unlink((*files)[i].c_str()) == 0) {
        files_deleted_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  return OkStatus();
}

}  // namespace schedext::record
