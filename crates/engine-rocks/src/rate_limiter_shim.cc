// The rate limiter of a running DB can change its rate (RateLimiter::SetBytesPerSecond), but
// RocksDB's C API only creates and destroys limiters. These two functions reach the C++
// object behind a C handle. The struct mirrors the C API's private definition in
// rocksdb/db/c.cc (one shared_ptr member) for the pinned librocksdb-sys version.
#include <cstdint>
#include <memory>

#include "rocksdb/rate_limiter.h"

struct rocksdb_ratelimiter_t {
  std::shared_ptr<rocksdb::RateLimiter> rep;
};

extern "C" {
void atoll_ratelimiter_set_bytes_per_second(rocksdb_ratelimiter_t* limiter, int64_t bytes_per_second) {
  limiter->rep->SetBytesPerSecond(bytes_per_second);
}

int64_t atoll_ratelimiter_get_bytes_per_second(const rocksdb_ratelimiter_t* limiter) {
  return limiter->rep->GetBytesPerSecond();
}
}
