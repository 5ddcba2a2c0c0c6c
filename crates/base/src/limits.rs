//! Every bound Atoll keeps, in one place, units last in the name.
//!
//! A limit that a user may tune is a config knob instead (see the `config` crate); what is
//! here is fixed by design, so a reader can find every ceiling without grepping literals.

/// Longest CPU profile the status server collects in one request.
pub const PROFILE_SECONDS_MAX: u64 = 300;
/// CPU profile length when the request names none (TiKV and TiDB both use 10 s).
pub const PROFILE_SECONDS_DEFAULT: u64 = 10;
/// Sampling frequency of a CPU profile when the request names none (TiKV's 99 Hz).
pub const PROFILE_FREQUENCY_HZ_DEFAULT: i32 = 99;
/// Highest sampling frequency a request may ask for.
pub const PROFILE_FREQUENCY_HZ_MAX: i32 = 1000;
/// Largest request body the status server reads (a `POST /config` is a few hundred bytes).
pub const STATUS_REQUEST_BODY_BYTES_MAX: usize = 64 * 1024;
/// Largest config file a process reads at start-up.
pub const CONFIG_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;
/// How long `/debug/zip` waits for one thread to report its stack.
pub const THREAD_STACK_WAIT_MS: u64 = 200;
/// Frames kept per thread stack in `/debug/zip`.
pub const THREAD_STACK_FRAMES_MAX: usize = 128;
/// Threads whose stacks `/debug/zip` collects; the rest are listed without a stack.
pub const THREAD_STACKS_MAX: usize = 1024;
/// How long the playground waits for one child to answer on its status port.
pub const PLAYGROUND_READY_WAIT_MS: u64 = 60_000;
/// How long the playground waits for children to exit after SIGTERM before it sends SIGKILL.
pub const PLAYGROUND_STOP_WAIT_MS: u64 = 10_000;
/// How long a replicated kv node stopping on SIGTERM waits for its regions' leadership to
/// move to other stores before it stops anyway; well inside [`PLAYGROUND_STOP_WAIT_MS`]. A
/// transfer to a follower that is up takes one round trip and an election.
pub const LEADER_HAND_OFF_WAIT_MS: u64 = 5_000;
/// Pessimistic locks one Raft write moves from memory to the lock CF during a hand-off.
pub const LOCK_HAND_OFF_BATCH_KEYS: usize = 1024;
/// Most requests one BatchCommands message to a kv node carries, and most answers one reply
/// message carries (TiKV's client batches up to 128 too).
pub const KV_BATCH_REQUESTS_MAX: usize = 128;
/// Most bytes of requests (or answers) one BatchCommands message gathers before it goes; a
/// larger one travels alone. Far below the 64 MiB a message may have, so a batch of large
/// answers never becomes a message the other side refuses.
pub const KV_BATCH_BYTES_MAX: usize = 4 << 20;
/// Requests that may wait for a kv node's batch stream before callers wait to queue theirs;
/// also the answers a kv node keeps ready for one stream before its handlers wait.
pub const KV_BATCH_QUEUE_MAX: usize = 4096;
/// How long a SQL node waits for a kv node to answer one request (tonic's per-call timeout
/// before requests shared a stream).
pub const KV_REQUEST_TIMEOUT_MS: u64 = 20_000;
/// How often a node pings another it keeps a gRPC stream open to (a SQL node's batch stream
/// to a kv node, raft messages between kv nodes and between pd members), and how long it
/// waits for the answer before it takes the stream as dead and connects again. Without
/// pings a stream to a node behind a partition looks open until TCP gives up (minutes), and
/// once the partition heals it resumes only at TCP's next retransmission, seconds later.
/// TiDB's keepalive is 10 s + 3 s; `atoll nemesis` found a partitioned kv node stalling
/// every client for 20 s and more with Atoll's 10 + 20 (SQL to kv), and regions and merges
/// stalled ~6 s after a partition healed with no pings between kv nodes at all.
pub const KEEPALIVE_INTERVAL_MS: u64 = 2_000;
pub const KEEPALIVE_TIMEOUT_MS: u64 = 3_000;
/// HTTP/2 flow-control window of each stream and each connection between SQL and kv nodes:
/// many requests share one batch stream, and the default 64 KiB would make a large answer
/// hold up the small ones behind it.
pub const KV_STREAM_WINDOW_BYTES: u32 = 16 << 20;
/// Slots a kv node's lock waiters share by key hash (`kv_server::lock_waits`): keys in one
/// slot wake each other's waiters, who then just try again.
pub const LOCK_WAIT_SLOTS: usize = 1024;
/// How long flow control's verdict on the engine's load stands before a write reads the
/// engine's figures again (15 RocksDB properties, a few per cent of a write's CPU if read
/// for each). RocksDB's own stall triggers act at once behind it.
pub const FLOW_CONTROL_SAMPLE_MS: u64 = 100;

/// How often a sql node tells PD where it serves (`ReportSqlNode`).
pub const SQL_NODE_REPORT_INTERVAL_MS: u64 = 10_000;
/// After this long without a report PD stops listing a sql node (three missed reports).
pub const SQL_NODE_FORGET_AFTER_MS: u64 = 30_000;
/// Deepest nesting of a JSON document (MySQL's: error 3157 past it).
pub const JSON_DEPTH_MAX: usize = 100;
/// Stack of each thread that runs SQL statements: a statement is one deeply nested future
/// (a DELETE cascading through foreign keys into index lookups and lock waits), which
/// overflowed tokio's 2 MiB default in a debug build.
pub const SQL_THREAD_STACK_BYTES: usize = 16 << 20;
