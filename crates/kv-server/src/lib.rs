//! `kv-server`: the kv node. Today it runs the unified read pool inside the node shell:
//! sized from `readpool.unified.*`, resized and re-tuned online through the config
//! controller, and exported in `/metrics`. Storage, Raft and the gRPC service join it here
//! (issues #4 and #5).

pub mod auto_adjust;
pub mod read_pool;

use std::sync::Arc;

use node::{Node, NodeError};
use pool::ShutdownMode;

/// Runs the kv node until SIGINT or SIGTERM.
pub fn run(node: Node) -> Result<(), NodeError> {
    let pool = Arc::new(read_pool::start(&node.controller.current()));
    read_pool::follow_config(&pool, &node.controller);
    node.registry
        .register(Box::new(pool::metrics::PoolCollector::new(pool.clone())))
        .expect("read pool metrics register once");
    let (stop_tuner, stop) = std::sync::mpsc::channel();
    let tuner = auto_adjust::spawn(pool.clone(), node.controller.clone(), stop);
    let serving = "status port and the unified read pool; storage and the gRPC service are not built yet (issues #4, #5)";
    tracing::warn!("{serving}");
    let result = node.run_until_signal(serving);
    drop(stop_tuner);
    let _ = tuner.join();
    pool.shutdown(ShutdownMode::Cancel);
    result
}
